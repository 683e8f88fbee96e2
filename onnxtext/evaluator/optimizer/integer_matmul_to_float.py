"""Rule ``integer_matmul_to_float``: onnxruntime's dynamic quantization of a MatMul with constant
weights, ``MatMulInteger(a, W, a_zp, W_zp) -> Cast(float) -> Mul(scale)`` (the scale often the
product ``Mul(a_scale, W_scale)``, a bias ``Add`` often after), becomes one
:class:`~..fused.quantization.IntegerMatMulToFloat` step: one float32 product with ``W - W_zp``
converted once, then the scale and the bias in place.

Condition: ``W`` a constant 2-D 8-bit matrix with a constant zero point (scalar or per column),
``K * 255 * max|W - W_zp| < 2**24`` (every partial sum of the product exact in float32), the Cast to
float32, a constant float32 bias that broadcasts along the last axis. The same values as the nodes
(level 1); other inputs at run time (not 8-bit, not float32 scales) run the original steps.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import original_steps
from ..fused.quantization import IntegerMatMulToFloat
from .pattern import PatternRule

_BODY = """  p = MatMulInteger(a, w, azp, wzp)
  c = Cast(p)
"""
SCALE_PRODUCT_BIAS = "imtf_product_bias (a, azp, xs) => (y) {\n" + _BODY + """  s = Mul(xs, ws)
  m = Mul(c, s)
  y = Add(m, bias)
}"""
SCALE_PRODUCT = "imtf_product (a, azp, xs) => (y) {\n" + _BODY + """  s = Mul(xs, ws)
  y = Mul(c, s)
}"""
SCALE_BIAS = "imtf_bias (a, azp, xs) => (y) {\n" + _BODY + """  m = Mul(c, xs)
  y = Add(m, bias)
}"""
SCALE = "imtf (a, azp, xs) => (y) {\n" + _BODY + """  y = Mul(c, xs)
}"""

_EXACT_FLOAT32 = 1 << 24


def build(match):
    n = match.names
    w, wzp = match.constant("w"), match.constant("wzp")
    if w.ndim != 2 or w.dtype not in (np.uint8, np.int8) or wzp.dtype != w.dtype or wzp.size not in (1, w.shape[1]):
        return None
    if match.attrs("c").get("to") != 1:
        return None
    shifted = w.astype(np.float32) - wzp.astype(np.float32).reshape(-1)
    if w.shape[0] * 255.0 * float(np.abs(shifted).max(initial=0)) >= _EXACT_FLOAT32:
        return None
    factor = None
    if "ws" in n:
        factor = match.constant("ws")
        if factor.dtype != np.float32 or factor.size not in (1, w.shape[1]):
            return None
    bias = match.constant("bias") if "bias" in n else None
    if bias is not None and (bias.dtype != np.float32 or bias.ndim > 1 or bias.size not in (1, w.shape[1])):
        return None
    inputs = (n["a"], n["azp"], n["xs"])
    return IntegerMatMulToFloat(np.ascontiguousarray(shifted), factor, bias, original_steps(match, inputs)), inputs


RULE = PatternRule("integer_matmul_to_float", 1, (SCALE_PRODUCT_BIAS, SCALE_PRODUCT, SCALE_BIAS, SCALE), build,
                   __doc__)
