"""The run-time step of rule ``clamped_pointwise`` (see :mod:`..optimizer.clamped_pointwise`):
``conv(relu(x * f + s))`` as ``conv'(max(x, t))``, one threshold pass before the pointwise Conv."""

from __future__ import annotations

import numpy as np

from ..kernels.conv import scratch
from ..kernels.conv_prepared import PreparedConv


class ClampedPointwise:
    """``conv(relu(x * f + s))`` as ``conv'(max(x, t))``, falling back to the two original steps for
    inputs it was not prepared for (another dtype, rank or channel count)."""

    __slots__ = ("first", "conv", "clamped", "threshold", "_consts")

    def __init__(self, first, conv: PreparedConv, threshold: np.ndarray, clamped: PreparedConv):
        self.first, self.conv = first, conv  # the original steps: (kernel, constant operands, attributes)
        self.threshold, self.clamped = threshold, clamped
        self._consts = {}

    def __call__(self, x):
        w = self.clamped.w
        if type(x) is not np.ndarray or x.dtype != w.dtype or x.ndim != w.ndim or x.shape[1] != w.shape[1]:
            fn, args, attrs = self.first
            return self.conv(fn(x, *args, **attrs))
        t = self._consts.get(x.ndim)
        if t is None:
            t = self._consts[x.ndim] = self.threshold.astype(w.dtype).reshape((-1,) + (1,) * (x.ndim - 2))
        clamped = scratch(x.shape, x.dtype, slot="clamped")
        np.maximum(x, t, out=clamped)
        return self.clamped(clamped)
