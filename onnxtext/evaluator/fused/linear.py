"""A product with a constant weight and its bias as one step (rule ``matmul_add``)."""

from __future__ import annotations

import numpy as np

from ..kernels.linalg import matrix_product
from ..kernels.normalization import TILED_MAX_SIZE, row_tile

#: a bias is added as an array of the product's whole shape (built once per shape, by
#: :func:`~..kernels.normalization.row_tile`) for products of at most this many values: numpy adds a row
#: broadcast to a matrix row by row, about 2x the time of an elementwise sum of two arrays of the same
#: shape (8x64: 0.9 against 0.45 us; 128x768: 27 against 16 us; at 1024x1024 the 4 MB copy is slower,
#: 1.16 against 0.76 ms), numpy 2.4
TILED_BIAS_MAX_VALUES = TILED_MAX_SIZE
_TILED_SHAPES_MAX = 8  # product shapes remembered per step (then the cache starts again)


class MatMulAdd:
    """``a @ w + b`` with the bias (if any: None for a product alone) added in place into the product;
    ``fallback`` for other inputs."""

    __slots__ = ("w", "b", "fallback", "_tiled")

    def __init__(self, w, b, fallback):
        self.w, self.b, self.fallback = w, b, fallback
        self._tiled = {}  # product shape -> the bias repeated to it (read-only)

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != self.w.dtype or a.ndim < 1:
            return self.fallback(a)
        if a.ndim == 2:  # (the usual linear layer, inline: each call saved is ~0.1 us of a 2-3 us step)
            y = np.dot(a, self.w)
        else:
            y = matrix_product(a, self.w)
            if type(y) is not np.ndarray:  # a 1-D a gives a 1-D product; a 0-d result would be a scalar
                return self.fallback(a)
        if self.b is not None:
            tiled = self._tiled.get(y.shape)
            y += tiled if tiled is not None else tiled_bias(self._tiled, self.b, y.shape)
        return y

    def bias_for(self, shape):
        """The bias to add to a product of ``shape`` (see :func:`tiled_bias`)."""
        return tiled_bias(self._tiled, self.b, shape)


def tiled_bias(cache: dict, b, shape):
    """The bias row ``b`` to add to a product of ``shape``: repeated to the whole shape for small products
    (see :data:`TILED_BIAS_MAX_VALUES`; kept read-only in ``cache`` by shape), else the row itself."""
    tiled = cache.get(shape)
    if tiled is None:
        if len(shape) < 2 or shape[-1] != b.size or int(np.prod(shape, dtype=np.int64)) > TILED_BIAS_MAX_VALUES:
            return b
        if len(cache) >= _TILED_SHAPES_MAX:
            cache.clear()
        tiled = cache[shape] = row_tile(b, shape)
    return tiled


class SharedInputProducts:
    """Products of one input with several constant weights (``a @ w_i (+ b_i)``) as ONE product with the
    weights side by side (rule ``shared_input_products``); returns each result as a view of its columns
    of the shared result. ``fallback`` (the original steps, one output each) for other inputs."""

    __slots__ = ("w", "b", "bounds", "fallback", "_tiled")

    def __init__(self, w, b, bounds, fallback):
        self.w, self.b, self.bounds, self.fallback = w, b, bounds, fallback
        self._tiled = {}  # product shape -> the bias repeated to it (read-only)

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != self.w.dtype or a.ndim < 2:
            return self.fallback(a)
        y = matrix_product(a, self.w)
        if self.b is not None:
            y += tiled_bias(self._tiled, self.b, y.shape)
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
            y = matrix_product(a, p.w)
            if y.shape == r.shape:
                if p.b is not None:
                    y += p.bias_for(y.shape)
                y += r
                return y
        return self.fallback(a, r)
