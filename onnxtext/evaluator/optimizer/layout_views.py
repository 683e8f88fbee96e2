"""Rule ``layout_views``: a chain of Transposes and cached reshapes (rule ``shaped_views``) whose result
goes only to steps that multiply through BLAS (the fused attention and linear steps, MatMul, Gemm)
becomes one :class:`~..fused.shape_cone.LayoutViews` step applying them as numpy views: the BLAS
products read strided operands directly, so the Transposes' contiguous copies are not needed; a
reshape copies only where numpy cannot express it as a view. Exporters move attention heads this way
(dynamo's ViT: Reshape, Transpose, Reshape, Transpose, Reshape on every key; torch's
nn.MultiheadAttention: Reshape and Transpose on each of q, k and v).

Condition: at least two steps, one of them a Transpose; each intermediate value read only by the next
step of the chain and not kept; every reader of the result a fused attention or linear step or a
MatMul/Gemm node. Exact (level 1): the same values, in another memory layout.
"""

from __future__ import annotations

from ..fused.attention import DotProductAttention, HeadsAttention
from ..fused.linear import MatMulAdd, MatMulAddResidual, SharedInputProducts
from ..fused.original import OriginalSteps
from ..fused.shape_cone import IndexView, LayoutViews, ShapeCone, ShapedView, SplitViews
from ..registry import lookup
from .graph import GraphView

NAME = "layout_views"
LEVEL = 1

#: steps whose products read strided operands through BLAS (no copy of their own)
STRIDED_READERS = (HeadsAttention, DotProductAttention, MatMulAdd, MatMulAddResidual, SharedInputProducts)


def _layout(view: GraphView, i: int):
    """``"T"`` for a Transpose node step, ``"V"`` for a cached reshape, else None."""
    st = view.step(i)
    if st is None or len(st[2]) != 1:
        return None
    if view.op(i) == "Transpose" and len(st[1]) == 1:
        return "T"
    if type(st[0]) is ShapedView and st[0].mode == ShapedView.VIEW:
        return "V"
    return None


def _strided_reader(view: GraphView, j: int) -> bool:
    return type(view.step(j)[0]) in STRIDED_READERS or view.op(j) in ("MatMul", "Gemm")


def _read_as_views(view: GraphView, name: str, depth: int = 4) -> bool:
    """Whether every reader of ``name`` takes strided operands: a strided reader, a shape cone or a
    cached reshape reading only its shape, or (``depth`` times) a reshape, Transpose or LayoutViews step whose result
    is read that way too."""
    if name in view.keep:
        return False
    readers = [j for j, e in enumerate(view.steps) if e is not None and name in e[1]]
    if not readers:
        return False
    for j in readers:
        if _strided_reader(view, j):
            continue
        st = view.step(j)
        if type(st[0]) is ShapeCone or (type(st[0]) is ShapedView and name not in st[1][:1]):
            continue  # (read as a shape source: only its shape is used)
        if depth and st[1][0] == name and len(st[2]) == 1 and \
                (_layout(view, j) is not None or type(st[0]) is LayoutViews) and \
                _read_as_views(view, st[2][0], depth - 1):
            continue
        return False
    return True


def _runs_own(st, op: str) -> bool:
    """Whether the step runs the ONNX ``op`` node's own kernel (also a context kernel, which
    :meth:`GraphView.op` does not name)."""
    info = st[5]
    if info is None or info.domain or info.node.op_type != op or tuple(info.node.input) != tuple(st[1]):
        return False
    k = lookup(op, "", info.opset or 0)
    return k is not None and k.fn is st[0]


def _split_views(view: GraphView) -> bool:
    """Splits, and Gathers of one constant index, whose results are all read as views
    (:func:`_read_as_views`) become SplitViews and IndexView steps."""
    changed = False
    for i in range(len(view)):
        st = view.step(i)
        if st is None or not all(st[2]) or any(n and view.constant(n) is None for n in st[1][1:]):
            continue
        if _runs_own(st, "Split") and len(st[2]) >= 2:
            make = lambda fallback, st=st: SplitViews(fallback, int(st[3].get("axis", 0)))  # noqa: E731
        elif _runs_own(st, "Gather") and len(st[1]) == 2 and getattr(view.constant(st[1][1]), "ndim", None) == 0 \
                and view.constant(st[1][1]).dtype.kind in "iu":
            make = lambda fallback, st=st: IndexView(fallback, int(st[3].get("axis", 0)),  # noqa: E731
                                                     int(view.constant(st[1][1])))
        else:
            continue
        if not all(_read_as_views(view, n) for n in st[2]):
            continue
        constants = {n: view.constant(n) for n in st[1][1:] if n}
        fused = make(OriginalSteps([st], st[1], st[2], constants))
        view.replace(i, (fused, st[1], st[2], {}, st[4], st[5], False), view.steps[i][1])
        changed = True
    return changed


def apply(steps: list, keep: set, known) -> list:
    if not any(type(st[0]) in STRIDED_READERS for st, _ in steps):
        return steps
    view = GraphView(steps, keep, known)
    changed = False
    for i in reversed(range(len(view))):
        if _layout(view, i) is None:
            continue
        out = view.step(i)[2][0]
        readers = [j for j, e in enumerate(view.steps) if e is not None and out in e[1]]
        if out in keep or not readers or not all(_strided_reader(view, j) for j in readers):
            continue
        chain = [i]
        while True:
            data = view.step(chain[-1])[1][0]
            p = view.producer.get(data)
            if p is None or _layout(view, p) is None or not view.single_reader_value(data):
                break
            chain.append(p)
        chain.reverse()
        if len(chain) < 2 or all(_layout(view, k) != "T" for k in chain):
            continue
        x = view.step(chain[0])[1][0]
        sources: list = []
        ops = []
        for k in chain:
            st = view.step(k)
            if _layout(view, k) == "T":
                perm = st[3].get("perm")
                ops.append((False, tuple(int(a) for a in perm) if perm else None, ()))
                continue
            at = []
            for n in st[1][1:]:
                if n not in sources:
                    sources.append(n)
                at.append(sources.index(n))
            ops.append((True, st[0], tuple(at)))
        inputs = (x,) + tuple(sources)
        originals = [view.step(k) for k in chain]
        constants = {n: view.constant(n) for s in originals for n in s[1] if n and view.constant(n) is not None}
        fused = LayoutViews(ops, OriginalSteps(originals, inputs, (out,), constants))
        for k in chain[:-1]:
            view.remove(k)
        view.replace(i, (fused, inputs, (out,), {}, (), view.step(i)[5], False), list(inputs))
        changed = True
    changed = _split_views(view) or changed  # (after the chains: their LayoutViews steps read the parts)
    return view.entries() if changed else steps
