"""Conv with constant weights, prepared once per input shape (used by the plan's fusion pass).

The Conv kernel (:mod:`.conv`) works out geometry, strategy, views and reshapes at every call: tens
of microseconds of Python per node, which on ShuffleNet/SqueezeNet-sized layers costs as much as the
arithmetic. :class:`PreparedConv` does that work once per input shape and keeps, per shape, a small
closure that only moves data and calls BLAS, and finishes the result (bias, fused Relu) itself:

* 1x1, unit strides, no padding: one (batched over groups) matmul on the input itself;
* patch convs (strides equal to the kernel, no padding: ViT's patch embedding): the columns are a
  reshape and transpose of the input, see :mod:`.conv_patches`;
* depthwise layers (one input channel per group): cache-blocked columns, see :mod:`.conv_depthwise`;
* 3x3 layers with many channels (unit strides, one group, float32): Winograd F(2x2, 3x3), see
  :mod:`.conv_winograd`;
* every other small layer: the zero-padded input lives in a buffer owned by the prepared conv (its
  border is zeroed once), the im2col window view over it is built once, and each call copies the
  input into the buffer's interior and the window view into a scratch column matrix (a band of
  output rows at a time for large layers), and multiplies. For short columns the bias is one more
  weight column times a row of ones, so the matmul adds it;
* few outputs from many channels (DenseNet's 3x3 layers): shifted matmuls without im2col over a
  flat zero-padded image owned by the prepared shape, see :mod:`.conv_shifted`;
* unit-stride 2-D layers of at most 64 channels and no more outputs (YOLO's and ResNet's 3x3
  layers): columns of the kernel's horizontal shifts only and one matmul for all kernel rows, whose
  partial sums are added with vertical shifts, see :mod:`.conv_kernel_rows`;
* short rows and few outputs (unit strides, one group): im2col from the flat zero-padded image, one
  contiguous run per tap and channel, cropped with the bias (:func:`_flat_columns`);
* larger layers (buffers above :data:`_OWNED_LIMIT` elements), other dtypes and calls from
  another thread than the one that prepared the shape go through the general kernel.

A call may pass ``out``, a channel slice of a Concat buffer, to write the result in place (see
``fusion.ConcatInto``); :class:`ShuffledConv` writes its channels in channel-shuffled order.
:meth:`PreparedConv.combined` adds a binary ufunc after the conv (a residual Add's operand, a
requantization's multiplier), in the crop of the closures that crop. The closures keep their views of
the shared scratch buffers (:class:`.scratch_views.ScratchViews`) instead of asking for them per call.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .conv import _SHIFTED_MAX_OUTPUTS, _SHIFTED_MIN_RATIO, _conv_geometry, conv, scratch, shared_image
from .conv_depthwise import prepare_depthwise
from .conv_kernel_rows import prepare_kernel_rows, use_kernel_rows
from .conv_patches import is_patch_conv, prepare_patches
from .conv_relu import relu_inplace
from .scratch_views import ScratchViews
from .conv_shifted import prepare_shifted
from .conv_winograd import prepare_winograd, use_winograd

# largest padded input (elements) a prepared conv keeps its own buffer for: beyond it, the general
# kernel's blocked im2col is as fast, and per-layer buffers would cost real memory
_OWNED_LIMIT = 1 << 20
# largest im2col matrix (elements) a prepared conv handles; above _BAND elements it is built and
# multiplied one band of output rows at a time (bands of ~4 MiB of float32: measured on ResNet,
# Inception and VGG layers, smaller bands made the matmuls too thin, larger ones left the cache)
_COLUMNS_LIMIT = 1 << 22
_BAND = 1 << 20
# largest band of results (elements), so the Relu finds them in cache (bands of 1 MiB and 256 KiB
# measured slower than 4 MiB on SqueezeNet, ShuffleNet and ResNet first layers: thinner matmuls)
_OUTPUT_BAND = 1 << 20
# the flat-image im2col (whole padded rows per tap, cropped after) is used up to this output width
# and this many outputs, when the padded rows are at most 1.5x the output rows: short rows make the
# window copy of the plain im2col thousands of tiny runs, which costs more than the matmul when there
# are few outputs (3x3 layers, measured: 2x16 -> 16 at 16x16 0.81x the time, 32 -> 32 at 8x8 and
# 14x14 0.95x; with 64 outputs or more, or 28-wide rows, the longer matmul and the crop cost as much
# or more, up to 1.35x for 512 -> 512 at 7x7)
_FLAT_MAX_WIDTH = 16
_FLAT_MAX_OUTPUTS = 32
# the bias is added by the matmul (a column of the weights times a row of ones in the columns) up
# to this many weights per output; above, a separate pass costs less than the longer matmul rows
_BIAS_COLUMN_MAX = 1024
# kernel-row products (conv_kernel_rows) for the layers its rule picks; False: the im2col instead
KERNEL_ROWS = True
_KERNEL_ROWS_IMAGE_LIMIT = 1 << 22


class PreparedConv:
    """``Conv(x, W, B)`` (then Relu when ``relu``) for constant float ``W``/``B``; see the module docstring."""

    __slots__ = ("w", "b", "attrs", "relu", "exact", "_bias", "_shapes", "_owner")

    def __init__(self, w, b, attrs: dict, relu: bool = False, exact: bool = False):
        # exact: integer-valued operands whose sums must stay exact (QLinearConv): no Winograd transforms
        self.w, self.b, self.attrs, self.relu, self.exact = w, b, attrs, relu, exact
        self._bias = None if b is None else b.reshape((-1,) + (1,) * (w.ndim - 2))
        self._shapes: dict = {}
        self._owner = threading.get_ident()

    def __call__(self, x, out=None):
        """The result, in ``out`` when given: a view of the result's shape and dtype that is a slice
        along the channel axis of a C-contiguous array (a Concat buffer), written in place."""
        run = self._shapes.get(x.shape) if type(x) is np.ndarray and x.dtype == self.w.dtype else None
        if run is None:
            if type(x) is not np.ndarray or x.dtype != self.w.dtype or x.ndim != self.w.ndim or \
                    x.shape in self._shapes:
                return self._general(x, out)
            run = self._shapes[x.shape] = self._prepare(x.shape)
            if run is None:
                return self._general(x, out)
        if threading.get_ident() != self._owner:  # the owned buffers belong to the preparing thread
            return self._general(x, out)
        return run(x, out)

    def combined(self, x, ufunc, operand):
        """``ufunc(self(x), operand)`` in a fresh array: a residual Add's other operand, a
        requantization's multiplier. ``operand`` must broadcast to the result's shape without changing
        it (numpy raises ValueError otherwise). The closures that crop their products into the result
        (the flat-image columns) apply ``ufunc`` in the crop instead of copying: one pass fewer; the
        others run it in place after the conv (after the fused Relu, when there is one)."""
        run = self._shapes.get(x.shape) if type(x) is np.ndarray and x.dtype == self.w.dtype else None
        if run is not None and getattr(run, "epilogue", False) and threading.get_ident() == self._owner:
            return run(x, None, ufunc, operand)
        y = self(x)
        if not y.flags.writeable:
            return ufunc(y, operand)
        ufunc(y, operand, out=y)
        return y

    def output_shape(self, shape):
        """Shape of the result for inputs of ``shape`` (None when the geometry is invalid)."""
        probe = np.empty((0,) + tuple(shape[1:]), self.w.dtype)
        try:
            *_, out = _conv_geometry(probe, self.w, self.attrs.get("kernel_shape"), self.attrs.get("strides"),
                                     self.attrs.get("dilations"), self.attrs.get("pads"), self.attrs["auto_pad"])
        except (ValueError, TypeError):
            return None
        return (shape[0], self.w.shape[0]) + tuple(out) if min(out, default=1) > 0 else None

    def _general(self, x, out=None):
        y = conv(x, self.w, self.b, **self.attrs)
        if self.relu:
            y = relu_inplace(y) if y.flags.writeable else np.maximum(y, 0)
        if out is not None:
            np.copyto(out, y)
            return out
        return y

    # ------------------------------------------------------------------------------- preparation
    def _prepare(self, shape, shuffled=False):
        """The closure ``(x, out) -> y`` for inputs of ``shape`` (bias and Relu included), or None
        to use the general kernel.

        ``shuffled``: the closure must write output channel ``i * (M / group) + j`` of the conv to
        channel ``j * group + i`` of a fresh result (a channel shuffle, see :class:`ShuffledConv`);
        only the matmul closures can, the others give None."""
        w, attrs = self.w, self.attrs
        if len(shape) < 3 or shape[1] % attrs["group"] or w.shape[0] % attrs["group"]:
            return None
        probe = np.empty((0,) + tuple(shape[1:]), w.dtype)  # geometry needs only the shape
        strides, dilations, pb, pe, out = _conv_geometry(probe, w, attrs.get("kernel_shape"), attrs.get("strides"),
                                                          attrs.get("dilations"), attrs.get("pads"), attrs["auto_pad"])
        if min(out) <= 0:
            return None
        n, c = shape[:2]
        group = attrs["group"]
        m = w.shape[0]
        cg, mg = c // group, m // group
        if w.shape[1] != cg:
            return None
        dtype = w.dtype
        kshape = tuple(w.shape[2:])
        k_size, p_size = math.prod(kshape), math.prod(out)
        full_shape = (n, m) + tuple(out)
        flat_out = (n, group, mg, p_size)
        relu = self.relu

        def destination(out):
            """(result, its (N, group, M/group, P) view the matmuls write to)."""
            if out is not None:
                return out, out.reshape(flat_out, copy=False)
            y = np.empty(full_shape, dtype)
            if shuffled:
                return y, y.reshape((n, mg, group, p_size)).transpose(0, 2, 1, 3)
            return y, y.reshape(flat_out)

        if k_size == 1 and not any(pb) and not any(pe) and all(s == 1 for s in strides):
            wg = w.reshape(group, mg, cg)
            flat_in = (n, group, cg, p_size)
            bias = None if self.b is None else self.b.reshape(group, mg, 1)
            if bias is not None and mg >= cg:
                # at least as many outputs as inputs: copying the input under a row of ones, so the
                # matmul adds the bias, costs less than a pass over the output (measured on
                # ShuffleNet/SqueezeNet/ResNet 1x1 layers: 0.56-0.98x; more inputs than outputs: 1.0-1.2x)
                wb = np.concatenate([wg, bias], axis=2)
                aug_shape = (n, group, cg + 1, p_size)

                def make_views():
                    cols = scratch(aug_shape, dtype, slot="pointwise")
                    return cols, cols[:, :, :cg], cols[:, :, cg]
                views = ScratchViews(make_views, ("pointwise",))

                def pointwise_ones(x, out):
                    cols, inputs_part, ones_part = views.get()
                    np.copyto(inputs_part, x.reshape(flat_in))
                    ones_part.fill(1)
                    y, flat = destination(out)
                    np.matmul(wb, cols, out=flat)
                    if relu:
                        relu_inplace(y)
                    return y
                return pointwise_ones

            def pointwise(x, out):
                y, flat = destination(out)
                np.matmul(wg, x.reshape(flat_in), out=flat)
                if bias is not None:
                    flat += bias
                if relu:
                    relu_inplace(y)
                return y
            return pointwise
        if not shuffled and is_patch_conv(shape, kshape, strides, dilations, pb, pe, group):
            return prepare_patches(w, self.b, shape, relu)
        if group == 1 and kshape == (3, 3) and dtype == np.float32 and not shuffled and not self.exact and \
                all(s == 1 for s in strides) and all(d == 1 for d in dilations) and use_winograd(c, m, out):
            return prepare_winograd(w, self.b, shape, pb, out, relu=relu)
        padded_shape = (n, c) + tuple(d + b + e for d, b, e in zip(shape[2:], pb, pe))
        if group == 1 and all(s == 1 for s in strides) and mg <= _SHIFTED_MAX_OUTPUTS and m * _SHIFTED_MIN_RATIO <= c:
            # few outputs from many channels: shifted matmuls, no im2col (see conv_shifted). Unlike
            # the general kernel, at any row length: prepared, DenseNet's 128 -> 32 layers at 14x14
            # and 7x7 took 0.55-0.70x the time of the prepared im2col (0.83-0.90x at 28 and 56)
            if shuffled or math.prod(padded_shape) > _OWNED_LIMIT:
                return None
            return prepare_shifted(w, self.b, shape, pb, pe, dilations, out, relu)
        if group == 1 and not shuffled and KERNEL_ROWS and all(s == 1 for s in strides) and \
                (out[-1] > _FLAT_MAX_WIDTH or m > _FLAT_MAX_OUTPUTS) and use_kernel_rows(c, m, kshape, out) and \
                math.prod(padded_shape) <= _KERNEL_ROWS_IMAGE_LIMIT:
            # the padded image is shared by the layers of its geometry, the columns are banded
            return prepare_kernel_rows(w, self.b, shape, pb, pe, dilations, out, relu)
        depthwise = cg == 1 and group > 1 and mg == 1
        if math.prod(padded_shape) > _OWNED_LIMIT:
            return None
        if depthwise:  # blocked columns: no limit on their total size
            return None if shuffled else _finished(prepare_depthwise(w, shape, pb, strides, dilations, out, self.b),
                                                   relu)
        if group == 1 and not shuffled and all(s == 1 for s in strides) and \
                out[-1] <= _FLAT_MAX_WIDTH and m <= _FLAT_MAX_OUTPUTS and padded_shape[-1] * 2 <= out[-1] * 3 and \
                n * c * k_size * p_size * padded_shape[-1] <= _COLUMNS_LIMIT * out[-1]:
            return _flat_columns(w, self.b, shape, padded_shape, pb, dilations, out, relu)
        ones = self.b is not None and cg * k_size <= _BIAS_COLUMN_MAX
        rows = cg * k_size + ones  # a row of ones multiplies the bias column
        if n * group * rows * p_size > _COLUMNS_LIMIT and n > 1:
            return None
        padded = np.zeros(padded_shape, dtype)
        interior = padded[(Ellipsis,) + tuple(slice(b, b + d) for b, d in zip(pb, shape[2:]))]
        st = padded.strides
        item_strides = st[2:]
        window = as_strided(padded, (n, group, cg) + kshape + tuple(out),
                            (st[0], st[1] * cg, st[1]) + tuple(s * d for s, d in zip(item_strides, dilations)) +
                            tuple(s * t for s, t in zip(item_strides, strides)), writeable=False)
        wg = w.reshape(group, mg, cg * k_size)
        if ones:  # the bias as one more weight column: the matmul adds it
            wg = np.concatenate([wg, self.b.reshape(group, mg, 1)], axis=2)
        bias = self.b.reshape(group, mg, 1) if self.b is not None and not ones else None
        nd = len(out)
        if n > 1:
            cols_shape = (n, group, rows, p_size)

            def make_views():
                cols = scratch(cols_shape, dtype)
                return cols, cols[:, :, :cg * k_size].reshape(window.shape, copy=False), cols[:, :, cg * k_size:]
            views = ScratchViews(make_views, ("columns",))

            def im2col_conv(x, out):
                np.copyto(interior, x)
                cols, taps_part, ones_part = views.get()
                np.copyto(taps_part, window)
                if ones:
                    ones_part.fill(1)
                y, flat = destination(out)
                _multiply(wg, cols, flat, bias, relu)
                return y
            return im2col_conv
        # im2col and multiply one band of output rows at a time, so that the band's columns are still
        # in cache when the matmul reads them and its results when the Relu runs (whole matrices of
        # large layers would not fit in L2); small layers are one band
        rows_size = p_size // out[0]  # output positions per index of the first output axis
        band = max(1, min(_BAND // (rows * rows_size), _OUTPUT_BAND // (m * rows_size)))
        bands = []
        for r0 in range(0, out[0], band):
            r1 = min(out[0], r0 + band)
            src = window[(0, slice(None), slice(None)) + (slice(None),) * nd + (slice(r0, r1),)]
            bands.append((src, (group, rows, (r1 - r0) * rows_size), r0 * rows_size, r1 * rows_size))
        if len(bands) == 1 and band >= out[0]:
            bands[0] = (window[0], (group, rows, p_size), 0, p_size)

        def banded_conv(x, out):
            np.copyto(interior, x)
            y, flat = destination(out)
            flat = flat[0]
            for src, cols_shape, p0, p1 in bands:
                cols = scratch(cols_shape, dtype)
                cols[:, :cg * k_size].reshape(src.shape, copy=False)[...] = src
                if ones:
                    cols[:, cg * k_size] = 1
                _multiply(wg, cols, flat[:, :, p0:p1], bias, relu)
            return y
        return banded_conv


def _flat_columns(w, b, shape, padded_shape, pads_begin, dilations, out, relu):
    """The closure of a unit-stride, one-group conv with short output rows: im2col over the flat
    padded image (see ``conv._FlatImage``), so every tap of a channel is ONE contiguous run of
    ``out[0] * padded width`` elements instead of ``out[0]`` runs of ``out[-1]``; the positions
    past the output width are computed too and dropped when the result is cropped, the Relu applied
    on the way. The bias is a weight column times a row of ones, added by the matmul (on torch_cnn's
    16 -> 16 and 32 -> 32 3x3 layers, with a Relu: 0.89-0.93x the time of adding it in the crop).
    The padded image is shared by the layers of its geometry (only its interior is written)."""
    n, c = shape[:2]
    m = w.shape[0]
    kshape = tuple(w.shape[2:])
    k_size = math.prod(kshape)
    dtype = w.dtype
    padded = tuple(padded_shape[2:])
    row = [math.prod(padded[i + 1:]) for i in range(len(padded))]
    length = out[0] * row[0]
    plane = math.prod(padded)
    tail = sum((k - 1) * d * r for k, d, r in zip(kshape, dilations, row))
    flat = shared_image((n, c, plane + tail), dtype, ("flat_columns", tuple(shape), tuple(pads_begin), padded))
    interior = flat[:, :, :plane].reshape((n, c) + padded)[
        (Ellipsis,) + tuple(slice(p, p + d) for p, d in zip(pads_begin, shape[2:]))]
    item = flat.itemsize
    window = as_strided(flat, (n, c) + kshape + (length,),
                        flat.strides[:2] + tuple(d * r * item for d, r in zip(dilations, row)) + (item,),
                        writeable=False)
    taps = c * k_size
    wg = w.reshape(m, taps)
    if b is not None:  # the bias as one more weight column times a row of ones: the matmul adds it
        wg = np.concatenate([wg, b.reshape(m, 1)], axis=1)
    cols_shape = (n, taps + (b is not None), length)
    computed = (n, m, out[0]) + padded[1:]
    crop = (Ellipsis,) + tuple(slice(0, o) for o in out)
    full_shape = (n, m) + tuple(out)
    zero = np.zeros((), dtype)

    def make_views():
        cols = scratch(cols_shape, dtype)
        acc = scratch((n, m, length), dtype, slot="flat_result")
        return cols, cols[:, :taps].reshape(window.shape, copy=False), cols[:, taps:], acc, acc.reshape(computed)[crop]
    views = ScratchViews(make_views, ("columns", "flat_result"))

    def flat_columns_conv(x, dest, ufunc=None, operand=None):
        """``ufunc(conv, operand)`` when given (see ``PreparedConv.combined``): in the crop."""
        np.copyto(interior, x)
        cols, taps_part, ones_part, acc, src = views.get()
        np.copyto(taps_part, window)
        ones_part.fill(1)
        np.matmul(wg, cols, out=acc)
        y = np.empty(full_shape, dtype) if dest is None else dest
        if relu:  # the crop applies the Relu: one pass
            np.maximum(src, zero, out=y)
            if ufunc is not None:
                ufunc(y, operand, out=y)
        elif ufunc is not None:  # the crop applies the epilogue: one pass
            ufunc(src, operand, out=y)
        else:
            np.copyto(y, src)
        return y
    flat_columns_conv.epilogue = True  # (PreparedConv.combined: the closures taking ufunc and operand)
    return flat_columns_conv


def _multiply(wg, cols, dest, bias, relu):
    """``dest = wg @ cols`` (+ bias, then Relu), in place: the im2col closures' last steps."""
    np.matmul(wg, cols, out=dest)
    if bias is not None:
        dest += bias
    if relu:
        relu_inplace(dest)


def _finished(run, relu):
    """``run`` followed by the Relu, in place (or ``run`` itself)."""
    if not relu:
        return run

    def finished(x, out):
        return relu_inplace(run(x, out))
    return finished


class ShuffledConv(PreparedConv):
    """A PreparedConv followed by a channel shuffle (ShuffleNet's Reshape to (N, g, C/g, ...),
    Transpose of axes 1 and 2, Reshape back), fused by the plan.

    ``shuffle`` (see ``fusion.ChannelShuffle``) tells, per result shape, the number of groups g when
    the chain is exactly that shuffle, and runs the original chain otherwise. When g equals the
    conv's own group count, the matmul writes each group's rows straight to their shuffled places
    (a strided output, no copy); other cases compute the conv and then shuffle by one copy.
    """

    __slots__ = ("shuffle", "_runs")

    def __init__(self, w, b, attrs: dict, relu: bool, shuffle):
        super().__init__(w, b, attrs, relu)
        self.shuffle = shuffle
        self._runs: dict = {}

    def __call__(self, x, out=None):
        if threading.get_ident() != self._owner:
            y = self.shuffle.run(self._general(x))
        else:
            run = self._runs.get(x.shape) if type(x) is np.ndarray and x.dtype == self.w.dtype else None
            if run is None:
                run = self._shuffled_run(x)
                if type(x) is np.ndarray and x.dtype == self.w.dtype:
                    self._runs[x.shape] = run
            y = run(x)
        if out is None:
            return y
        np.copyto(out, y)  # a Concat slice (fusion only makes plain PreparedConvs write there)
        return out

    def _shuffled_run(self, x):
        unshuffled = super().__call__
        shape = self.output_shape(x.shape) if type(x) is np.ndarray and x.ndim == self.w.ndim else None
        g = self.shuffle.groups(shape) if shape is not None else None
        if g is None:
            return lambda x: self.shuffle.run(unshuffled(x))
        n, m = shape[:2]
        if g == self.attrs["group"] and x.dtype == self.w.dtype:
            fast = self._prepare(x.shape, shuffled=True)
            if fast is not None:
                return lambda x: fast(x, None)

        def copied(x):
            y = unshuffled(x)
            result = np.empty_like(y)
            result.reshape((n, m // g, g, -1))[...] = y.reshape((n, g, m // g, -1)).transpose(0, 2, 1, 3)
            return result
        return copied
