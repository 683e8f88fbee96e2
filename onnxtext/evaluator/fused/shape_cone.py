"""A cone of shape arithmetic computed once per tuple of source shapes (rule ``shape_arithmetic``)."""

from __future__ import annotations

from ..steps import step_error

#: cached shape signatures per cone before the cache starts over (a model fed ever new shapes)
MAX_SIGNATURES = 64


class ShapeCone:
    """Computes ``outputs`` from the shapes of ``sources`` by running ``steps`` (original kernels)."""

    __slots__ = ("steps", "sources", "outputs", "constants", "cache")

    def __init__(self, steps, sources, outputs, constants):
        self.steps = [st[:7] for st in steps]
        self.sources, self.outputs, self.constants = sources, outputs, constants
        self.cache: dict = {}

    def __call__(self, *values):
        try:
            key = tuple(v.shape for v in values)
        except AttributeError:  # not tensors (Shape of a sequence fails in its kernel, with its message)
            return self._compute(values)
        out = self.cache.get(key)
        if out is None:
            if len(self.cache) >= MAX_SIGNATURES:
                self.cache.clear()
            out = self.cache[key] = self._compute(values)
        return out

    def _compute(self, values):
        env = dict(self.constants)
        env[""] = None
        env.update(zip(self.sources, values))
        st = None
        try:
            for st in self.steps:
                fn, ins, outs, attrs = st[:4]
                out = fn(*[env[n] for n in ins], **attrs)
                if type(out) is tuple:
                    env.update(zip(outs, out))
                else:
                    env[outs[0]] = out
        except Exception as e:
            raise step_error(st, env, e) from e
        if len(self.outputs) == 1:
            return env[self.outputs[0]]
        return tuple(env[n] for n in self.outputs)
