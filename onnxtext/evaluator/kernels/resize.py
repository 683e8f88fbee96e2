"""Resize (opsets 10, 11/13, 18, 19) and Upsample (7, 9) as separable per-axis resampling.

Every supported mode is separable: an output value is a weighted sum over a window of input positions
along each axis independently. So for each resized axis we compute a small table once, ``taps`` (input
indices, shape ``(out_len, width)``) and ``weights`` (same shape), and apply it with one ``np.take``
and a weighted sum over the window. The cost is a few vectorized passes over the tensor, independent
of the mode, with no per-output-pixel Python work. The output and each axis's gathered window are checked
against the evaluator's memory guard (:mod:`..limits`) before they are allocated.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..limits import check_allocation
from ..registry import kernel


def _source_coordinates(mode, out_len, in_len, scale, roi_start, roi_end):
    """x_original for every output index along one axis (coordinate_transformation_mode)."""
    x = np.arange(out_len, dtype=np.float32)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        # the integer output length differs from in_len*scale; shift so both ends stay symmetric
        adjustment = out_len / (in_len * scale)
        offset = in_len / 2 * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    if mode == "align_corners":
        # the suite's expected values use the fractional output length in_len*scale, not out_len
        # (they differ when scales, not sizes, are given: 4 * 0.6 = 2.4 vs 2)
        resized = in_len * scale
        return x * (in_len - 1) / (resized - 1) if out_len > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        if out_len > 1:
            return roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (out_len - 1)
        return np.full_like(x, 0.5 * (roi_start + roi_end) * (in_len - 1))
    raise ValueError(f"unsupported coordinate_transformation_mode {mode!r}")


def _nearest_index(coords, nearest_mode):
    if nearest_mode == "round_prefer_floor":
        return np.ceil(coords - 0.5)
    if nearest_mode == "round_prefer_ceil":
        return np.floor(coords + 0.5)
    if nearest_mode == "floor":
        return np.floor(coords)
    if nearest_mode == "ceil":
        return np.ceil(coords)
    raise ValueError(f"unsupported nearest_mode {nearest_mode!r}")


def _linear_kernel(t):
    return np.clip(1 - np.abs(t), 0, 1)


def _cubic_kernel(t, a):
    """Keys' cubic convolution kernel with coefficient ``a`` (zero outside |t| < 2)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _axis_table(coords, in_len, mode, scale, antialias, cubic_coeff_a, exclude_outside):
    """(taps, weights) of one axis for the linear/cubic filters, shape (out_len, width) each."""
    radius = 1 if mode == "linear" else 2
    # antialiasing stretches the filter by 1/scale when downsampling, widening the window
    stretch = min(scale, 1.0) if antialias else 1.0
    start = math.floor(-radius / stretch) + 1
    width = 2 - 2 * start
    base = np.floor(coords)
    taps = base[:, None] + np.arange(start, start + width)[None, :]
    distance = (taps - coords[:, None]) * stretch
    weights = _linear_kernel(distance) if mode == "linear" else _cubic_kernel(distance, cubic_coeff_a)
    inside = (taps >= 0) & (taps < in_len)
    if exclude_outside:
        weights = np.where(inside, weights, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    weights = weights / np.where(total == 0, 1, total)
    # taps outside the input read the edge value (unless excluded, when their weight is 0)
    return np.clip(taps, 0, in_len - 1).astype(np.int64), weights


def _work_dtype(dtype):
    # float32 and narrower floats interpolate in float32; doubles and integers in float64
    return np.float32 if dtype.kind == "f" and dtype.itemsize <= 4 or dtype.kind == "V" else np.float64


def _resample(x, out_shape, scales, mode, coordinate_mode="half_pixel", nearest_mode="round_prefer_floor",
              cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, antialias=0, roi=None):
    """Resize ``x`` to ``out_shape``; ``scales`` (per axis) drive the coordinate transform."""
    out_dtype = x.dtype
    work_dtype = x.dtype if mode == "nearest" else np.dtype(_work_dtype(x.dtype))
    check_allocation(out_shape, work_dtype.itemsize, "Resize")  # before anything of that size is allocated
    outside = np.zeros(out_shape, dtype=bool) if coordinate_mode == "tf_crop_and_resize" else None
    work = x if mode == "nearest" else x.astype(work_dtype)
    axes = list(enumerate(zip(x.shape, out_shape, scales)))
    # nearest picks are exact in any order: the last axis first, while the array is smallest (repeating
    # single elements costs more per element than repeating whole rows)
    for axis, (in_len, out_len, scale) in axes[::-1] if mode == "nearest" else axes:
        if in_len == out_len and scale == 1 and coordinate_mode != "tf_crop_and_resize":
            continue
        start, end = (roi[axis], roi[axis + x.ndim]) if roi is not None else (0.0, 1.0)
        if mode == "nearest" and outside is None:
            index, factor = _nearest_indices(coordinate_mode, nearest_mode, out_len, in_len, float(np.float32(scale)),
                                             float(np.float32(start)), float(np.float32(end)))
            work = _nearest_axis(work, axis, index, factor)
            continue
        # float32 coordinates, like the float32 scales: 3.5 / 0.7f must be exactly 5 (a nearest tie),
        # not 5.00000009 as in float64, to pick the same pixels as onnxruntime
        coords = _source_coordinates(coordinate_mode, out_len, in_len, np.float32(scale), np.float32(start),
                                     np.float32(end)).astype(np.float64)
        if outside is not None:
            bad = (coords < 0) | (coords > in_len - 1)
            shape = [1] * x.ndim
            shape[axis] = out_len
            outside |= bad.reshape(shape)
        if mode == "nearest":
            work = np.take(work, np.clip(_nearest_index(coords, nearest_mode), 0, in_len - 1).astype(np.int64),
                           axis=axis)
        else:
            taps, weights = _axis_table(coords, in_len, mode, scale, antialias, cubic_coeff_a, exclude_outside)
            # the window gathered for this axis: out_len x taps wide (antialiased downscaling has wide taps)
            check_allocation(work.shape[:axis] + taps.shape + work.shape[axis + 1:], work.dtype.itemsize, "Resize")
            gathered = np.take(work, taps, axis=axis)
            shape = [1] * gathered.ndim
            shape[axis], shape[axis + 1] = weights.shape
            work = (gathered * weights.reshape(shape).astype(work.dtype)).sum(axis=axis + 1)
    if outside is not None:
        work = np.array(work, copy=True)
        work[outside] = extrapolation_value
    if out_dtype.kind in "iu" and mode != "nearest":
        # integer results truncate toward zero (as onnxruntime's and onnx.reference's casts do)
        info = np.iinfo(out_dtype)
        work = np.clip(np.trunc(work), info.min, info.max)
    return np.asarray(work).astype(out_dtype, copy=False)


@functools.lru_cache(maxsize=256)
def _nearest_indices(coordinate_mode, nearest_mode, out_len, in_len, scale, start, end):
    """(input index per output position, read-only; the factor ``f`` when the pick repeats every input
    ``f`` times in order, else 0) of one axis of a nearest Resize, worked out once per geometry."""
    coords = _source_coordinates(coordinate_mode, out_len, in_len, np.float32(scale), np.float32(start),
                                 np.float32(end)).astype(np.float64)
    index = np.clip(_nearest_index(coords, nearest_mode), 0, in_len - 1).astype(np.int64)
    index.flags.writeable = False
    factor = out_len // in_len
    repeats = factor > 1 and out_len == factor * in_len and np.array_equal(index, np.arange(out_len) // factor)
    return index, factor if repeats else 0


def _nearest_axis(work, axis, index, factor):
    """``np.take(work, index, axis)``; an integer upsampling (``factor``: YOLO's and FPNs' 2x nearest
    upsampling) is one ``np.repeat`` over a 3-D view instead: a 2x upsample of 2x256x10x10, with the
    last axis first, took 165 against 208 us, other processes running."""
    if factor and work.flags.c_contiguous:
        n = work.shape[axis]
        lines = work.reshape(math.prod(work.shape[:axis]), n, -1)
        return np.repeat(lines, factor, axis=1).reshape(work.shape[:axis] + (n * factor,) + work.shape[axis + 1:])
    return np.take(work, index, axis=axis)


def _floor_size(in_len, scale):
    # float32 product, as the scales are float32 (floor(10 * 0.7f) must be 7, not 6)
    return int(np.floor(np.float32(in_len) * np.float32(scale)))


@kernel("Resize", since=11)
def resize(x, roi=None, scales=None, sizes=None, mode="nearest", coordinate_transformation_mode="half_pixel",
           nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0,
           antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    rank = x.ndim
    axes = list(range(rank)) if not axes else [a + rank if a < 0 else a for a in axes]
    scales = None if scales is None or np.asarray(scales).size == 0 else np.asarray(scales, np.float32)
    sizes = None if sizes is None or np.asarray(sizes).size == 0 else np.asarray(sizes, np.int64)
    full_roi = None
    if coordinate_transformation_mode == "tf_crop_and_resize" and roi is not None and np.asarray(roi).size:
        roi = np.asarray(roi, np.float64).reshape(-1)
        full_roi = np.concatenate([np.zeros(rank), np.ones(rank)])
        for i, a in enumerate(axes):
            full_roi[a], full_roi[a + rank] = roi[i], roi[i + len(axes)]
    out_shape = list(x.shape)
    axis_scales = [1.0] * rank
    if scales is not None:
        for a, s in zip(axes, scales):
            extent = full_roi[a + rank] - full_roi[a] if full_roi is not None else 1.0
            out_shape[a] = _floor_size(x.shape[a] * extent, s) if full_roi is not None else \
                _floor_size(x.shape[a], s)
            axis_scales[a] = float(s)
    elif sizes is not None:
        if keep_aspect_ratio_policy != "stretch":
            ratios = [sizes[i] / x.shape[a] for i, a in enumerate(axes)]
            common = min(ratios) if keep_aspect_ratio_policy == "not_larger" else max(ratios)
            for a in axes:
                out_shape[a] = int(math.floor(common * x.shape[a] + 0.5))  # round half up
                axis_scales[a] = common
        else:
            for a, size in zip(axes, sizes):
                out_shape[a] = int(size)
                axis_scales[a] = int(size) / x.shape[a]
    else:
        raise ValueError("Resize needs either scales or sizes")
    return _resample(x, out_shape, axis_scales, mode, coordinate_transformation_mode, nearest_mode,
                     cubic_coeff_a, exclude_outside, extrapolation_value, antialias, full_roi)


def _resize_asymmetric(x, scales, mode):
    """Resize-10 / Upsample: asymmetric coordinates; nearest floors when upsampling, ceils when downsampling."""
    scales = [float(s) for s in np.asarray(scales, np.float32).reshape(-1)]
    out_shape = [_floor_size(d, s) for d, s in zip(x.shape, scales)]
    if mode == "nearest":
        check_allocation(out_shape, x.dtype.itemsize, "Resize")
        out = x
        for axis, (in_len, out_len, s) in enumerate(zip(x.shape, out_shape, scales)):
            coords = np.arange(out_len, dtype=np.float32) / np.float32(s)
            index = np.ceil(coords) if s < 1 else np.floor(coords)
            out = np.take(out, np.clip(index, 0, in_len - 1).astype(np.int64), axis=axis)
        return out
    return _resample(x, out_shape, scales, "linear", "asymmetric")


@kernel("Resize", since=10)
def resize_10(x, scales, mode="nearest"):
    return _resize_asymmetric(x, scales, mode)


@kernel("Upsample", since=7)
def upsample_7(x, mode="nearest", scales=()):
    return _resize_asymmetric(x, scales, "linear" if mode in ("linear", "bilinear") else mode)


@kernel("Upsample", since=9)
def upsample_9(x, scales, mode="nearest"):
    return _resize_asymmetric(x, scales, "linear" if mode in ("linear", "bilinear") else mode)
