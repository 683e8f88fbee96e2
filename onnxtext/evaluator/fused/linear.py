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


class MatMulAddResidual:
    """``(a @ w + b) + r``: a :class:`MatMulAdd` whose result is added to another value (a transformer's
    residual connection), the second addition in place into the product too (rule ``residual_add``).
    ``fallback`` (the original steps) for inputs it was not prepared for or an ``r`` that would
    broadcast the product to a larger shape."""

    __slots__ = ("product", "fallback")

    def __init__(self, product: MatMulAdd, fallback):
        self.product, self.fallback = product, fallback

    def __call__(self, a, r):
        p = self.product
        if type(a) is np.ndarray and type(r) is np.ndarray and a.dtype == p.w.dtype == r.dtype and a.ndim >= 2:
            y = np.matmul(a, p.w)
            if y.shape == r.shape:
                if p.b is not None:
                    y += p.b
                y += r
                return y
        return self.fallback(a, r)
