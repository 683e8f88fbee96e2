"""Activations exporters write as several nodes (rule ``gelu``): Gelu in its erf and tanh forms."""

from __future__ import annotations

import math

import numpy as np

from ..kernels.elementwise import erf

_SQRT_HALF = 1 / math.sqrt(2)
_TANH_SCALE = math.sqrt(2 / math.pi)


class FusedGelu:
    """``0.5 x (1 + erf(x / sqrt 2))`` or, ``tanh=True``, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``,
    computed in place on one temporary; ``fallback`` runs for non-float inputs."""

    __slots__ = ("tanh", "fallback")

    def __init__(self, tanh: bool, fallback):
        self.tanh, self.fallback = tanh, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0:
            return self.fallback(x)
        t = x.dtype.type
        if self.tanh:
            inner = np.multiply(x, x)
            inner *= x
            inner *= t(0.044715)
            inner += x
            inner *= t(_TANH_SCALE)
            np.tanh(inner, out=inner)
        else:
            inner = np.asarray(erf(np.multiply(x, t(_SQRT_HALF))))
        inner += t(1)
        inner *= x
        inner *= t(0.5)
        return inner
