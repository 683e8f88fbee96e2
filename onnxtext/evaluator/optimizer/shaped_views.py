"""Rule ``shaped_views``: a Reshape, Squeeze, Unsqueeze, Flatten or Expand whose shape (or axes) input is a
constant, absent, or computed by a :class:`~..fused.shape_cone.ShapeCone` (rule ``shape_arithmetic``)
becomes one :class:`~..fused.shape_cone.ShapedView` step that keeps its result shape per tuple of input
shapes.

Exporters reshape at every attention head split and merge, with targets computed from the input's
shape (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``): after ``shape_arithmetic`` each is a
cached cone step and a Reshape step that converts the target array to integers on every call. Here
the pair is one step whose call is a dictionary lookup and ``data.reshape(target)``; the cone's step
goes when nothing else reads its value (a torch GPT-2 export: 29 Reshapes and 34 cones per run).

Condition: the node runs its own kernel, its data is not a constant, and its second input (if any) is
absent, a constant, or a cone's only output. Exact (level 1): the first call for a tuple of shapes runs
the node's own kernel, later ones produce the same shape from the same data.
"""

from __future__ import annotations

from ..fused.shape_cone import ShapeCone, ShapedView
from .graph import GraphView

NAME = "shaped_views"
LEVEL = 1

VIEW_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand"})


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    readers = view.readers.copy()
    changed = False
    for i in range(len(view)):
        op = view.op(i)
        if op not in VIEW_OPS:
            continue
        st = view.step(i)
        ins = st[1]
        if not ins or not ins[0] or ins[0] in known or len(ins) > 2:
            continue
        sources: tuple = ()
        cone_step = None
        if len(ins) == 1:
            shape_input = ()
        elif not ins[1]:
            shape_input = (None,)
        elif view.constant(ins[1]) is not None:
            shape_input = (view.constant(ins[1]),)
        else:
            k = view.producer.get(ins[1])
            producer = view.step(k) if k is not None else None
            if producer is None or type(producer[0]) is not ShapeCone or len(producer[2]) != 1:
                continue
            shape_input, sources, cone_step = producer[0], producer[1], k
        fn = ShapedView(st[0], st[3], shape_input, op == "Expand")
        inputs = (ins[0],) + tuple(sources)
        view.replace(i, (fn, inputs, st[2], {}, (), st[5], False), inputs)
        changed = True
        if cone_step is not None:
            readers[ins[1]] -= 1
            if readers[ins[1]] == 0 and ins[1] not in keep:
                view.remove(cone_step)
    return view.entries() if changed else steps
