"""Prepared kernel-row convolution: 2-D, unit strides, one group; columns of horizontal shifts only.

With unit strides, output ``(oy, ox)`` is ``sum over ky of R_ky[(oy + ky * dh) * wp + ox]``, where
``R_ky[q] = sum over kx, c of W[m, c, ky, kx] * flat[c, q + kx * dw]`` is the product of kernel row
``ky`` at flat position ``q`` of the zero-padded image (``wp`` its padded width). So the columns
need only the ``kw`` horizontal shifts of the flat image (``kw * C`` rows instead of im2col's
``kh * kw * C``), and ONE matmul of the weights seen as ``(kh * M, kw * C)`` gives every kernel row's
partial sums at every padded position; the ``kh`` partial sums are then added with vertical shifts of
whole padded rows, straight into the destination (the crop of the padded-width columns included).

Against the prepared im2col (``conv_prepared``) this copies ``kh`` times less, multiplies the same
number of products in one matmul with ``kh`` times taller weights (OpenBLAS runs short weight
matrices, 16-64 outputs, well below its speed on taller ones, and packs the columns once instead of
``kh`` times their rows), and pays ``kh - 1`` adds over the outputs. Measured in
``benchmarks/conv_kernel_rows.py``; :func:`use_kernel_rows` is the rule the selector applies.

* the padded image is a buffer shared by the layers of one geometry (only its interior is written);
* the bias is a weight column of the first kernel row times a row of ones: the matmul adds it;
* large images are computed one band of output rows at a time (each band recomputes the
  ``(kh - 1) * dh`` rows it shares with the next), so the columns and products stay in cache;
  a small batch is one band for all its samples (one matmul);
* the fused Relu runs on each band of results while they are in cache.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .conv import scratch, shared_image
from .conv_relu import relu_inplace
from .scratch_views import ScratchViews

# elements of columns plus products per band (float32: 2 MiB), so that a band's columns, the matmul's
# products and the results stay in L2 between the copy, the matmul and the adds
_BAND = 1 << 21
# the selector's rule, from benchmarks/conv_kernel_rows.py (one thread, calls alternating with the
# prepared im2col, loaded machine): 3x3 layers of 16-64 channels and as many or fewer outputs took
# 0.67-0.89x the time at 24x24 to 208x208 (0.94 at 20x20, 0.99 at 14x14), 7x7 0.47x; with 96-192
# channels 0.96-1.11x, with more outputs than inputs 1.05-1.19x (the adds run over the outputs)
_MIN_POSITIONS = 20 * 20
_MAX_CHANNELS = 64


def use_kernel_rows(c, m, kshape, out):
    """Whether a unit-stride one-group 2-D conv from ``c`` to ``m`` channels, kernel ``kshape``, output
    size ``out``, runs faster as kernel-row products than as the prepared im2col: at least 2 kernel
    rows and columns, enough positions that the adds' fixed cost is small, at most 64 channels and
    no more outputs than inputs."""
    return len(kshape) == 2 and min(kshape) >= 2 and out[0] * out[1] >= _MIN_POSITIONS and m <= c <= _MAX_CHANNELS


def prepare_kernel_rows(w, b, shape, pads_begin, pads_end, dilations, out, relu):
    """The ``(x, out) -> y`` closure of :class:`.conv_prepared.PreparedConv` for inputs of ``shape``
    (N, C, H, W), weights ``w`` (M, C, kh, kw), unit strides, one group, output size ``out``."""
    n, c, h, wd = shape
    m, _, kh, kw = w.shape
    dh, dw = dilations
    pt, pl = pads_begin
    hp, wp = h + pt + pads_end[0], wd + pl + pads_end[1]
    ho, wo = out
    dtype = w.dtype
    plane = hp * wp
    # the last kernel-row product reads up to (kw - 1) * dw past the padded plane: a zero tail
    flat = shared_image((n, c, plane + (kw - 1) * dw), dtype,
                        ("kernel_rows", tuple(shape), tuple(pads_begin), (hp, wp)))
    interior = flat[:, :, :plane].reshape(n, c, hp, wp)[:, :, pt:pt + h, pl:pl + wd]
    taps = kw * c
    k = taps + (b is not None)
    w3 = np.zeros((kh, m, k), dtype)
    w3[:, :, :taps] = w.transpose(2, 0, 3, 1).reshape(kh, m, taps)  # [ky, m, kx * C + c]
    if b is not None:  # the bias rides on the first kernel row's products
        w3[0, :, taps] = b
    w3 = w3.reshape(kh * m, k)
    extra = (kh - 1) * dh  # padded rows a band of output rows reads beyond its own
    per_row = (k + kh * m) * wp  # columns and products per padded row
    item = flat.itemsize
    if n * (ho + extra) * per_row <= _BAND:
        spans = [(0, n, 0, ho)]
    else:
        rows = max(1, min(ho, _BAND // per_row - extra))
        spans = [(s, s + 1, r0, min(ho, r0 + rows)) for s in range(n) for r0 in range(0, ho, rows)]
    bands = []
    for s0, s1, r0, r1 in spans:
        length = (r1 - r0 + extra) * wp
        # the kw horizontal shifts of the band's padded rows, as one (samples, kw, C, length) view
        shifts = as_strided(flat[s0:s1, :, r0 * wp:], (s1 - s0, kw, c, length),
                            (flat.strides[0], dw * item, flat.strides[1], item), writeable=False)
        views = ScratchViews(functools.partial(_band_views, (s1 - s0, k, length), shifts.shape, taps,
                                               (s1 - s0, kh, m, r1 - r0 + extra, wp), kh * m, dtype),
                             ("kernel_rows", "kernel_rows_products"))
        bands.append((s0, s1, r0, r1, shifts, views))
    full_shape = (n, m, ho, wo)

    def kernel_rows_conv(x, dest):
        np.copyto(interior, x)
        y = np.empty(full_shape, dtype) if dest is None else dest
        for s0, s1, r0, r1, shifts, views in bands:
            cols, shifts_part, ones_part, products, z = views.get()
            np.copyto(shifts_part, shifts)
            if k > taps:
                ones_part.fill(1)
            np.matmul(w3, cols, out=products)
            rb = r1 - r0
            dst = y[s0:s1, :, r0:r1]
            if kh == 1:
                np.copyto(dst, z[:, 0, :, :rb, :wo])
            else:
                np.add(z[:, 0, :, :rb, :wo], z[:, 1, :, dh:dh + rb, :wo], out=dst)
            for ky in range(2, kh):
                np.add(dst, z[:, ky, :, ky * dh:ky * dh + rb, :wo], out=dst)
            if relu:
                relu_inplace(dst)
        return y
    return kernel_rows_conv


def _band_views(cols_shape, shifts_shape, taps, products_shape, rows, dtype):
    """A band's (columns, their shifts part, their row of ones, the products, the products by kernel
    row), over the shared scratch buffers (see :class:`.scratch_views.ScratchViews`)."""
    cols = scratch(cols_shape, dtype, slot="kernel_rows")
    products = scratch((cols_shape[0], rows, cols_shape[2]), dtype, slot="kernel_rows_products")
    return (cols, cols[:, :taps].reshape(shifts_shape, copy=False), cols[:, taps:], products,
            products.reshape(products_shape))
