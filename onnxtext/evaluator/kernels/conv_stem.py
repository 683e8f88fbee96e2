"""The CNN "stem" as one step: Conv(stride 2, constant weights) [-> Relu] -> MaxPool(3x3, stride 2).

Six of the ONNX light models start this way (3 input channels, 3x3 or 7x7 kernel). Run as separate
steps, the conv's im2col is stride-2 gathers (each inner loop one output row) and the pool's taps are
stride-2 views of short rows: numpy spends its time per inner loop, not per element. This step lays
both out in STRIDE PHASES so that every copy and every max runs over long contiguous runs:

* **Output phases.** The conv result is computed directly as the four (row parity, column parity)
  phases of the pool's zero-padded input, each a plane of ``Ri x Wq`` positions per channel. A pool
  tap (dy, dx) reads phase (dy % 2, dx % 2) shifted by (dy // 2, dx // 2): a flat shift of a plane,
  so the separable max is a few ufunc calls over whole planes: the vertical max of a column phase as
  soon as its two planes are computed (still in cache), then the horizontal max and one crop copy.
  Positions of the planes that are pool padding are set to 0 after the matmul when a Relu follows
  (every value is >= 0 after it, so 0 is as good as -inf; the Relu itself runs on the pooled result,
  a quarter of the elements, since max and Relu commute) and to -inf otherwise.
* **Input phases.** Output phase position (i, j) of phase (A, B) reads padded input row
  ``4 i + 2 A + ky`` (and likewise for columns): the input is split once into its 16 (row mod 4,
  column mod 4) phases, each flattened per channel with the planes' width ``Wq``. Every group of
  taps that falls in one input phase is then a regular (channel, tap column) grid of contiguous
  slices of that phase (the flat-shift trick of ``conv._FlatImage``), copied in one call.
* **Shared rows.** Row phase A with tap row ky reads the same input rows as row phase A + 1 with tap
  row ky - 2, so one column matrix per column phase serves both row phases: its rows are blocks by
  ``2 A + ky``, and each row phase multiplies a contiguous slice of them (0.64x the copies of one
  matrix per output phase for 7x7 kernels). The weights are permuted once to match; the bias is a
  weight column times a constant row of ones, placed where both slices hold it.
* Positions whose reads wrap into the next plane row, or that lie beyond what the pool reads, are
  computed but never read (about 5% of the matmul).

The buffers (input phases, columns, output phases) belong to the step and are made once per input
shape. Anything else (another dtype or rank, geometry outside the cases above, a call from another
thread) runs the original Conv and MaxPool kernels.
"""

from __future__ import annotations

import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .conv import _conv_geometry, spatial_geometry
from .conv_relu import relu_inplace

# largest output plane (elements: channels x positions of one phase) and split input a stem keeps;
# beyond, the separate kernels' banded im2col keeps memory bounded
_PLANE_LIMIT = 1 << 22
# column matrix elements per matmul: each output phase is built and multiplied in bands of
# positions this size, so the columns are still in cache when the matmul reads them
_BAND = 1 << 20
# largest C_in * kh * kw: the phases pay off where im2col copies dominate (few input channels)
_MAX_ROWS = 512


class ConvStem:
    """``Relu(MaxPool(Conv(x)))`` (or without the Relu) for a PreparedConv ``conv`` without Relu and
    with constant float32 weights; see the module docstring. ``pool`` is the MaxPool kernel, called
    with ``pool_attrs`` and a context of ``pool_info`` on the fallback path. The plan fuses
    ``MaxPool(Relu(Conv(x)))`` into this only where the pool's windows all hold input, where max and
    Relu commute."""

    __slots__ = ("conv", "relu", "pool", "pool_attrs", "pool_info", "_shapes", "_owner")

    def __init__(self, conv, relu: bool, pool, pool_attrs: dict, pool_info):
        self.conv, self.relu, self.pool, self.pool_attrs, self.pool_info = conv, relu, pool, pool_attrs, pool_info
        self._shapes: dict = {}
        self._owner = threading.get_ident()

    def __call__(self, x):
        run = self._shapes.get(x.shape) if type(x) is np.ndarray and x.dtype == np.float32 else None
        if run is None:
            if type(x) is not np.ndarray or x.dtype != np.float32 or x.ndim != 4 or x.shape in self._shapes or \
                    self.conv.w.dtype != np.float32:
                return self._separate(x)
            run = self._shapes[x.shape] = _prepare(self.conv, self.relu, self.pool_attrs, x.shape)
            if run is None:
                return self._separate(x)
        if threading.get_ident() != self._owner:  # the owned buffers belong to the preparing thread
            return self._separate(x)
        return run(x)

    def _separate(self, x):
        """The original kernels, one after the other."""
        from ..plan import KernelContext

        y = self.pool(KernelContext(self.pool_info, {}), self.conv(x), **self.pool_attrs)
        if self.relu:
            y = relu_inplace(y) if type(y) is np.ndarray and y.flags.writeable else np.maximum(y, 0)
        return y


def is_stem(conv, pool_attrs) -> bool:
    """Whether a PreparedConv and a MaxPool's attributes can be a stem (for some input shapes):
    a 2-D float32 conv with stride 2, one group and few weights per output, and a 3x3 pool of
    stride 2 without ceil mode."""
    w, attrs, p = conv.w, conv.attrs, pool_attrs
    return w.ndim == 4 and w.dtype == np.float32 and attrs.get("group", 1) == 1 and \
        list(attrs.get("strides") or ()) == [2, 2] and list(attrs.get("dilations") or [1, 1]) == [1, 1] and \
        w.shape[1] * w.shape[2] * w.shape[3] <= _MAX_ROWS and list(p.get("kernel_shape") or ()) == [3, 3] and \
        list(p.get("strides") or ()) == [2, 2] and not p.get("ceil_mode", 0) and \
        list(p.get("dilations") or [1, 1]) == [1, 1]


def stem_geometry(conv, pool_attrs, shape):
    """``(conv pads begin, conv output shape, pool pads begin, pool output shape)`` when the conv
    and pool have the geometry this step handles for inputs of ``shape``, else None."""
    w, attrs = conv.w, conv.attrs
    if len(shape) != 4 or not is_stem(conv, pool_attrs) or w.shape[1] != shape[1]:
        return None
    probe = np.empty((0,) + tuple(shape[1:]), w.dtype)
    try:
        _, _, pb, _, out = _conv_geometry(probe, w, attrs.get("kernel_shape"), attrs.get("strides"),
                                          attrs.get("dilations"), attrs.get("pads"), attrs["auto_pad"])
    except (ValueError, TypeError):
        return None
    if min(out) <= 0 or min(pb) < 0:
        return None
    try:
        qb, qe, pooled = spatial_geometry(tuple(out), [3, 3], [2, 2], [1, 1], pool_attrs.get("pads"),
                                          pool_attrs.get("auto_pad", "NOTSET"))
    except (ValueError, TypeError):
        return None
    # a window starting two positions before the image would hold padding only (-inf without Relu)
    if min(pooled) <= 0 or any(q not in (0, 1) for q in qb) or any(q < 0 for q in qe):
        return None
    return tuple(pb), tuple(out), tuple(qb), tuple(pooled)


class _Axis:
    """The phase geometry along one spatial axis (see the module docstring).

    Input index ``h`` lives in input phase ``(h + pad) % 4`` at position ``(h + pad) // 4``, where
    ``pad`` (a multiple of 4) is at least ``conv pad + 2 * pool pad``; output phase ``a`` position
    ``i`` is conv output ``2 i + a - pool pad``, which for tap ``k`` reads input phase
    ``t % 4`` position ``i + t // 4`` with ``t = 2 a + k + shift``.
    """

    def __init__(self, size, k, pb, conv_out, qb, pooled):
        self.k, self.conv_out, self.qb, self.pooled = k, conv_out, qb, pooled
        self.pad = -(-(pb + 2 * qb) // 4) * 4
        self.shift = self.pad - pb - 2 * qb
        self.first = self.pad // 4  # position of input index 0 in its phase
        self.count = [len(range(r, size, 4)) for r in range(4)]  # input indices per phase
        max_offset = (2 + k - 1 + self.shift) // 4
        self.positions = pooled + 1  # output phase positions the pool reads: i <= pooled
        self.width = max(self.positions + max_offset, self.first + -(-size // 4))
        self.rows = max(self.positions + max_offset + 1, self.first + -(-size // 4))

    def taps(self, a, r):
        """(first tap, number of taps, offset of the first) of output phase ``a`` in input phase ``r``
        (the taps ``first, first + 4, ...``, at consecutive offsets)."""
        k0 = (r - 2 * a - self.shift) % 4
        if k0 >= self.k:
            return None
        return k0, len(range(k0, self.k, 4)), (2 * a + k0 + self.shift) // 4

    def padding(self, a):
        """Output phase ``a`` positions the pool reads that are pool padding (not conv outputs)."""
        read = self.positions if a == 0 else self.positions - 1  # tap 2 reads i + 1 in phase 0 only
        return [i for i in range(read) if not 0 <= 2 * i + a - self.qb < self.conv_out]


def _prepare(conv, relu, pool_attrs, shape):
    """The closure ``x -> pooled result`` for inputs of ``shape``, or None (separate kernels)."""
    geometry = stem_geometry(conv, pool_attrs, shape)
    if geometry is None:
        return None
    pb, conv_out, qb, pooled = geometry
    w, b = conv.w, conv.b
    n, c, height, width = shape
    m, _, kh, kw = w.shape
    ay = _Axis(height, kh, pb[0], conv_out[0], qb[0], pooled[0])
    ax = _Axis(width, kw, pb[1], conv_out[1], qb[1], pooled[1])
    wq, plane_len = ax.width, ay.positions * ax.width  # plane row width, positions per plane
    if m * plane_len > _PLANE_LIMIT or c * 16 * ay.rows * wq > _PLANE_LIMIT:
        return None
    item = np.dtype(np.float32).itemsize

    # input phases (r, s, C, rows, width), zero once: each call rewrites only the data positions
    phases = np.zeros((4, 4, c, ay.rows, wq), np.float32)
    plane_stride = ay.rows * wq
    if height % 4 == 0 and width % 4 == 0:
        dst = phases[:, :, :, ay.first:ay.first + height // 4, ax.first:ax.first + width // 4]
        src_shape = (c, height // 4, 4, width // 4, 4)
        copies = [(dst, lambda xi: xi.reshape(src_shape).transpose(2, 4, 0, 1, 3))]
    else:
        copies = []
        for r in range(4):
            for s in range(4):
                if ay.count[r] and ax.count[s]:
                    dst = phases[r, s, :, ay.first:ay.first + ay.count[r], ax.first:ax.first + ax.count[s]]
                    copies.append((dst, lambda xi, r=r, s=s: xi[:, r::4, s::4]))

    # Per column phase B: one column matrix serves both row phases. Its rows are blocks, one per
    # tap row offset tau = 2 A + ky (the same input rows for (A, ky) and (A + 1, ky - 2)), each
    # block (column-input-phase s, channel, tap column) rows; row phase A multiplies the contiguous
    # blocks tau = 2 A ... 2 A + kh - 1 (and the bias row of ones, placed between blocks 1 and 2
    # so that both row phases' slices hold it): 0.64x the copies of one matrix per output phase.
    taus = sorted({2 * a + ky for a in range(2) for ky in range(kh)})
    layout = [t for t in taus if t < 2] + ([None] if b is not None else []) + [t for t in taus if t >= 2]
    block_rows = c * kw
    starts, row = {}, 0
    for entry in layout:
        starts[entry] = row
        row += 1 if entry is None else block_rows
    rows = row
    planes = np.empty((2, m, plane_len), np.float32)  # the two row phases of one column phase
    band = max(1, min(plane_len, _BAND // rows))
    bands = [(p0, min(plane_len, p0 + band)) for p0 in range(0, plane_len, band)]
    cols = np.empty((rows, band), np.float32)
    if b is not None:
        cols[starts[None]] = 1  # the bias row, never overwritten
    plans = [[], []]  # per column phase: (copies, matmuls) per band
    for bb in range(2):
        groups = [(s,) + ax.taps(bb, s) for s in range(4) if ax.taps(bb, s) is not None]
        blocks = []  # (source view over all positions, first row, column taps)
        for t in taus:
            r, oy = (t + ay.shift) % 4, (t + ay.shift) // 4
            row = starts[t]
            for s, kx0, nkx, ox in groups:
                src = as_strided(phases[r, s].reshape(-1)[oy * wq + ox:], (c, nkx, plane_len),
                                 (plane_stride * item, item, item), writeable=False)
                blocks.append((src, row, nkx))
                row += c * nkx
        weights = []
        for a in range(2):
            lo = min(starts[2 * a], starts.get(None, rows))
            hi = max(starts[2 * a + kh - 1] + block_rows, starts.get(None, -1) + 1)
            parts = []
            for entry in layout:
                if not lo <= starts[entry] < hi:
                    continue
                if entry is None:
                    parts.append(b.reshape(m, 1))
                    continue
                ky = entry - 2 * a
                parts.extend(w[:, :, ky, kx0::4] for s, kx0, nkx, ox in groups)  # (M, C, nkx) each
                parts[-len(groups):] = [p.reshape(m, -1) for p in parts[-len(groups):]]
            wp = np.ascontiguousarray(np.concatenate(parts, axis=1), dtype=np.float32)
            assert wp.shape[1] == hi - lo, "the blocks of a row phase must be contiguous rows"
            weights.append((wp, lo, hi))
        for p0, p1 in bands:
            dst = cols[:, :p1 - p0]
            copies_of_band = [(src[..., p0:p1], dst[row:row + c * nkx].reshape(c, nkx, p1 - p0))
                              for src, row, nkx in blocks]
            products = [(wp, dst[lo:hi], planes[a][:, p0:p1]) for a, (wp, lo, hi) in enumerate(weights)]
            plans[bb].append((copies_of_band, products))

    # the pool padding each plane must show after the matmul
    fill = 0.0 if relu else -np.inf
    fills = [[], []]  # per column phase
    for bb in range(2):
        for a in range(2):
            plane = planes[a].reshape(m, ay.positions, wq)
            fills[bb].extend(plane[:, i, :] for i in ay.padding(a))
            fills[bb].extend(plane[:, :, j] for j in ax.padding(bb))
    flat = planes.reshape(2, m * plane_len)
    total = m * plane_len
    vertical = np.empty((2, total), np.float32)
    span = total - wq  # the vertical max of row i reads row i + 1: the last row is not computed
    po_y, po_x = pooled
    pooled_view = vertical[1].reshape(m, ay.positions, wq)[:, :po_y, :po_x]
    result_shape = (n, m, po_y, po_x)

    def stem(x):
        result = np.empty(result_shape, np.float32)
        for image in range(n):
            xi = x[image]
            for dst, src in copies:
                np.copyto(dst, src(xi))
            for bb in range(2):
                for blocks, products in plans[bb]:
                    for src, dst in blocks:
                        np.copyto(dst, src)
                    for wp, band_cols, band_out in products:
                        np.matmul(wp, band_cols, out=band_out)
                for view in fills[bb]:
                    view[...] = fill
                # the vertical max of this column phase while its planes are in cache: taps
                # dy = 0, 1 at row i and dy = 2 at row i + 1 (row phase 0)
                v = vertical[bb, :span]
                np.maximum(flat[0, :span], flat[1, :span], out=v)
                np.maximum(v, flat[0, wq:], out=v)
            # horizontal: dx = 0, 1 at column j and dx = 2 at column j + 1 of column phase 0; then
            # one crop copy (a strided max straight into the result measured 1.3x these passes)
            h = vertical[1, :span - 1]
            np.maximum(vertical[0, :span - 1], h, out=h)
            np.maximum(h, vertical[0, 1:span], out=h)
            np.copyto(result[image], pooled_view)
            if relu:
                relu_inplace(result[image])
        return result
    return stem

