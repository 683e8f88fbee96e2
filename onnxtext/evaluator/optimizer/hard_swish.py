"""Rule ``hard_swish``: HardSwish written out by exporters becomes one
:class:`~..fused.conv_activation.HardSwishStep` (the HardSwish operator's kernel).

Forms: ``x * Clip(x + 3, 0, 6) / 6`` (paddle2onnx, also with ``* (1/6)`` or the division before the
product) and ``x * HardSigmoid(x)`` with ``alpha = 1/6, beta = 0.5`` (torch before opset 14).
Condition: the constants are those, each one element; Clip's bounds are inputs (opset 11 and later).
Equal to the nodes up to float rounding (level 2). A Conv's HardSwish then runs in place in the Conv
(rule ``conv_activation``).
"""

from __future__ import annotations

from ..fused.original import original_steps
from ..fused.conv_activation import HardSwishStep
from .pattern import PatternRule

CLIP_DIV = """hard_swish_clip_div (x) => (y) {
  a = Add(x, three)
  c = Clip(a, zero, six)
  m = Mul(x, c)
  y = Div(m, divisor)
}"""

CLIP_MUL = """hard_swish_clip_mul (x) => (y) {
  a = Add(x, three)
  c = Clip(a, zero, six)
  m = Mul(x, c)
  y = Mul(m, sixth)
}"""

CLIP_DIV_FIRST = """hard_swish_clip_div_first (x) => (y) {
  a = Add(x, three)
  c = Clip(a, zero, six)
  d = Div(c, divisor)
  y = Mul(x, d)
}"""

CLIP_MUL_FIRST = """hard_swish_clip_mul_first (x) => (y) {
  a = Add(x, three)
  c = Clip(a, zero, six)
  d = Mul(c, sixth)
  y = Mul(x, d)
}"""

HARD_SIGMOID = """hard_swish_hard_sigmoid (x) => (y) {
  h = HardSigmoid(x)
  y = Mul(x, h)
}"""


def build(match):
    n = match.names
    if "x" not in n:
        return None
    if "h" in match.steps:
        attrs = match.attrs("h")
        if abs(attrs.get("alpha", 0.2) - 1 / 6) > 1e-6 or abs(attrs.get("beta", 0.5) - 0.5) > 1e-6:
            return None
    else:
        if not (match.is_scalar("three", 3.0) and match.is_scalar("zero", 0.0) and match.is_scalar("six", 6.0)):
            return None
        if "divisor" in n and not match.is_scalar("divisor", 6.0):
            return None
        if "sixth" in n and not match.is_scalar("sixth", 1 / 6):
            return None
    x = n["x"]
    return HardSwishStep(original_steps(match, (x,))), (x,)


RULE = PatternRule("hard_swish", 2, (CLIP_DIV, CLIP_MUL, CLIP_DIV_FIRST, CLIP_MUL_FIRST, HARD_SIGMOID), build,
                   __doc__)
