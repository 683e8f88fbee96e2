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

from keyword import iskeyword

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
        args += _keywords(i, attrs, names)
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


def _keywords(i: int, attrs: dict, names: dict) -> list:
    """The keyword arguments of step ``i``'s call: ``name=a{i}_{j}`` per attribute, each value a global
    of the function (a call unpacking a dict of two graph attributes cost about 0.3 us more than the same
    call with the keywords written out), or ``**a{i}`` when a name is not a plain identifier (names come
    from the model)."""
    if not attrs:
        return []
    if not all(type(k) is str and k.isidentifier() and not iskeyword(k) for k in attrs):
        names[f"a{i}"] = attrs
        return [f"**a{i}"]
    args = []
    for j, (k, v) in enumerate(attrs.items()):
        names[f"a{i}_{j}"] = v
        args.append(f"{k}=a{i}_{j}")
    return args


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


def compile_scoped(plan) -> object | None:
    """``run(scope) -> list`` of ``plan``'s output values, running its steps on the outer values in
    ``scope`` with no dict of its own (an If branch run per call: :meth:`.plan.GraphPlan.run_in_scope`),
    or None when the plan does not fit: a context step (it reads the run's values through a dict), a
    value produced twice, a name that is not an exact ``str``, more than :data:`MAX_STEPS` steps.

    The plan's constants are names of the function's global namespace, every value a step produces a
    local, and every other name (the outer values it reads, its inputs) a subscript of ``scope``; the
    output list is built by the function itself. A failure builds what :meth:`~.plan.GraphPlan.bind_outer`
    would have (its error when an outer value is missing), adds the scope's inputs and the locals computed
    so far, and raises the :func:`~.steps.step_error` the loop raises; an output no step computed raises
    the KeyError reading it from the loop's dict raises."""
    steps = plan.steps
    if len(steps) > MAX_STEPS or any(st[6] for st in steps):
        return None
    outputs = list(plan.output_names)
    names = [n for st in steps for part in (st[1], st[2], st[4]) for n in part] + outputs + list(plan.constants)
    if any(type(n) is not str for n in names):
        return None
    from .steps import UNUSED

    produced: dict = {}
    for st in steps:
        for n in st[2]:
            if n != UNUSED:
                if n in produced:
                    return None
                produced[n] = f"v{len(produced)}"
    consts = {n: f"c{j}" for j, n in enumerate(plan.constants)}
    glob = {"_steps": steps, "_step_error": step_error, "_bind": plan.bind_outer, "_locals": tuple(produced.items()),
            "_inputs": tuple(plan.input_names),
            "_outputs": tuple((n, produced[n]) for n in outputs if n in produced)}
    glob.update((v, plan.constants[n]) for n, v in consts.items())
    done: set = set()

    def read(n):
        if n in done:
            return produced[n]
        if n in consts:
            return consts[n]
        return "None" if n == "" else f"e[{n!r}]"

    lines = ["def run(e):", "    i = -1", "    try:"]
    for i, st in enumerate(steps):
        fn, ins, outs, attrs, free = st[:5]
        glob[f"f{i}"] = fn
        args = [read(n) for n in ins]
        args += _keywords(i, attrs, glob)
        lines.append(f"        i = {i}")
        lines.append(f"        o = f{i}({', '.join(args)})")
        targets = [produced.get(n, "_") for n in outs]
        if len(outs) == 1:  # as the loop's store: a tuple gives its first value (none when empty)
            lines.append(f"        if type(o) is not tuple: {targets[0]} = o")
            lines.append(f"        elif o: {targets[0]} = o[0]")
        else:  # a tuple fills the outputs in order (as far as it goes), anything else the first
            lines.append("        if type(o) is not tuple: o = (o,)")
            lines.extend(f"        if len(o) > {j}: {t} = o[{j}]" for j, t in enumerate(targets))
        done.update(outs)
        lines.extend(f"        {produced[n]} = None" for n in free if n in produced and n in done)
    if not steps:
        lines.append("        pass")
    lines += ["    except (Exception, KeyboardInterrupt) as exc:",
              "        env = _bind(e)  # (what the loop's run had: bind_outer's error when an outer value is missing)",
              "        env.update((n, e[n]) for n in _inputs if n in e)",
              "        values = locals()",
              "        env.update((n, values[v]) for n, v in _locals if v in values)",
              "        raise _step_error(_steps[i] if i >= 0 else None, env, exc) from exc",
              "    try:",
              f"        return [{', '.join(read(n) for n in outputs)}]",
              "    except NameError:  # an output its step did not compute: the loop's dict has no such key",
              "        values = locals()",
              "        raise KeyError(next(n for n, v in _outputs if v not in values)) from None",
              "    except KeyError:  # an outer value missing: bind_outer's error",
              "        _bind(e)",
              "        raise"]
    code = compile("\n".join(lines) + "\n", "<onnxtext scoped plan>", "exec")
    exec(code, glob)  # noqa: S102 - code generated above from the plan's own names (reprs)
    return glob["run"]
