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

from ..registry import kernel
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


for _op, (_reducer, _input_since) in _REDUCERS.items():
    kernel(_op, since=1)(_make_reduce(_reducer, False))
    kernel(_op, since=_input_since)(_make_reduce(_reducer, True))


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
