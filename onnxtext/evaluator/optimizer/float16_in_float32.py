"""Rule ``float16_in_float32``: float16 arithmetic computed in float32, rounded to float16 only where a
value leaves the float32 region, as onnxruntime's CPU provider does.

numpy's float16 arithmetic is slow (every ufunc converts each element) and it has no half-precision
BLAS. onnxruntime's CPU provider has no float16 kernel for most operators either: it inserts Casts to
float32 around them and removes the Casts between two such operators, so a chain of them runs in
float32 with no rounding in between. This rule does the same on the plan:

* a step joins the region when its operator is in :data:`FLOAT32_OPS` (computed in float32 by
  onnxruntime's CPU provider, checked against onnxruntime 1.32 by tests/test_float16_region.py) or in
  :data:`EXACT_OPS` (data movement and order operations, whose float16 result is the rounded float32
  result, so either precision gives the same values), and one of its inputs is a float16 constant or
  a value computed in the region;
* float16 constants the region reads are converted to float32 once; other inputs from outside the
  region are converted at run time by a :class:`~..fused.float16.ToFloat32` step (which leaves
  non-float16 values, such as shapes and masks, alone);
* a region value read outside the region or kept as an output is rounded to float16 by a
  :class:`~..fused.float16.ToFloat16` step; the region itself reads the float32 value.

Operators with a float16 kernel in onnxruntime (LayerNormalization, SkipLayerNormalization, Cast...)
stay outside, so their inputs are rounded where onnxruntime rounds them. The rule runs before the
other rewrites, which then see float32 steps (prepared convolutions, fused activations). Values
differ from float16 computed node by node by float16 rounding (level 2).
"""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, helper

from ..fused.float16 import ToFloat16, ToFloat32
from ..registry import lookup
from ..steps import UNUSED, StepInfo

MS = "com.microsoft"
FLOAT32_OPS = frozenset({("", op) for op in (
    "Abs", "Add", "AveragePool", "BatchNormalization", "Conv", "ConvTranspose", "Div", "Elu", "Erf", "Exp",
    "Gemm", "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "InstanceNormalization",
    "LeakyRelu", "Log", "MatMul", "MaxPool", "Mul", "Neg", "Pow", "Reciprocal", "ReduceMean", "ReduceSum",
    "Relu", "Sigmoid", "Softmax", "Sqrt", "Sub", "Tanh")} | {(MS, op) for op in (
    "Attention", "BiasGelu", "EmbedLayerNormalization", "FastGelu", "FusedConv", "FusedGemm", "FusedMatMul",
    "Gelu", "MultiHeadAttention", "QuickGelu")})
EXACT_OPS = frozenset({("", op) for op in (
    "Clip", "Concat", "Flatten", "Gather", "Identity", "Max", "Min", "Reshape", "Slice", "Squeeze",
    "Transpose", "Unsqueeze")})

# operators whose output type is that of their first input only (the others may be another float type:
# Pow's exponent, BatchNormalization's statistics): only that input can make them float16
FIRST_INPUT_TYPED = frozenset({("", "Pow"), ("", "BatchNormalization")})

# inputs that are never float (shapes, indices, masks, ids): read as they are, no conversion step
INTEGER_INPUTS = {("", "Reshape"): (1,), ("", "Gather"): (1,), ("", "Slice"): (1, 2, 3, 4), ("", "Squeeze"): (1,),
                  ("", "Unsqueeze"): (1,), (MS, "Attention"): (3, 6), (MS, "EmbedLayerNormalization"): (0, 1, 7, 8),
                  (MS, "MultiHeadAttention"): (4, 7, 8)}

_F16 = np.dtype(np.float16)
SUFFIX = "::float32"


def _runs_own_kernel(st) -> bool:
    info = st[5]
    k = lookup(info.node.op_type, info.domain, info.opset or 0)
    return k is not None and k.fn is st[0] and tuple(info.node.input) == st[1] and not info.subplans


def _cast_info(info, src, dst, to):
    """A StepInfo for an inserted conversion next to ``info``'s node (errors name that node's place)."""
    node = helper.make_node("Cast", [src], [dst], name=f"{info.node.name or info.node.op_type} ({dst})", to=to)
    return StepInfo(node, info.index, info.opset, "", info.prep, info.graph, path=info.path)


def _renamed_info(info, inputs, outputs):
    """A StepInfo for a region step: a copy of its node reading and writing the float32 names, so the
    later rules see the operator running its own kernel on its step's inputs (a Clip with constant
    bounds fuses into the conv before it, a Gemm with a constant weight becomes a product, as in
    float32 models); path, index and opset stay the original node's."""
    node = NodeProto()
    node.CopyFrom(info.node)
    del node.input[:], node.output[:]
    node.input.extend(inputs)
    node.output.extend(outputs)
    return StepInfo(node, info.index, info.opset, info.domain, info.prep, info.graph, path=info.path)


def apply(steps: list, keep: set, known) -> list:
    region: list[int] = []
    computed: set[str] = set()  # values the region computes (in float32)
    for i, (st, _) in enumerate(steps):
        info = st[5]
        if (info.domain, info.node.op_type) not in FLOAT32_OPS | EXACT_OPS or not _runs_own_kernel(st):
            continue
        key = (info.domain, info.node.op_type)
        if not info.domain and sum(1 for o in st[2] if o and o != UNUSED) != 1:
            continue  # (MaxPool's indices, BatchNormalization's training statistics: not float16 values)
        ins = [n for n in (st[1][:1] if key in FIRST_INPUT_TYPED else st[1]) if n]
        half_constant = any(getattr(known.get(n), "dtype", None) == _F16 for n in ins if n in known)
        if half_constant or any(n in computed for n in ins):
            region.append(i)
            computed.update(o for o in st[2] if o and o != UNUSED)
    if not region:
        return steps
    members = set(region)
    outside_readers = {n for i, (st, used) in enumerate(steps) if i not in members for n in used} | set(keep)
    out: list = []
    converted: dict[str, str] = {}  # outside value -> its float32 name
    for i, (st, used) in enumerate(steps):
        if i not in members:
            out.append((st, used))
            continue
        fn, ins, outs, attrs, free, info, context = st[:7]
        new_ins = []
        integer = INTEGER_INPUTS.get((info.domain, info.node.op_type), ())
        for position, n in enumerate(ins):
            if not n or n in computed or position in integer:
                new_ins.append(n + SUFFIX if n in outside_readers and n in computed else n)
                continue
            value = known.get(n) if n in known else None
            if value is not None:
                if value.dtype == _F16:
                    name = n + SUFFIX
                    if name not in known:
                        known.add(name, value.astype(np.float32))
                    new_ins.append(name)
                else:
                    new_ins.append(n)
                continue
            if n not in converted:  # a graph input or a value computed outside: converted when float16
                converted[n] = n + SUFFIX
                out.append(((ToFloat32(), (n,), (converted[n],), {}, (), _cast_info(info, n, converted[n], 1),
                             False), [n]))
            new_ins.append(converted[n])
        new_outs = tuple(o + SUFFIX if o in outside_readers else o for o in outs)
        if tuple(new_ins) != ins or new_outs != outs:
            info = _renamed_info(info, new_ins, new_outs)
        out.append(((fn, tuple(new_ins), new_outs, attrs, free, info, context), [n for n in new_ins if n]))
        for o, o32 in zip(outs, new_outs):
            if o != o32:
                out.append(((ToFloat16(), (o32,), (o,), {}, (), _cast_info(info, o32, o, 10), False), [o32]))
    return out


NAME = "float16_in_float32"
LEVEL = 2
