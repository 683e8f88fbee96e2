"""A product with a constant weight and its bias as one step (rule ``matmul_add``)."""

from __future__ import annotations

import numpy as np


class MatMulAdd:
    """``a @ w + b`` with the bias (if any: None for a product alone) added in place into the product;
    ``fallback`` for other inputs."""

    __slots__ = ("w", "b", "fallback")

    def __init__(self, w, b, fallback):
        self.w, self.b, self.fallback = w, b, fallback

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != self.w.dtype or a.ndim < 1:
            return self.fallback(a)
        y = np.matmul(a, self.w)
        if type(y) is not np.ndarray:  # a 1-D a gives a 1-D product; a 0-d result would be a scalar
            return self.fallback(a)
        if self.b is not None:
            y += self.b
        return y


class SharedInputProducts:
    """Products of one input with several constant weights (``a @ w_i (+ b_i)``) as ONE product with the
    weights side by side (rule ``shared_input_products``); returns each result as a view of its columns
    of the shared result. ``fallback`` (the original steps, one output each) for other inputs."""

    __slots__ = ("w", "b", "bounds", "fallback")

    def __init__(self, w, b, bounds, fallback):
        self.w, self.b, self.bounds, self.fallback = w, b, bounds, fallback

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != self.w.dtype or a.ndim < 2:
            return self.fallback(a)
        y = np.matmul(a, self.w)
        if self.b is not None:
            y += self.b
        return tuple(y[..., start:stop] for start, stop in self.bounds)
