"""Recursive model-local functions: a function that calls itself, directly or through others (rule fn.recursion).

ONNX functions are expanded (inlined) by runtimes, so a cycle of calls has no meaning: onnxruntime refuses
it and an evaluator would recurse without end. :func:`function_cycles` finds the cycles of the call graph of
``ModelProto.functions`` (calls found in function bodies and their subgraphs, resolved by the
``(domain, name, overload)`` key as the evaluator resolves them); the checker reports each cycle once and the
evaluator (``onnxtext.evaluator.runtime``) refuses such a model when it is built.
"""

from __future__ import annotations

from . import rule


def _calls(nodes, keys, out):
    for n in nodes:
        key = (n.domain, n.op_type, n.overload)
        if key in keys:
            out.add(key)
        for a in n.attribute:
            if a.HasField("g"):
                _calls(a.g.node, keys, out)
            for g in a.graphs:
                _calls(g.node, keys, out)
    return out


def function_cycles(functions) -> list[list[tuple]]:
    """The call cycles among ``functions`` (FunctionProtos), each as the list of (domain, name, overload)
    keys in call order, starting from the function defined first; [] when no function is recursive."""
    order = {}
    for f in functions:
        order.setdefault((f.domain, f.name, f.overload), f)
    keys = set(order)
    calls = {k: sorted(_calls(f.node, keys, set()), key=list(order).index) for k, f in order.items()}
    # iterative Tarjan: strongly connected components; a cycle is a component of 2+ functions or a self-call
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    for root in order:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(calls[v]):
                work.append((v, i + 1))
                w = calls[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            for w in calls[v]:
                if w in on_stack and index[w] > index[v]:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in calls[v]:
                    components.append(_in_call_order(component, calls, list(order)))
    components.sort(key=lambda c: list(order).index(c[0]))
    return components


def _in_call_order(component, calls, order) -> list[tuple]:
    """The component's functions from the first defined, following calls inside it (each once)."""
    members = set(component)
    cycle = [min(component, key=order.index)]
    while True:
        nxt = next((w for w in calls[cycle[-1]] if w in members and w not in cycle), None)
        if nxt is None:
            return cycle
        cycle.append(nxt)


def describe_cycle(cycle) -> str:
    names = [f"{d}.{n}" + (f":{o}" if o else "") if d else n + (f":{o}" if o else "") for d, n, o in cycle]
    if len(names) == 1:
        return f"function {names[0]} calls itself"
    return f"functions {' -> '.join(names + names[:1])} call each other in a cycle"


@rule("fn.recursion", "model", "IR spec: Functions (a function is expanded into its body where it is called, so "
      "functions MUST NOT call themselves, directly or through other functions)")
def recursive_functions(ctx, m, path, _):
    where = {(f.domain, f.name, f.overload): i for i, f in reversed(list(enumerate(m.functions)))}
    for cycle in function_cycles(m.functions):
        yield f"functions[{where[cycle[0]]}]", describe_cycle(cycle) + ": recursion is not allowed"
