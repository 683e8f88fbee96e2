"""Fused steps built by the optimizer's CNN rules (``evaluator/optimizer/``) around prepared convolutions.

* :class:`ConcatInto`: a Concat along channels that runs the Convs producing its inputs, each writing
  straight into its slice of the result;
* :class:`ChannelShuffle`: a Reshape -> Transpose -> Reshape chain, recognized per shape as a channel
  shuffle (used by ``conv_prepared.ShuffledConv``);
* :class:`ConvAdd`: a residual Add/Sum (and Relu) done in place on a Conv's fresh result;
* :class:`DepthwisePointwise`: a depthwise Conv whose result goes straight into the column buffer of
  the pointwise Conv reading it (ShuffleNet's depthwise -> grouped 1x1).

Each falls back to the original kernels for inputs its fast path was not prepared for, so results
match running the nodes one by one up to float rounding.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .conv import _conv_geometry, scratch
from .conv_depthwise import prepare_depthwise
from .conv_prepared import _OWNED_LIMIT, PreparedConv
from .conv_relu import relu_inplace

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class ConcatInto:
    """Concat along channels where some inputs are Convs computed straight into their slices.

    ``parts[i]`` is the PreparedConv producing input i (its argument is then the Conv's input) or
    None (the argument is the value itself, copied in). Inputs the slices were not prepared for
    (another rank, dtype, or mismatched shapes) run the Convs and the original Concat kernel.
    """

    __slots__ = ("parts", "concat", "attrs", "relu", "_layouts")

    def __init__(self, parts, concat, attrs, relu):
        self.parts, self.concat, self.attrs, self.relu = parts, concat, attrs, relu
        self._layouts = {}

    def __call__(self, *args):
        key = tuple((a.shape, a.dtype) if type(a) is np.ndarray else None for a in args)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = self._layout(args)
        if layout is False:
            values = [p(a) if p is not None else a for p, a in zip(self.parts, args)]
            y = self.concat(*values, **self.attrs)
            return relu_inplace(y) if self.relu else y
        shape, dtype, slices = layout
        y = np.empty(shape, dtype)
        for p, a, where in zip(self.parts, args, slices):
            if p is None:
                y[where] = a
            else:
                p(a, y[where])
        if self.relu:
            relu_inplace(y)
        return y

    def _layout(self, args):
        """(result shape, dtype, channel slices) for these inputs, or False when they do not fit."""
        shapes = []
        for p, a in zip(self.parts, args):
            if type(a) is not np.ndarray or a.dtype not in _FLOATS:
                return False
            if p is None:
                shapes.append(a.shape)
                continue
            shape = p.output_shape(a.shape) if a.dtype == p.w.dtype and a.ndim == p.w.ndim else None
            if shape is None:
                return False
            shapes.append(shape)
        dtype = args[0].dtype
        if any(a.dtype != dtype for a in args) or len({len(s) for s in shapes}) != 1 or \
                len({s[:1] + s[2:] for s in shapes}) != 1:
            return False
        slices, c0 = [], 0
        for s in shapes:
            slices.append((slice(None), slice(c0, c0 + s[1])))
            c0 += s[1]
        return shapes[0][:1] + (c0,) + shapes[0][2:], dtype, slices


class ChannelShuffle:
    """Reshape -> Transpose -> Reshape, recognized per input shape as a channel shuffle.

    ``chain`` is ``[(kernel, constant shape or None, attributes)]`` for the three steps: run as is
    when the shapes do not make a shuffle.
    """

    __slots__ = ("chain", "_groups")

    def __init__(self, chain):
        self.chain = chain
        self._groups = {}

    def run(self, y):
        for fn, shape, attrs in self.chain:
            y = fn(y, shape, **attrs) if shape is not None else fn(y, **attrs)
        return y

    def groups(self, shape):
        """g when the chain maps a value of ``shape`` (N, C, *S) to the same shape with channel
        ``a * (C / g) + j`` moved to ``j * g + a``; None otherwise."""
        shape = tuple(shape)
        if shape not in self._groups:
            self._groups[shape] = self._find_groups(shape)
        return self._groups[shape]

    def _find_groups(self, shape):
        (_, first, a1), (_, _, at), (_, second, a2) = self.chain
        split = _reshaped(shape, first, a1.get("allowzero", 0))
        if split is None or len(split) != len(shape) + 1 or split[:1] != shape[:1] or split[3:] != shape[2:]:
            return None
        g, per = split[1], split[2]
        perm = at.get("perm")
        if perm is None or list(perm) != [0, 2, 1] + list(range(3, len(split))):
            return None
        merged = _reshaped((shape[0], per, g) + shape[2:], second, a2.get("allowzero", 0))
        return g if merged == shape and g > 0 and per > 0 else None


def _reshaped(shape, target, allowzero):
    """The shape Reshape gives a value of ``shape`` for the constant ``target``, or None if invalid."""
    try:
        dims = [int(d) for d in np.asarray(target).reshape(-1)]
    except (TypeError, ValueError):
        return None
    if not allowzero:
        dims = [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(dims)]
    size = int(np.prod(shape))
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        return None
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1]))
        if known == 0 or size % known:
            return None
        dims[dims.index(-1)] = size // known
    return tuple(dims) if int(np.prod(dims)) == size else None


class ConvAdd:
    """``conv(x) + other`` (then Relu), added in place into the conv's fresh result when ``other``
    has its shape and dtype (float addition commutes, so the order of the operands does not matter),
    or in the conv's crop (:meth:`PreparedConv.combined`) when ``other`` broadcasts to its shape;
    otherwise the original Add/Sum kernel with the original operand order."""

    __slots__ = ("conv", "add", "attrs", "relu", "conv_first")

    def __init__(self, conv, add, attrs, relu, conv_first):
        self.conv, self.add, self.attrs, self.relu, self.conv_first = conv, add, attrs, relu, conv_first

    def __call__(self, x, other):
        conv = self.conv
        if type(conv) is PreparedConv and type(other) is np.ndarray and type(x) is np.ndarray and \
                other.dtype == x.dtype == conv.w.dtype and other.ndim == x.ndim:
            # the add in the conv's crop where it has one (PreparedConv.combined): one pass fewer
            try:
                y = conv.combined(x, np.add, other)
            except ValueError:  # (other broadcast to a larger shape: the Add kernel below)
                y = None
            if y is not None:
                if self.relu:
                    relu_inplace(y)
                return y
        y = conv(x)
        if type(other) is np.ndarray and other.shape == y.shape and other.dtype == y.dtype and y.flags.writeable:
            np.add(y, other, out=y)
            if self.relu:
                relu_inplace(y)
            return y
        y = self.add(y, other, **self.attrs) if self.conv_first else self.add(other, y, **self.attrs)
        return np.asarray(np.maximum(y, np.zeros((), y.dtype))) if self.relu else y


class DepthwisePointwise(PreparedConv):
    """``pointwise(depthwise(x))``: a depthwise PreparedConv without bias or Relu, then a pointwise
    one (1x1, unit strides, no padding; its bias and Relu included), fused by the plan.

    Run separately, the depthwise Conv copies its cropped result out of its scratch rows and the
    pointwise Conv copies that again into its column buffer (under a row of ones that makes the
    matmul add the bias). Here the depthwise crop writes straight into the column buffer: one pass
    fewer over the intermediate. The object is the pointwise PreparedConv as far as the other fused
    steps can tell (ConvAdd, ConcatInto), except that it takes the depthwise Conv's input; shapes,
    dtypes or threads its fast path was not prepared for run the two Convs one after the other.
    """

    __slots__ = ("depthwise", "_fused")

    def __init__(self, depthwise: PreparedConv, pointwise: PreparedConv):
        super().__init__(pointwise.w, pointwise.b, pointwise.attrs, pointwise.relu)
        self.depthwise = depthwise
        self._fused: dict = {}

    def __call__(self, x, out=None):
        run = self._fused.get(x.shape) if type(x) is np.ndarray and x.dtype == self.w.dtype else None
        if run is None and type(x) is np.ndarray and x.dtype == self.w.dtype and x.shape not in self._fused:
            run = self._fused[x.shape] = self._prepare_fused(x.shape)
        if not run or threading.get_ident() != self._owner:
            return super().__call__(self.depthwise(x), out)
        return run(x, out)

    def output_shape(self, shape):
        inner = self.depthwise.output_shape(shape)
        return None if inner is None else super().output_shape(inner)

    def _prepare_fused(self, shape):
        """The fused closure ``(x, out) -> y`` for inputs of ``shape``, or False."""
        dw = self.depthwise
        if dw.b is not None or dw.relu or len(shape) != dw.w.ndim or len(shape) < 3:
            return False
        c = shape[1]
        attrs = dw.attrs
        if dw.w.shape[0] != c or dw.w.shape[1] != 1 or attrs["group"] != c or c < 2:
            return False
        probe = np.empty((0,) + tuple(shape[1:]), dw.w.dtype)
        try:
            strides, dilations, pb, pe, spatial = _conv_geometry(probe, dw.w, attrs.get("kernel_shape"),
                                                                 attrs.get("strides"), attrs.get("dilations"),
                                                                 attrs.get("pads"), attrs["auto_pad"])
        except (ValueError, TypeError):
            return False
        padded = (shape[0], c) + tuple(d + b + e for d, b, e in zip(shape[2:], pb, pe))
        if min(spatial) <= 0 or math.prod(padded) > _OWNED_LIMIT:
            return False
        group = self.attrs["group"]
        m, cg = self.w.shape[:2]
        if cg * group != c or m % group:
            return False
        depthwise = prepare_depthwise(dw.w, shape, pb, strides, dilations, spatial)
        n, mg, p_size = shape[0], m // group, math.prod(spatial)
        dtype = self.w.dtype
        weights = self.w.reshape(group, mg, cg)
        ones = self.b is not None
        if ones:  # the bias as one more weight column, times a row of ones under the columns
            weights = np.concatenate([weights, self.b.reshape(group, mg, 1)], axis=2)
        cols_shape = (n, group, cg + ones, p_size)
        split = (n, group, cg) + tuple(spatial)
        full_shape = (n, m) + tuple(spatial)
        flat_shape = (n, group, mg, p_size)
        relu = self.relu

        def depthwise_pointwise(x, out):
            cols = scratch(cols_shape, dtype, slot="depthwise_pointwise")
            if ones:
                cols[:, :, cg] = 1
            depthwise(x, cols[:, :, :cg].reshape(split, copy=False))
            y = np.empty(full_shape, dtype) if out is None else out
            np.matmul(weights, cols, out=y.reshape(flat_shape, copy=False))
            if relu:
                relu_inplace(y)
            return y
        return depthwise_pointwise
