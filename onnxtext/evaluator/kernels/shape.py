"""Shape and layout kernels: reshaping, slicing, stacking, sorting and selecting elements (padding:
:mod:`.padding`).

Operators whose inputs moved between attributes and inputs across opsets (Reshape, Split, Slice,
Squeeze, Unsqueeze, Tile, TopK) register one kernel per form and share the implementation.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ... import dtypes
from ..limits import check_allocation
from ..registry import kernel


def _axis(axis: int, rank: int) -> int:
    """Normalize a possibly negative axis into [0, rank)."""
    axis = int(axis)
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _ints(values) -> list[int]:
    return np.asarray(values, dtype=np.int64).reshape(-1).tolist()


# --- Reshape, Shape, Size, Flatten, Squeeze, Unsqueeze, Expand, Transpose ---------------------

def _reshape(data, shape, allowzero=0):
    shape = _ints(shape)
    if not allowzero and 0 in shape:
        # a 0 copies the input dimension at the same position (unless allowzero says it is a real 0)
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


@kernel("Reshape", since=1)
def reshape_1(data, shape=(), consumed_inputs=None):
    return _reshape(data, shape)


@kernel("Reshape", since=5)
def reshape(data, shape, allowzero=0):
    return _reshape(data, shape, allowzero)


@kernel("Shape", since=1)
def shape_(data, start=0, end=None):
    dims = data.shape[start:end] if end is not None else data.shape[start:]
    return np.array(dims, dtype=np.int64)


@kernel("Size", since=1)
def size(data):
    return np.array(data.size, dtype=np.int64)


@kernel("Flatten", since=1)
def flatten(data, axis=1):
    axis = axis + data.ndim if axis < 0 else axis
    return data.reshape(math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))


def _squeeze(data, axes):
    if axes is None or len(axes) == 0:
        return data.reshape([d for d in data.shape if d != 1])
    return np.squeeze(data, axis=tuple(_axis(a, data.ndim) for a in _ints(axes)))


@kernel("Squeeze", since=1)
def squeeze_1(data, axes=None):
    return _squeeze(data, axes)


@kernel("Squeeze", since=13)
def squeeze(data, axes=None):
    return _squeeze(data, axes)


def _unsqueeze(data, axes):
    axes = _ints(axes)
    rank = data.ndim + len(axes)
    inserted = sorted(_axis(a, rank) for a in axes)
    dims = list(data.shape)
    for a in inserted:
        dims.insert(a, 1)
    return data.reshape(dims)


@kernel("Unsqueeze", since=1)
def unsqueeze_1(data, axes):
    return _unsqueeze(data, axes)


@kernel("Unsqueeze", since=13)
def unsqueeze(data, axes):
    return _unsqueeze(data, axes)


@kernel("Expand", since=8)
def expand(data, shape):
    out_shape = np.broadcast_shapes(data.shape, tuple(_ints(shape)))
    check_allocation(out_shape, data.dtype.itemsize, "Expand")
    return np.array(np.broadcast_to(data, out_shape))


@kernel("Transpose", since=1)
def transpose(data, perm=None):
    if type(data) is np.ndarray:  # (the method: np.transpose's dispatch costs ~0.5 us a call)
        return np.ascontiguousarray(data.transpose(perm) if perm else data.T)
    return np.ascontiguousarray(np.transpose(data, perm if perm else None))


# --- Concat, Split, Slice -------------------------------------------------------------------

@kernel("Concat", since=1)
def concat(*inputs, axis=1):
    arrays = [np.asarray(x) for x in inputs]
    return np.concatenate(arrays, axis=_axis(axis, arrays[0].ndim))


class ConcatChain:
    """Concat steps each extending the previous one's result (DenseNet: ``c1 = Concat(c0, a)``,
    ``c2 = Concat(c1, b)``...), sharing one buffer per run instead of copying ever longer prefixes.

    The first step of a run allocates the buffer at the final length seen on the previous run with
    the same shapes and returns a view of its prefix; each following step writes only its new
    inputs after that prefix and returns the longer prefix view. A prefix view along ``axis`` is
    contiguous when every dimension before ``axis`` is 1, the only case handled; anything else
    (first run, other shapes, a step extending a value that is not the latest prefix of the
    current buffer) runs the step's own kernel, so results never depend on this sharing. Earlier
    prefixes stay valid: later steps only write beyond them.
    """

    __slots__ = ("axis", "capacity", "_local")

    def __init__(self, axis):
        self.axis = axis
        self.capacity: dict[tuple, int] = {}  # shape of the first result -> final length along axis
        self._local = threading.local()

    def state(self):
        """This thread's run state (buffer, filled length, key, spare buffer): runs of one plan in
        several threads each have their own."""
        local = self._local
        if not hasattr(local, "buffer"):
            local.buffer = local.spare = local.key = None
            local.filled = 0
        return local


class ConcatLink:
    """The kernel of one Concat step of a :class:`ConcatChain` (``position`` 0 starts a run).

    ``parts`` (optional) gives per input either None (the input is a value, copied in) or a producer
    computing the value straight into its slice: ``part(arg, out)``, with ``part.output_shape(shape)``
    the shape it produces from an argument of ``shape`` (a prepared Conv whose only reader was the
    Concat). ``fallback(*inputs, **attrs)`` is the step's own kernel, run when the buffer cannot be used.
    """

    __slots__ = ("chain", "position", "parts", "fallback", "attrs", "_shapes")

    def __init__(self, chain, position, fallback, attrs, parts=None):
        self.chain, self.position = chain, position
        self.fallback, self.attrs = fallback, attrs
        self.parts = parts if parts and any(p is not None for p in parts) else None
        self._shapes: dict = {}

    def __call__(self, *inputs):
        chain = self.chain
        state = chain.state()
        if self.position == 0:
            return self._start(inputs, state)
        buf, first = state.buffer, inputs[0]
        if buf is None or type(first) is not np.ndarray or first.base is not buf or \
                first.shape[chain.axis] != state.filled or first.ctypes.data != buf.ctypes.data or \
                (self.parts and self.parts[0] is not None):
            return self._plain(inputs, state)
        axis = chain.axis
        shapes = self._shapes_of(inputs, buf.dtype, 1)
        if shapes is None or any(len(sh) != buf.ndim or sh[:axis] != buf.shape[:axis]
                                 or sh[axis + 1:] != buf.shape[axis + 1:] for sh in shapes):
            return self._plain(inputs, state)
        end = state.filled + sum(sh[axis] for sh in shapes)
        if end > buf.shape[axis]:
            return self._plain(inputs, state)
        self._write(buf, inputs, shapes, state.filled, 1)
        state.filled = end
        chain.capacity[state.key] = max(chain.capacity.get(state.key, 0), end)
        return buf[(slice(None),) * axis + (slice(0, end),)]

    def _shapes_of(self, inputs, dtype, start):
        """Shapes of the values of ``inputs[start:]`` (None when one is not an array of ``dtype``)."""
        shapes = []
        for i in range(start, len(inputs)):
            x = inputs[i]
            if type(x) is not np.ndarray or x.dtype != dtype:
                return None
            part = self.parts[i] if self.parts else None
            if part is None:
                shapes.append(x.shape)
                continue
            key = (i, x.shape)
            shape = self._shapes.get(key)
            if shape is None:
                shape = self._shapes[key] = part.output_shape(x.shape) or ()
            if not shape:
                return None
            shapes.append(shape)
        return shapes

    def _write(self, buf, inputs, shapes, at, start):
        lead = (slice(None),) * self.chain.axis
        axis = self.chain.axis
        for i, shape in zip(range(start, len(inputs)), shapes):
            where = buf[lead + (slice(at, at + shape[axis]),)]
            part = self.parts[i] if self.parts else None
            if part is None:
                where[...] = inputs[i]
            else:
                part(inputs[i], where)
            at += shape[axis]

    def _start(self, inputs, state):
        chain = self.chain
        state.buffer = state.key = None
        first = inputs[0]
        if type(first) is not np.ndarray or first.ndim == 0 or (self.parts and self.parts[0] is not None):
            return self._plain(inputs, state)
        axis = chain.axis = _axis(chain.axis, first.ndim)
        shapes = self._shapes_of(inputs, first.dtype, 0)
        if shapes is None or any(d != 1 for d in first.shape[:axis]) or \
                any(len(sh) != first.ndim or sh[:axis] != first.shape[:axis]
                    or sh[axis + 1:] != first.shape[axis + 1:] for sh in shapes):
            return self._plain(inputs, state)
        length = sum(sh[axis] for sh in shapes)
        shape = first.shape[:axis] + (length,) + first.shape[axis + 1:]
        state.key = (shape, first.dtype)
        capacity = chain.capacity.get(state.key, 0)
        chain.capacity[state.key] = max(capacity, length)
        if capacity <= length:
            return self._plain(inputs, state)
        full = shape[:axis] + (capacity,) + shape[axis + 1:]
        buf = state.spare
        # the previous run's buffer is reused when no value refers to it any more (a view holds a
        # reference to its base; here only the state and this function do): its pages are already
        # mapped, while a fresh multi-megabyte buffer costs a page fault per 4 KiB on first write
        if buf is None or buf.shape != full or buf.dtype != first.dtype or sys.getrefcount(buf) > 3:
            buf = state.spare = np.empty(full, first.dtype)
        self._write(buf, inputs, shapes, 0, 0)
        state.buffer, state.filled = buf, length
        return buf[(slice(None),) * axis + (slice(0, length),)]

    def _plain(self, inputs, state):
        y = self.fallback(*inputs, **self.attrs)
        chain = self.chain
        key = state.key
        if key is not None and type(y) is np.ndarray and y.shape[:chain.axis] == key[0][:chain.axis] and \
                y.shape[chain.axis + 1:] == key[0][chain.axis + 1:]:
            chain.capacity[key] = max(chain.capacity.get(key, 0), y.shape[chain.axis])
        return y


def _split(data, num_outputs, axis, split=None):
    axis = _axis(axis, data.ndim)
    dim = data.shape[axis]
    sizes = [] if split is None else _ints(split)
    if not sizes:
        # equal parts; when the dimension is not divisible the last chunk is smaller (Split-18)
        chunk = -(-dim // num_outputs)
        sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(num_outputs)]
    # (Python ints throughout: numpy scalars as offsets and slice bounds cost ~10 us on three parts)
    lead = (slice(None),) * axis
    outs = []
    begin = 0
    for size in sizes:
        end = begin + size
        outs.append(data[lead + (slice(begin, end),)].copy())
        begin = end
    return tuple(outs)


@kernel("Split", since=1, context=True)
def split_1(ctx, data, split_input=None, axis=0, split=None):
    # Split-1 accepted the sizes either as a second input or as an attribute
    return _split(data, ctx.num_outputs, axis, split_input if split_input is not None else split)


@kernel("Split", since=2, context=True)
def split_2(ctx, data, axis=0, split=None):
    return _split(data, ctx.num_outputs, axis, split)


@kernel("Split", since=13, context=True)
def split_13(ctx, data, split=None, axis=0, num_outputs=None):
    return _split(data, num_outputs or ctx.num_outputs, axis, split)


def _slice(data, starts, ends, axes=None, steps=None):
    return data[slice_index(data.shape, starts, ends, axes, steps)].copy()


def slice_index(shape, starts, ends, axes=None, steps=None) -> tuple:
    """The tuple of Python slices a Slice node takes from a tensor of ``shape`` (bounds clamped)."""
    ndim = len(shape)
    starts, ends = _ints(starts), _ints(ends)
    axes = (_ints(axes) if axes is not None else None) or list(range(len(starts)))
    steps = (_ints(steps) if steps is not None else None) or [1] * len(starts)
    index = [slice(None)] * ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, ndim)
        dim = shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            # with a negative step, clamping to -1 means "through index 0", which a Python slice
            # can only express with None (a literal -1 would wrap to the last element)
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            end = None if end < 0 else end
        index[axis] = slice(start, end, step)
    return tuple(index)


@kernel("Slice", since=1)
def slice_1(data, starts, ends, axes=None):
    return _slice(data, starts, ends, axes)


@kernel("Slice", since=10)
def slice_10(data, starts, ends, axes=None, steps=None):
    return _slice(data, starts, ends, axes, steps)


# --- Tile, Pad, CenterCropPad ----------------------------------------------------------------

@kernel("Tile", since=1)
def tile_1(data, tiles, axis):
    # Tile-1 repeated the whole tensor `tiles` times along one axis
    reps = [1] * data.ndim
    reps[_axis(int(np.asarray(axis).reshape(-1)[0]), data.ndim)] = int(np.asarray(tiles).reshape(-1)[0])
    return np.tile(data, reps)


@kernel("Tile", since=6)
def tile(data, repeats):
    reps = _ints(repeats)
    check_allocation([d * r for d, r in zip(data.shape, reps)] if len(reps) == data.ndim else [data.size, *reps],
                     data.dtype.itemsize, "Tile")
    return np.tile(data, reps)


# --- DepthToSpace, SpaceToDepth --------------------------------------------------------------

@kernel("DepthToSpace", since=1)
def depth_to_space(data, blocksize, mode="DCR"):
    n, c, h, w = data.shape
    b = blocksize
    if mode == "DCR":
        tmp = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        tmp = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(tmp).reshape(n, c // (b * b), h * b, w * b)


@kernel("SpaceToDepth", since=1)
def space_to_depth(data, blocksize, mode="DCR"):
    n, c, h, w = data.shape
    b = blocksize
    tmp = data.reshape(n, c, h // b, b, w // b, b)
    # DCR puts the block offsets outermost in the new depth, CRD puts the channel outermost
    tmp = tmp.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else tmp.transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(tmp).reshape(n, c * b * b, h // b, w // b)


# --- Constant generators: ConstantOfShape, EyeLike, Range, Trilu -----------------------------

@kernel("ConstantOfShape", since=9)
def constant_of_shape(shape, value=None):
    value = np.zeros(1, np.float32) if value is None else np.asarray(value)
    check_allocation(_ints(shape), value.dtype.itemsize, "ConstantOfShape")
    return np.full(_ints(shape), value.reshape(-1)[0], dtype=value.dtype)


@kernel("EyeLike", since=9)
def eye_like(data, dtype=None, k=0):
    np_type = data.dtype if dtype is None else dtypes.np_dtype(dtype)
    rows, cols = data.shape
    return np.eye(rows, cols, k=k, dtype=np_type)


@kernel("Range", since=11)
def range_(start, limit, delta, stash_type=1):
    out_type = np.asarray(start).dtype
    low_precision = out_type in (np.float16, dtypes.from_name("bfloat16").np)
    # stash_type=1 (float) computes float16/bfloat16 ranges in float32; otherwise in the type itself
    work = np.float32 if low_precision and stash_type == 1 else out_type
    # inputs are scalars by the spec, but function bodies (AffineGrid's) pass 1-element tensors
    s, l, d = (np.asarray(v).reshape(-1)[0].astype(work) for v in (start, limit, delta))
    if out_type.kind in "iu":
        count = max(-(-(int(l) - int(s)) // int(d)), 0)
    else:
        count = max(math.ceil((float(l) - float(s)) / float(d)), 0)
    check_allocation(count, np.dtype(work).itemsize, "Range")
    out = s + np.arange(count).astype(work) * d
    return out.astype(out_type)


@kernel("Trilu", since=14)
def trilu(data, k=None, upper=1):
    k = 0 if k is None else int(np.asarray(k))
    return np.triu(data, k) if upper else np.tril(data, k)


# --- ReverseSequence, Compress, NonZero, Unique, TopK, OneHot --------------------------------

@kernel("ReverseSequence", since=10)
def reverse_sequence(data, sequence_lens, batch_axis=1, time_axis=0):
    x = np.moveaxis(data, (batch_axis, time_axis), (0, 1))
    batch, steps = x.shape[:2]
    t = np.arange(steps)[None, :]
    lens = np.asarray(sequence_lens, dtype=np.int64)[:, None]
    # the first lens[b] steps are read backwards, the rest stays in place
    source = np.where(t < lens, lens - 1 - t, t)
    out = x[np.arange(batch)[:, None], source]
    return np.ascontiguousarray(np.moveaxis(out, (0, 1), (batch_axis, time_axis)))


@kernel("Compress", since=9)
def compress(data, condition, axis=None):
    cond = np.asarray(condition, dtype=bool).reshape(-1)
    if axis is None:
        return np.compress(cond, data.reshape(-1))
    return np.compress(cond, data, axis=_axis(axis, data.ndim))


@kernel("NonZero", since=9)
def non_zero(data):
    if data.ndim == 0:
        return np.zeros((0, int(bool(data))), dtype=np.int64)
    return np.array(np.nonzero(data), dtype=np.int64).reshape(data.ndim, -1)


@kernel("Unique", since=11)
def unique(data, axis=None, sorted=1):
    flat = data.reshape(-1) if axis is None else data
    axis_n = None if axis is None else _axis(axis, data.ndim)
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis_n)
    inverse = inverse.reshape(-1)
    if not sorted:
        # reorder the (sorted) uniques by first occurrence and remap the inverse indices
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=0 if axis_n is None else axis_n)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    i64 = np.int64
    return values, first.astype(i64), inverse.astype(i64), counts.astype(i64)


def _top_k(x, k, axis, largest):
    # results are always sorted: sorted=0 only allows any order, so sorted output is valid for it too
    axis = _axis(axis, x.ndim)
    k = int(np.asarray(k).reshape(-1)[0])
    n = x.shape[axis]
    if largest:
        # stable ascending sort of the reversed axis, read backwards: descending values with ties
        # broken by the lower original index first, without negating (which breaks unsigned ints)
        order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        order = (n - 1) - np.flip(order, axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    index = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, index, axis=axis), index.astype(np.int64)


@kernel("TopK", since=1)
def top_k_1(x, axis=-1, k=None):
    return _top_k(x, k, axis, True)


@kernel("TopK", since=10)
def top_k(x, k, axis=-1, largest=1, sorted=1):
    return _top_k(x, k, axis, largest)


@kernel("OneHot", since=9)
def one_hot(indices, depth, values, axis=-1):
    depth = int(np.asarray(depth).reshape(-1)[0])
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    rank = idx.ndim + 1
    axis = _axis(axis, rank)
    classes = np.arange(depth).reshape([depth] + [1] * (rank - 1 - axis))
    # out-of-range indices match no class, so their row is all "off"
    hot = np.expand_dims(idx, axis) == classes
    off, on = np.asarray(values).reshape(-1)[:2]
    return np.where(hot, on, off).astype(np.asarray(values).dtype)
