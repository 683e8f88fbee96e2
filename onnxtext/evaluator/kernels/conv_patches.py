"""Patch convolutions: strides equal to the kernel, no padding, no dilation, one group.

Vision transformers embed an image this way (ViT, DeiT, CLIP, SAM: 16x16 patches; Swin and ConvNeXt's
stem: 4x4; ConvNeXt's downsampling layers: 2x2): the windows do not overlap, so the im2col matrix is
a permutation of the input and every input element is read once. When the input's spatial sizes are
multiples of the kernel, that permutation is a reshape and a transpose of the input itself:
``x.reshape(N, C, O1, K1, O2, K2)`` seen as (N, C, K1, K2, O1, O2) (kernel-major columns) or as
(N, O1, O2, C, K1, K2) (patch-major rows). There is no padded copy of the input (the general
prepared im2col copies the input into its owned zero-padded buffer first), and no ``as_strided`` per
call.

Two layouts, chosen by :func:`patch_major`:

* kernel-major: columns (N, C*K + 1, P), the last row ones, and ``y = W @ columns``, written in NCHW
  order; the copy moves single elements (runs along an output row have stride K2);
* patch-major: rows (N, P, C*K + 1), the last column ones, ``t = rows @ W^T`` then one transposing
  copy into NCHW. Its gather copies contiguous runs of K2 elements, which pays when K2 is long and
  the transposing copy of the (P, M) result is small.

In both the bias is a weight column times a column of ones, added by the matmul.
"""

from __future__ import annotations

import math

import numpy as np

from .conv import scratch
from .conv_relu import relu_inplace

# patch-major rows are used from this kernel width on (the innermost run of the gather, in elements)
# up to this many result elements per sample (P * M, which the transposing copy moves). Measured with
# benchmarks/conv_patches.py (one thread, float32, against kernel-major): 0.84-0.95x the time for
# 8x8 and 16x16 patches with P * M of 1024-2048, 1.05-1.2x from 9216 up (P = 144 and 196), and
# 1.5-3x for 2x2 and 4x4 kernels whatever the size (runs of 2 or 4 elements)
PATCH_MAJOR_MIN_WIDTH = 8
PATCH_MAJOR_MAX_RESULT = 1 << 12
# layers whose work arrays hold at most this many elements own them (written by the preparing thread
# only: PreparedConv runs other threads' calls through the general kernel); larger ones use scratch
OWNED_LIMIT = 1 << 18


def is_patch_conv(shape, kshape, strides, dilations, pads_begin, pads_end, group) -> bool:
    """Whether a conv of inputs ``shape`` is a patch conv this module runs: one group, strides equal
    to the kernel, no dilation or padding, spatial sizes multiples of the kernel, kernel above 1x1."""
    spatial = tuple(shape[2:])
    return (group == 1 and len(kshape) == len(spatial) and math.prod(kshape) > 1 and
            tuple(strides) == tuple(kshape) and all(d == 1 for d in dilations) and
            not any(pads_begin) and not any(pads_end) and all(s % k == 0 for s, k in zip(spatial, kshape)))


def patch_major(kshape, out, m) -> bool:
    """The layout rule: patch-major rows for long kernel rows and small results, else kernel-major."""
    return kshape[-1] >= PATCH_MAJOR_MIN_WIDTH and math.prod(out) * m <= PATCH_MAJOR_MAX_RESULT


def prepare_patches(w, b, shape, relu, rows_layout=None):
    """The closure ``(x, out) -> y`` of a patch conv (see :func:`is_patch_conv`) for C-contiguous
    inputs of ``shape``; ``rows_layout`` forces a layout (None: :func:`patch_major` decides)."""
    n, c = shape[:2]
    m = w.shape[0]
    kshape = tuple(w.shape[2:])
    nd = len(kshape)
    out = tuple(s // k for s, k in zip(shape[2:], kshape))
    p_size, taps = math.prod(out), c * math.prod(kshape)
    dtype = w.dtype
    split = (n, c) + tuple(v for o, k in zip(out, kshape) for v in (o, k))  # (N, C, O1, K1, O2, K2, ...)
    outer = tuple(2 + 2 * i for i in range(nd))
    inner = tuple(3 + 2 * i for i in range(nd))
    wm = w.reshape(m, taps)
    if b is not None:
        wm = np.concatenate([wm, b.reshape(m, 1)], axis=1)
    ones = b is not None
    full_shape = (n, m) + out
    rows_layout = patch_major(kshape, out, m) if rows_layout is None else rows_layout

    if rows_layout:
        order = (0,) + outer + (1,) + inner
        gathered = (n,) + out + (c,) + kshape
        wt = np.ascontiguousarray(wm.T)
        # small layers own their rows (the column of ones written once) and product: no scratch lookups
        owned = n * p_size * (taps + ones + m) <= OWNED_LIMIT
        rows_buffer = np.empty((n, p_size, taps + ones), dtype) if owned else None
        t_buffer = np.empty((n, p_size, m), dtype) if owned else None
        if owned and ones:
            rows_buffer[:, :, taps] = 1

        def patch_rows_conv(x, dest):
            rows = rows_buffer
            if rows is None:
                rows = scratch((n, p_size, taps + ones), dtype, slot="patches")
                if ones:
                    rows[:, :, taps] = 1
            rows[:, :, :taps].reshape(gathered, copy=False)[...] = x.reshape(split).transpose(order)
            t = t_buffer if t_buffer is not None else scratch((n, p_size, m), dtype, slot="patch_result")
            np.matmul(rows, wt, out=t)
            y = np.empty(full_shape, dtype) if dest is None else dest
            src = t.transpose(0, 2, 1).reshape(full_shape, copy=False)
            if relu:
                np.maximum(src, 0, out=y)
            else:
                np.copyto(y, src)
            return y
        return patch_rows_conv

    order = (0, 1) + inner + outer
    gathered = (n, c) + kshape + out
    owned = n * (taps + ones) * p_size <= OWNED_LIMIT
    cols_buffer = np.empty((n, taps + ones, p_size), dtype) if owned else None
    if owned and ones:
        cols_buffer[:, taps] = 1

    def patch_columns_conv(x, dest):
        cols = cols_buffer
        if cols is None:
            cols = scratch((n, taps + ones, p_size), dtype, slot="patches")
            if ones:
                cols[:, taps] = 1
        cols[:, :taps].reshape(gathered, copy=False)[...] = x.reshape(split).transpose(order)
        y = np.empty(full_shape, dtype) if dest is None else dest
        np.matmul(wm, cols, out=y.reshape((n, m, p_size), copy=False))
        if relu:
            relu_inplace(y)
        return y
    return patch_columns_conv
