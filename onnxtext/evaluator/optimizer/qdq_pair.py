"""Rule ``qdq_pair``: QuantizeLinear -> DequantizeLinear with equal per-tensor parameters (what
onnxruntime's QDQ quantizer writes after every quantized activation) becomes one
:class:`~..fused.quantization.FakeQuantize` step computed in float32, without the integer tensor.

Condition: both scales float32 with one element and equal, both zero points absent or one 8/16-bit
element, equal, of the same type; no ``block_size``, ``output_dtype`` the zero point's type and
``precision`` unset on the QuantizeLinear; the quantized value read only by the DequantizeLinear.
The same values as the two nodes (level 1).
"""

from __future__ import annotations

import numpy as np

from ..fused.original import original_steps
from ..fused.quantization import FakeQuantize
from ..kernels.quantize import per_tensor_float32
from .pattern import PatternRule

WITH_ZERO_POINT = """qdq_pair (x) => (y) {
  q = QuantizeLinear(x, scale, zero_point)
  y = DequantizeLinear(q, scale2, zero_point2)
}"""

WITHOUT_ZERO_POINT = """qdq_pair_uint8 (x) => (y) {
  q = QuantizeLinear(x, scale)
  y = DequantizeLinear(q, scale2)
}"""


def build(match):
    n = match.names
    scale, scale2 = match.constant("scale"), match.constant("scale2")
    zp = match.constant("zero_point") if "zero_point" in n else None
    zp2 = match.constant("zero_point2") if "zero_point2" in n else None
    if not (per_tensor_float32(scale, zp) and per_tensor_float32(scale2, zp2)):
        return None
    if scale.reshape(-1)[0] != scale2.reshape(-1)[0]:
        return None
    target = np.dtype(np.uint8) if zp is None else zp.dtype
    if (zp2.dtype if zp2 is not None else np.dtype(np.uint8)) != target:
        return None
    z = 0.0 if zp is None else float(zp.reshape(-1)[0])
    if z != (0.0 if zp2 is None else float(zp2.reshape(-1)[0])):
        return None
    q, dq = match.attrs("q"), match.attrs("y")
    if q.get("block_size") or q.get("precision") or dq.get("block_size") or dq.get("output_dtype", 0) not in (0, 1):
        return None
    output_dtype = q.get("output_dtype")
    if output_dtype:
        from ... import dtypes

        if dtypes.from_enum(output_dtype).np != target:
            return None
    x = n["x"]
    return FakeQuantize(scale.reshape(-1)[0], z, target, original_steps(match, (x,))), (x,)


RULE = PatternRule("qdq_pair", 1, (WITH_ZERO_POINT, WITHOUT_ZERO_POINT), build, __doc__)
