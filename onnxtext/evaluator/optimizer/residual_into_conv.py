"""Rule ``residual_into_conv``: a residual Add/Sum of a prepared Conv's result and a value computed
before the Conv (ResNet, ShuffleNet), with its Relu, runs in place on the Conv's fresh result
(``kernels.conv_fused.ConvAdd``). Level 1.
"""

from __future__ import annotations

from collections import Counter

from ..fused.affine import InPlaceRelu

def _residuals_into_convs(steps, keep, known=None):
    """Add(conv result, r) / Sum of two (then maybe Relu) where the conv result has no other reader
    and r exists before the Conv runs: one :class:`ConvAdd` step at the Conv's place."""
    from ..kernels.conv_fused import ConvAdd
    from ..kernels.conv_prepared import PreparedConv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    producer = {n: i for i, (step, _) in enumerate(steps) for n in step[2]}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        if not isinstance(step[0], PreparedConv) or out[i] is None:
            continue
        y = step[2][0]
        j = reader_of.get(y)
        if readers[y] != 1 or y in keep or j is None or out[j] is None:
            continue
        fn, ins, outs, attrs, _, info, context = out[j][0]
        relu = isinstance(fn, InPlaceRelu)
        if info.node.op_type not in ("Add", "Sum") or info.domain or context or len(ins) != 2 or len(outs) != 1:
            continue
        other = ins[1] if ins[0] == y else ins[0]
        if other == y or not other or producer.get(other, -1) >= i:
            continue
        fused = ConvAdd(step[0], fn.fn if relu else fn, attrs, relu, ins[0] == y)
        out[i] = ((fused, (step[1][0], other), outs, {}, (), step[5], False), [step[1][0], other])
        out[j] = None
    return [s for s in out if s is not None]


NAME = "residual_into_conv"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _residuals_into_convs(steps, keep)
