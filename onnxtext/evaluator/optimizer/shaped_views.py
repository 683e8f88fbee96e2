"""Rule ``shaped_views``: a Reshape (or two, rule ``reshape_chain``), Squeeze, Unsqueeze, Flatten, Expand
or Slice whose other inputs (shape, axes, bounds) are each a constant, absent, or computed by a
:class:`~..fused.shape_cone.ShapeCone` (rule ``shape_arithmetic``) becomes one
:class:`~..fused.shape_cone.ShapedView` step that keeps its result shape (or its slice index) per tuple
of input shapes.

Exporters reshape at every attention head split and merge, with targets computed from the input's
shape (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``): after ``shape_arithmetic`` each is a
cached cone step and a Reshape step that converts the target array to integers on every call. Here
the pair is one step whose call is a dictionary lookup and ``data.reshape(target)``; the cone's step
goes when nothing else reads its value (a torch GPT-2 export had 29 Reshapes and 34 cones per run).
Rotary embeddings slice each head in halves at bounds computed from its shape (Llama: 8 Slices per
layer pair, 6-8 us each, with a cone step for each bound).

Condition: the node runs its own kernel (Slice from opset 10, where the bounds are inputs), its data
is not a constant, and each other input is absent, a constant, or a cone's only output. Exact
(level 1): the first call for a tuple of shapes runs the node's own kernel, later ones take the same
shape (or index) from the same data.
"""

from __future__ import annotations

from ..fused.shape_cone import ShapeCone, ShapedView
from .graph import GraphView
from .layout_chains import ReshapeChain

NAME = "shaped_views"
LEVEL = 1

MODES = {"Reshape": ShapedView.VIEW, "Squeeze": ShapedView.VIEW, "Unsqueeze": ShapedView.VIEW,
         "Flatten": ShapedView.VIEW, "Expand": ShapedView.EXPAND, "Slice": ShapedView.SLICE}


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    readers = view.readers.copy()
    changed = False
    for i in range(len(view)):
        op = view.op(i)
        st = view.step(i)
        if st is not None and type(st[0]) is ReshapeChain:
            op = "Reshape"  # (rule reshape_chain's step: a view of its data too, its two targets inputs)
        elif op not in MODES or (op == "Slice" and (st[5].opset or 0) < 10):
            continue  # (Slice-1 takes its bounds as attributes: the kernel's signature differs)
        ins = st[1]
        if not ins or not ins[0] or ins[0] in known:
            continue
        sources: list = []
        args, cones = [], []
        for name in ins[1:]:
            if not name:
                args.append((False, None))
            elif view.constant(name) is not None:
                args.append((False, view.constant(name)))
            else:
                k = view.producer.get(name)
                producer = view.step(k) if k is not None else None
                if producer is None or type(producer[0]) is not ShapeCone or len(producer[2]) != 1:
                    break
                positions = []
                for n in producer[1]:
                    if n not in sources:
                        sources.append(n)
                    positions.append(sources.index(n))
                args.append((True, (producer[0], tuple(positions))))
                cones.append((name, k))
        else:
            fn = ShapedView(st[0], st[3], args, MODES[op])
            inputs = (ins[0],) + tuple(sources)
            view.replace(i, (fn, inputs, st[2], {}, (), st[5], False), inputs)
            changed = True
            for name, k in cones:
                readers[name] -= 1
                if readers[name] == 0 and name not in keep and view.step(k) is not None:
                    view.remove(k)
    return view.entries() if changed else steps
