"""A cone of shape arithmetic computed once per tuple of source shapes (rule ``shape_arithmetic``), and the
views whose target shape is computed from shapes only (rule ``shaped_views``)."""

from __future__ import annotations

import numpy as np

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
    """A Reshape, Squeeze, Unsqueeze, Flatten or Expand whose result shape depends only on shapes: its
    data's and those of ``sources`` (the runtime values a :class:`ShapeCone` computing its shape input
    reads; none when that input is a constant or absent). The original kernel (``kernel(data,
    *shape_args(sources), **attrs)``) runs on the first call for a tuple of shapes and its result's
    shape is kept; later calls are ``data.reshape(target)`` (a view, as the kernel returns it) or, for
    Expand (``copy``), one broadcast copy into a new array (charged to the run's allocation limit as
    the kernel does)."""

    __slots__ = ("kernel", "attrs", "shape_input", "copy", "targets")

    def __init__(self, kernel, attrs: dict, shape_input, copy: bool):
        # shape_input: () for no shape input, (constant,) for a constant one, a ShapeCone for a computed one
        self.kernel, self.attrs, self.shape_input, self.copy = kernel, attrs, shape_input, copy
        self.targets: dict = {}

    def __call__(self, data, *sources):
        if type(data) is np.ndarray:
            try:
                key = data.shape if not sources else (data.shape, sources[0].shape) if len(sources) == 1 \
                    else (data.shape,) + tuple(s.shape for s in sources)
            except AttributeError:  # (not tensors: the kernel's own message)
                return self.original(data, sources)
            target = self.targets.get(key)
            if target is not None:
                if not self.copy:
                    return data.reshape(target)
                out = np.empty(target, data.dtype)
                charge_run(out.nbytes, "Expand")
                np.copyto(out, data)
                return out
            out = self.original(data, sources)
            if type(out) is np.ndarray:
                if len(self.targets) >= MAX_SIGNATURES:
                    self.targets.clear()
                self.targets[key] = out.shape
            return out
        return self.original(data, sources)

    def original(self, data, sources):
        """What the node's own kernel computes."""
        shape = self.shape_input if type(self.shape_input) is tuple else (self.shape_input(*sources),)
        return self.kernel(data, *shape, **self.attrs)
