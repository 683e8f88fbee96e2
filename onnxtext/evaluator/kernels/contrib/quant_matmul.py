"""com.microsoft weight-only and dynamic quantization: MatMulNBits, DynamicQuantizeMatMul,
MatMulIntegerToFloat (DynamicQuantizeLSTM: quant_lstm.py).

MatMulNBits holds ``B`` as N rows of ``K`` 2/4/8-bit values in blocks of ``block_size`` along K, each
block with its scale and (packed, or float) zero point (default: the middle of the range,
``2**(bits-1)``); ``Y = A @ dequantized(B)^T (+ bias)``. Values are packed lowest bits first. The
dequantized float32 matrix is kept between runs (bounded, see :mod:`..derived_cache`).

The dynamic kernels quantize the float activation to uint8 on the fly with the range of the whole
tensor (see :func:`..quantize.dynamic_uint8_parameters`), multiply exactly in integers (BLAS, see
:func:`..linalg.integer_product`) and scale the int32 result back to float32, as onnxruntime does.
"""

from __future__ import annotations

import numpy as np

from ....errors import EvalError
from ...registry import kernel
from ..derived_cache import derived
from ..linalg import integer_product, shifted_operand
from ..quantize import dynamic_quantize_uint8
from . import MS


def _unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 bytes -> their 8/bits values each, lowest bits first (last axis grows by 8/bits)."""
    if bits == 8:
        return packed
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(packed.shape[:-1] + (packed.shape[-1] * per_byte,))


def _nbits_weights(B, scales, zero_points, g_idx, K, N, bits, block_size):
    """The dequantized float32 weight matrix (N, K) of MatMulNBits."""
    blocks = (K + block_size - 1) // block_size
    q = _unpack(B.reshape(N, blocks, -1), bits).reshape(N, blocks, block_size).astype(np.float32)
    scales = scales.astype(np.float32).reshape(N, blocks)
    if zero_points is None:
        zp = np.full((N, blocks), float(1 << (bits - 1)), np.float32)
    elif zero_points.dtype == np.uint8:
        zp = _unpack(zero_points.reshape(N, -1), bits)[:, :blocks].astype(np.float32)
    else:  # float zero points, in the scale's type: w = (q - zp) * scale as well
        zp = zero_points.astype(np.float32).reshape(N, blocks)
    if g_idx is not None and g_idx.size and not np.array_equal(g_idx, np.arange(K) // block_size):
        # act-order: column k uses the scale and zero point of block g_idx[k]
        flat = q.reshape(N, -1)[:, :K]
        idx = g_idx.astype(np.int64)
        return (flat - zp[:, idx]) * scales[:, idx]
    w = (q - zp[:, :, None]) * scales[:, :, None]
    return w.reshape(N, -1)[:, :K]


def nbits_weights(B, scales, zero_points, g_idx, K, N, bits, block_size) -> np.ndarray:
    """MatMulNBits' dequantized weights as the right operand of the product: a contiguous float32 (K, N)."""
    return np.ascontiguousarray(_nbits_weights(B, scales, zero_points, g_idx, K, N, bits, block_size).T)


@kernel("MatMulNBits", since=1, domain=MS)
def matmul_nbits(A, B, scales, zero_points=None, g_idx=None, bias=None, *, K, N, bits=4, block_size,
                 accuracy_level=0):
    if bits not in (2, 4, 8):
        raise EvalError(f"MatMulNBits: bits={bits} is not supported (2, 4 or 8)")
    # dequantized once per (B, scales, zero points) when they are constants (see derived_cache; rule
    # prepared_matmul_nbits does it at preparation)
    wt = derived(f"nbits-{K}-{N}-{bits}-{block_size}", (B, scales, zero_points, g_idx),
                 lambda: nbits_weights(B, scales, zero_points, g_idx, K, N, bits, block_size), lambda w: w.nbytes,
                 readonly_inputs=True)
    y = np.matmul(A.astype(np.float32, copy=False), wt)
    if bias is not None:
        y += bias.astype(np.float32, copy=False)
    return y.astype(A.dtype, copy=False)


@kernel("DynamicQuantizeMatMul", since=1, domain=MS)
def dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None):
    a_shifted, a_scale = dynamic_quantize_uint8(A)
    b_shifted, b_bound = shifted_operand(B, b_zero_point)
    acc = integer_product(a_shifted, b_shifted, None, b_bound)
    y = acc.astype(np.float32) * (a_scale * np.asarray(b_scale, np.float32))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(np.float32)


@kernel("MatMulIntegerToFloat", since=1, domain=MS)
def matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    a_shifted, a_bound = shifted_operand(A, a_zero_point)
    b_shifted, b_bound = shifted_operand(B, b_zero_point)
    acc = integer_product(a_shifted, b_shifted, a_bound, b_bound)
    scale = np.asarray(a_scale).astype(np.float32) * np.asarray(b_scale).astype(np.float32)
    y = acc.astype(np.float32) * scale
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(np.asarray(a_scale).dtype)
