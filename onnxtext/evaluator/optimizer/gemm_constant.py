"""Rule ``gemm_constant``: ``Gemm(a, B, C)`` with a constant float weight B and bias C along the last
axis (the Linear layers of torch's exporters and skl2onnx), or ``Gemm(a, B)`` without C, ``alpha = beta = 1`` and ``transA = 0``,
becomes one :class:`~..fused.linear.MatMulAdd` step: ``transB`` is applied once, at preparation (a
contiguous copy of the weight), and the call is a product and an in-place bias add, without the Gemm
kernel's per-call attribute handling. Level 2: BLAS may sum a pre-transposed weight in another order.
"""

from __future__ import annotations

import numpy as np

from ..fused.linear import MatMulAdd
from ..fused.original import original_steps
from .layer_norm import along_last_axis
from .pattern import PatternRule

FORM = """gemm_constant (a) => (y) {
  y = Gemm(a, w, c)
}"""

#: without C (torch's dynamo export of GPT-2's Conv1D layers): the product alone
FORM_NO_BIAS = """gemm_constant_no_bias (a) => (y) {
  y = Gemm(a, w)
}"""


def build(match):
    w = match.constant("w")
    c = match.constant("c") if "c" in match.names else None
    attrs = match.attrs("y")
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0) or \
            attrs.get("broadcast", 0) or w.ndim != 2 or w.dtype.kind != "f" or \
            (c is not None and c.dtype != w.dtype):
        return None
    if attrs.get("transB", 0):
        w = np.ascontiguousarray(w.T)
    if c is not None and (not along_last_axis(c) or np.size(c) not in (1, w.shape[1])):
        return None
    a = match.names["a"]
    return MatMulAdd(w, None if c is None else c.reshape(-1), original_steps(match, (a,))), (a,)


RULE = PatternRule("gemm_constant", 2, (FORM, FORM_NO_BIAS), build, __doc__)
