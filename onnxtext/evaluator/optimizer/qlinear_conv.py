"""Rule ``qlinear_conv``: a QLinearConv whose weights, scales, zero points and bias are constants
becomes a :class:`~..fused.quantization.PreparedQLinearConv`: shifted weights converted to float once,
the convolution through the conv algorithm selector (prepared per input shape), float32 when every
partial sum is exact in float32, float64 otherwise. The same values as the kernel (level 1).
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.quantization import PreparedQLinearConv

_EXACT_FLOAT32 = 1 << 24


def _prepared(entry, known):
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step[:7]
    if info.node.op_type != "QLinearConv" or info.domain or context or len(outs) != 1 or fn is not _kernel():
        return entry
    consts = [known.get(n) if n else None for n in ins[1:]]
    if len(ins) < 8 or any(c is None for c in consts[:7]) or (len(ins) > 8 and ins[8] and consts[7] is None):
        return entry
    x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = consts[:7]
    b = consts[7] if len(consts) > 7 else None
    if x_zp.dtype not in (np.uint8, np.int8) or w.dtype not in (np.uint8, np.int8) or x_zp.size != 1 or \
            y_zp.dtype not in (np.uint8, np.int8) or x_scale.size != 1 or y_scale.size != 1 or \
            w_scale.size not in (1, w.shape[0]) or w_zp.size not in (1, w.shape[0]) or w.ndim < 3:
        return entry
    spatial = (1,) * (w.ndim - 2)
    wf = w.astype(np.float64) - w_zp.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1) if w_zp.size > 1 else ())
    xz = float(x_zp.reshape(-1)[0])
    info_x = np.iinfo(x_zp.dtype)
    x_bound = max(abs(info_x.min - xz), abs(info_x.max - xz))
    b64 = None if b is None else b.astype(np.float64)
    total = wf[0].size * x_bound * float(np.abs(wf).max(initial=0)) + (0.0 if b64 is None else
                                                                        float(np.abs(b64).max(initial=0)))
    work = np.float32 if total < _EXACT_FLOAT32 else np.float64
    from ..kernels.conv_prepared import PreparedConv

    conv = PreparedConv(wf.astype(work), None if b64 is None else b64.astype(work), attrs, exact=True)
    w_scale32 = np.asarray(w_scale, np.float32)
    multiplier = (np.float32(x_scale.reshape(-1)[0]) * w_scale32 / np.float32(y_scale.reshape(-1)[0]))
    multiplier = multiplier.astype(np.float32).reshape((-1,) + spatial if multiplier.size > 1 else ())
    constants = {n: known.get(n) for n in ins[1:] if n}
    fallback = OriginalSteps([step], ins[:1], outs, constants)
    run = PreparedQLinearConv(conv, x_zp.dtype, work, xz, multiplier, float(y_zp.reshape(-1)[0]), y_zp.dtype,
                              fallback)
    return (run, ins[:1], outs, {}, free, info, False), [ins[0]]


def _kernel():
    from ..kernels.conv import qlinear_conv

    return qlinear_conv


NAME = "qlinear_conv"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return [_prepared(entry, known) for entry in steps]
