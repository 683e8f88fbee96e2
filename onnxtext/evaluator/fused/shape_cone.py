"""A cone of shape arithmetic computed once per tuple of source shapes (rule ``shape_arithmetic``)."""

from __future__ import annotations

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
