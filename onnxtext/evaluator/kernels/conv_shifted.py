"""Prepared shifted-matmul convolution: unit strides, one group, few outputs from many channels.

With unit strides, output ``(o1, o2, ...)`` of tap ``(k1, k2, ...)`` reads flat position
``o1 * row1 + o2 * row2 + ... + k1 * d1 * row1 + ...`` of the zero-padded image (``row`` being the
flat strides of the padded shape). So every tap is ONE contiguous slice of the flat image, covering
the outputs at all positions ``o2 < padded width``; the positions beyond the output width are
garbage and get cropped. The convolution is then a sum over taps of ``W[:, :, tap] @ slice``: no
im2col copy at all, which pays when the copy would cost as much as the matmul (DenseNet's
128 -> 32 channel 3x3 layers: 9 x 128 rows of columns for 32 outputs). The general kernel
(``conv._conv_shifted``) prepares it for each call; a PreparedConv prepares it once per shape:

* the padded image lives in a buffer whose border is zeroed once, so a call copies only the
  interior (one buffer per geometry and thread, shared by the layers of that geometry);
* the per-tap weights ``(K, M, C)`` and the tap offsets are computed once;
* the crop of the garbage columns writes straight into the destination (a fresh array or a slice of
  a Concat buffer) with the bias added on the way (one pass), and the fused Relu runs in place.
"""

from __future__ import annotations

import math

import numpy as np

from .conv import scratch, shared_image
from .conv_relu import relu_inplace


def prepare_shifted(w, b, shape, pads_begin, pads_end, dilations, out_shape, relu, shared=True):
    """The ``(x, out) -> y`` closure of :class:`.conv_prepared.PreparedConv` for inputs of ``shape``.

    ``shared=False`` (the general Conv kernel, prepared for one call): the padded image is a zeroed
    per-thread scratch buffer instead of a buffer kept for the geometry."""
    n, c = shape[:2]
    m = w.shape[0]
    kshape = tuple(w.shape[2:])
    dtype = w.dtype
    padded = tuple(d + p + e for d, p, e in zip(shape[2:], pads_begin, pads_end))
    row = [math.prod(padded[i + 1:]) for i in range(len(padded))]
    length = out_shape[0] * row[0]
    plane = math.prod(padded)
    tail = sum((k - 1) * d * r for k, d, r in zip(kshape, dilations, row))
    if shared:  # its border and tail stay zero (only the interior is ever written), so the layers of
        # one geometry share it: DenseNet's 58 such layers come in four geometries
        flat = shared_image((n, c, plane + tail), dtype, ("shifted", tuple(shape), tuple(pads_begin), tuple(pads_end)))
    else:
        flat = scratch((n, c, plane + tail), dtype, slot="image")
        flat[...] = 0
    interior = flat[:, :, :plane].reshape((n, c) + padded)[
        (Ellipsis,) + tuple(slice(p, p + d) for p, d in zip(pads_begin, shape[2:]))]
    offsets = [sum(k * d * r for k, d, r in zip(tap, dilations, row)) for tap in np.ndindex(*kshape)]
    per_tap = np.ascontiguousarray(w.reshape(m, c, -1).transpose(2, 0, 1))  # (K, M, C)
    computed = (m, out_shape[0]) + padded[1:]
    crop = (slice(None), slice(None)) + tuple(slice(0, o) for o in out_shape[1:])
    bias = None if b is None else b.reshape((m,) + (1,) * len(out_shape))
    full_shape = (n, m) + tuple(out_shape)
    first, rest = (per_tap[0], offsets[0]), list(zip(per_tap[1:], offsets[1:]))

    def shifted_conv(x, out):
        np.copyto(interior, x)
        y = out if out is not None else np.empty(full_shape, dtype)
        acc = scratch((m, length), dtype, slot="shifted")
        part = scratch((m, length), dtype, slot="shifted_part")
        for i in range(n):
            image = flat[i]
            # a slice of the flat image is a BLAS-ready matrix (unit inner stride): no copy
            np.matmul(first[0], image[:, first[1]:first[1] + length], out=acc)
            for wt, offset in rest:
                np.matmul(wt, image[:, offset:offset + length], out=part)
                acc += part
            result = acc.reshape(computed)[crop]
            if bias is not None:
                np.add(result, bias, out=y[i])
            else:
                np.copyto(y[i], result)
            if relu:
                relu_inplace(y[i])
        return y
    return shifted_conv
