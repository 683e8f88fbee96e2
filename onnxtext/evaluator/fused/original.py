"""The original steps a fused step replaced, runnable as one function: every fused step's fallback."""

from __future__ import annotations

from ..steps import KernelContext, step_error


class OriginalSteps:
    """Runs ``steps`` (prepared step tuples, in order) on the values of ``inputs`` and ``constants``;
    returns the value of ``outputs`` (one value, or a tuple for several)."""

    __slots__ = ("steps", "inputs", "outputs", "constants")

    def __init__(self, steps, inputs, outputs, constants):
        self.steps = [st[:7] for st in steps]
        self.inputs, self.outputs, self.constants = tuple(inputs), tuple(outputs), dict(constants)

    def __call__(self, *values):
        env = dict(self.constants)
        env[""] = None
        env.update(zip(self.inputs, values))
        st = None
        try:
            for st in self.steps:
                fn, ins, outs, attrs, _, info, context = st
                args = [env[n] for n in ins]
                out = fn(KernelContext(info, env), *args, **attrs) if context else fn(*args, **attrs)
                if type(out) is tuple:
                    env.update(zip(outs, out))
                else:
                    env[outs[0]] = out
        except Exception as e:
            raise step_error(st, env, e) from e
        if len(self.outputs) == 1:
            return env[self.outputs[0]]
        return tuple(env[n] for n in self.outputs)


def original_steps(match, inputs) -> OriginalSteps:
    """The fallback of a pattern match (:class:`~..optimizer.pattern.Match`) taking ``inputs``."""
    view = match.view
    indices = sorted(match.steps.values())
    steps = [view.step(k) for k in indices]
    constants = {n: view.constant(n) for st in steps for n in st[1] if n and view.constant(n) is not None}
    return OriginalSteps(steps, inputs, steps[-1][2], constants)
