"""Pooling kernels: MaxPool, AveragePool, LpPool, their Global forms, MaxRoiPool and MaxUnpool.

A box-window max or sum is separable: it is reduced one spatial axis at a time (K1 + K2 passes
instead of K1 * K2 for a 2-D window), each pass a ufunc call per tap over strided views covering
every output position at once. No padded copy is made: a tap only combines the positions where it
falls inside the input (the same as reading -inf or 0 padding). When the axis length is the stride
times the output length, a tap is one view over the whole array (see :func:`_flat_pass`), so small
images do not cost one loop per row; on narrow images a 3-wide window padded by one runs as two
contiguous calls with copied line ends (:func:`_run_unit3`); a unit-stride max over 7 taps or more
(YOLO's SPP pools) combines doubling windows, ``log2 k + 1`` contiguous calls (:func:`_run_doubling`). MaxPool's Indices output needs the winning tap, so it keeps a
loop over the kernel taps on a padded copy. The divisor of an average is a per-axis count of the
taps inside the counted region.

One kernel per operator covers every version: attributes that older versions lack (dilations,
ceil_mode, storage_order, count_include_pad) take their neutral value from the signature.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..registry import kernel
from .conv import crop_spatial, pad_input, scratch, spatial_geometry


def _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode):
    """Strides, dilations, pads and output shape; the end padding is grown to hold ceil-mode windows."""
    return _geometry_of(x.shape[2:], tuple(kernel_shape), tuple(strides or ()), tuple(dilations or ()),
                        tuple(pads or ()), auto_pad, bool(ceil_mode))


@functools.lru_cache(maxsize=256)
def _geometry_of(in_shape, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode):
    nd = len(kernel_shape)
    strides = strides or (1,) * nd
    dilations = dilations or (1,) * nd
    begin, end, out = spatial_geometry(in_shape, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    end_full = tuple(max(e, (o - 1) * s + (k - 1) * d + 1 - i - b)
                     for e, o, s, k, d, i, b in zip(end, out, strides, kernel_shape, dilations, in_shape, begin))
    return strides, dilations, tuple(begin), tuple(end), end_full, tuple(out)


def _taps(xp, kernel_shape, strides, dilations, out_shape):
    """Yield (tap, view) for every kernel tap: view[..., o] = xp[..., o * stride + tap * dilation]."""
    for tap in np.ndindex(*kernel_shape):
        index = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                      for k, d, o, s in zip(tap, dilations, out_shape, strides))
        yield tap, xp[(Ellipsis,) + index]


def _window_reduce(x, ufunc, identity, kernel_shape, strides, dilations, begin, out_shape):
    """A max or sum over every pooling window of ``x`` (N, C, *spatial), padding taps left out.

    Box windows are separable: the K1 taps of the first spatial axis are reduced, then the K2 taps
    of the next axis of that result... (K1 + K2 passes instead of K1 * K2). No padded copy of the
    input is made: a tap only combines the output positions where it falls inside the input, which
    for a max (padding is -inf) and a sum (padding is 0) is the same as reading the padding.
    Intermediate passes go to scratch buffers, the last one to the fresh result. The passes, their
    views and the positions to redo are worked out once per geometry (:func:`_passes`).
    """
    passes = _passes(x.shape, x.flags.c_contiguous, tuple(kernel_shape), tuple(strides), tuple(dilations),
                     tuple(begin), tuple(out_shape), ufunc is np.maximum)
    current = x
    last = len(passes) - 1
    for i, (run, shape, args) in enumerate(passes):
        dst = np.empty(shape, x.dtype) if i == last else scratch(shape, x.dtype, _SLOTS[i % 2])
        run(current, dst, ufunc, identity, *args)
        current = dst
    return current.copy() if current is x else current  # (no spatial axis at all)


_SLOTS = ("pool_a", "pool_b")

# _run_unit3 replaces _flat_pass's edge recombinations by copies but writes one more full-size
# array; measured (cold caches, 3x3 s1 p1 max/sum) 12-25% faster on 6x6 to 14x14 images (832x6x6,
# 1024x7x7, 512x13x13, 128x7x7), neutral to 5-15% slower on 27x27 and 28x28 ones
_UNIT3_MAX_WIDTH = 16


# unit-stride max windows of at least this many taps take the doubling pass (_run_doubling):
# benchmarks/pool_doubling.py (float32, one thread, calls alternating, other processes running):
# 9 and 13 taps 0.24-0.46x the time of the per-tap passes (YOLOv5's SPP pools at 13x13 and 20x20), 7
# taps at 56x56 0.86-0.89x; 5 taps 0.87-0.97x on 10x10 and 13x13 images but 1.14-1.75x on 20x20 and
# 40x40 ones (the padded copy costs more than the one or two passes it saves there)
_DOUBLING_MIN_TAPS = 7


@functools.lru_cache(maxsize=256)
def _passes(shape, contiguous, kernel_shape, strides, dilations, begin, out_shape, idempotent=False):
    """``[(run, result shape, run's arguments)]``: one pass per spatial axis whose window is not 1 wide
    (at least one, so the result is always a fresh array). ``idempotent``: the reduction is a max, so
    overlapping partial windows may be combined (:func:`_run_doubling`)."""
    nd = len(kernel_shape)
    geometry = list(zip(kernel_shape, strides, dilations, begin, out_shape))
    todo = [i for i, (k, s, d, b, o) in enumerate(geometry)
            if not (k == 1 and s == 1 and b == 0 and o == shape[len(shape) - nd + i])]
    if not todo and nd:
        todo = [nd - 1]
    passes = []
    for i in todo:
        axis = len(shape) - nd + i
        k, s, d, b, o = geometry[i]
        n = shape[axis]
        dst_shape = shape[:axis] + (o,) + shape[axis + 1:]
        if idempotent and k >= _DOUBLING_MIN_TAPS and s == 1 and d == 1:
            outer, row = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
            passes.append((_run_doubling, dst_shape, (outer, n, row, b, max(0, o + k - 1 - n - b), k, o)))
        elif (contiguous or passes) and k == 3 and s == 1 and d == 1 and b == 1 and o == n >= 3 and \
                shape[-1] <= _UNIT3_MAX_WIDTH:
            passes.append((_run_unit3, dst_shape, (math.prod(shape[axis + 1:]), math.prod(shape[:axis]), n)))
        elif (contiguous or passes) and n == o * s and 2 * len(_bad_positions(n, o, k, s, d, b)) <= o + 1:
            passes.append((_run_flat, dst_shape, _flat_pass(shape, axis, k, s, d, b, o)))
        else:
            passes.append((_run_strided, dst_shape, _strided_pass(shape, axis, k, s, d, b, o)))
        shape = dst_shape
    return tuple(passes)


def _tap_offsets(k, d, b):
    return [t * d - b for t in range(k)]


def _strided_pass(shape, axis, k, s, d, b, o):
    """``dst[.., o, ..] = ufunc`` over the taps ``src[.., o * s + t * d - b, ..]`` inside ``src``.

    Each tap is one strided view covering the output positions where it is inside the input; taps
    inside for every position go first (the first two straight into ``dst``), the others update
    their sub-range in place. Returns (source indices of the first taps, (destination, source)
    indices of the updates).
    """
    n = shape[axis]
    lead = (slice(None),) * axis
    full, partial = [], []
    for off in _tap_offsets(k, d, b):
        lo = max(0, -(off // s))  # first output whose tap o * s + off is >= 0 (ceil(-off / s))
        hi = min(o, (n - 1 - off) // s + 1) if n - 1 - off >= 0 else 0
        if hi <= lo:
            continue
        start = lo * s + off
        index = lead + (slice(start, start + (hi - lo - 1) * s + 1, s),)
        (full if lo == 0 and hi == o else partial).append((lead + (slice(lo, hi),), index))
    first = tuple(index for _, index in full[:2])
    return first, tuple(full[2:] + partial)


def _run_strided(src, dst, ufunc, identity, first, updates):
    if first:
        _combine(ufunc, [src[index] for index in first], dst)
    else:  # every window reaches outside the input: start from the padding value
        dst.fill(identity)
    for where, index in updates:
        target = dst[where]
        ufunc(target, src[index], out=target)


@functools.lru_cache(maxsize=256)
def _bad_positions(n, o, k, s, d, b):
    """``[(j, offsets inside the input)]`` for the output positions whose window leaves the input."""
    offsets = _tap_offsets(k, d, b)
    bad = []
    for j in range(o):
        inside = tuple(off for off in offsets if 0 <= j * s + off < n)
        if len(inside) < len(offsets):
            bad.append((j, inside))
    return tuple(bad)


def _flat_pass(shape, axis, k, s, d, b, o):
    """The pass of :func:`_strided_pass` as a few long calls when the axis length is ``s * o``.

    With ``row`` the flat stride of ``axis`` and ``n == o * s``, output position ``q`` (counting the
    axis and every axis before it as one index) reads the block ``q * s + off`` of ``row`` elements
    for tap offset ``off``: each tap is one view over (nearly) the whole array, whatever the other
    dimensions (small 14x14 or 7x7 images would otherwise mean thousands of short rows). Positions
    whose window leaves the input along ``axis`` read a neighbouring row or image, or are not
    covered: they are recomputed afterwards from their in-range taps only. Returns the arguments
    of :func:`_run_flat`.
    """
    n = shape[axis]
    row = math.prod(shape[axis + 1:])
    offsets = _tap_offsets(k, d, b)
    blocks = math.prod(shape[:axis]) * o  # output positions, the axis and the ones before it merged
    lo = max(0, max(-(off // s) for off in offsets))  # first position whose taps all lie in the array
    hi = min(blocks, min((blocks * s - 1 - off) // s for off in offsets) + 1)
    # blocks of row elements (plain 1-D views when row == 1: one long loop, not many of length 1)
    src_rows, dst_rows = ((-1,), (-1,)) if row == 1 else ((-1, row), (blocks, row))
    taps = tuple(slice(lo * s + off, (hi - 1) * s + off + 1, s) for off in offsets)
    lead = (slice(None),) * axis
    fixes = tuple((lead + (j,), tuple(lead + (j * s + off,) for off in inside))
                  for j, inside in _bad_positions(n, o, k, s, d, b))
    return src_rows, dst_rows, lo, hi, taps, fixes


def _run_flat(src, dst, ufunc, identity, src_rows, dst_rows, lo, hi, taps, fixes):
    if hi > lo:
        rows = src.reshape(src_rows)
        _combine(ufunc, [rows[tap] for tap in taps], dst.reshape(dst_rows)[lo:hi])
    for where, inside in fixes:
        target = dst[where]
        if inside:
            _combine(ufunc, [src[index] for index in inside], target)
        else:
            target.fill(identity)


def _run_unit3(src, dst, ufunc, identity, row, lines, n):
    """The pass of a 3-wide, unit-stride window padded by one on both sides (Inception's 3x3 pools).

    With ``row`` the flat stride of the axis, ``pair[i] = src[i] (+) src[i + row]`` over the whole
    array is one contiguous call, and so is ``dst[i] = pair[i - row] (+) src[i + row]``: the same
    taps combined in the same order as :func:`_flat_pass`. The first and last position of each line
    read a neighbouring line there; their windows are exactly a pair (positions 0, 1 and n - 2,
    n - 1), copied over them: copies cost less than recombining the edge taps (per-row loops when the
    rows are short, as on 7x7 images of 1024 channels).
    """
    flat = src.reshape(-1)
    size = flat.shape[0]
    pair = scratch((size,), src.dtype, "pool_pair")
    ufunc(flat[:size - row], flat[row:], out=pair[:size - row])
    ufunc(pair[:size - 2 * row], flat[2 * row:], out=dst.reshape(-1)[row:size - row])
    ends = dst.reshape(lines, n, row)
    pairs = pair.reshape(lines, n, row)
    if row == 1:  # (one strided run per edge, instead of `lines` runs of two)
        np.copyto(ends[:, 0], pairs[:, 0])
        np.copyto(ends[:, n - 1], pairs[:, n - 2])
    else:
        np.copyto(ends[:, ::n - 1], pairs[:, :n - 1:n - 2])


def _run_doubling(src, dst, ufunc, identity, outer, n, row, begin, end, k, o):
    """The pass of a unit-stride max over ``k`` taps by doubling windows (van Herk's idea in log steps).

    The axis is padded with the identity (``begin`` before, ``end`` after each line), then
    ``m2[i] = max(p[i], p[i + 1])``, ``m4[i] = max(m2[i], m2[i + 2])``... up to the largest power of
    two ``j <= k``, and the window of ``k`` is ``max(mj[i], mj[i + k - j])`` (two overlapping windows
    of ``j``: a max may count a tap twice). Every step is ONE contiguous call over the whole padded
    array (``row`` elements per axis position): positions near a line's end combine taps of the next
    line, but no output reads them. ``log2 k + 1`` calls instead of ``k`` over strided short rows.
    """
    npad = n + begin + end
    if begin or end:
        padded = scratch((outer, npad, row), src.dtype, "pool_pad")
        padded[:, :begin] = identity
        padded[:, begin + n:] = identity
        padded[:, begin:begin + n] = src.reshape(outer, n, row)
        current = padded.reshape(-1)
    else:
        current = src.reshape(-1)
    size = current.shape[0]
    j, step = 1, 0
    while 2 * j <= k:
        done = scratch((size,), src.dtype, _DOUBLING_SLOTS[step % 2])
        ufunc(current[:size - j * row], current[j * row:], out=done[:size - j * row])
        current, j, step = done, 2 * j, step + 1
    lines = current.reshape(outer, npad, row)
    out = dst.reshape(outer, o, row)
    if j == k:
        np.copyto(out, lines[:, :o])
    else:
        ufunc(lines[:, :o], lines[:, k - j:k - j + o], out=out)


_DOUBLING_SLOTS = ("pool_doubling_a", "pool_doubling_b")


def _combine(ufunc, taps, out):
    """``out = ufunc(taps[0], taps[1], ...)``; the first two taps go straight into ``out`` (one pass
    fewer than copying the first tap and folding the others in)."""
    if len(taps) == 1:
        np.copyto(out, taps[0])
        return
    ufunc(taps[0], taps[1], out=out)
    for tap in taps[2:]:
        ufunc(out, tap, out=out)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype == np.bool_:
        return False
    return -np.inf


def _compute_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _empty_output(x, out):
    return np.zeros(x.shape[:2] + tuple(out), dtype=x.dtype)


# --------------------------------------------------------------------------------------- MaxPool


@kernel("MaxPool", since=1, context=True)
def max_pool(ctx, X, *, auto_pad, ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
             storage_order=0, strides=None):
    strides, dilations, begin, _, end_full, out = _geometry(X, kernel_shape, strides, dilations, pads, auto_pad,
                                                            ceil_mode)
    want_indices = ctx.num_outputs > 1 and bool(ctx.node.output[1])
    if min(out, default=1) <= 0:
        y = _empty_output(X, out)
        return (y, np.zeros(y.shape, np.int64)) if want_indices else y
    if not want_indices:
        if _tiles_input(tuple(kernel_shape), strides, dilations, begin, end_full) and X.ndim == 4:
            return _tile_max_2d(X, kernel_shape, out)
        return _window_reduce(X, np.maximum, _lowest(X.dtype), kernel_shape, strides, dilations, begin, out)
    xp = pad_input(X, begin, end_full, _lowest(X.dtype), slot="image")
    y = arg = None
    for t, (_, view) in enumerate(_taps(xp, kernel_shape, strides, dilations, out)):
        if y is None:
            y = view.copy()
            arg = np.zeros(y.shape, dtype=np.int64)
        else:
            # strictly greater: the first maximal tap (in row-major window order) wins ties
            better = view > y
            np.copyto(y, view, where=better)
            np.copyto(arg, t, where=better)
    return y, _max_indices(X.shape, arg, kernel_shape, strides, dilations, begin, out, storage_order)


@functools.lru_cache(maxsize=256)
def _tiles_input(kernel_shape, strides, dilations, begin, end_full):
    """Whether the windows are disjoint tiles inside the input: stride = kernel, no dilation, no window
    reaching into padding (the 2x2 stride-2 pools of small CNNs)."""
    return kernel_shape == strides and not any(begin) and not any(end_full) and all(d == 1 for d in dilations)


def _tile_max_2d(x, kernel_shape, out):
    """MaxPool of 2-D tiles (see :func:`_tiles_input`): ``kh - 1`` maximums of strided row views, then
    ``kw - 1`` of column views, straight on the input (a 2x2 pool: two calls). The separable passes of
    :func:`_window_reduce` do the same with scratch buffers and cached plans: measured (float32 and
    uint8, other processes running) 10 against 16 us on 2x16x32x32 uint8, 5.5 against 12 us on
    1x32x15x15, 0.82-0.92x on 56x56 to 224x224 images."""
    (kh, kw), (oh, ow) = kernel_shape, out
    rows = _tap_max(x, kh, oh, _ROW_TAIL)
    if kw == 1:
        return rows if rows is not x else x.copy()
    return _tap_max(rows, kw, ow, ())


_ROW_TAIL = (slice(None),)  # (a row tap's index is (..., tap, :))


def _tap_max(x, k, o, tail):
    """The maximum over the ``k`` taps ``x[..., t::k (o of them), *tail]`` in a fresh array; ``x``
    itself when ``k`` is 1."""
    if k == 1:
        return x
    span = k * (o - 1) + 1
    y = np.maximum(x[(Ellipsis, slice(0, span, k)) + tail], x[(Ellipsis, slice(1, span + 1, k)) + tail])
    for t in range(2, k):
        np.maximum(y, x[(Ellipsis, slice(t, span + t, k)) + tail], out=y)
    return y


def _max_indices(shape, arg, kernel_shape, strides, dilations, begin, out, storage_order):
    """Flat input indices (padding excluded) of the maximal taps ``arg`` (N, C, *out)."""
    n, c = shape[:2]
    spatial = shape[2:]
    nd = len(spatial)
    taps = np.array(list(np.ndindex(*kernel_shape)), dtype=np.int64).reshape(-1, nd)
    flat = np.zeros(arg.shape, dtype=np.int64)
    for i in range(nd):
        grid_shape = [1] * nd
        grid_shape[i] = out[i]
        pos = np.arange(out[i], dtype=np.int64).reshape(grid_shape) * strides[i] - begin[i]
        coord = pos + taps[:, i][arg] * dilations[i]
        # row-major: first spatial axis slowest; column-major (storage_order 1): first axis fastest
        weight = math.prod(spatial[i + 1:]) if storage_order == 0 else math.prod(spatial[:i])
        flat += coord * weight
    plane = math.prod(spatial)
    nc = np.arange(n * c, dtype=np.int64).reshape((n, c) + (1,) * nd)
    return flat + nc * plane


# ----------------------------------------------------------------------------------- AveragePool


def _window_counts(in_shape, kernel_shape, strides, dilations, begin, end, out, count_include_pad):
    """How many taps of each window fall in the counted region (an array broadcastable to out)."""
    counts = None
    for i, (size, k, s, d, b, e, o) in enumerate(zip(in_shape, kernel_shape, strides, dilations, begin, end, out)):
        lo, hi = (0, size + b + e) if count_include_pad else (b, b + size)
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d
        axis_counts = ((pos >= lo) & (pos < hi)).sum(axis=1)
        shape = [1] * len(out)
        shape[i] = o
        axis_counts = axis_counts.reshape(shape)
        counts = axis_counts if counts is None else counts * axis_counts
    return counts


@kernel("AveragePool", since=1)
def average_pool(X, *, auto_pad, ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None,
                 pads=None, strides=None):
    strides, dilations, begin, end, end_full, out = _geometry(X, kernel_shape, strides, dilations, pads, auto_pad,
                                                              ceil_mode)
    if min(out, default=1) <= 0:
        return _empty_output(X, out)
    ct = _compute_dtype(X.dtype)
    if not any(begin) and not any(end_full) and tuple(kernel_shape) == X.shape[2:] and \
            all(d == 1 for d in dilations):
        # one window covering the whole image (ShuffleNet's final 7x7 pool): a plain mean
        return _spatial_mean(X, ct).reshape(X.shape[:2] + (1,) * (X.ndim - 2)).astype(X.dtype, copy=False)
    y = _window_reduce(X.astype(ct, copy=False), np.add, 0, kernel_shape, strides, dilations, begin, out)
    y *= _divisor(X.shape[:2], X.shape[2:], tuple(kernel_shape), strides, dilations, begin, end, out,
                  bool(count_include_pad), ct)
    return y.astype(X.dtype, copy=False)


@functools.lru_cache(maxsize=32)
def _divisor(lead, in_shape, kernel_shape, strides, dilations, begin, end, out, count_include_pad, dtype):
    """What the window sums are multiplied by: ``1 / kernel size`` when every window counts all its
    taps, else the reciprocal counts (a window with none gives 0), broadcast to the whole output
    when that is not too big: one contiguous multiply instead of one short loop per image row."""
    counts = _window_counts(in_shape, kernel_shape, strides, dilations, begin, end, out, count_include_pad)
    full = math.prod(kernel_shape)
    if np.all(counts == full):
        return dtype.type(1.0 / full)
    inverse = (1.0 / np.maximum(counts, 1)).astype(dtype)
    if math.prod(lead) * inverse.size <= 1 << 18:  # (at most 1 MiB of float32 per cached geometry)
        inverse = np.broadcast_to(inverse, lead + tuple(out)).copy()
    inverse.flags.writeable = False
    return inverse


# ---------------------------------------------------------------------------------------- LpPool


def _lp_power(x, p):
    return np.square(x) if p == 2 else np.power(np.abs(x), p)


def _lp_root(s, p):
    return np.sqrt(s) if p == 2 else np.power(s, 1.0 / p)


@kernel("LpPool", since=1)
def lp_pool(X, *, auto_pad, ceil_mode=0, dilations=None, kernel_shape=None, p, pads=None,
            strides=None):
    strides, dilations, begin, _, end_full, out = _geometry(X, kernel_shape, strides, dilations, pads, auto_pad,
                                                            ceil_mode)
    if min(out, default=1) <= 0:
        return _empty_output(X, out)
    ct = _compute_dtype(X.dtype)
    y = _window_reduce(_lp_power(X.astype(ct, copy=False), p), np.add, 0, kernel_shape, strides, dilations, begin,
                       out)
    return _lp_root(y, p).astype(X.dtype, copy=False)


# ----------------------------------------------------------------------------------- Global pools


def _spatial_axes(x):
    return tuple(range(2, x.ndim))


def _spatial_mean(X, ct):
    """The mean over the spatial axes of ``X`` (N, C, *spatial), shape (N, C), in ``ct``.

    One matrix-vector product of the (N * C, size) view with a cached vector of ``1 / size`` (BLAS):
    measured 4-5x faster than ``mean`` on SqueezeNet's, ResNet's and DenseNet's final pools (float32,
    7x7 to 13x13 images of 500-2000 channels); the 2-D product with the cached vector 0.44-0.73x the
    time of a batched ``matmul`` with a fresh vector (2x32x8x8, 1x1024x7x7, 1x16x3x3, 4x8x5x7, thread
    time, other processes running)."""
    size = math.prod(X.shape[2:])
    if not size:
        return np.full(X.shape[:2], np.nan, ct)
    rows = X.reshape(X.shape[0] * X.shape[1], size).astype(ct, copy=False)
    return np.dot(rows, _mean_vector(size, ct)).reshape(X.shape[:2])


@functools.lru_cache(maxsize=64)
def _mean_vector(size, dtype):
    vector = np.full(size, 1.0 / size, dtype)
    vector.flags.writeable = False
    return vector


@kernel("GlobalAveragePool", since=1)
def global_average_pool(X):
    ct = _compute_dtype(X.dtype)
    return _spatial_mean(X, ct).reshape(X.shape[:2] + (1,) * (X.ndim - 2)).astype(X.dtype, copy=False)


@kernel("GlobalMaxPool", since=1)
def global_max_pool(X):
    # (with an identity numpy reduces every channel in one loop, not one start per channel: see row_max)
    initial = np.iinfo(X.dtype).min if X.dtype.kind in "iu" else -np.inf
    return np.maximum.reduce(X, axis=_spatial_axes(X), keepdims=True, initial=initial)


@kernel("GlobalLpPool", since=1)
def global_lp_pool(X, *, p):
    ct = _compute_dtype(X.dtype)
    s = _lp_power(X.astype(ct, copy=False), p).sum(axis=_spatial_axes(X), keepdims=True)
    return _lp_root(s, p).astype(X.dtype, copy=False)


# ------------------------------------------------------------------------------------ MaxRoiPool


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


@kernel("MaxRoiPool", since=1)
def max_roi_pool(X, rois, *, pooled_shape, spatial_scale):
    """Caffe ROI pooling: each ROI is split into pooled_shape bins, each bin is a max (0 if empty)."""
    ph, pw = pooled_shape
    num_rois = rois.shape[0]
    c, height, width = X.shape[1:]
    y = np.zeros((num_rois, c, ph, pw), dtype=X.dtype)
    lowest = _lowest(X.dtype)
    rows, cols = np.arange(height), np.arange(width)
    for r in range(num_rois):  # a loop over ROIs; each ROI is vectorized over channels and bins
        batch = int(rois[r, 0])
        x1, y1, x2, y2 = _round_half_away(rois[r, 1:5].astype(np.float64) * spatial_scale).astype(np.int64)
        roi_h, roi_w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bins_h = np.arange(ph) * (roi_h / ph)
        bins_w = np.arange(pw) * (roi_w / pw)
        h0 = np.clip(np.floor(bins_h).astype(np.int64) + y1, 0, height)
        h1 = np.clip(np.ceil(bins_h + roi_h / ph).astype(np.int64) + y1, 0, height)
        w0 = np.clip(np.floor(bins_w).astype(np.int64) + x1, 0, width)
        w1 = np.clip(np.ceil(bins_w + roi_w / pw).astype(np.int64) + x1, 0, width)
        hmask = (rows[None, :] >= h0[:, None]) & (rows[None, :] < h1[:, None])  # (PH, H)
        wmask = (cols[None, :] >= w0[:, None]) & (cols[None, :] < w1[:, None])  # (PW, W)
        img = X[batch]
        by_rows = np.where(hmask[None, :, :, None], img[:, None, :, :], lowest).max(axis=2)  # (C, PH, W)
        pooled = np.where(wmask[None, None, :, :], by_rows[:, :, None, :], lowest).max(axis=3)  # (C, PH, PW)
        empty = (h1 <= h0)[:, None] | (w1 <= w0)[None, :]
        y[r] = np.where(empty[None], 0, pooled)
    return y


# -------------------------------------------------------------------------------------- MaxUnpool


@kernel("MaxUnpool", since=9)
def max_unpool(X, I, output_shape=None, *, kernel_shape=None, pads=None, strides=None):
    """Scatter X to the flat positions I of the unpooled shape (pool input shape inferred from attributes).

    The indices address the shape a MaxPool with these attributes would have read; an explicit
    ``output_shape`` keeps those coordinates and only grows (zero-fills) or crops the far end.
    """
    nd = X.ndim - 2
    strides = list(strides) if strides else [1] * nd
    pads = list(pads) if pads else [0] * (2 * nd)
    spatial = [(i - 1) * s + k - pads[a] - pads[a + nd]
               for a, (i, s, k) in enumerate(zip(X.shape[2:], strides, kernel_shape))]
    shape = X.shape[:2] + tuple(spatial)
    y = np.zeros(math.prod(shape), dtype=X.dtype)
    y[I.reshape(-1)] = X.reshape(-1)
    y = y.reshape(shape)
    if output_shape is not None:
        target = tuple(int(v) for v in output_shape)
        if target != shape:
            y = np.ascontiguousarray(crop_spatial(y, [0] * nd, target[2:]))
    return y
