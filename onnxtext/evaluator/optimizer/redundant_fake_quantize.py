"""Rule ``redundant_fake_quantize``: a fake quantization (a :class:`~..fused.quantization.FakeQuantize` of
rule ``qdq_pair``) of a value that an operator which only moves or selects values (MaxPool, Reshape,
Transpose, Flatten, Slice, Gather...) made from another fake quantization with the same scale and zero
point is the identity, and is removed: readers take the operator's result directly.

onnxruntime's QDQ quantizer gives such operators their input's scale and zero point and still writes a
QuantizeLinear/DequantizeLinear pair after them (MaxPool in a CNN, Reshape/Transpose around a
transformer's attention). Why it is exact: the first pair's values are ``c * s`` for integers ``c`` in
``[min - zp, max - zp]`` (+0.0 for ``c = 0``, never NaN); the operator passes some of them on unchanged;
``(c * s) / s`` rounded twice in float32 is within ``|c| * 2**-23 < 0.01`` of ``c`` (16-bit codes at
most), so the second pair's ``rint`` gives ``c`` back, its clip keeps it and ``c * s`` is the same float32.
The same values as the nodes (level 1); a fake quantization whose result is a graph output stays.
"""

from __future__ import annotations

from ..fused.quantization import FakeQuantize
from ..registry import lookup
from ..steps import UNUSED

NAME = "redundant_fake_quantize"
LEVEL = 1

# operators whose first output holds only values of their first input (the others: shapes, indices, axes);
# MaxPool without ceil_mode (every window holds an input value: no -inf from an all-padding window)
VALUE_PRESERVING = frozenset({
    "DepthToSpace", "Expand", "Flatten", "Gather", "Identity", "MaxPool", "Reshape", "Slice", "SpaceToDepth",
    "Squeeze", "Tile", "Transpose", "Unsqueeze"})


def _moves_values(st) -> bool:
    """Whether step ``st`` is a VALUE_PRESERVING node running its own kernel with one used output."""
    info = st[5]
    node = info.node
    if info.domain or node.op_type not in VALUE_PRESERVING or tuple(node.input) != st[1] or \
            any(o and o != UNUSED for o in st[2][1:]) or st[3].get("ceil_mode"):
        return False
    k = lookup(node.op_type, "", info.opset or 0)
    return k is not None and k.fn is st[0]


def _same_grid(a: FakeQuantize, b: FakeQuantize) -> bool:
    return a.scale == b.scale and a.low == b.low and a.high == b.high


def apply(steps: list, keep: set, known) -> list:
    producer = {n: i for i, (st, _) in enumerate(steps) for n in st[2]}
    renamed: dict[str, str] = {}
    out = []
    for st, used in steps:
        if renamed:
            st = st[:1] + (tuple(renamed.get(n, n) for n in st[1]),) + st[2:]
            used = [renamed.get(n, n) for n in used]
        if type(st[0]) is FakeQuantize and st[2][0] not in keep and len(st[1]) == 1:
            i = producer.get(st[1][0])
            mover = steps[i][0] if i is not None else None
            if mover is not None and _moves_values(mover):
                j = producer.get(mover[1][0])  # (a removed pair still says which grid its values are on)
                first = steps[j][0] if j is not None else None
                if first is not None and type(first[0]) is FakeQuantize and _same_grid(first[0], st[0]):
                    renamed[st[2][0]] = st[1][0]
                    continue
        out.append((st, used))
    return out
