"""Rule ``qgemm_constant``: a com.microsoft ``QGemm`` (onnxruntime's QOperator quantizer writes one for
every Gemm: a classifier's head) whose B, scales, zero points and C are constants becomes one
:class:`~..fused.qoperator.PreparedQGemm`: ``B`` minus its zero points converted and transposed once,
the factor computed once, C as float32; per call one conversion of A, one product and the requantization.
When the result is read only by a DequantizeLinear with the same per-tensor scale and zero point (a
QOperator model's exit), that node is part of the step: the float result without the 8-bit tensor.

Condition: ``A`` 8-bit (checked per call), ``K * 255 * max|B - zp| + max|C| < 2**24`` (every sum exact in
float32, the kernel's float32 path), C of N values or one. The same values as the nodes (level 1).
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.qoperator import PreparedQGemm
from ..kernels.quantize import per_tensor_float32

NAME = "qgemm_constant"
LEVEL = 1
MS = "com.microsoft"
_EXACT_FLOAT32 = 1 << 24
_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


def _runs(st, op: str, domain: str, fn) -> bool:
    """Whether step ``st`` is a ``domain::op`` node running kernel ``fn``."""
    info = st[5]
    return info.node.op_type == op and info.domain == domain and not st[6] and st[0] is fn


def _prepared(st, known, dequantize=None):
    """The PreparedQGemm of QGemm step ``st`` (with DequantizeLinear step ``dequantize`` after it), or None."""
    fn, ins, outs, attrs, free, info, context = st[:7]
    from ..kernels.contrib.qlinear import qgemm, qgemm_constants, qgemm_factor

    if not _runs(st, "QGemm", MS, qgemm) or len(outs) != 1 or len(ins) < 6:
        return None
    names = list(ins[1:]) + [""] * (9 - len(ins))
    consts = [known.get(n) if n else None for n in names]
    if any(n and c is None for n, c in zip(names, consts)):
        return None  # (an input other than A computed at run time)
    a_scale, a_zp, b, b_scale, b_zp, c, y_scale, y_zp = consts
    if a_zp is None or a_zp.dtype not in _EIGHT_BITS or a_zp.size != 1 or b.ndim != 2 or \
            b.dtype not in _EIGHT_BITS or (y_scale is None) != (y_zp is None) or attrs.get("transB", 0) not in (0, 1):
        return None
    trans_b = attrs.get("transB", 0)
    n = b.shape[0] if trans_b else b.shape[1]
    if c is not None and (c.ndim > 2 or c.size not in (1, n) or (c.ndim == 2 and c.shape[0] != 1)):
        return None
    w, b_bound, c32, c_bound = qgemm_constants(b, b_zp, c, trans_b)
    if w.shape[0] * 255.0 * b_bound + c_bound >= _EXACT_FLOAT32:
        return None
    factor = qgemm_factor(attrs.get("alpha", 1.0), a_scale, b_scale, y_scale)
    y_zero_point = None if y_zp is None else float(y_zp.reshape(-1)[0])
    if y_zp is not None and y_zp.dtype != a_zp.dtype:
        return None  # (the kernel writes A's type)
    dq_scale = None
    steps = [st]
    if dequantize is not None:
        dq_scale = _dequantize_scale(dequantize, known, y_scale, y_zp)
        if dq_scale is None:
            return None
        steps.append(dequantize)
    constants = {n: known.get(n) for s in steps for n in s[1][1:] if n}
    fallback = OriginalSteps(steps, ins[:1], steps[-1][2], constants)
    return PreparedQGemm(w, c32, a_zp.dtype, float(a_zp.reshape(-1)[0]), attrs.get("transA", 0), factor,
                         y_zero_point, dq_scale, fallback)


def _dequantize_scale(st, known, y_scale, y_zp):
    """The scale of DequantizeLinear step ``st`` when it dequantizes per tensor with exactly QGemm's
    output scale and zero point (the kernel's float32 path), else None."""
    from ..kernels.quantize import dequantize_linear

    if not _runs(st, "DequantizeLinear", "", dequantize_linear) or len(st[1]) < 3:
        return None
    s, z = known.get(st[1][1]), known.get(st[1][2]) if st[1][2] else None
    attrs = st[3]
    if s is None or z is None or not per_tensor_float32(s, z) or z.dtype != y_zp.dtype or \
            attrs.get("block_size") or attrs.get("output_dtype", 0) not in (0, 1) or y_scale is None:
        return None
    if s.reshape(-1)[0] != np.float32(np.asarray(y_scale).reshape(-1)[0]) or z.reshape(-1)[0] != y_zp.reshape(-1)[0]:
        return None
    return s.reshape(-1)[0]


def apply(steps: list, keep: set, known) -> list:
    readers: dict[str, list[int]] = {}
    for i, (_, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
    out = list(steps)
    for i, (st, _) in enumerate(steps):
        if out[i] is None or st[5].node.op_type != "QGemm":
            continue
        y = st[2][0]
        r = readers.get(y, [])
        run = None
        if y not in keep and len(r) == 1 and steps[r[0]][0][5].node.op_type == "DequantizeLinear" and \
                steps[r[0]][0][1][0] == y:
            dq = steps[r[0]][0]
            run = _prepared(st, known, dq)
            if run is not None:
                out[i] = ((run, st[1][:1], dq[2], {}, st[4], st[5], False), [st[1][0]])
                out[r[0]] = None
                continue
        run = _prepared(st, known)
        if run is not None:
            out[i] = ((run, st[1][:1], st[2], {}, st[4], st[5], False), [st[1][0]])
    return [entry for entry in out if entry is not None]
