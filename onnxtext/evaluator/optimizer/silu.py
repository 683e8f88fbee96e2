"""Rule ``silu``: SiLU written out, ``Mul(x, Sigmoid(x))``, and the gated MLP of Llama-family exports,
``Mul(Mul(x, Sigmoid(x)), up)``, become one :class:`~..fused.gating.SiluGate` step computing
``x / (1 + exp(-x)) (* up)`` in one buffer.

Condition: x is not computed by a Conv or a BatchNormalization (rule ``conv_activation`` applies SiLU
inside the prepared conv, the normalization folded into it). Level 2: ``x / (1 + e)`` and
``x * (1 / (1 + e))`` round differently.
"""

from __future__ import annotations

from ..fused.gating import SiluGate
from ..fused.original import original_steps
from .pattern import PatternRule

GATED = """silu_gate (x, up) => (y) {
  s = Sigmoid(x)
  m = Mul(x, s)
  y = Mul(m, up)
}"""

PLAIN = """silu (x) => (y) {
  s = Sigmoid(x)
  y = Mul(x, s)
}"""


def build(match):
    n = match.names
    x = n["x"]
    k = match.view.producer.get(x)
    if k is not None and match.view.op(k) in ("Conv", "BatchNormalization"):
        return None
    inputs = (x, n["up"]) if "up" in n else (x,)
    return SiluGate("up" in n, original_steps(match, inputs)), inputs


RULE = PatternRule("silu", 2, (GATED, PLAIN), build, __doc__)
