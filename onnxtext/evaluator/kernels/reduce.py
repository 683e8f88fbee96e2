"""Reduction kernels: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin.

``axes`` is an attribute in old versions and an optional input in new ones (ReduceSum from 13, the
others from 18). One kernel serves both forms: the attribute arrives as the ``axes`` keyword, the
input as the second positional argument. Without axes every axis is reduced, unless
``noop_with_empty_axes`` is set: then the reduction is over the empty set of axes, i.e. each element
is reduced alone (ReduceSumSquare gives x*x), exactly numpy's ``axis=()``.

Reducing an empty set yields the identity element (0 for sums, 1 for products, -inf / the type's
lowest value for max, +inf / its highest for min, -inf for the log-sums). Float16 and the ml_dtypes
floats accumulate in float32; integer sums keep their type (numpy would widen them).
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import kernel, prepares
from .cast import is_ml_dtype


def _axes(x, axes, noop_with_empty_axes):
    """Normalized axes tuple for numpy (``()`` reduces nothing)."""
    if axes is not None:
        axes = np.asarray(axes, dtype=np.int64).reshape(-1)
    if axes is None or axes.size == 0:
        return () if noop_with_empty_axes else tuple(range(x.ndim))
    return tuple(sorted({int(a) % x.ndim for a in axes}))


def _accumulate_dtype(x):
    """float16 / bfloat16 / float8 accumulate in float32; everything else in its own type."""
    if x.dtype == np.float16 or is_ml_dtype(x.dtype):
        return np.dtype(np.float32)
    return x.dtype


def _lowest(dtype):
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def _highest(dtype):
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


def _sum(x, axis, keepdims):
    # (the ufunc's reduce: np.sum's argument handling costs more than summing a small tensor)
    return np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=_accumulate_dtype(x))


def _mean(x, axis, keepdims):
    count = math.prod(x.shape[a] for a in axis)
    total = np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=_accumulate_dtype(x))
    if x.dtype.kind in "iu":
        # Integer mean: integer division truncating toward zero, like the C++ kernels.
        return np.trunc(total / max(count, 1)).astype(x.dtype) if count else total
    return total / count if count else np.full_like(total, np.nan)  # (the run silences float warnings)


def _max(x, axis, keepdims):
    work = x.astype(np.float32) if is_ml_dtype(x.dtype) else x
    return np.maximum.reduce(work, axis=axis, keepdims=keepdims, initial=_lowest(work.dtype))


def _min(x, axis, keepdims):
    work = x.astype(np.float32) if is_ml_dtype(x.dtype) else x
    return np.minimum.reduce(work, axis=axis, keepdims=keepdims, initial=_highest(work.dtype))


def _prod(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=_accumulate_dtype(x))


def _sum_square(x, axis, keepdims):
    work = x.astype(_accumulate_dtype(x), copy=False)
    return np.sum(work * work, axis=axis, keepdims=keepdims)


def _l1(x, axis, keepdims):
    return np.sum(np.abs(x), axis=axis, keepdims=keepdims, dtype=_accumulate_dtype(x))


def _l2(x, axis, keepdims):
    work = x.astype(_accumulate_dtype(x), copy=False)
    if work.dtype.kind in "iu":
        work = work.astype(np.float64)
    return np.sqrt(np.sum(work * work, axis=axis, keepdims=keepdims))


def _log_sum(x, axis, keepdims):
    work = x.astype(np.float64) if x.dtype.kind in "iu" else x.astype(_accumulate_dtype(x), copy=False)
    with np.errstate(all="ignore"):
        return np.log(np.sum(work, axis=axis, keepdims=keepdims))


def _log_sum_exp(x, axis, keepdims):
    work = x.astype(np.float64) if x.dtype.kind in "iu" else x.astype(_accumulate_dtype(x), copy=False)
    peak = np.maximum.reduce(work, axis=axis, keepdims=True, initial=-np.inf)
    # Shift by the maximum for stability; an all -inf (or empty) slice keeps shift 0 to avoid inf - inf.
    peak = np.where(np.isfinite(peak), peak, 0)
    with np.errstate(all="ignore"):
        out = np.log(np.sum(np.exp(work - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


_REDUCERS = {
    "ReduceSum": (_sum, 13), "ReduceMean": (_mean, 18), "ReduceMax": (_max, 18), "ReduceMin": (_min, 18),
    "ReduceProd": (_prod, 18), "ReduceSumSquare": (_sum_square, 18), "ReduceL1": (_l1, 18),
    "ReduceL2": (_l2, 18), "ReduceLogSum": (_log_sum, 18), "ReduceLogSumExp": (_log_sum_exp, 18),
}


def _make_reduce(reducer, axes_as_input):
    if axes_as_input:
        def reduce(data, axes=None, keepdims=1, noop_with_empty_axes=0):
            axis = _axes(data, axes, noop_with_empty_axes)
            return np.asarray(reducer(data, axis, bool(keepdims))).astype(data.dtype, copy=False)
    else:
        def reduce(data, axes=None, keepdims=1, **_legacy):  # axes attribute; absent means all axes
            axis = _axes(data, axes, 0)
            return np.asarray(reducer(data, axis, bool(keepdims))).astype(data.dtype, copy=False)
    reduce.__name__ = reducer.__name__.strip("_")
    return reduce


_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


def _prepare_reduce(plain, reducer, axes_as_input):
    """The prepared form of a ReduceSum/Mean/Max/Min kernel (``plain``) whose axes are an attribute or a
    constant input: float32/float64 data reduced by the ufunc's own ``reduce`` over axes normalized once
    per rank, without the plain kernel's per-call axes handling (ReduceMean of 4x16 floats: about a
    third of the plain kernel's 3 us); other data types go to the plain kernel."""
    ufunc, initial = {_sum: (np.add, None), _mean: (np.add, None), _max: (np.maximum, -np.inf),
                      _min: (np.minimum, np.inf)}[reducer]
    mean = reducer is _mean

    def prepare(attrs, constants):
        keepdims = bool(attrs.get("keepdims", 1))
        if axes_as_input:
            noop = attrs.get("noop_with_empty_axes", 0)
            axes = constants[1] if len(constants) > 1 else None
            if len(constants) > 1 and axes is None:
                return None  # axes computed at run time (or an empty name): the plain kernel
            options = dict(keepdims=attrs.get("keepdims", 1), noop_with_empty_axes=noop)
        else:
            noop, axes = 0, attrs.get("axes")
            options = dict(attrs)
        by_rank: dict = {}
        counts: dict = {}  # (shape, dtype) -> the number of values per mean as a 0-d array of the dtype

        def run(data, *axes_input):
            if data.dtype != _FLOAT32 and data.dtype != _FLOAT64:
                return plain(data, *axes_input, **options)
            axis = by_rank.get(data.ndim)
            if axis is None:
                axis = by_rank[data.ndim] = _axes(data, axes, noop)
                if len(axis) == data.ndim and axis:
                    by_rank[data.ndim] = axis = None  # every axis: numpy's fastest form of it
            if mean:
                count = counts.get((data.shape, data.dtype))
                if count is None:
                    if len(counts) > 16:
                        counts.clear()
                    n = math.prod(data.shape if axis is None else (data.shape[a] for a in axis))
                    count = counts[(data.shape, data.dtype)] = np.array(n, data.dtype) if n else False
                if count is False:
                    return plain(data, *axes_input, **options)
                total = ufunc.reduce(data, axis=axis, keepdims=keepdims)
                if type(total) is np.ndarray:  # (the plain kernel's total / count: the count converted
                    return np.divide(total, count, out=total)  # to the dtype, once instead of per call)
                return np.asarray(total / count)
            if initial is None:
                return np.asarray(ufunc.reduce(data, axis=axis, keepdims=keepdims))
            return np.asarray(ufunc.reduce(data, axis=axis, keepdims=keepdims, initial=initial))

        return run

    return prepare


for _op, (_reducer, _input_since) in _REDUCERS.items():
    _legacy_kernel = kernel(_op, since=1)(_make_reduce(_reducer, False))
    _input_kernel = kernel(_op, since=_input_since)(_make_reduce(_reducer, True))
    if _reducer in (_sum, _mean, _max, _min):
        prepares(_legacy_kernel)(_prepare_reduce(_legacy_kernel, _reducer, False))
        prepares(_input_kernel)(_prepare_reduce(_input_kernel, _reducer, True))


def _arg_extreme(find, x, axis, keepdims, select_last_index):
    axis = axis % x.ndim if x.ndim else 0
    if select_last_index:
        last = x.shape[axis] - 1
        idx = last - find(np.flip(x, axis), axis=axis)
    else:
        idx = find(x, axis=axis)
    if keepdims:
        idx = np.expand_dims(idx, axis)
    return np.asarray(idx, dtype=np.int64)


@kernel("ArgMax", since=1)
def arg_max(data, axis=0, keepdims=1, select_last_index=0):
    return _arg_extreme(np.argmax, data, axis, keepdims, select_last_index)


@kernel("ArgMin", since=1)
def arg_min(data, axis=0, keepdims=1, select_last_index=0):
    return _arg_extreme(np.argmin, data, axis, keepdims, select_last_index)
