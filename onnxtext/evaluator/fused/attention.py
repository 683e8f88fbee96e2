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

    def attend(self, q, k, v, mask=None, scale=False):
        """The attention of these operands, or None when they are not what the step was built for
        (``scale``: the score factor of this call instead of :attr:`scale`, None for none)."""
        if scale is False:
            scale = self.scale
        if type(q) is not np.ndarray or type(k) is not np.ndarray or type(v) is not np.ndarray or \
                q.dtype.kind != "f" or not (q.dtype == k.dtype == v.dtype) or q.ndim < 2 or k.ndim < 2:
            return None
        s = np.matmul(q, k)
        if type(s) is not np.ndarray or s.ndim < 1:
            return None
        if scale is not None:
            s *= s.dtype.type(scale)
        if self.has_mask:
            if type(mask) is not np.ndarray or mask.dtype != s.dtype or mask.ndim > s.ndim or (
                    mask.shape != s.shape[s.ndim - mask.ndim:] and any(
                        m != 1 and m != d for m, d in zip(mask.shape[::-1], s.shape[::-1]))):
                return None
            s += mask
        if s.size == 0:
            return None
        if s.dtype == np.float32 or s.dtype == np.float64:
            y = _normalized_product(s, v)
            if y is not None:
                return y
            s = np.matmul(q, k)  # (rows that need their own maximum: computed again, the usual way)
            if scale is not None:
                s *= s.dtype.type(scale)
            if self.has_mask:
                s += mask
        s -= row_max(s)
        np.exp(s, out=s)
        s /= _sum(s, axis=-1, keepdims=True)
        if self.nan_to_zero:
            np.copyto(s, 0, where=s != s)  # (NaN is the only value unequal to itself)
        return np.matmul(s, v)


#: the largest score exponentiated without subtracting a maximum: exp(60) ~ 1e26, so rows of up to
#: 1e12 keys sum without overflow in float32
_SAFE_TOP = 60.0
#: the smallest row sum accepted without a per-row maximum: every row then holds a term of at least
#: ~exp(-57), a normal float32, beside which the terms that underflow weigh less than 1e-13
_SAFE_SUM = 1e-25
_ONES: dict = {}


def _normalized_product(s, v):
    """``softmax(s) @ v`` over the last axis of the float32/float64 scores ``s`` (a fresh contiguous
    array, overwritten), or None when a row needs its own maximum subtracted.

    Softmax is invariant under subtracting any constant per row; subtracting nothing is exact in
    float arithmetic as long as no exponential overflows (the largest score at most 60) and every row
    keeps a normal-sized term (each row sum at least 1e-25): then one whole-array maximum replaces
    the per-row maximum and its broadcast subtraction (slow on short rows), the row sums are one
    matrix-vector product, and the division is applied to the product. A row fully masked (all
    -inf, or all the mask's large negative value) fails the second test: the caller then runs the
    per-row form, which gives such rows what the nodes give them."""
    n = s.shape[-1]
    flat = s.reshape(-1, n)
    top = np.maximum.reduce(flat, axis=None)
    if not top <= _SAFE_TOP:  # (NaN fails too)
        return None
    np.exp(s, out=s)
    ones = _ONES.get((n, s.dtype))
    if ones is None:
        ones = _ONES[(n, s.dtype)] = np.ones(n, s.dtype)
    sums = np.matmul(flat, ones)
    if not np.minimum.reduce(sums, axis=None) >= _SAFE_SUM:
        return None
    y = np.matmul(s, v)
    if type(y) is not np.ndarray or y.shape[:-1] != s.shape[:-1]:
        return None
    y /= sums.reshape(s.shape[:-1] + (1,))
    return y


class HeadsAttention:
    """A :class:`DotProductAttention` that also does the exporters' head layout and scaling around
    it: each of q, k, v is transposed by its ``perms`` entry (a view: the batched products read the
    strided heads directly, no copy), the result by ``out_perm``; the scalar factors that multiplied
    q and k are in ``core.scale`` when they are constants, and are the step's last inputs when shape
    cones compute them per call (torch's TorchScript export scales q and k by ``1 / sqrt(sqrt(d))``
    computed from q's shape): ``divides`` says, per such input, whether q or k was divided by it.
    ``fallback`` (the original steps) runs for anything else: operands of another type than the
    constant factors' ``dtype`` or than a computed factor, ranks the perms do not fit, a mask that
    does not broadcast."""

    __slots__ = ("core", "perms", "out_perm", "dtype", "fallback", "divides")

    def __init__(self, core: DotProductAttention, perms, out_perm, dtype, fallback, divides=()):
        self.core, self.perms, self.out_perm, self.dtype, self.fallback = core, perms, out_perm, dtype, fallback
        self.divides = tuple(divides)

    def __call__(self, q, k, v, *rest):
        core = self.core
        mask = rest[0] if core.has_mask else None
        scale = core.scale
        if self.divides and type(q) is np.ndarray:
            for f, divide in zip(rest[len(rest) - len(self.divides):], self.divides):
                if type(f) is not np.ndarray or f.size != 1 or f.dtype != q.dtype:
                    return self.fallback(q, k, v, *rest)
                f = float(f.reshape(-1)[0])
                if divide:
                    if f == 0:
                        return self.fallback(q, k, v, *rest)
                    f = 1.0 / f
                scale = f if scale is None else scale * f
            if not np.isfinite(scale):
                return self.fallback(q, k, v, *rest)
        if self.dtype is None or (type(q) is np.ndarray and q.dtype == self.dtype):
            try:
                args = [a if p is None else a.transpose(p) for a, p in zip((q, k, v), self.perms)]
            except (AttributeError, ValueError):  # (not arrays, or ranks the perms do not fit)
                args = None
            y = None if args is None else core.attend(*args, mask, scale)
            if y is not None:
                if self.out_perm is None:
                    return y
                if y.ndim == len(self.out_perm):  # (contiguous, as the Transpose kernel returns it)
                    return np.ascontiguousarray(y.transpose(self.out_perm))
        return self.fallback(q, k, v, *rest)
