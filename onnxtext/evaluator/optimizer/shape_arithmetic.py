"""Rule ``shape_arithmetic``: values computed only from shapes and constants, once per shape signature.

Exporters compute reshape targets, masks and position ranges from the input shapes with chains such
as ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``: dozens of tiny steps per layer whose
results change only when an input shape changes (a torch GPT-2 export: 200 of its 360 steps). This
rule finds every step whose inputs are constants, shapes (``Shape``/``Size`` of a runtime value) or
results of such steps, and replaces each group of them by ONE step per value read outside the group:
a :class:`~..fused.shape_cone.ShapeCone` that computes the value's cone of steps on the first call
for a given tuple of source shapes and returns the cached result afterwards.

The shape of a ``Transpose``'s result is read from the Transpose's input instead (the cone holds a
copy of the Transpose step, run on the first call for a shape): exporters take the shape of the heads
they just transposed to compute the merge target, and that second reader would keep rule
``attention_operands`` from doing the transpose as a view inside the attention step.

Condition: deterministic schema operators of the default domain without subgraphs or context.
Exact: the cached values are those the steps compute.
"""

from __future__ import annotations

from ..fused.shape_cone import ShapeCone
from .graph import GraphView

NAME = "shape_arithmetic"
LEVEL = 1


def _deterministic(info) -> bool:
    from ..plan import find_schema

    schema = find_schema(info.node.op_type, info.domain, info.opset or 0)
    return schema is not None and not schema.non_deterministic


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    sources_of: dict[str, frozenset] = {}  # shape-only value -> the runtime values whose shapes it reads
    members: dict[int, frozenset] = {}
    shadows: set[int] = set()  # Transposes whose shape a cone reads: copied into the cone, kept in the plan
    for i in range(len(view)):
        st = view.step(i)
        op = view.op(i)
        if op is None or st[5].subplans or not st[1]:
            continue
        ins = st[1]
        if op in ("Shape", "Size") and ins[0] not in sources_of and ins[0] not in known:
            sources = frozenset(ins[:1])
            k = view.producer.get(ins[0])
            if k is not None and (k in shadows or (k not in members and view.op(k) == "Transpose" and
                                                   len(view.step(k)[2]) == 1 and view.step(k)[1][0] not in known)):
                shadows.add(k)
                sources = frozenset(view.step(k)[1][:1])
                members[k] = sources
        elif all(not n or n in sources_of or n in known for n in ins) and any(n in sources_of for n in ins) \
                and _deterministic(st[5]):
            sources = frozenset().union(*(sources_of[n] for n in ins if n in sources_of))
        else:
            continue
        members[i] = sources
        for o in st[2]:
            sources_of[o] = sources
    if not members:
        return steps
    member_outputs = {o for i in members for o in view.step(i)[2]}
    read_outside = {n for i, (st, used) in enumerate(steps) if i not in members for n in used} | keep
    cones = {}
    for i in sorted(members):
        st = view.step(i)
        if i in shadows:
            continue
        wanted = tuple(o for o in st[2] if o in read_outside)
        if wanted:
            cones[i] = (st, wanted, _cone(view, i, members))
    for i in members:
        if i not in shadows:
            view.remove(i)
    for i, (st, wanted, cone) in cones.items():
        sources = tuple(sorted(members[i]))
        constants = {n: view.constant(n) for k in cone for n in steps[k][0][1] if n and n not in member_outputs}
        fn = ShapeCone([steps[k][0] for k in cone], sources, wanted, constants)
        view.replace(i, (fn, sources, wanted, {}, (), st[5], False), sources)
    return view.entries()


def _cone(view, i, members) -> list[int]:
    """Indices of the member steps ``i`` needs (itself included), in plan order."""
    needed, todo = {i}, [i]
    while todo:
        for n in view.steps[todo.pop()][0][1]:
            k = view.producer.get(n)
            if k is not None and k in members and k not in needed:
                needed.add(k)
                todo.append(k)
    return sorted(needed)
