"""Rule ``attention_operands``: the head layout and scaling exporters write around attention join the
:class:`~..fused.attention.DotProductAttention` step made by rule ``attention``.

Exporters split heads with ``Reshape`` then ``Transpose`` (``[0, 2, 1, 3]`` for q and v, ``[0, 2, 3, 1]``
for k), scale q and k each by a one-element constant (torch's SDPA export multiplies both by
``sqrt(scale)``), and merge heads with ``Transpose`` then ``Reshape``. Each Transpose copies its
input, each scaling makes a new array: per layer up to six passes and steps besides the products.
This rule absorbs, into one :class:`~..fused.attention.HeadsAttention` step,

* on q and k: a ``Mul`` by (or ``Div`` of the operand by) a one-element float constant of rank at
  most 1, folded into the attention's scale, or by a value a shape cone computes (torch's
  TorchScript export scales q and k by ``1 / sqrt(sqrt(d))`` computed from q's shape), which becomes
  an input of the step, checked per call to be one element of the operands' type; and a
  ``Transpose`` with a given perm, done as a view the batched product reads directly;
* on v: a ``Transpose``, as a view;
* after it: the ``Transpose`` that is the only reader of the result.

Each absorbed step must be the only reader of what it computes, and not computing an output or a
kept value. The Reshapes stay steps: they are views, and their shapes are computed from other values.
Level 2: scaling the scores instead of the operands changes the rounding.
"""

from __future__ import annotations

import numpy as np

from ..fused.attention import DotProductAttention, HeadsAttention
from ..fused.original import OriginalSteps
from ..fused.shape_cone import ShapeCone
from .graph import GraphView

NAME = "attention_operands"
LEVEL = 2


def apply(steps: list, keep: set, known) -> list:
    """``steps`` with each attention step's operand layout and scaling absorbed (module docstring)."""
    if not any(type(st[0]) is DotProductAttention for st, _ in steps):
        return steps
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        st = view.step(i)
        if st is not None and type(st[0]) is DotProductAttention:
            changed |= _absorb(view, i)
    return view.entries() if changed else steps


def _absorb(view: GraphView, i: int) -> bool:
    st = view.step(i)
    core = st[0]
    operands = list(st[1][:3])
    absorbed: list[int] = []
    perms: list = [None, None, None]
    factor, dtype = 1.0, None
    computed: list = []  # (name, divides) of factors shape cones compute per call
    for role in range(3):
        while True:
            name = operands[role]
            k = view.producer.get(name)
            if k is None or not view.single_reader_value(name) or len(view.step(k)[2]) != 1:
                break
            op = view.op(k)
            if op == "Transpose" and perms[role] is None and view.step(k)[3].get("perm"):
                perms[role] = tuple(int(p) for p in view.step(k)[3]["perm"])
                operands[role] = view.step(k)[1][0]
            elif op in ("Mul", "Div") and role < 2:
                scaled = _scaled_operand(view, k, op)
                if scaled is not None and (dtype is None or scaled[2] == dtype):
                    operands[role], f, dtype = scaled
                    factor *= f
                else:
                    cone = _cone_scaled_operand(view, k, op)
                    if cone is None:
                        break
                    operands[role] = cone[0]
                    computed.append(cone[1:])
            else:
                break
            absorbed.append(k)
    out_perm, last = None, i
    out = st[2][0]
    reader = view.only_reader(out) if len(st[2]) == 1 else None
    if reader is not None and view.op(reader) == "Transpose" and view.step(reader)[3].get("perm") and \
            view.step(reader)[1] == (out,):
        out_perm, last = tuple(int(p) for p in view.step(reader)[3]["perm"]), reader
    if not absorbed and last == i:
        return False
    scale = None if core.scale is None and factor == 1.0 else (1.0 if core.scale is None else core.scale) * factor
    inner = DotProductAttention(scale, core.nan_to_zero, core.has_mask, None)
    original = [view.step(k) for k in sorted(absorbed)] + [st] + ([view.step(last)] if last != i else [])
    inputs = tuple(operands) + tuple(st[1][3:]) + tuple(name for name, _ in computed)
    constants = {n: view.constant(n) for s in original for n in s[1] if n and view.constant(n) is not None}
    outputs = view.step(last)[2]
    fallback = OriginalSteps(original, inputs, outputs, constants)
    fused = HeadsAttention(inner, tuple(perms), out_perm, dtype, fallback, [d for _, d in computed])
    for k in absorbed:
        view.remove(k)
    if last != i:
        view.remove(i)
    view.replace(last, (fused, inputs, outputs, {}, (), st[5], False), [n for n in inputs if n])
    return True


def _scaled_operand(view: GraphView, k: int, op: str):
    """``(operand, factor, dtype)`` when step ``k`` multiplies a value by (or divides it by) a
    one-element float constant of rank at most 1; else None."""
    ins = view.step(k)[1]
    if len(ins) != 2:
        return None
    candidates = [(ins[0], ins[1])] + ([(ins[1], ins[0])] if op == "Mul" else [])
    for data, const in candidates:
        c = view.constant(const)
        if view.constant(data) is not None or not isinstance(c, np.ndarray) or c.dtype.kind != "f" or \
                c.size != 1 or c.ndim > 1:
            continue
        value = float(c.reshape(-1)[0])
        if op == "Div":
            if value == 0 or not np.isfinite(value):
                return None
            value = 1.0 / value
        if not np.isfinite(value):
            return None
        return data, value, c.dtype
    return None


def _cone_scaled_operand(view: GraphView, k: int, op: str):
    """``(operand, factor name, divides)`` when step ``k`` multiplies a value by (or divides it by) a
    value a :class:`~..fused.shape_cone.ShapeCone` computes from shapes (checked per call to be one
    element of the operand's type); else None."""
    ins = view.step(k)[1]
    if len(ins) != 2:
        return None
    candidates = [(ins[0], ins[1])] + ([(ins[1], ins[0])] if op == "Mul" else [])
    for data, factor in candidates:
        p = view.producer.get(factor)
        if view.constant(data) is None and p is not None and type(view.step(p)[0]) is ShapeCone and \
                len(view.step(p)[2]) == 1:
            return data, factor, op == "Div"
    return None
