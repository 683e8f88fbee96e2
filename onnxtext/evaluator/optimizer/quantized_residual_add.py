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
from .graph import GraphView

NAME = "quantized_residual_add"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        if view.op(i) != "Add":
            continue
        st = view.step(i)
        if len(st[1]) != 2:
            continue
        for p, r in (st[1], st[1][::-1]):
            k = view.producer.get(p)
            product = view.step(k) if k is not None else None
            if product is None or type(product[0]) is not QuantizedInputMatMul or len(product[1]) != 1 or \
                    not view.single_reader_value(p) or view.constant(r) is not None or p == r:
                continue
            x = product[1][0]
            fallback = OriginalSteps([product, st], (x, r), st[2], {})
            fused = QuantizedMatMulResidual(product[0], fallback)
            view.remove(k)
            view.replace(i, (fused, (x, r), st[2], {}, (), product[5], False), [x, r])
            changed = True
            break
    return view.entries() if changed else steps
