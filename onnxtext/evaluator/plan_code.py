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


def compile_steps(steps, keep=None) -> object | None:
    """``run(env)`` executing ``steps`` (:class:`~.steps.Step` records) on ``env``, or None when there
    are more than :data:`MAX_STEPS`.

    With ``keep`` (the names the plan's caller reads from ``env`` afterwards: its outputs and kept
    names), a value that one step produces and only later steps read lives in a local variable of the
    function instead of ``env`` (a local store and load instead of a dict subscript, and no ``pop``:
    set to None where the loop frees it); a failure copies the locals computed so far into ``env``
    before :func:`~.steps.step_error` describes the step. Plans with a context kernel keep every value
    in ``env``, since such a kernel reads the run's values through it."""
    if len(steps) > MAX_STEPS:
        return None
    # Value names come from the model (untrusted). They enter the code only as ``repr`` of an exact
    # ``str``, which is always a string literal; anything else (bytes of a non-UTF-8 name, a subclass
    # with its own __repr__) keeps the loop.
    if any(type(n) is not str for st in steps for part in (st[1], st[2], st[4]) for n in part):
        return None
    local = _local_values(steps, keep)
    names = {"K": KernelContext, "_store": _store, "_steps": steps, "_step_error": step_error,
             "_locals": tuple(local.items())}
    lines = ["def run(e):", "    i = -1", "    try:"]

    done = set()  # values produced by the steps so far (a read before its producer is of an outer value)

    def read(n):
        return local[n] if n in done and n in local else f"e[{n!r}]"

    for i, st in enumerate(steps):
        fn, ins, outs, attrs, free, info, context, _ = st
        names[f"f{i}"] = fn
        args = [read(n) for n in ins]
        if context:
            names[f"n{i}"] = info
            args.insert(0, f"K(n{i}, e)")
        if attrs:
            names[f"a{i}"] = attrs
            args.append(f"**a{i}")
        lines.append(f"        i = {i}")
        lines.append(f"        o = f{i}({', '.join(args)})")
        if not any(n in local for n in outs):
            if len(outs) == 1:
                lines.append(f"        if type(o) is tuple: _store(e, {outs!r}, o)")
                lines.append(f"        else: e[{outs[0]!r}] = o")
            else:
                lines.append(f"        _store(e, {outs!r}, o)")
        elif len(outs) == 1:  # as _store does: a tuple gives its first value (none when empty)
            lines.append(f"        if type(o) is not tuple: {local[outs[0]]} = o")
            lines.append(f"        elif o: {local[outs[0]]} = o[0]")
        else:  # as _store does: a tuple fills the outputs in order (as far as it goes), anything else the first
            targets = [local.get(n) or f"e[{n!r}]" for n in outs]
            lines.append("        if type(o) is not tuple: o = (o,)")
            lines.extend(f"        if len(o) > {j}: {t} = o[{j}]" for j, t in enumerate(targets))
        done.update(outs)
        for n in free:
            lines.append(f"        {local[n]} = None" if n in local and n in done else f"        e.pop({n!r}, None)")
    if not steps:
        lines.append("        pass")  # (a plan of constants and outer values only)
    lines.append("    except (Exception, KeyboardInterrupt) as exc:")
    lines.append("        if _locals:  # the values computed so far, for the message")
    lines.append("            values = locals()")
    lines.append("            e.update((n, values[v]) for n, v in _locals if v in values)")
    lines.append("        raise _step_error(_steps[i] if i >= 0 else None, e, exc) from exc")
    code = compile("\n".join(lines) + "\n", "<onnxtext plan>", "exec")
    exec(code, names)  # noqa: S102 - code generated above from the plan's own names (reprs)
    return names["run"]


def _local_values(steps, keep) -> dict:
    """Value name -> local variable name for the values that can live in locals (see compile_steps)."""
    if keep is None or any(st[6] for st in steps):
        return {}
    produced: dict = {}
    for st in steps:
        for n in st[2]:
            produced[n] = produced.get(n, 0) + 1
    wanted = [n for n, count in produced.items() if count == 1 and n not in keep and n]
    return {n: f"v{j}" for j, n in enumerate(wanted)}
