"""Rule ``gelu``: Gelu written out by exporters, in its erf form (torch's default, BERT) and its tanh
form (GPT-2's "new Gelu"), becomes one :class:`~..fused.activation.FusedGelu` step.

Condition: the constants are the formula's (sqrt 2 or 1/sqrt 2, 1, 0.5, 3, 0.044715, sqrt(2/pi)),
each one element. Equal to the nodes up to float rounding (level 2).
"""

from __future__ import annotations

import math

from ..fused.activation import FusedGelu
from ..fused.original import original_steps
from .pattern import PatternRule

ERF_DIV = """gelu_erf_div (x) => (y) {
  d = Div(x, sqrt2)
  e = Erf(d)
  a = Add(e, one)
  m = Mul(x, a)
  y = Mul(m, half)
}"""

ERF_MUL = """gelu_erf_mul (x) => (y) {
  d = Mul(x, inv_sqrt2)
  e = Erf(d)
  a = Add(e, one)
  m = Mul(x, a)
  y = Mul(m, half)
}"""

ERF_HALF_FIRST = """gelu_erf_half_first (x) => (y) {
  h = Mul(x, half)
  d = Div(x, sqrt2)
  e = Erf(d)
  a = Add(e, one)
  y = Mul(h, a)
}"""

TANH = """gelu_tanh (x) => (y) {
  h = Mul(x, half)
  p = Pow(x, three)
  c = Mul(p, k)
  s = Add(x, c)
  z = Mul(s, scale)
  t = Tanh(z)
  a = Add(t, one)
  y = Mul(h, a)
}"""


def build(match):
    names = match.pattern.inputs
    if "x" not in names or not match.is_scalar("one", 1.0) or not match.is_scalar("half", 0.5):
        return None
    n = match.names
    if "sqrt2" in n and not match.is_scalar("sqrt2", math.sqrt(2)):
        return None
    if "inv_sqrt2" in n and not match.is_scalar("inv_sqrt2", 1 / math.sqrt(2)):
        return None
    tanh = "three" in n
    if tanh and not (match.is_scalar("three", 3.0) and match.is_scalar("k", 0.044715, rtol=1e-5)
                     and match.is_scalar("scale", math.sqrt(2 / math.pi), rtol=1e-5)):
        return None
    x = n["x"]
    return FusedGelu(tanh, original_steps(match, (x,))), (x,)


RULE = PatternRule("gelu", 2, (ERF_DIV, ERF_MUL, ERF_HALF_FIRST, TANH), build, __doc__)
