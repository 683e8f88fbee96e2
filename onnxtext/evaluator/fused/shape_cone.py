"""A cone of shape arithmetic computed once per tuple of source shapes (rule ``shape_arithmetic``), and the
views whose target shape is computed from shapes only (rule ``shaped_views``)."""

from __future__ import annotations

import numpy as np

from ..kernels.shape import slice_index
from ..limits import charge_run
from .original import OriginalSteps

#: cached shape signatures per cone before the cache starts over (a model fed ever new shapes)
MAX_SIGNATURES = 64


class ShapeCone:
    """Computes ``outputs`` from the shapes of ``sources`` by running ``steps`` (original kernels)
    once per tuple of source shapes."""

    __slots__ = ("compute", "cache")

    def __init__(self, steps, sources, outputs, constants):
        self.compute = OriginalSteps(steps, sources, outputs, constants)
        self.cache: dict = {}

    def __call__(self, *values):
        try:  # (one source, the usual cone: its shape is the key, no tuple built)
            key = values[0].shape if len(values) == 1 else tuple(v.shape for v in values)
        except AttributeError:  # not tensors (Shape of a sequence fails in its kernel, with its message)
            return self.compute(*values)
        out = self.cache.get(key)
        if out is None:
            if len(self.cache) >= MAX_SIGNATURES:
                self.cache.clear()
            out = self.cache[key] = self.compute(*values)
        return out


class ShapedView:
    """A Reshape, Squeeze, Unsqueeze, Flatten, Expand or Slice whose result depends on its data only
    through the data's shape and on its other inputs only through shapes: each of those inputs is
    absent, a constant, or computed by a :class:`ShapeCone` from the shapes of runtime values (the
    step's ``sources``). The node's own kernel runs on the first call for a tuple of shapes and what
    it did is kept: the result's shape for the views (later calls are ``data.reshape(target)``, a
    view as the kernel returns it), the broadcast shape for Expand (one broadcast copy into a new
    array, charged to the run's allocation limit as the kernel does), the index for Slice (one
    indexing and copy, as the kernel does)."""

    __slots__ = ("kernel", "attrs", "args", "mode", "targets")

    VIEW, EXPAND, SLICE = 0, 1, 2

    def __init__(self, kernel, attrs: dict, args, mode: int):
        # args: per input after the data, (False, constant value or None) or (True, (cone, positions
        # of the cone's inputs in the step's sources))
        self.kernel, self.attrs, self.args, self.mode = kernel, attrs, tuple(args), mode
        self.targets: dict = {}

    def __call__(self, data, *sources):
        if type(data) is np.ndarray:
            try:
                key = data.shape if not sources else (data.shape, sources[0].shape) if len(sources) == 1 \
                    else (data.shape,) + tuple(s.shape for s in sources)
            except AttributeError:  # (not tensors: the kernel's own message)
                return self.kernel(data, *self.arguments(sources), **self.attrs)
            target = self.targets.get(key)
            if target is not None:
                mode = self.mode
                if mode == 0:
                    return data.reshape(target)
                if mode == 2:
                    return data[target].copy()
                out = np.empty(target, data.dtype)
                charge_run(out.nbytes, "Expand")
                np.copyto(out, data)
                return out
            args = self.arguments(sources)
            out = self.kernel(data, *args, **self.attrs)
            if type(out) is np.ndarray:
                if len(self.targets) >= MAX_SIGNATURES:
                    self.targets.clear()
                self.targets[key] = slice_index(data.shape, *args) if self.mode == 2 else out.shape
            return out
        return self.kernel(data, *self.arguments(sources), **self.attrs)

    def arguments(self, sources) -> list:
        """The node's inputs after its data: constants, and what the cones compute from ``sources``."""
        return [cone[0](*[sources[p] for p in cone[1]]) if computed else cone for computed, cone in self.args]


class LayoutViews:
    """A chain of Transposes and :class:`ShapedView` reshapes applied as numpy views (rule
    ``layout_views``): a Transpose is the array's transposed view instead of a contiguous copy, and a
    reshape copies only when numpy cannot express it as a view of what it gets. ``ops`` are
    ``(False, perm or None, ())`` for a Transpose and ``(True, shaped view, positions of its sources
    among this step's inputs after the data)`` for a reshape; ``fallback`` (the original steps) for
    data that is not an array."""

    __slots__ = ("ops", "fallback", "recipes")

    def __init__(self, ops, fallback):
        self.ops, self.fallback = tuple(ops), fallback
        # (shape, strides of x, shapes of the sources) -> the chain as plain numpy calls: what each
        # reshape did is a function of those alone, so later calls skip the ShapedView steps' own
        # lookups (4.7 -> about 2 us for BERT's merge of the heads)
        self.recipes: dict = {}

    def __call__(self, x, *sources):
        if type(x) is not np.ndarray:
            return self.fallback(x, *sources)
        try:
            key = (x.shape, x.strides) + tuple([s.shape for s in sources])
        except AttributeError:  # (sources that are not tensors: the views' kernels say what is wrong)
            return self._apply(x, sources, None)
        recipe = self.recipes.get(key)
        if recipe is None:
            recipe = []
            y = self._apply(x, sources, recipe)
            if type(y) is np.ndarray and None not in recipe:
                if len(self.recipes) >= MAX_SIGNATURES:
                    self.recipes.clear()
                self.recipes[key] = tuple(recipe)
            return y
        for reshape, arg in recipe:
            x = x.reshape(arg) if reshape else x.transpose(arg)
        return x

    def _apply(self, x, sources, recipe):
        """The chain through the views' own steps, recording into ``recipe`` (when given) each op as
        ``(True, result shape)`` for a reshape that changes the shape or ``(False, perm)``, None for a
        step that did not return an array."""
        for reshape, op, at in self.ops:
            if reshape:
                y = op(x, *[sources[p] for p in at])
                if recipe is not None:
                    if type(y) is not np.ndarray:
                        recipe.append(None)  # (not a view of x: this chain is not cached)
                    elif y.shape != x.shape:
                        recipe.append((True, y.shape))
                x = y
            else:
                perm = op if op else tuple(range(x.ndim - 1, -1, -1))
                if recipe is not None:
                    recipe.append((False, perm))
                x = x.transpose(perm)
        return x


class _CachedViews:
    """A node whose results are basic-indexing views of its data (rule ``layout_views``, when they are
    read only by steps that take strided operands): the node's own step (``fallback``) runs on the
    first call for a data shape, the index of each result is read from what it returns
    (:meth:`_index`), and later calls index the data directly (:meth:`_views`)."""

    __slots__ = ("fallback", "axis", "indices")

    def __init__(self, fallback, axis: int):
        self.fallback, self.axis = fallback, axis
        self.indices: dict = {}

    def __call__(self, data, *rest):
        if type(data) is not np.ndarray:
            return self.fallback(data, *rest)
        index = self.indices.get(data.shape)
        if index is not None:
            return self._views(data, index)
        out = self.fallback(data, *rest)
        axis = self.axis + data.ndim if self.axis < 0 else self.axis
        index = self._index(data, axis, out) if 0 <= axis < data.ndim else None
        if index is not None:
            if len(self.indices) >= MAX_SIGNATURES:
                self.indices.clear()
            self.indices[data.shape] = index
        return out


class SplitViews(_CachedViews):
    """A Split whose parts are views of the data along ``axis`` instead of copies (the parts' bounds
    read from the node's own step; its other inputs are constants)."""

    __slots__ = ()

    def _views(self, data, index):
        return tuple([data[i] for i in index])

    def _index(self, data, axis, parts):
        if type(parts) is not tuple:
            return None
        lead = (slice(None),) * axis
        index, begin = [], 0
        for part in parts:
            end = begin + part.shape[axis]
            index.append(lead + (slice(begin, end),))
            begin = end
        return tuple(index)


class IndexView(_CachedViews):
    """A Gather of one constant index (a 0-d ``indices``) along ``axis``: the view
    ``data[..., index, ...]`` instead of ``take``'s copy (torch's nn.MultiheadAttention export picks q,
    k and v out of one projection this way); the node's own step gives the errors (an index out of
    range) on the first call for a shape."""

    __slots__ = ("index",)

    def __init__(self, fallback, axis: int, index: int):
        super().__init__(fallback, axis)
        self.index = index

    def _views(self, data, index):
        return data[index]

    def _index(self, data, axis, out):
        if type(out) is not np.ndarray:
            return None
        i = self.index + data.shape[axis] if self.index < 0 else self.index
        return (slice(None),) * axis + (i,)
