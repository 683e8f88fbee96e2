"""The conversions rule ``float16_in_float32`` puts at the borders of a float32 region of a float16
graph (see :mod:`..optimizer.float16_in_float32`)."""

from __future__ import annotations

import numpy as np

from ..kernels.cast import float16_to_float32

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


class ToFloat32:
    """A float16 value entering the region, as float32; any other value (shapes, masks, a float32
    feed) unchanged."""

    __slots__ = ()

    def __call__(self, x):
        if type(x) is np.ndarray and x.dtype == _F16:
            return float16_to_float32(x)
        return x

    def __repr__(self):
        return "ToFloat32()"


class ToFloat16:
    """A float32 region value leaving the region (read by a float16 kernel, or an output), rounded to
    float16 once."""

    __slots__ = ()

    def __call__(self, x):
        if type(x) is np.ndarray and x.dtype == _F32:
            return x.astype(_F16)
        return x

    def __repr__(self):
        return "ToFloat16()"
