"""Rule ``matmul_add``: ``Add(MatMul(a, W), b)`` with constant float W (2-D) and bias b (along the last
axis) becomes one :class:`~..fused.linear.MatMulAdd` step that adds the bias in place into the
product (one result array instead of two, one dispatch instead of two). Exact (level 1): the same
product and the same sum.
"""

from __future__ import annotations

import numpy as np

from ..fused.linear import MatMulAdd
from ..fused.original import original_steps
from .layer_norm import along_last_axis
from .pattern import PatternRule

FORM = """matmul_add (a) => (y) {
  p = MatMul(a, w)
  y = Add(p, b)
}"""


def build(match):
    w, b = match.constant("w"), match.constant("b")
    if w.ndim != 2 or w.dtype.kind != "f" or b.dtype != w.dtype or not along_last_axis(b) or \
            np.size(b) not in (1, w.shape[1]):
        return None
    a = match.names["a"]
    return MatMulAdd(w, b.reshape(-1), original_steps(match, (a,))), (a,)


RULE = PatternRule("matmul_add", 1, (FORM,), build, __doc__)
