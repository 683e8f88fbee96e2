"""Indexing kernels: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter.

Scatter reductions use numpy's unbuffered ``ufunc.at`` so that duplicate indices accumulate (a plain
fancy-index assignment would keep only one of them).
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import kernel

_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _wrap_negative(indices, dim):
    indices = np.asarray(indices).astype(np.int64)
    return np.where(indices < 0, indices + dim, indices)


@kernel("Gather", since=1)
def gather(data, indices, axis=0):
    # take counts negative indices from the end and refuses any outside [-n, n), as ONNX says: no
    # wrapped copy of the indices (about 2 us a call on an embedding lookup); the array's method skips
    # np.take's dispatch
    if type(data) is np.ndarray:
        return data.take(indices, axis=_axis(axis, data.ndim))
    return np.take(data, indices, axis=_axis(axis, data.ndim))


@kernel("GatherElements", since=11)
def gather_elements(data, indices, axis=0):
    axis = _axis(axis, data.ndim)
    return np.take_along_axis(data, _wrap_negative(indices, data.shape[axis]), axis=axis)


#: index tuples up to which GatherND and ScatterND compute the row-major positions in Python (a list of
#: a few tuples costs about 1 us; the vectorized form is 5-6 numpy calls of about 1 us each)
_FEW_INDEX_TUPLES = 8


def _flat_positions(indices, dims, op: str) -> list:
    """The row-major position over the axes ``dims`` of each index tuple (the last axis of the integer
    array ``indices``), negatives counted from the end; IndexError for any outside, as the advanced
    indexing it replaces."""
    k = len(dims)
    positions = []
    for index in indices.reshape(-1, k).tolist():
        p = 0
        for i, d in zip(index, dims):
            if i < 0:
                i += d
            if not 0 <= i < d:
                raise IndexError(f"{op}: an index is outside the data's first {k} dimensions {list(dims)}")
            p = p * d + i
        positions.append(p)
    return positions


@kernel("GatherND", since=11)
def gather_nd(data, indices, batch_dims=0):
    indices = np.asarray(indices)
    if batch_dims == 0 and indices.ndim >= 1 and 1 <= indices.shape[-1] <= data.ndim:
        return _gather_nd_flat(data, indices)
    indices = indices.astype(np.int64)
    batch_shape = data.shape[:batch_dims]
    batch = int(np.prod(batch_shape, dtype=np.int64))
    k = indices.shape[-1]
    flat_data = data.reshape((batch,) + data.shape[batch_dims:])
    flat_idx = indices.reshape(batch, -1, k)
    dims = np.array(data.shape[batch_dims:batch_dims + k], dtype=np.int64)
    flat_idx = np.where(flat_idx < 0, flat_idx + dims, flat_idx)
    # one advanced index per indexed axis, plus the batch position broadcast against them
    picked = flat_data[(np.arange(batch)[:, None],) + tuple(flat_idx[..., i] for i in range(k))]
    out_shape = batch_shape + indices.shape[batch_dims:-1] + data.shape[batch_dims + k:]
    return picked.reshape(out_shape)


def _gather_nd_flat(data, indices):
    """GatherND without batch dimensions as one ``take`` of row-major positions: each index tuple
    becomes ``sum(i_j * stride_j)`` over the first k axes (one integer product), negatives counted
    from the end, anything outside the axes refused (IndexError) as the advanced indexing it
    replaces does (about 5 us instead of 25-30 on a mask lookup of 16 pairs)."""
    k = indices.shape[-1]
    dims = data.shape[:k]
    rows = data.reshape((-1,) + data.shape[k:])
    if indices.size <= _FEW_INDEX_TUPLES * k:  # (a few tuples: positions in Python)
        return np.take(rows, _flat_positions(indices, dims, "GatherND"), axis=0).reshape(
            indices.shape[:-1] + data.shape[k:])
    flat = indices.reshape(-1, k).astype(np.int64, copy=False)
    if flat.size:
        bounds = np.array(dims, dtype=np.int64)
        if flat.min() < 0:
            flat = np.where(flat < 0, flat + bounds, flat)
        if flat.min() < 0 or (flat >= bounds).any():
            raise IndexError(f"GatherND: an index is outside the data's first {k} dimensions {list(dims)}")
    strides = [1] * k
    for j in range(k - 2, -1, -1):
        strides[j] = strides[j + 1] * dims[j + 1]
    positions = flat @ np.array(strides, dtype=np.int64)
    return np.take(rows, positions, axis=0).reshape(indices.shape[:-1] + data.shape[k:])


def _scatter_elements(data, indices, updates, axis, reduction="none"):
    out = np.array(data, copy=True)
    axis = _axis(axis, data.ndim)
    indices = _wrap_negative(indices, data.shape[axis])
    # the full coordinate of every update: its own position, except along `axis`
    coords = list(np.indices(indices.shape, sparse=True))
    coords[axis] = indices
    coords = tuple(coords)
    if reduction == "none":
        out[coords] = updates
    else:
        _REDUCTIONS[reduction].at(out, coords, updates)
    return out


@kernel("Scatter", since=9)
def scatter(data, indices, updates, axis=0):
    return _scatter_elements(data, indices, updates, axis)


@kernel("ScatterElements", since=11)
def scatter_elements(data, indices, updates, axis=0, reduction="none"):
    return _scatter_elements(data, indices, updates, axis, reduction)


@kernel("ScatterND", since=11)
def scatter_nd(data, indices, updates, reduction="none"):
    out = np.array(data, copy=True)
    indices = np.asarray(indices)
    k = indices.shape[-1]
    if reduction == "none" and 0 < k <= out.ndim and indices.size <= _FEW_INDEX_TUPLES * k and \
            out.flags.c_contiguous and indices.dtype.kind in "iu":
        rest = out.shape[k:]
        n = indices.size // k
        updates = np.asarray(updates)
        if updates.size == n * math.prod(rest):  # (a few tuples: positions in Python)
            out.reshape((-1,) + rest)[_flat_positions(indices, out.shape[:k], "ScatterND")] = \
                updates.reshape((n,) + rest)
            return out
    indices = indices.astype(np.int64, copy=False)
    if indices.size and indices.min() < 0:  # (one reduction instead of a wrapped copy when none is negative)
        indices = np.where(indices < 0, indices + np.array(data.shape[:k], dtype=np.int64), indices)
    coords = tuple(indices[..., i] for i in range(k))
    if reduction == "none":
        out[coords] = updates
    else:
        _REDUCTIONS[reduction].at(out, coords, updates)
    return out


@kernel("TensorScatter", since=24)
def tensor_scatter(past_cache, update, write_indices=None, axis=-2, mode="linear"):
    axis = _axis(axis, past_cache.ndim)
    batch, seq, max_seq = update.shape[0], update.shape[axis], past_cache.shape[axis]
    starts = np.zeros(batch, np.int64) if write_indices is None else \
        np.asarray(write_indices, dtype=np.int64).reshape(batch)
    # cache position of every update step, per batch entry: shape (batch, seq)
    positions = starts[:, None] + np.arange(seq)[None, :]
    if mode == "circular":
        positions %= max_seq
    shape = [1] * update.ndim
    shape[0], shape[axis] = batch, seq
    positions = np.broadcast_to(positions.reshape(shape), update.shape)
    out = np.array(past_cache, copy=True)
    np.put_along_axis(out, positions, update, axis=axis)
    return out
