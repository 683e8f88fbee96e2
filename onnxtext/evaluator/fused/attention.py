"""Scaled dot-product attention as exporters write it, as one step (rules ``attention`` and
``attention_operands``)."""

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
        y = self.attend(q, k, v, mask)
        if y is None:
            return self.fallback(*((q, k, v) + ((mask,) if self.has_mask else ())))
        return y

    def attend(self, q, k, v, mask=None):
        """The attention of these operands, or None when they are not what the step was built for."""
        if type(q) is not np.ndarray or type(k) is not np.ndarray or type(v) is not np.ndarray or \
                q.dtype.kind != "f" or not (q.dtype == k.dtype == v.dtype) or q.ndim < 2 or k.ndim < 2:
            return None
        s = np.matmul(q, k)
        if type(s) is not np.ndarray or s.ndim < 1:
            return None
        if self.scale is not None:
            s *= s.dtype.type(self.scale)
        if self.has_mask:
            if type(mask) is not np.ndarray or mask.dtype != s.dtype or mask.ndim > s.ndim or (
                    mask.shape != s.shape[s.ndim - mask.ndim:] and any(
                        m != 1 and m != d for m, d in zip(mask.shape[::-1], s.shape[::-1]))):
                return None
            s += mask
        if s.size == 0:
            return None
        s -= row_max(s)
        np.exp(s, out=s)
        s /= _sum(s, axis=-1, keepdims=True)
        if self.nan_to_zero:
            np.copyto(s, 0, where=s != s)  # (NaN is the only value unequal to itself)
        return np.matmul(s, v)


class HeadsAttention:
    """A :class:`DotProductAttention` that also does the exporters' head layout and scaling around
    it: each of q, k, v is transposed by its ``perms`` entry (a view: the batched products read the
    strided heads directly, no copy), the result by ``out_perm``; the scalar factors that multiplied
    q and k are in ``core.scale``. ``fallback`` (the original steps) runs for anything else: operands
    of another type than the factors' ``dtype``, ranks the perms do not fit, a mask that does not
    broadcast."""

    __slots__ = ("core", "perms", "out_perm", "dtype", "fallback")

    def __init__(self, core: DotProductAttention, perms, out_perm, dtype, fallback):
        self.core, self.perms, self.out_perm, self.dtype, self.fallback = core, perms, out_perm, dtype, fallback

    def __call__(self, q, k, v, mask=None):
        args = (q, k, v)
        if self.dtype is None or (type(q) is np.ndarray and q.dtype == self.dtype):
            try:
                args = [a if p is None else a.transpose(p) for a, p in zip(args, self.perms)]
            except (AttributeError, ValueError):  # (not arrays, or ranks the perms do not fit)
                args = None
            y = None if args is None else self.core.attend(*args, mask)
            if y is not None:
                if self.out_perm is None:
                    return y
                if y.ndim == len(self.out_perm):  # (contiguous, as the Transpose kernel returns it)
                    return np.ascontiguousarray(y.transpose(self.out_perm))
        return self.fallback(*((q, k, v) + ((mask,) if self.core.has_mask else ())))
