"""Winograd minimal filtering for 3x3 convolutions (unit stride and dilation, one group, float32).

F(m x m, 3 x 3) computes each m x m tile of outputs from an (m+2) x (m+2) tile of inputs with
(m+2)^2 elementwise products in a transformed domain instead of 9 m^2 (Lavin & Gray, "Fast
Algorithms for Convolutional Neural Networks", 2015). Over channels the products become
(m+2)^2 independent matmuls ``U[k] (M x C) @ V[k] (C x tiles)``: F(2x2) needs 16 matmuls with 2.25x
fewer multiply-adds than im2col + one matmul, F(4x4) 36 with 4x fewer, but its larger transform
coefficients cost accuracy (see :data:`TRANSFORMS`).

* the weights ``U = G g G^T`` are transformed once, in float64, when a shape is prepared;
* the input transform ``V = B^T d B`` and the output transform ``Y = A^T M A`` are a few
  vectorized numpy adds over strided tile views (rows first, then columns), written into scratch;
* large images are processed one band of tile rows at a time, so that the band's padded input,
  transformed input and products stay in cache between the passes (and memory stays bounded);
* the bias is added to the one product that every output of a tile takes with coefficient 1 (an
  add over 1/(m+2)^2 of the products instead of a pass over the result); the fused Relu runs on
  each band of results while they are in cache.

:func:`prepare_winograd` returns the ``(x, out) -> y`` closure of :class:`.conv_prepared.PreparedConv`.
"""

from __future__ import annotations

import numpy as np

from .conv import scratch
from .conv_relu import relu_inplace

# (G, B^T, A^T) per output tile size m, from the interpolation points 0, +-1 (, +-2) and infinity
TRANSFORMS = {
    2: (np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]),
        np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=float),
        np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=float)),
    4: (np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                  [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
        np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                  [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=float),
        np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
                 dtype=float)),
}

# elements of transformed input per band (float32): ~2 MiB, so that a band's transformed input and
# products stay in L2 between the input transform, the matmuls and the output transform
_BAND = 1 << 19


# F(2x2, 3x3) pays only where the matmuls dominate the numpy transforms: measured per layer against
# PreparedConv's im2col on VGG19/ResNet50/Inception-v2 layers, one thread (Winograd/im2col time):
# C x M = 256 x 256 at 56: 0.73, at 28: 0.86, at 14: 0.85-0.96; 512 x 512 at 28: 0.60, at 14: 0.70-0.84;
# but 128 x 256 at 28: 1.04 (0.82 at 56), 192 x 192 and 192 x 256 at 14: 1.00, 64 x 64 at 56: 1.1-1.7,
# 512 x 512 at 7: 0.84-1.06 (too few tiles). F(4x4) lost everywhere (1.0-6.6x: its 36 transforms
# cost more than the matmul work they save).
_MIN_CHANNEL_PRODUCT = 256 * 256
_MIN_OUTPUTS = 14 * 14


def use_winograd(c, m, out):
    """Whether a 3x3 conv from ``c`` to ``m`` channels with output size ``out`` runs faster as F(2x2, 3x3)."""
    return c * m >= _MIN_CHANNEL_PRODUCT and out[0] * out[1] >= _MIN_OUTPUTS


def transform_weights(w, m):
    """``U`` of shape ((m+2)^2, M, C): ``G w G^T`` per (output, input) channel pair, as w's dtype."""
    g = TRANSFORMS[m][0]
    u = np.einsum("ai,mcij,bj->abmc", g, w.astype(np.float64), g)
    return np.ascontiguousarray(u.reshape(((m + 2) ** 2,) + w.shape[:2]).astype(w.dtype))


def _combine(dst, coefs, views, tmp):
    """``dst = sum(coef * view)`` over the nonzero coefficients, without temporaries but ``tmp``."""
    terms = [(c, v) for c, v in zip(coefs, views) if c]
    (c0, v0), rest = terms[0], terms[1:]
    if rest and c0 == 1 and rest[0][0] in (1, -1):  # the usual first step: one add instead of two calls
        c1, v1 = rest.pop(0)
        (np.add if c1 == 1 else np.subtract)(v0, v1, out=dst)
    elif c0 == 1:
        np.copyto(dst, v0)
    elif c0 == -1:
        np.negative(v0, out=dst)
    else:
        np.multiply(v0, dst.dtype.type(c0), out=dst)
    for c, v in rest:
        if c == 1:
            np.add(dst, v, out=dst)
        elif c == -1:
            np.subtract(dst, v, out=dst)
        else:
            t = tmp[:dst.size].reshape(dst.shape)
            np.multiply(v, dst.dtype.type(c), out=t)
            np.add(dst, t, out=dst)


def prepare_winograd(w, b, shape, pads_begin, out, m=2, relu=False):
    """The closure ``(x, out) -> y`` of ``Conv(x, w, b)`` (then Relu) for inputs of ``shape``
    (N, C, H, W), 3x3 weights ``w`` (M, C, 3, 3), unit strides and dilations, one group, begin pads
    ``pads_begin`` and output size ``out`` (end pads are implied by it)."""
    n, c, h, wd = shape
    mo = w.shape[0]
    dtype = w.dtype
    _, bt, at = TRANSFORMS[m]
    a = m + 2
    u = transform_weights(w, m)
    ho, wo = out
    th, tw = -(-ho // m), -(-wo // m)  # tiles per column and row (the last ones may be partial)
    pt, pl = pads_begin
    # the product every output of a tile takes with coefficient 1 carries the bias
    ones = [k for k in range(a) if all(at[:, k] == 1)][0] * (a + 1)
    bias = None if b is None else b.reshape(mo, 1).astype(dtype)
    # the padded input, channels last and split by row and column phase modulo m:
    # buf[p, i, q, j, c] = padded[c, m * i + p, m * j + q], so that every tile view below is a block
    # of long contiguous runs (NCHW tile views have runs of one tile row: slow numpy loops)
    buf_shape = (m, th + 1, m, tw + 1, c)
    phases = []
    for p in range(m):
        for q in range(m):
            # padded row m*i+p is x row m*i+p-pt: valid for i in [i0, i1)
            i0, i1 = -(-(pt - p) // m), -(-(h + pt - p) // m)
            j0, j1 = -(-(pl - q) // m), -(-(wd + pl - q) // m)
            i0, j0 = max(i0, 0), max(j0, 0)
            i1, j1 = min(i1, th + 1), min(j1, tw + 1)
            src = (slice(None), slice(m * i0 + p - pt, m * (i1 - 1) + p - pt + 1, m),
                   slice(m * j0 + q - pl, m * (j1 - 1) + q - pl + 1, m))
            phases.append((p, q, i0, i1, j0, j1, src))
    full_shape = (n, mo, ho, wo)
    band = max(1, min(th, _BAND // (a * a * tw * max(c, mo))))  # tile rows per band
    bands = [(t0, min(th, t0 + band)) for t0 in range(0, th, band)]

    def run(x, y):
        if y is None:
            y = np.empty(full_shape, dtype)
        buf = scratch(buf_shape, dtype, slot="winograd_input")
        for k in range(n):
            xi, yi = x[k], y[k]
            for p, q, i0, i1, j0, j1, src in phases:
                part = buf[p, :, q]
                part[:i0] = 0
                part[i1:] = 0
                part[i0:i1, :j0] = 0
                part[i0:i1, j1:] = 0
                if i1 > i0 and j1 > j0:
                    part[i0:i1, j0:j1] = xi[src].transpose(1, 2, 0)
            for t0, t1 in bands:
                nb = t1 - t0
                tmp = scratch((max(c, mo) * nb * m * (tw + 1),), dtype, slot="winograd_tmp")
                rt = scratch((a, nb, m, tw + 1, c), dtype, slot="winograd_rows")
                v = scratch((a, a, nb, tw, c), dtype, slot="winograd_v")
                prods = scratch((a * a, mo, nb * tw), dtype, slot="winograd_m")
                zt = scratch((m, a, mo, nb, tw), dtype, slot="winograd_out")
                # input transform: rows (B^T d), then columns ((B^T d) B)
                drows = [buf[i % m, t0 + i // m:t1 + i // m] for i in range(a)]
                for r in range(a):
                    _combine(rt[r], bt[r], drows, tmp)
                for r in range(a):
                    dcols = [rt[r][:, j % m, j // m:j // m + tw] for j in range(a)]
                    for s in range(a):
                        _combine(v[r, s], bt[s], dcols, tmp)
                np.matmul(u, v.reshape(a * a, nb * tw, c).transpose(0, 2, 1), out=prods)
                if bias is not None:
                    prods[ones] += bias
                # output transform: rows (A^T M), then columns ((A^T M) A), into the strided outputs
                p4 = prods.reshape(a, a, mo, nb, tw)
                for p in range(m):
                    for s in range(a):
                        _combine(zt[p, s], at[p], [p4[r, s] for r in range(a)], tmp)
                for p in range(m):
                    nr = min(nb, -(-(ho - m * t0 - p) // m))  # band tile rows whose row p is an output
                    if nr <= 0:
                        continue
                    for q in range(m):
                        nc = -(-(wo - q) // m)
                        dst = yi[:, m * t0 + p:m * (t0 + nr - 1) + p + 1:m, q::m]
                        _combine(dst, at[q], [zt[p, s][:, :nr, :nc] for s in range(a)], tmp)
                if relu:
                    relu_inplace(yi[:, m * t0:min(ho, m * t1)])
        return y
    return run
