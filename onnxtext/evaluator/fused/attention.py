"""Scaled dot-product attention as exporters write it, as one step (rules ``attention`` and
``attention_operands``)."""

from __future__ import annotations

from functools import partial

import numpy as np

from ..kernels.activation import row_max
from ..kernels.attention import softmax_product
from ..kernels.contrib.attention import attention_of_qkv
from .linear import tiled_bias

_sum = np.add.reduce  # (without np.sum's argument handling: ~2 us a call)
#: the score types softmax_product takes (dtype objects: comparing a dtype with np.float32 costs more)
_SOFTMAX_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


class DotProductAttention:
    """``softmax(q @ k * scale + mask) @ v`` over the last axis, with NaN probabilities (rows fully
    masked with -inf) set to 0 when ``nan_to_zero``; the scores are computed, masked, exponentiated
    and normalized in one buffer. ``fallback`` (the original steps) runs when the mask does not
    broadcast to the scores' shape or the inputs are not float arrays of one type."""

    __slots__ = ("scale", "nan_to_zero", "has_mask", "fallback", "mask_fits")

    def __init__(self, scale, nan_to_zero: bool, has_mask: bool, fallback):
        self.scale, self.nan_to_zero, self.has_mask, self.fallback = scale, nan_to_zero, has_mask, fallback
        self.mask_fits: set = set()  # (mask shape, scores shape) pairs found to broadcast without growing

    def __call__(self, q, k, v, mask=None):
        y = self.attend(q, k, v, mask)
        if y is None:
            return self.fallback(*((q, k, v) + ((mask,) if self.has_mask else ())))
        return y

    def attend(self, q, k, v, mask=None, scale=False, k_groups=None, v_groups=None):
        """The attention of these operands, or None when they are not what the step was built for
        (``scale``: the score factor of this call instead of :attr:`scale`, None for none).
        ``k_groups``/``v_groups``: ``(axis, g)`` when each head of k/v along ``axis`` stands for ``g``
        consecutive heads of q (grouped-query attention's repeated key/value heads), read as a
        broadcast instead of copies (see :func:`grouped_matmul`)."""
        if scale is False:
            scale = self.scale
        if type(q) is not np.ndarray or type(k) is not np.ndarray or type(v) is not np.ndarray:
            return None
        dt = q.dtype
        if dt.kind != "f" or k.dtype != dt or v.dtype != dt or q.ndim < 2 or k.ndim < 2:
            return None
        s = np.matmul(q, k) if k_groups is None else grouped_matmul(q, k, *k_groups)
        if type(s) is not np.ndarray or s.ndim < 1:
            return None
        if scale is not None:
            s *= dt.type(scale)
        if self.has_mask:
            if type(mask) is not np.ndarray or mask.dtype != dt:
                return None
            if (mask.shape, s.shape) not in self.mask_fits:
                if mask.ndim > s.ndim or any(m != 1 and m != d for m, d in zip(mask.shape[::-1], s.shape[::-1])):
                    return None
                if len(self.mask_fits) >= 64:
                    self.mask_fits.clear()
                self.mask_fits.add((mask.shape, s.shape))
            s += mask
        if s.size == 0:
            return None
        if v_groups is not None and (s.ndim != v.ndim or not 0 <= v_groups[0] < s.ndim - 2 or
                                     s.shape[v_groups[0]] != v.shape[v_groups[0]] * v_groups[1]):
            return None
        if dt in _SOFTMAX_TYPES:  # (float32/float64; s has q's type)
            y = softmax_product(s, v, None if v_groups is None else partial(grouped_matmul, axis=v_groups[0],
                                                                             groups=v_groups[1]))
            if y is not None:
                return y
            # (rows that need their own maximum: computed again, the usual way)
            s = np.matmul(q, k) if k_groups is None else grouped_matmul(q, k, *k_groups)
            if scale is not None:
                s *= s.dtype.type(scale)
            if self.has_mask:
                s += mask
        s -= row_max(s)
        np.exp(s, out=s)
        s /= _sum(s, axis=-1, keepdims=True)
        if self.nan_to_zero:
            np.copyto(s, 0, where=s != s)  # (NaN is the only value unequal to itself)
        return np.matmul(s, v) if v_groups is None else grouped_matmul(s, v, *v_groups)


def grouped_matmul(a, b, axis: int, groups: int):
    """``a @ repeat(b, groups, axis)`` without the copies (Llama/Mistral/Qwen's repeat_kv: each head
    of ``b`` is read by its ``groups`` consecutive heads of ``a``); None when the shapes do not fit
    (``axis`` must be a batch axis of the product, of ``groups`` times ``b``'s size in ``a``).

    When ``axis`` is the last batch axis (heads, then rows), the groups are folded into the rows:
    ``a`` seen as (..., heads of b, groups * rows, K) times ``b``, one plain batched product with
    taller matrices (a reshape of ``a``, a copy only when ``a`` is a strided view). Otherwise ``b``
    gets a broadcast axis, which numpy multiplies without BLAS batching (measured: 0.55x the time of
    repeat-then-multiply for the fold at (1, 8, 4, 128, 64) heads, 1.5x for the broadcast at
    (2, 2, 2, 16, 16))."""
    if a.ndim != b.ndim or not 0 <= axis < a.ndim - 2 or a.shape[axis] != b.shape[axis] * groups:
        return None
    if axis == a.ndim - 3:
        folded = a.reshape(a.shape[:axis] + (b.shape[axis], groups * a.shape[-2], a.shape[-1]))
        y = np.matmul(folded, b)
        return y.reshape(a.shape[:-1] + (y.shape[-1],))
    split = a.reshape(a.shape[:axis] + (b.shape[axis], groups) + a.shape[axis + 1:])
    y = np.matmul(split, np.expand_dims(b, axis + 1))
    return y.reshape(y.shape[:axis] + (-1,) + y.shape[axis + 2:])


class HeadsAttention:
    """A :class:`DotProductAttention` that also does the exporters' head layout and scaling around
    it: each of q, k, v is transposed by its ``perms`` entry (a view: the batched products read the
    strided heads directly, no copy), the result by ``out_perm``; the scalar factors that multiplied
    q and k are in ``core.scale`` when they are constants, and are the step's last inputs when shape
    cones compute them per call (torch's TorchScript export scales q and k by ``1 / sqrt(sqrt(d))``
    computed from q's shape): ``divides`` says, per such input, whether q or k was divided by it.
    ``fallback`` (the original steps) runs for anything else: operands of another type than the
    constant factors' ``dtype`` or than a computed factor, ranks the perms do not fit, a mask that
    does not broadcast, repeated heads that are not what :class:`RepeatedHeads` expects.

    ``repeats`` (for k and v): None, or a :class:`RepeatedHeads` when rule ``repeated_heads`` moved
    the operand's repeat_kv into the step (its views' sources are then the step's last inputs, k's
    before v's); the products then read each head once per group as a broadcast
    (:func:`grouped_matmul`)."""

    __slots__ = ("core", "perms", "out_perm", "dtype", "fallback", "divides", "repeats", "repeated", "extra", "plain")

    def __init__(self, core: DotProductAttention, perms, out_perm, dtype, fallback, divides=(),
                 repeats=(None, None)):
        self.core, self.perms, self.out_perm, self.dtype, self.fallback = core, perms, out_perm, dtype, fallback
        self.divides = tuple(divides)
        self.repeats = tuple(repeats)
        self.repeated = self.repeats != (None, None)
        self.extra = sum(r.count for r in self.repeats if r is not None)  # inputs after the factors
        # the usual step (no computed factors, no repeated heads, a known type: the only input after
        # v is the mask, if any) takes the short path of __call__ (about 2 us less per call)
        self.plain = not self.repeated and not self.divides and dtype is not None

    def __call__(self, q, k, v, *rest):
        if self.plain and type(q) is np.ndarray and q.dtype == self.dtype:
            pq, pk, pv = self.perms
            try:
                y = self.core.attend(q if pq is None else q.transpose(pq), k if pk is None else k.transpose(pk),
                                     v if pv is None else v.transpose(pv), rest[0] if rest else None)
            except (AttributeError, ValueError):  # (k or v not arrays, or ranks the perms do not fit)
                y = None
            if y is not None:
                out_perm = self.out_perm
                if out_perm is None:
                    return y
                if y.ndim == len(out_perm):  # (contiguous, as the Transpose kernel returns it)
                    return np.ascontiguousarray(y.transpose(out_perm))
            return self.fallback(q, k, v, *rest)
        core = self.core
        mask = rest[0] if core.has_mask else None
        scale = core.scale
        groups = [None, None]
        extra = self.extra
        if self.repeated:
            at = len(rest) - extra
            for role, x in ((0, k), (1, v)):
                repeat = self.repeats[role]
                if repeat is not None:
                    found = repeat.groups(x, rest[at:at + repeat.count])
                    perm = self.perms[role + 1]
                    if found is None or (perm is not None and (len(perm) != x.ndim or perm[found[0]] != found[0])):
                        return self.fallback(q, k, v, *rest)
                    groups[role] = found
                    at += repeat.count
        if self.divides and type(q) is np.ndarray:
            for f, divide in zip(rest[len(rest) - extra - len(self.divides):len(rest) - extra], self.divides):
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
            y = None if args is None else core.attend(*args, mask, scale, *groups)
            if y is not None:
                if self.out_perm is None:
                    return y
                if y.ndim == len(self.out_perm):  # (contiguous, as the Transpose kernel returns it)
                    return np.ascontiguousarray(y.transpose(self.out_perm))
        return self.fallback(q, k, v, *rest)


class RepeatedHeads:
    """Grouped-query attention's repeat_kv of one operand, as rule ``shaped_views`` left it: three
    :class:`~.shape_cone.ShapedView` steps, ``Unsqueeze`` (a new axis of one), ``Expand`` (that axis to
    the group size g) and ``Reshape`` (merging it into the heads before it), whose ``count`` sources
    (the values their target shapes are computed from) follow each other in ``sources``.

    :meth:`groups` gives ``(heads axis, g)`` when the three do repeat each head g times, read from
    the shapes the views produce on the first call for a tuple of shapes (what they produce depends on
    the data and the sources only through their shapes), and cached per that tuple."""

    __slots__ = ("views", "sizes", "count", "cache")

    def __init__(self, views, sizes):
        self.views, self.sizes = tuple(views), tuple(sizes)  # sizes: how many sources each view takes
        self.count = sum(sizes)
        self.cache: dict = {}

    def groups(self, x, sources):
        if type(x) is not np.ndarray:
            return None
        try:
            key = (x.shape,) + tuple(s.shape for s in sources)
        except AttributeError:
            return None
        found = self.cache.get(key, False)
        if found is False:
            if len(self.cache) >= 64:
                self.cache.clear()
            found = self.cache[key] = self._find(x, sources)
        return found

    def _find(self, x, sources):
        value, at = x, 0
        shapes = []
        for fn, size in zip(self.views, self.sizes):
            value = fn(value, *sources[at:at + size])
            if type(value) is not np.ndarray:
                return None
            shapes.append(value.shape)
            at += size
        unsqueezed, expanded, merged = shapes
        shape = x.shape
        if len(unsqueezed) != len(shape) + 1 or len(expanded) != len(unsqueezed) or len(merged) != len(shape):
            return None
        for axis in range(1, len(unsqueezed)):
            g = expanded[axis]
            if unsqueezed == shape[:axis] + (1,) + shape[axis:] and \
                    expanded == shape[:axis] + (g,) + shape[axis:] and \
                    merged == shape[:axis - 1] + (shape[axis - 1] * g,) + shape[axis:]:
                return axis - 1, g
        return None


class PackedQkvAttention:
    """com.microsoft Attention (onnxruntime's BERT fusion: one input times packed Q, K and V weights)
    with constant weights and bias, without past, attention bias or ``present`` (rule
    ``contrib_transformer``): the projection with float32 weights converted once and the bias added
    as a tile, then the kernel's own attention
    (:func:`~..kernels.contrib.attention.attention_of_qkv`); the same values as the kernel.
    ``fallback`` (the original step) runs for inputs that are not float32/float16 arrays of rank 3
    of the weights' width."""

    __slots__ = ("weights", "bias", "attrs", "fallback", "bias_tiles")

    def __init__(self, weights, bias, attrs, fallback):
        self.weights = weights.astype(np.float32)
        self.bias = None if bias is None else bias.astype(np.float32)
        self.attrs, self.fallback = attrs, fallback
        self.bias_tiles: dict = {}

    def __call__(self, x, *mask):
        if type(x) is not np.ndarray or (x.dtype != np.float32 and x.dtype != np.float16) or x.ndim != 3 or \
                x.shape[2] != self.weights.shape[0]:
            return self.fallback(x, *mask)
        mask_index = mask[0] if mask else None
        b, length, width = x.shape  # (a 2-D product: numpy's 3-D by 2-D matmul costs more)
        qkv = np.dot((x if x.dtype == np.float32 else x.astype(np.float32)).reshape(b * length, width),
                     self.weights).reshape(b, length, self.weights.shape[1])
        if self.bias is not None:
            qkv += tiled_bias(self.bias_tiles, self.bias, qkv.shape)
        a = self.attrs
        return attention_of_qkv(qkv, x.dtype, self.weights.shape[1], mask_index, None, None, a["num_heads"],
                                a.get("qkv_hidden_sizes"), a.get("unidirectional", 0),
                                a.get("mask_filter_value", -10000.0), a.get("scale", 0.0), False)[0]
