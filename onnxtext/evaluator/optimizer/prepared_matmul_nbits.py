"""Rule ``prepared_matmul_nbits``: a com.microsoft ``MatMulNBits`` (onnxruntime's weight-only 2/4/8-bit
quantization of a MatMul, what its int4 quantizer writes for every linear layer of an LLM) whose packed
weights, scales, zero points, ``g_idx`` and bias are constants becomes one
:class:`~..fused.quantization.DequantizedMatMul` step: the weights dequantized once at preparation
(the kernel's own :func:`~..kernels.contrib.quant_matmul.nbits_weights`), then one float32 product and
the bias in place per call, without the kernel's per-call cache lookup. The same values as the kernel
(level 1); float16 activations run the kernel.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.quantization import DequantizedMatMul

NAME = "prepared_matmul_nbits"
LEVEL = 1
MS = "com.microsoft"


def _prepared(entry, known):
    step, _ = entry
    fn, ins, outs, attrs, free, info, context = step[:7]
    if info.node.op_type != "MatMulNBits" or info.domain != MS or context or len(outs) != 1 or \
            fn is not _kernel() or len(ins) < 3:
        return entry
    consts = [known.get(n) if n else None for n in ins[1:]]
    if any(n and c is None for n, c in zip(ins[1:], consts)):
        return entry  # (weights or scales computed at run time)
    b, scales, zero_points, g_idx, bias = (consts + [None] * 5)[:5]
    bits = attrs.get("bits", 4)
    if bits not in (2, 4, 8) or "K" not in attrs or "N" not in attrs or "block_size" not in attrs or \
            (bias is not None and bias.dtype.kind != "f"):
        return entry
    from ..kernels.contrib.quant_matmul import nbits_weights

    try:
        w = nbits_weights(b, scales, zero_points, g_idx, attrs["K"], attrs["N"], bits, attrs["block_size"])
    except (ValueError, IndexError, TypeError):
        return entry  # (inconsistent shapes: the kernel reports them at run time)
    fallback = OriginalSteps([step], ins[:1], outs, {n: known.get(n) for n in ins[1:] if n})
    run = DequantizedMatMul(w, None if bias is None else bias.astype(np.float32), fallback)
    return (run, ins[:1], outs, {}, free, info, False), [ins[0]]


def _kernel():
    from ..kernels.contrib.quant_matmul import matmul_nbits

    return matmul_nbits


def apply(steps: list, keep: set, known) -> list:
    return [_prepared(entry, known) for entry in steps]
