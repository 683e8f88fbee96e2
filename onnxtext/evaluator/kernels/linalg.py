"""Linear-algebra kernels: MatMul, MatMulInteger, Gemm (every version), Det, Einsum.

Float products go straight to numpy's BLAS-backed ``matmul``. Integer products (MatMulInteger, and
the quantized kernels) also use BLAS (:func:`integer_product`): in float32 when every partial sum of
the 8-bit operands fits its mantissa, else in float64, exact up to 2**53, far beyond any realistic
inner dimension; BLAS is much faster than numpy's integer matmul loop.
"""

from __future__ import annotations

import numpy as np

from ..registry import kernel
from .cast import is_ml_dtype


@kernel("MatMul", since=1)
def mat_mul(a, b):
    if is_ml_dtype(a.dtype) or a.dtype == np.float16:
        # bfloat16, float16...: accumulate in float32 with BLAS (numpy has no half-precision BLAS: its own
        # float16 loop was ~100x slower on a BERT layer, and accumulates in float16)
        return np.asarray(np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype))
    return np.asarray(np.matmul(a, b))


def integer_product(a: np.ndarray, b: np.ndarray, a_bound: int, b_bound: int) -> np.ndarray:
    """Exact ``a @ b`` of integer-valued operands with ``|a| <= a_bound`` and ``|b| <= b_bound``, as floats.

    BLAS does the work: float32 when every partial sum fits its 24-bit mantissa exactly
    (``K * a_bound * b_bound < 2**24``: K up to 258 for uint8 x int8 operands shifted by their zero
    points), float64 otherwise (exact up to K ~ 1.3e11 for 8-bit operands)."""
    depth = a.shape[-1] if a.ndim else 1
    work = np.float32 if depth * a_bound * b_bound < (1 << 24) else np.float64
    return np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))


def integer_matmul(a, b, bound: int = 1 << 16) -> np.ndarray:
    """Exact int32 ``a @ b`` of small-integer (already zero-point shifted, ``|value| <= bound``) operands."""
    out = integer_product(a, b, bound, bound)
    # Accumulation wraps in 32 bits per the spec; go through int64 so the wrap is two's complement.
    return np.asarray(out.astype(np.int64).astype(np.int32))


def _row_zero_point(a, zero_point):
    """A zero point that is scalar, or 1-D per row of ``a`` (per-row quantization of A)."""
    zero_point = np.asarray(zero_point).astype(np.int32)
    if zero_point.ndim == 1 and zero_point.size > 1 and a.ndim >= 2:
        return zero_point.reshape(-1, 1)
    return zero_point


@kernel("MatMulInteger", since=10)
def mat_mul_integer(a, b, a_zero_point=None, b_zero_point=None):
    # 8-bit operands minus 8-bit zero points: integers of magnitude <= 255, exact in float32
    a32 = a.astype(np.float32)
    b32 = b.astype(np.float32)
    if a_zero_point is not None:
        a32 -= _row_zero_point(a, a_zero_point)
    if b_zero_point is not None:
        b32 -= np.asarray(b_zero_point).astype(np.int32)  # scalar or per column: broadcasts on N
    return integer_matmul(a32, b32, 255)


def _gemm(a, b, c, alpha, beta, trans_a, trans_b):
    if trans_a:
        a = a.T
    if trans_b:
        b = b.T
    y = np.matmul(a, b)
    if alpha != 1.0:
        y = np.multiply(y, alpha, dtype=y.dtype, casting="unsafe")
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = np.multiply(c, beta, dtype=c.dtype, casting="unsafe")
        try:  # in place when C broadcasts to the product's shape (the usual bias row)
            y = np.add(y, c, out=y)
        except ValueError:  # C is larger than the product along some axis: a new array
            y = y + c
    return np.asarray(y)


@kernel("Gemm", since=1)
def gemm_legacy(a, b, c, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0, **_legacy):
    """Opset 1-6: C is required; ``broadcast`` only permits what numpy broadcasting does anyway."""
    return _gemm(a, b, c, alpha, beta, transA, transB)


@kernel("Gemm", since=7)
def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    """Y = alpha * A' @ B' + beta * C, C optional (opset 11+) and unidirectionally broadcast."""
    return _gemm(a, b, c, alpha, beta, transA, transB)


@kernel("Det", since=11)
def det(x):
    return np.asarray(np.linalg.det(x)).astype(x.dtype, copy=False)


@kernel("Einsum", since=12)
def einsum(*inputs, equation):
    equation = equation.replace(" ", "")
    # Contraction order matters only with three or more operands; numpy's optimizer picks it.
    dtype = inputs[0].dtype
    if is_ml_dtype(dtype):  # ml_dtypes (bfloat16, float8...): numpy's einsum has no loop for them
        inputs = [x.astype(np.float32) for x in inputs]
    out = np.einsum(equation, *inputs, optimize=len(inputs) > 2)
    return np.asarray(out).astype(dtype, copy=False)
