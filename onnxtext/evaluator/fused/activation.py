"""Activations exporters write as several nodes (rule ``gelu``): Gelu in its erf and tanh forms."""

from __future__ import annotations

import numpy as np

from ..kernels.activation import gelu_values


class FusedGelu:
    """``0.5 x (1 + erf(x / sqrt 2))`` or, ``tanh=True``, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``,
    computed in place on one temporary (the Gelu operator's own kernel); ``fallback`` runs for non-float
    inputs."""

    __slots__ = ("tanh", "fallback")

    def __init__(self, tanh: bool, fallback):
        self.tanh, self.fallback = tanh, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0:
            return self.fallback(x)
        return gelu_values(x, self.tanh)
