"""SiLU (``x * sigmoid(x)``) and the gated form of Llama-family MLPs (``silu(gate) * up``) as one step
(rule ``silu``)."""

from __future__ import annotations

import numpy as np


class SiluGate:
    """``x / (1 + exp(-x))`` (times ``u`` when ``gated``) in one buffer: four numpy calls (five with the
    gate) instead of the Sigmoid kernel's four, a product and, gated, a second product, each its own
    array. ``exp`` overflows to inf for large negative x, giving the limit 0 (the run silences the
    warning). ``fallback`` (the original steps) for inputs that are not float arrays of one type or a
    ``u`` that would broadcast the result to a larger shape."""

    __slots__ = ("gated", "fallback")

    def __init__(self, gated: bool, fallback):
        self.gated, self.fallback = gated, fallback

    def __call__(self, x, u=None):
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or \
                (self.gated and (type(u) is not np.ndarray or u.dtype != x.dtype)):
            return self.fallback(x, u) if self.gated else self.fallback(x)
        t = np.negative(x)
        np.exp(t, out=t)
        t += 1
        np.divide(x, t, out=t)
        if self.gated:
            try:
                t *= u
            except ValueError:  # (u broadcasts the result to a larger shape)
                return self.fallback(x, u)
        return t
