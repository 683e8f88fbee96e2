"""A plan's steps as one generated Python function: the run loop unrolled into straight-line code.

The loop of :meth:`.plan.GraphPlan.execute` pays, per step, for unpacking its record, fetching the
inputs through an ``itemgetter``, calling with a starred tuple, testing the kind of call and looping
over the names to free. The function generated here does for each step exactly what the loop does,
with everything known at preparation written into the code: the inputs as ``e['name']`` subscripts,
the call with its arguments in place (the context and attributes only where the step has them), the
output stores, and one ``e.pop`` per name freed after the step. Kernels, contexts and attribute
dicts are names of the function's global namespace (no lookup through the record).

Errors: the function keeps the index of the step it is running in a local, so a failure raises the
same :func:`~.steps.step_error` as the loop (the node, its inputs' types and shapes, ``.path``).
Plans with a trace or a timeout do not come here (:meth:`.plan.GraphPlan.execute_controlled`).
"""

from __future__ import annotations

from .steps import KernelContext, step_error

#: plans with more steps keep the loop (compiling the function would take longer than it saves)
MAX_STEPS = 3000


def _store(env: dict, outputs: tuple, out) -> None:
    """The loop's store of a step's result: a tuple fills the outputs in order, anything else the first."""
    if type(out) is tuple:
        for name, value in zip(outputs, out):
            env[name] = value
    else:
        env[outputs[0]] = out


def compile_steps(steps) -> object | None:
    """``run(env)`` executing ``steps`` (:class:`~.steps.Step` records) on ``env``, or None when there
    are more than :data:`MAX_STEPS`."""
    if len(steps) > MAX_STEPS:
        return None
    # Value names come from the model (untrusted). They enter the code only as ``repr`` of an exact
    # ``str``, which is always a string literal; anything else (bytes of a non-UTF-8 name, a subclass
    # with its own __repr__) keeps the loop.
    if any(type(n) is not str for st in steps for part in (st[1], st[2], st[4]) for n in part):
        return None
    names = {"K": KernelContext, "_store": _store, "_steps": steps, "_step_error": step_error}
    lines = ["def run(e):", "    i = -1", "    try:"]
    for i, st in enumerate(steps):
        fn, ins, outs, attrs, free, info, context, _ = st
        names[f"f{i}"] = fn
        args = [f"e[{n!r}]" for n in ins]
        if context:
            names[f"n{i}"] = info
            args.insert(0, f"K(n{i}, e)")
        if attrs:
            names[f"a{i}"] = attrs
            args.append(f"**a{i}")
        lines.append(f"        i = {i}")
        lines.append(f"        o = f{i}({', '.join(args)})")
        if len(outs) == 1:
            lines.append(f"        if type(o) is tuple: _store(e, {outs!r}, o)")
            lines.append(f"        else: e[{outs[0]!r}] = o")
        else:
            lines.append(f"        _store(e, {outs!r}, o)")
        lines.extend(f"        e.pop({n!r}, None)" for n in free)
    lines.append("    except (Exception, KeyboardInterrupt) as exc:")
    lines.append("        raise _step_error(_steps[i] if i >= 0 else None, e, exc) from exc")
    code = compile("\n".join(lines) + "\n", "<onnxtext plan>", "exec")
    exec(code, names)  # noqa: S102 - code generated above from the plan's own names (reprs)
    return names["run"]
