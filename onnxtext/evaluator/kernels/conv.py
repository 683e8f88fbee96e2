"""Convolution kernels: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, Col2Im, CausalConvWithState.

Speed matters here (the CNN benchmarks spend most of their time in Conv), so Conv picks among:

* im2col + ONE batched matmul over the groups (the general case): the columns are an
  ``as_strided`` view of the zero-padded input, shaped (N, group, C/group, *kernel, *out), copied
  once into (N, group, C/group * K, P) and multiplied by the weights seen as (group, M/group, C/group
  * K); the product lands directly in NCHW order, so no transposes follow. Large im2col matrices
  are built and multiplied one band of output rows at a time, so the band is still in cache;
* a 1x1 convolution without padding skips im2col: the input itself is the column matrix;
* unit strides with few output channels: a sum over the taps of W[:, :, tap] @ (a contiguous slice
  of the flattened padded image), no im2col at all (see :mod:`.conv_shifted`);
* a depthwise convolution (one input channel per group): per-channel (1 x K) @ (K x P) products
  over cache-sized blocks of channels;
* the transposed direction (ConvTranspose, Col2Im) is one matmul followed by a scatter-add per tap.

Temporaries (padded input, im2col columns) live in per-thread reusable :func:`scratch` buffers:
fresh multi-megabyte arrays cost page faults comparable to the copies themselves. Half precision
inputs are computed in float32 (numpy has no half-precision BLAS) and cast back; integer
convolutions are computed in float64, which is exact for any realistic accumulation.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..registry import kernel

# ---------------------------------------------------------------------------------------- geometry


def spatial_geometry(in_shape, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode=False):
    """Padding and output size of a sliding window along each spatial axis.

    Returns ``(pads_begin, pads_end, out_shape)`` following the Conv/pooling rules: ``auto_pad``
    SAME_UPPER/SAME_LOWER give ``ceil(in / stride)`` outputs with the padding split evenly (the odd
    element at the end for UPPER, at the beginning for LOWER), VALID means no padding, NOTSET uses
    ``pads``. With ``ceil_mode`` a window that would start in the end padding is dropped.
    """
    nd = len(in_shape)
    strides = list(strides) if strides else [1] * nd
    dilations = list(dilations) if dilations else [1] * nd
    extents = [(k - 1) * d + 1 for k, d in zip(kernel_shape, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_shape, strides)]
        total = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(out, strides, extents, in_shape)]
        small = [t // 2 for t in total]
        if auto_pad == "SAME_UPPER":
            return small, [t - h for t, h in zip(total, small)], out
        return [t - h for t, h in zip(total, small)], small, out
    if auto_pad == "VALID":
        begin = end = [0] * nd
    else:
        pads = list(pads) if pads else [0] * (2 * nd)
        begin, end = pads[:nd], pads[nd:]
    out = []
    for i, b, e, ext, s in zip(in_shape, begin, end, extents, strides):
        span = i + b + e - ext
        if ceil_mode:
            o = -(-span // s) + 1
            if (o - 1) * s >= i + b:  # the last window would start in the end padding
                o -= 1
        else:
            o = span // s + 1
        out.append(max(o, 0))
    return list(begin), list(end), out


def pad_input(x, pads_begin, pads_end, value=0, slot=None):
    """``x`` padded on its trailing spatial axes, or ``x`` itself when there is no padding.

    With ``slot`` the padded array lives in that :func:`scratch` buffer (for temporaries that the
    kernel does not return); otherwise it is a fresh array.
    """
    if not any(pads_begin) and not any(pads_end):
        return x
    nd = len(pads_begin)
    lead = x.shape[: x.ndim - nd]
    spatial = x.shape[-nd:]
    shape = lead + tuple(d + b + e for d, b, e in zip(spatial, pads_begin, pads_end))
    if value == 0 and slot is None:  # calloc'ed memory: the zeros cost nothing until written
        out = np.zeros(shape, dtype=x.dtype)
    else:  # fill only the border slabs, not the whole array and then the interior again
        out = np.empty(shape, dtype=x.dtype) if slot is None else scratch(shape, x.dtype, slot)
        for axis, (b, d) in enumerate(zip(pads_begin, spatial)):
            index = [slice(None)] * len(shape)
            index[len(lead) + axis] = slice(0, b)
            out[tuple(index)] = value
            index[len(lead) + axis] = slice(b + d, None)
            out[tuple(index)] = value
    out[(Ellipsis,) + tuple(slice(b, b + d) for b, d in zip(pads_begin, spatial))] = x
    return out


def window_view(xp, kernel_shape, strides, dilations, out_shape, split=None):
    """Strided view of a padded (N, C, *S) array as (N, C, *kernel, *out) without copying.

    ``split=(group, channels_per_group)`` views the channel axis as two axes (group, C/group).
    """
    nd = len(kernel_shape)
    st = xp.strides
    lead_shape, lead_strides = xp.shape[:2], st[:2]
    if split is not None:
        lead_shape = (xp.shape[0],) + tuple(split)
        lead_strides = (st[0], st[1] * split[1], st[1])
    spatial = st[2:]
    shape = lead_shape + tuple(kernel_shape) + tuple(out_shape)
    strides_ = lead_strides + tuple(s * d for s, d in zip(spatial, dilations)) + \
        tuple(s * t for s, t in zip(spatial, strides))
    assert len(shape) == len(lead_shape) + 2 * nd
    return as_strided(xp, shape, strides_, writeable=False)


_SCRATCH = threading.local()


def scratch(shape, dtype, slot="columns"):
    """A per-thread reusable work array (contents undefined) for im2col-like temporaries.

    Fresh multi-megabyte arrays are fresh pages: the kernel zero-fills each one on first touch,
    which on CNNs costs as much as the copy itself. Each ``slot`` is one buffer that grows to the
    largest request and is reused; a result must never be returned in it (callers only read it
    back within the kernel), and two arrays alive at once need two slots.
    """
    size = math.prod(shape) * np.dtype(dtype).itemsize
    buffers = getattr(_SCRATCH, "buffers", None)
    if buffers is None:
        buffers = _SCRATCH.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.size < size:
        buf = buffers[slot] = np.empty(max(size, 64), dtype=np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def shared_image(shape, dtype, key):
    """A zeroed buffer for zero-padded images, shared per thread by the prepared layers of one
    geometry (``key``): they only ever write its interior, so the borders stay zero for all of them,
    and one buffer stays hot in cache for a run of identical layers instead of one cold buffer each."""
    images = getattr(_SCRATCH, "images", None)
    if images is None:
        images = _SCRATCH.images = {}
    key = key + (tuple(shape), np.dtype(dtype).str)  # the shape too: the tail depends on the kernel
    buf = images.get(key)
    if buf is None:
        buf = images[key] = np.zeros(shape, dtype)
    return buf


def _compute_dtype(dtype):
    """The dtype the arithmetic runs in: float32 for half types, the dtype itself otherwise."""
    dtype = np.dtype(dtype)
    if dtype == np.float64 or dtype == np.float32:
        return dtype
    return np.dtype(np.float32)


# ------------------------------------------------------------------------------------------- Conv


def conv_core(x, w, group, strides, dilations, pads_begin, pads_end, out_shape):
    """Grouped N-D convolution of x (N, C, *S) by w (M, C/group, *K) without bias; dtype of x."""
    n, c = x.shape[:2]
    m = w.shape[0]
    kshape = w.shape[2:]
    cg, mg = c // group, m // group
    k_size = math.prod(kshape)
    p_size = math.prod(out_shape)
    no_pad = not any(pads_begin) and not any(pads_end)
    unit_strides = all(s == 1 for s in strides)
    if k_size == 1 and no_pad:
        # 1x1 convolution: the (strided) input is already the column matrix
        xs = x[(Ellipsis,) + tuple(slice(0, o * s, s) for o, s in zip(out_shape, strides))]
        cols = xs.reshape(n, group, cg, p_size)
        y = np.matmul(w.reshape(group, mg, cg), cols)
        return y.reshape((n, m) + tuple(out_shape))
    if cg == 1 and group > 1:
        return _depthwise(x, w, group, strides, dilations, pads_begin, pads_end, out_shape)
    if group == 1 and unit_strides and mg <= _SHIFTED_MAX_OUTPUTS and m * _SHIFTED_MIN_RATIO <= c and \
            out_shape[0] * math.prod(x.shape[3:]) >= _SHIFTED_MIN_LENGTH:
        return _conv_shifted(x, w, dilations, pads_begin, pads_end, out_shape)
    xp = pad_input(x, pads_begin, pads_end, slot="image")
    win = window_view(xp, kshape, strides, dilations, out_shape, split=(group, cg))
    wg = w.reshape(group, mg, cg * k_size)
    if cg * k_size * p_size <= _IM2COL_WHOLE:
        cols = scratch((n, group, cg * k_size, p_size), x.dtype)
        cols.reshape(win.shape)[...] = win  # the one im2col copy
        return np.matmul(wg, cols).reshape((n, m) + tuple(out_shape))
    return _conv_blocked(win, wg, out_shape)


# im2col matrices up to this many elements are built whole; larger ones (the 112x112 and 224x224
# layers of VGG-like models) are built and multiplied a band of output rows at a time, so that the
# band is still in cache when the matmul reads it
_IM2COL_WHOLE = 1 << 22
_IM2COL_BAND = 1 << 19
_BAND_MIN_COLUMNS = 512


def _conv_blocked(win, wg, out_shape):
    """W @ im2col one band of the first output axis at a time; win is (N, G, C/G, *K, *O)."""
    n, group, cg = win.shape[:3]
    nd = len(out_shape)
    kshape = win.shape[3:3 + nd]
    rows_size = math.prod(out_shape[1:])  # output positions per index of the first output axis
    k_rows = cg * math.prod(kshape)
    band = max(1, _IM2COL_BAND // (k_rows * rows_size), -(-_BAND_MIN_COLUMNS // rows_size))
    mg = wg.shape[1]
    y = np.empty((n, group, mg) + tuple(out_shape), dtype=win.dtype)
    buf = scratch((group, k_rows, min(band, out_shape[0]) * rows_size), win.dtype)
    lead = (slice(None),) * (3 + nd)
    for b in range(n):
        for r0 in range(0, out_shape[0], band):
            r1 = min(out_shape[0], r0 + band)
            part = buf[:, :, :(r1 - r0) * rows_size]
            src = win[(b,) + lead[1:] + (slice(r0, r1),)]
            part.reshape(src.shape)[...] = src
            y[b, :, :, r0:r1] = np.matmul(wg, part).reshape((group, mg, r1 - r0) + tuple(out_shape[1:]))
    return y.reshape((n, group * mg) + tuple(out_shape))


class _FlatImage:
    """A zero-padded image flattened per channel, for unit-stride convolutions without im2col.

    With unit strides, output (o1, o2, ...) of tap (k1, k2, ...) reads flat position
    ``o1 * row1 + o2 * row2 + ... + k1 * d1 * row1 + ...`` of the padded image (``row`` being the
    flat strides of the padded shape). So every tap is ONE contiguous slice of the flat image,
    covering the outputs at all positions o2 < padded width; the positions beyond the output width
    are garbage and get cropped. A tail of zeros lets the last taps read past the image.
    """

    def __init__(self, x, pads_begin, pads_end, kshape, dilations, out_shape):
        n, c = x.shape[:2]
        padded = tuple(d + b + e for d, b, e in zip(x.shape[2:], pads_begin, pads_end))
        plane = math.prod(padded)
        self.row = [math.prod(padded[i + 1:]) for i in range(len(padded))]
        self.length = out_shape[0] * self.row[0]
        self.computed_shape = (out_shape[0],) + padded[1:]
        self.out_shape = tuple(out_shape)
        self.kshape = tuple(kshape)
        self.dilations = dilations
        tail = sum((k - 1) * d * r for k, d, r in zip(kshape, dilations, self.row))
        self.flat = scratch((n, c, plane + tail), x.dtype, slot="image")
        self.flat[...] = 0
        image = self.flat[:, :, :plane].reshape((n, c) + padded)
        image[(Ellipsis,) + tuple(slice(b, b + d) for b, d in zip(pads_begin, x.shape[2:]))] = x

    def tap_offsets(self):
        return [sum(k * d * r for k, d, r in zip(tap, self.dilations, self.row)) for tap in np.ndindex(*self.kshape)]

    def columns(self):
        """Read-only view (N, C, *K, length): the im2col matrix, without copying."""
        item = self.flat.itemsize
        return as_strided(self.flat, self.flat.shape[:2] + self.kshape + (self.length,),
                          self.flat.strides[:2] + tuple(d * r * item for d, r in zip(self.dilations, self.row)) +
                          (item,), writeable=False)

    def crop(self, y):
        """y (N, M, length) -> (N, M, *out_shape), dropping the positions beyond the output."""
        y = y.reshape(y.shape[:2] + self.computed_shape)
        if self.computed_shape == self.out_shape:
            return y
        return np.ascontiguousarray(y[(Ellipsis,) + tuple(slice(0, o) for o in self.out_shape)])


# the shifted-matmul convolution (no im2col) is used for unit strides when there are few output
# channels, at most half the input channels (the im2col copy then costs as much as the matmul,
# e.g. DenseNet's 128 -> 32 channel 3x3 layers), and long rows (short ones make the per-tap
# matmuls too thin); measured on ResNet/DenseNet/Inception layer shapes
_SHIFTED_MAX_OUTPUTS = 128
_SHIFTED_MIN_RATIO = 2
_SHIFTED_MIN_LENGTH = 768


def _conv_shifted(x, w, dilations, pads_begin, pads_end, out_shape):
    """Unit-stride, single-group convolution as a sum over taps of W[:, :, tap] @ shifted image
    (see :mod:`.conv_shifted`), prepared for this one call."""
    from .conv_shifted import prepare_shifted

    return prepare_shifted(w, None, x.shape, pads_begin, pads_end, dilations, out_shape, relu=False,
                           shared=False)(x, None)


# elements of one im2col block of a depthwise convolution: about 1 MiB of float32, so the block
# stays in cache between its copy and its matmul
_DEPTHWISE_BLOCK = 1 << 18


def _depthwise(x, w, group, strides, dilations, pads_begin, pads_end, out_shape):
    """Convolution with one input channel per group, as per-channel (1 x K) @ (K x P) products.

    The columns are a strided view (of the flat image for unit strides, see :class:`_FlatImage`);
    they are copied and multiplied one cache-sized block of channels at a time (a full im2col copy
    would be K times the input and leave the cache).
    """
    n = x.shape[0]
    m = w.shape[0]
    mg = m // group
    kshape = tuple(w.shape[2:])
    k_size = math.prod(kshape)
    if mg > 1:  # a depth multiplier: output channel j reads input channel j // mg
        x = np.repeat(x, mg, axis=1)
    image = None
    if all(s == 1 for s in strides):
        image = _FlatImage(x, pads_begin, pads_end, kshape, dilations, out_shape)
        cols, length = image.columns(), image.length
    else:
        xp = pad_input(x, pads_begin, pads_end, slot="image")
        cols = window_view(xp, kshape, strides, dilations, out_shape)  # (N, M, *K, *O)
        length = math.prod(out_shape)
    wk = w.reshape(m, 1, k_size)
    y = np.empty((n, m, 1, length), dtype=x.dtype)
    chunk = max(1, min(m, _DEPTHWISE_BLOCK // (k_size * length)))
    block = scratch((chunk, k_size, length), x.dtype)
    for b in range(n):
        for c0 in range(0, m, chunk):
            c1 = min(m, c0 + chunk)
            part = block[:c1 - c0]
            part.reshape(cols[b, c0:c1].shape)[...] = cols[b, c0:c1]
            np.matmul(wk[c0:c1], part, out=y[b, c0:c1])
    if image is not None:
        return image.crop(y.reshape(n, m, length))
    return y.reshape((n, m) + tuple(out_shape))


def _conv_geometry(x, w, kernel_shape, strides, dilations, pads, auto_pad):
    nd = x.ndim - 2
    kshape = list(w.shape[2:])
    strides = list(strides) if strides else [1] * nd
    dilations = list(dilations) if dilations else [1] * nd
    pb, pe, out = spatial_geometry(x.shape[2:], kshape, strides, dilations, pads, auto_pad)
    return strides, dilations, pb, pe, out


def _conv_float(X, W, B, auto_pad, dilations, group, kernel_shape, pads, strides):
    ct = _compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    w = W.astype(ct, copy=False)
    strides, dilations, pb, pe, out = _conv_geometry(x, w, kernel_shape, strides, dilations, pads, auto_pad)
    y = conv_core(x, w, group, strides, dilations, pb, pe, out)
    if B is not None:
        y += B.astype(ct, copy=False).reshape((-1,) + (1,) * len(out))
    return y.astype(X.dtype, copy=False)


@kernel("Conv", since=1)
def conv(X, W, B=None, *, auto_pad, dilations=None, group, kernel_shape=None, pads=None,
         strides=None):
    return _conv_float(X, W, B, auto_pad, dilations, group, kernel_shape, pads, strides)


def _integer_conv(x, x_zero_point, w, w_zero_point, auto_pad, dilations, group, kernel_shape, pads, strides):
    """Exact integer convolution of zero-point-shifted x and w: float32 BLAS when every partial sum fits
    its 24-bit mantissa (taps per output * max|x| * max|w| < 2**24), float64 otherwise."""
    xf = x.astype(np.float32)
    if x_zero_point is not None:
        xf -= np.float32(np.asarray(x_zero_point).reshape(-1)[0])
    wf = w.astype(np.float32)
    if w_zero_point is not None:
        wz = np.asarray(w_zero_point, dtype=np.float32)
        wf -= wz.reshape((-1,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wz.reshape(())
    taps = int(np.prod(w.shape[1:]))
    bound = max(abs(float(xf.min(initial=0))), abs(float(xf.max(initial=0)))) * \
        max(abs(float(wf.min(initial=0))), abs(float(wf.max(initial=0))))
    if taps * bound >= (1 << 24):
        xf, wf = xf.astype(np.float64), wf.astype(np.float64)
    strides, dilations, pb, pe, out = _conv_geometry(xf, wf, kernel_shape, strides, dilations, pads, auto_pad)
    # padding with 0 after the shift is padding with the zero point before it
    return conv_core(xf, wf, group, strides, dilations, pb, pe, out)


@kernel("ConvInteger", since=10)
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, auto_pad, dilations=None, group,
                 kernel_shape=None, pads=None, strides=None):
    acc = _integer_conv(x, x_zero_point, w, w_zero_point, auto_pad, dilations, group, kernel_shape, pads,
                        strides)
    return acc.astype(np.int32)


@kernel("QLinearConv", since=10)
def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, *,
                 auto_pad, dilations=None, group, kernel_shape=None, pads=None, strides=None):
    acc = _integer_conv(x, x_zero_point, w, w_zero_point, auto_pad, dilations, group, kernel_shape, pads,
                        strides).astype(np.float64)  # (exact integers; the bias and scaling need float64)
    spatial = (1,) * (acc.ndim - 2)
    if B is not None:
        acc += B.astype(np.float64).reshape((-1,) + spatial)
    # the requantization multiplier is formed in float32 like the scales themselves
    w_scale = np.asarray(w_scale, dtype=np.float32)
    multiplier = (np.float32(np.asarray(x_scale).reshape(-1)[0]) * w_scale /
                  np.float32(np.asarray(y_scale).reshape(-1)[0])).astype(np.float64)
    multiplier = multiplier.reshape((-1,) + spatial) if multiplier.size > 1 else multiplier.reshape(())
    # requantized in float32 as onnxruntime does (int32 accumulator -> float32, times the float32 multiplier)
    scaled = acc.astype(np.float32) * multiplier.astype(np.float32)
    y = np.rint(scaled).astype(np.float64) + np.float64(np.asarray(y_zero_point).reshape(-1)[0])
    info = np.iinfo(y_zero_point.dtype)
    return np.clip(y, info.min, info.max).astype(y_zero_point.dtype)


# ---------------------------------------------------------------------------------- ConvTranspose


def scatter_taps(cols, kernel_shape, strides, dilations, full_shape):
    """Sum of the tap planes of cols (N, M, *K, *I) placed at ``k * dilation + i * stride``.

    This is the adjoint of the im2col view; the result has shape (N, M, *full_shape).
    """
    n, m = cols.shape[:2]
    in_shape = cols.shape[2 + len(kernel_shape):]
    full = np.zeros((n, m) + tuple(full_shape), dtype=cols.dtype)
    for tap in np.ndindex(*kernel_shape):
        dest = tuple(slice(k * d, k * d + (i - 1) * s + 1, s)
                     for k, d, i, s in zip(tap, dilations, in_shape, strides))
        full[(slice(None), slice(None)) + dest] += cols[(slice(None), slice(None)) + tap]
    return full


def crop_spatial(full, begin, out_shape):
    """``full[..., begin:begin+out]`` on the spatial axes, zero-filled where that leaves ``full``."""
    nd = len(out_shape)
    fs = full.shape[-nd:]
    if all(b >= 0 and b + o <= f for b, o, f in zip(begin, out_shape, fs)):
        return full[(Ellipsis,) + tuple(slice(b, b + o) for b, o in zip(begin, out_shape))]
    out = np.zeros(full.shape[:-nd] + tuple(out_shape), dtype=full.dtype)
    src, dst = [], []
    for b, o, f in zip(begin, out_shape, fs):
        lo, hi = max(b, 0), min(b + o, f)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - b, hi - b))
    out[(Ellipsis,) + tuple(dst)] = full[(Ellipsis,) + tuple(src)]
    return out


def _conv_transpose_geometry(in_shape, kshape, strides, dilations, pads, output_padding, output_shape, auto_pad):
    nd = len(in_shape)
    extents = [(k - 1) * d + 1 for k, d in zip(kshape, dilations)]
    full = [s * (i - 1) + op + e for s, i, op, e in zip(strides, in_shape, output_padding, extents)]
    if output_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = list(output_shape)[-nd:] if output_shape else [i * s for i, s in zip(in_shape, strides)]
        total = [f - o for f, o in zip(full, out)]
        if auto_pad == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        return begin, out, full
    if auto_pad == "VALID" or not pads:
        return [0] * nd, full, full
    begin, end = list(pads[:nd]), list(pads[nd:])
    return begin, [f - b - e for f, b, e in zip(full, begin, end)], full


@kernel("ConvTranspose", since=1)
def conv_transpose(X, W, B=None, *, auto_pad, dilations=None, group, kernel_shape=None,
                   output_padding=None, output_shape=None, pads=None, strides=None):
    ct = _compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    w = W.astype(ct, copy=False)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    in_shape = x.shape[2:]
    kshape = w.shape[2:]
    strides = list(strides) if strides else [1] * nd
    dilations = list(dilations) if dilations else [1] * nd
    output_padding = list(output_padding) if output_padding else [0] * nd
    begin, out, full_shape = _conv_transpose_geometry(in_shape, kshape, strides, dilations, pads, output_padding,
                                                      output_shape, auto_pad)
    cg, mg = c // group, w.shape[1]
    k_size, p_size = math.prod(kshape), math.prod(in_shape)
    # cols[n, g] = W[g]^T (mg*K, cg) @ X[n, g] (cg, P): one batched matmul
    wt = w.reshape(group, cg, mg * k_size).transpose(0, 2, 1)
    cols = np.matmul(wt, x.reshape(n, group, cg, p_size))
    cols = cols.reshape((n, group * mg) + tuple(kshape) + tuple(in_shape))
    y = crop_spatial(scatter_taps(cols, kshape, strides, dilations, full_shape), begin, out)
    if B is not None:
        y = y + B.astype(ct, copy=False).reshape((-1,) + (1,) * nd)
    return np.ascontiguousarray(y).astype(X.dtype, copy=False)


@kernel("Col2Im", since=18)
def col2im(input, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    image_shape = [int(v) for v in image_shape]
    block_shape = [int(v) for v in block_shape]
    nd = len(image_shape)
    strides = list(strides) if strides else [1] * nd
    dilations = list(dilations) if dilations else [1] * nd
    pads = list(pads) if pads else [0] * (2 * nd)
    begin, end = pads[:nd], pads[nd:]
    padded = [i + b + e for i, b, e in zip(image_shape, begin, end)]
    blocks = [(p - ((k - 1) * d + 1)) // s + 1 for p, k, d, s in zip(padded, block_shape, dilations, strides)]
    n = input.shape[0]
    c = input.shape[1] // math.prod(block_shape)
    cols = input.reshape((n, c) + tuple(block_shape) + tuple(blocks))
    full = scatter_taps(cols, block_shape, strides, dilations, padded)
    return np.ascontiguousarray(crop_spatial(full, begin, image_shape))


# ------------------------------------------------------------------------------------- DeformConv


def _deform_columns(x, offset, mask, kshape, strides, dilations, pads_begin, out_shape, offset_group):
    """Bilinearly sampled columns (N, C, K, P) at the offset kernel positions (zero outside x)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    nd = len(spatial)
    k_size, p_size = math.prod(kshape), math.prod(out_shape)
    cpg = c // offset_group
    off = offset.reshape((n, offset_group, k_size, nd, p_size)).astype(x.dtype, copy=False)
    # base sampling position of (tap, output) along each axis, without offsets
    taps = np.array(list(np.ndindex(*kshape)), dtype=x.dtype).reshape(k_size, nd)
    grid = np.stack([g.reshape(-1) for g in np.meshgrid(*[np.arange(o) for o in out_shape], indexing="ij")],
                    axis=-1).astype(x.dtype) if out_shape else np.zeros((1, 0), x.dtype)
    base = [taps[:, i, None] * dilations[i] + grid[None, :, i] * strides[i] - pads_begin[i] for i in range(nd)]
    pos = [base[i] + off[:, :, :, i] for i in range(nd)]  # each (N, OG, K, P)
    low = [np.floor(p) for p in pos]
    frac = [p - lo for p, lo in zip(pos, low)]
    xr = x.reshape(n, offset_group, cpg, -1)
    weight_all = mask.reshape(n, offset_group, k_size, p_size).astype(x.dtype) if mask is not None else None
    cols = np.zeros((n, offset_group, cpg, k_size * p_size), dtype=x.dtype)
    for corner in np.ndindex(*([2] * nd)):
        flat = np.zeros((n, offset_group, k_size, p_size), dtype=np.int64)
        weight = np.ones((n, offset_group, k_size, p_size), dtype=x.dtype)
        valid = np.ones((n, offset_group, k_size, p_size), dtype=bool)
        for i, up in enumerate(corner):
            idx = low[i] + up
            weight *= frac[i] if up else 1 - frac[i]
            valid &= (idx >= 0) & (idx < spatial[i])
            flat = flat * spatial[i] + np.clip(idx, 0, spatial[i] - 1).astype(np.int64)
        weight *= valid
        if weight_all is not None:
            weight *= weight_all
        vals = np.take_along_axis(xr, flat.reshape(n, offset_group, 1, -1), axis=3)
        cols += vals * weight.reshape(n, offset_group, 1, -1)
    return cols.reshape(n, c, k_size, p_size)


@kernel("DeformConv", since=19)
def deform_conv(X, W, offset, B=None, mask=None, *, dilations=None, group, kernel_shape=None,
                offset_group, pads=None, strides=None):
    ct = _compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    w = W.astype(ct, copy=False)
    nd = x.ndim - 2
    kshape = w.shape[2:]
    strides = list(strides) if strides else [1] * nd
    dilations = list(dilations) if dilations else [1] * nd
    pb, _, out = spatial_geometry(x.shape[2:], kshape, strides, dilations, pads, "NOTSET")
    cols = _deform_columns(x, offset, mask, kshape, strides, dilations, pb, out, offset_group)
    n, c = x.shape[:2]
    m = w.shape[0]
    cg = c // group
    cols = cols.reshape(n, group, cg * math.prod(kshape), -1)
    y = np.matmul(w.reshape(group, m // group, -1), cols).reshape((n, m) + tuple(out))
    if B is not None:
        y += B.astype(ct, copy=False).reshape((-1,) + (1,) * nd)
    return y.astype(X.dtype, copy=False)


# ---------------------------------------------------------------------------- CausalConvWithState


@kernel("CausalConvWithState", since=27)
def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation):
    """Depthwise causal 1-D convolution over [past_state | input]; returns (output, present_state)."""
    ct = _compute_dtype(input.dtype)
    x = input.astype(ct, copy=False)
    b, c, length = x.shape
    k = weight.shape[-1]
    if past_state is None:
        past = np.zeros((b, c, k - 1), dtype=ct)
    else:
        past = past_state.astype(ct, copy=False)
    seq = np.concatenate([past, x], axis=2)  # (B, C, k - 1 + L)
    wk = weight.astype(ct, copy=False).reshape(c, k)
    y = np.zeros((b, c, length), dtype=ct)
    for j in range(k):
        y += seq[:, :, j:j + length] * wk[:, j, None]
    if bias is not None:
        y += bias.astype(ct, copy=False)[:, None]
    if activation in ("silu", "swish"):
        y = y / (1 + np.exp(-y))
    elif activation != "none":
        raise ValueError(f"unknown activation {activation!r}")
    present = seq[:, :, seq.shape[2] - (k - 1):] if k > 1 else seq[:, :, :0]
    return y.astype(input.dtype, copy=False), np.ascontiguousarray(present).astype(input.dtype, copy=False)
