"""Rule ``prepared_qlinear_ops``: com.microsoft QLinearAdd and QLinearGlobalAveragePool (onnxruntime's
QOperator quantizer writes them for a CNN's residual additions and its head) whose scales and zero
points are constants become :class:`~..fused.qoperator.PreparedQLinearAdd` and
:class:`~..fused.qoperator.PreparedQLinearGlobalAveragePool` steps: the kernels' float32 ratios, fixed
term and factor computed once instead of per call from six or four one-element tensors (about 4 us a
call on this project's machine), the kernels' own arithmetic per call.

Condition: every parameter a one-element constant, the zero points of one 8-bit type, the pool channels
first. The same values as the nodes (level 1).
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.qoperator import PreparedQLinearAdd, PreparedQLinearGlobalAveragePool

NAME = "prepared_qlinear_ops"
LEVEL = 1
MS = "com.microsoft"
_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


def _parameters(st, known, positions):
    """The constants at input ``positions`` of step ``st`` (one element each), or None."""
    ins = st[1]
    values = []
    for k in positions:
        v = known.get(ins[k]) if k < len(ins) and ins[k] else None
        if not isinstance(v, np.ndarray) or v.size != 1:
            return None
        values.append(v)
    return values


def _prepared(entry, known):
    from ..kernels.contrib.qlinear import qlinear_add, qlinear_add_parameters, qlinear_global_average_pool

    st, used = entry
    fn, ins, outs, attrs, free, info = st[:6]
    if info.domain != MS or st[6] or len(outs) != 1:
        return entry
    if fn is qlinear_add and len(ins) == 8 and not attrs:
        p = _parameters(st, known, (1, 2, 4, 5, 6, 7))
        if p is None or p[1].dtype not in _EIGHT_BITS or p[3].dtype != p[1].dtype or p[5].dtype != p[1].dtype:
            return entry
        constants = {n: known.get(n) for n in ins if n and n not in (ins[0], ins[3])}
        fallback = OriginalSteps([st], (ins[0], ins[3]), outs, constants)
        zero_points = tuple(float(z.reshape(-1)[0]) for z in (p[1], p[3], p[5]))
        run = PreparedQLinearAdd(qlinear_add_parameters(*p), p[1].dtype, zero_points, fallback)
        return (run, (ins[0], ins[3]), outs, {}, free, info, False), [ins[0], ins[3]]
    if fn is qlinear_global_average_pool and len(ins) == 5 and not attrs.get("channels_last"):
        p = _parameters(st, known, (1, 2, 3, 4))
        if p is None or p[1].dtype not in _EIGHT_BITS or p[3].dtype != p[1].dtype:
            return entry
        constants = {n: known.get(n) for n in ins[1:] if n}
        fallback = OriginalSteps([st], ins[:1], outs, constants)
        run = PreparedQLinearGlobalAveragePool(p[0], p[1].reshape(-1)[0], p[2], p[3].reshape(-1)[0], p[1].dtype,
                                               fallback)
        return (run, ins[:1], outs, {}, free, info, False), [ins[0]]
    return entry


def apply(steps: list, keep: set, known) -> list:
    return [_prepared(entry, known) for entry in steps]
