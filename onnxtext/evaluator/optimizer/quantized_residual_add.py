"""Rule ``quantized_residual_add``: ``Add(p, r)`` where ``p`` is a
:class:`~..fused.quantization.QuantizedInputMatMul`'s result (rule ``dynamic_quantized_matmul``) read
only by that Add (after onnxruntime's dynamic quantizer, the attention output projection and the second
feed-forward product of every transformer layer, added to the residual stream) becomes one
:class:`~..fused.quantization.QuantizedMatMulResidual` step that adds ``r`` in place into the product's
result: one array and one step instead of two each (what rule ``residual_add`` does for float products).

Condition: the product has one reader, the Add, and ``r`` is not a constant; ``r`` must be a float32
array of the product's shape at run time (checked per call, else the original steps run). Exact (level
1): the same float32 sum (``p + r`` equals ``r + p``).
"""

from __future__ import annotations

from ..fused.original import OriginalSteps
from ..fused.quantization import QuantizedInputMatMul, QuantizedMatMulResidual
from .residual_add import fuse_residual_adds

NAME = "quantized_residual_add"
LEVEL = 1


def _fuse_quantized(view, k: int, product, add, r: str):
    if type(product[0]) is not QuantizedInputMatMul or len(product[1]) != 1:
        return None
    x = product[1][0]
    return QuantizedMatMulResidual(product[0], OriginalSteps([product, add], (x, r), add[2], {})), x


def apply(steps: list, keep: set, known) -> list:
    return fuse_residual_adds(steps, keep, known, _fuse_quantized)
