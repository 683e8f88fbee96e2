"""Rule ``conv_integer``: a ConvInteger whose weights (and weight zero point, if any) are constants
becomes a :class:`~..fused.conv_integer.PreparedConvInteger`: the weights minus their zero points
converted to float once, the convolution through the conv algorithm selector (prepared per input
shape) on the input minus its zero point (which may come from DynamicQuantizeLinear, computed per
call), float32 when every partial sum is exact in float32, float64 otherwise. Exact integer sums:
the same values as the kernel (level 1). The kernel converts and checks the weights, works out the
geometry and runs the unprepared conv at every call.
"""

from __future__ import annotations

import numpy as np

from ..fused.conv_integer import PreparedConvInteger
from ..fused.original import OriginalSteps

NAME = "conv_integer"
LEVEL = 1

_EXACT_FLOAT32 = 1 << 24
_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


def _kernel():
    from ..kernels.conv import conv_integer

    return conv_integer


def _prepared(entry, known):
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step[:7]
    if info.node.op_type != "ConvInteger" or info.domain or context or len(outs) != 1 or fn is not _kernel():
        return entry
    if len(ins) < 2 or known.get(ins[1]) is None or (len(ins) > 3 and ins[3] and known.get(ins[3]) is None):
        return entry
    w = known.get(ins[1])
    w_zp = known.get(ins[3]) if len(ins) > 3 and ins[3] else None
    x_zp = ins[2] if len(ins) > 2 and ins[2] else None
    if w.dtype not in _EIGHT_BITS or w.ndim < 3 or (w_zp is not None and w_zp.size not in (1, w.shape[0])):
        return entry
    wf = w.astype(np.float64)
    if w_zp is not None:
        wf -= w_zp.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1) if w_zp.size > 1 else ())
    # |x - x_zp| <= 255 for 8-bit inputs and zero points of their type
    work = np.float32 if wf[0].size * 255 * float(np.abs(wf).max(initial=0)) < _EXACT_FLOAT32 else np.float64
    from ..kernels.conv_prepared import PreparedConv

    conv = PreparedConv(wf.astype(work), None, attrs, exact=True)
    inputs = [ins[0]] + ([x_zp] if x_zp else [])
    constants = {n: known.get(n) for n in ins[1:] if n and known.get(n) is not None}
    fallback = OriginalSteps([step], inputs, outs, constants)
    run = PreparedConvInteger(conv, work, fallback)
    return (run, inputs, outs, {}, free, info, False), list(inputs)


def apply(steps: list, keep: set, known) -> list:
    return [_prepared(entry, known) for entry in steps]
