"""Rule ``prepared_conv``: every float Conv with constant weights (folded or not, with its fused Relu)
becomes a :class:`~..kernels.conv_prepared.PreparedConv`, which works out geometry, views, buffers
and the algorithm once per input shape instead of at every call. Level 1.
"""

from __future__ import annotations

import numpy as np

from ..fused.affine import _FLOATS, InPlaceRelu

def prepared_convs(steps: list, keep: set, known) -> list:
    """Every float Conv step with constant weights as a PreparedConv step."""
    return [_prepared_conv(s, known) for s in steps]


def _prepared_conv(entry, known):
    """A Conv step with constant float weights as a PreparedConv step; other entries unchanged."""
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step
    relu = isinstance(fn, InPlaceRelu)
    if info.node.op_type != "Conv" or info.domain or context or len(outs) != 1 or len(ins) < 2:
        return entry
    if (relu and fn.fn is not _conv_kernel()) or (not relu and fn is not _conv_kernel()):
        return entry
    w = known.get(ins[1])
    b = known.get(ins[2]) if len(ins) > 2 and ins[2] else None
    if w is None or (len(ins) > 2 and ins[2] and (b is None or b.dtype != w.dtype)):
        return entry
    from ..kernels.conv_prepared import PreparedConv

    if w.dtype == np.float16:  # computed in float32 (numpy has no half-precision BLAS)
        from ..fused.half_conv import HalfConv
        from ..fused.original import OriginalSteps

        conv = PreparedConv(w.astype(np.float32), None if b is None else b.astype(np.float32), attrs, relu)
        constants = {n: known.get(n) for n in ins[1:] if n}
        fn = HalfConv(conv, OriginalSteps([step], ins[:1], outs, constants))
        return (fn, ins[:1], outs, {}, free, info, False), [ins[0]]
    if w.dtype not in _FLOATS:
        return entry
    return (PreparedConv(w, b, attrs, relu), ins[:1], outs, {}, free, info, False), [ins[0]]


def _conv_kernel():
    from ..kernels.conv import conv

    return conv


NAME = "prepared_conv"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return prepared_convs(steps, keep, known)
