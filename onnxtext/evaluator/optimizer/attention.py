"""Rule ``attention``: the attention core exporters write, ``MatMul(q, k)``, an optional scale
(``Mul``/``Div`` by a one-element constant), an optional additive mask (``Add``), ``Softmax`` over the
last axis, an optional NaN guard (``IsNaN`` then ``Where(isnan, 0, p)``: torch's SDPA export) and
``MatMul(p, v)``, becomes one :class:`~..fused.attention.DotProductAttention` step. The reshapes and
transposes around it stay steps (they are views, or copies onnxruntime makes as well).

Condition: Softmax's axis is -1; the scale and the guard's 0 are one-element constants. The mask is
checked per call (it must broadcast to the scores' shape, else the original steps run). Equal up to
float rounding (level 2).
"""

from __future__ import annotations

from ..fused.attention import DotProductAttention
from ..fused.original import original_steps
from .pattern import PatternRule


def _form(scale: str, mask: bool, guard: bool) -> str:
    inputs = "q, k, v" + (", mask" if mask else "")
    lines = ["s = MatMul(q, k)"]
    last = "s"
    if scale:
        lines.append(f"t = {scale}(s, c)")
        last = "t"
    if mask:
        lines.append(f"m = Add({last}, mask)")
        last = "m"
    lines.append(f"p = Softmax({last})")
    if guard:
        lines += ["n = IsNaN(p)", "w = Where(n, zero, p)", "y = MatMul(w, v)"]
    else:
        lines.append("y = MatMul(p, v)")
    body = "\n  ".join(lines)
    return f"attention ({inputs}) => (y) {{\n  {body}\n}}"


FORMS = [_form(scale, mask, guard) for guard in (True, False) for mask in (True, False)
         for scale in ("Mul", "Div", "")]


def build(match):
    n = match.names
    softmax = match.attrs("p")
    if softmax.get("axis", -1) != -1:
        return None
    scale = None
    if "c" in n:
        c = match.scalar("c")
        if c is None or c == 0:
            return None
        scale = c if match.info("t").node.op_type == "Mul" else 1.0 / c
    guard = "zero" in n
    if guard and not match.is_scalar("zero", 0.0):
        return None
    inputs = (n["q"], n["k"], n["v"]) + ((n["mask"],) if "mask" in n else ())
    return DotProductAttention(scale, guard, "mask" in n, original_steps(match, inputs)), inputs


RULE = PatternRule("attention", 2, FORMS, build, __doc__)
