"""Rule ``silu``: the gated MLP of Llama-family exports, ``Mul(Mul(x, Sigmoid(x)), up)`` (SiLU written out
times the up projection), becomes one :class:`~..fused.gating.SiluGate` step computing
``x / (1 + exp(-x)) * up`` in one buffer.

SiLU alone (``Mul(x, Sigmoid(x))``) is not rewritten: in the corpus it appears in ddddocr's OCR model
ahead of a dynamically quantized LSTM, whose on-the-fly quantization turns one-ulp differences into
visible ones (see docs/evaluator.md, "Debugging a run"); the Sigmoid and Mul kernels keep the nodes'
own rounding there.

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

def build(match):
    n = match.names
    x = n["x"]
    k = match.view.producer.get(x)
    if k is not None and match.view.op(k) in ("Conv", "BatchNormalization"):
        return None
    inputs = (x, n["up"]) if "up" in n else (x,)
    return SiluGate("up" in n, original_steps(match, inputs)), inputs


RULE = PatternRule("silu", 2, (GATED,), build, __doc__)
