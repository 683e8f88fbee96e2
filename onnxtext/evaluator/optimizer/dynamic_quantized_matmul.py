"""Rule ``dynamic_quantized_matmul``: a DynamicQuantizeLinear whose quantized tensor and zero point are
read only by :class:`~..fused.quantization.IntegerMatMulToFloat` steps (rule
``integer_matmul_to_float``, which runs first) hands them its codes minus the zero point as float32,
the values those steps make from the uint8 tensor and its zero point, instead of the uint8 tensor.

onnxruntime's dynamic quantizer writes one DynamicQuantizeLinear before every group of MatMuls that
read the same activation (a transformer's Q, K and V projections, its two feed-forward products):
the rewrite saves adding the zero point and rounding to uint8 once per group, and converting back to
float32 and subtracting the zero point once per product.

Condition: the DynamicQuantizeLinear runs its own kernel; its first and third outputs are not graph
outputs (nor read by subgraphs) and every step reading them is an IntegerMatMulToFloat reading them
as its activation and zero point. The scale stays a value (the products, and anything else, read
it). When one product reads them and nothing else reads the scale (a classifier's head), the two are
one :class:`~..fused.quantization.QuantizedInputMatMul` step. The same values as the nodes (level 1).
"""

from __future__ import annotations

from ..fused.quantization import CodesMatMulToFloat, DynamicQuantizeCodes, IntegerMatMulToFloat, QuantizedInputMatMul
from ..registry import lookup

NAME = "dynamic_quantized_matmul"
LEVEL = 1
SUFFIX = "::codes"


def _is_dynamic_quantize(st) -> bool:
    info = st[5]
    if info.node.op_type != "DynamicQuantizeLinear" or info.domain or st[6] or len(st[2]) < 3:
        return False
    k = lookup("DynamicQuantizeLinear", "", info.opset or 0)
    return k is not None and k.fn is st[0]


def _reads_codes(st, q: str, zero_point: str) -> bool:
    """Whether step ``st`` is an IntegerMatMulToFloat reading ``q`` and ``zero_point`` as its activation
    and zero point, and nowhere else."""
    ins = st[1]
    return type(st[0]) is IntegerMatMulToFloat and len(ins) == 3 and ins[0] == q and ins[1] == zero_point and \
        ins[2] not in (q, zero_point)


def apply(steps: list, keep: set, known) -> list:
    readers: dict[str, list[int]] = {}
    for i, (_, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
    replaced: dict[int, tuple] = {}
    for i, (st, _) in enumerate(steps):
        if not _is_dynamic_quantize(st):
            continue
        q, scale, zero_point = st[2][:3]
        if not q or not zero_point or q in keep or zero_point in keep:
            continue
        products = sorted(set(readers.get(q, ())) | set(readers.get(zero_point, ())))
        if not products or not all(_reads_codes(steps[j][0], q, zero_point) for j in products):
            continue
        fn, ins, outs, attrs, free, info, context = st[:7]
        if len(products) == 1 and scale and scale not in keep and readers.get(scale) == products:
            j = products[0]
            p = steps[j][0]
            if p[1][2] == scale:  # (the product reads the scale itself, not a value computed from it)
                fused = QuantizedInputMatMul(DynamicQuantizeCodes(), CodesMatMulToFloat(p[0]))
                replaced[i] = None
                replaced[j] = ((fused, ins[:1], p[2], {}, p[4], info, False), [ins[0]])
                continue
        codes = q + SUFFIX
        replaced[i] = ((DynamicQuantizeCodes(), ins[:1], (codes, scale), {}, free, info, False), [ins[0]])
        for j in products:
            p = steps[j][0]
            replaced[j] = ((CodesMatMulToFloat(p[0]), (codes, p[1][2]), p[2], {}, p[4], p[5], False),
                           [codes, p[1][2]])
    if not replaced:
        return steps
    out = [replaced.get(i, entry) for i, entry in enumerate(steps)]
    return [entry for entry in out if entry is not None]
