"""Scaled dot-product attention as exporters write it, as one step (rule ``attention``)."""

from __future__ import annotations

import numpy as np

from ..kernels.activation import row_max

_sum = np.add.reduce  # (without np.sum's argument handling: ~2 us a call)


class DotProductAttention:
    """``softmax(q @ k * scale + mask) @ v`` over the last axis, with NaN probabilities (rows fully
    masked with -inf) set to 0 when ``nan_to_zero``; the scores are computed, masked, exponentiated
    and normalized in one buffer. ``fallback`` (the original steps) runs when the mask does not
    broadcast to the scores' shape or the inputs are not float arrays of one type."""

    __slots__ = ("scale", "nan_to_zero", "has_mask", "fallback")

    def __init__(self, scale, nan_to_zero: bool, has_mask: bool, fallback):
        self.scale, self.nan_to_zero, self.has_mask, self.fallback = scale, nan_to_zero, has_mask, fallback

    def __call__(self, q, k, v, mask=None):
        args = (q, k, v) + ((mask,) if self.has_mask else ())
        if any(type(a) is not np.ndarray for a in args) or q.dtype.kind != "f" or \
                not (q.dtype == k.dtype == v.dtype) or q.ndim < 2 or k.ndim < 2:
            return self.fallback(*args)
        s = np.matmul(q, k)
        if type(s) is not np.ndarray or s.ndim < 1:
            return self.fallback(*args)
        if self.scale is not None:
            s *= s.dtype.type(self.scale)
        if self.has_mask:
            if mask.dtype != s.dtype or mask.ndim > s.ndim or (mask.shape != s.shape[s.ndim - mask.ndim:] and any(
                    m != 1 and m != d for m, d in zip(mask.shape[::-1], s.shape[::-1]))):
                return self.fallback(*args)
            s += mask
        if s.size == 0:
            return self.fallback(*args)
        s -= row_max(s)
        np.exp(s, out=s)
        s /= _sum(s, axis=-1, keepdims=True)
        if self.nan_to_zero:
            np.copyto(s, 0, where=s != s)  # (NaN is the only value unequal to itself)
        return np.matmul(s, v)
