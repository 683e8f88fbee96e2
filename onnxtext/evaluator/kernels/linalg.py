"""Linear-algebra kernels: MatMul, MatMulInteger, Gemm (every version), Det, Einsum.

Float products go straight to numpy's BLAS (:func:`matrix_product`: ``np.dot`` for two matrices,
``matmul`` otherwise). Integer products (MatMulInteger, and
the quantized kernels) also use BLAS (:func:`integer_product`): in float32, exact because the inner
dimension is cut into chunks whose partial sums fit the 24-bit mantissa, the chunks added in float64;
BLAS is much faster than numpy's integer matmul loop.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import kernel
from .cast import is_ml_dtype
from .derived_cache import derived


@kernel("MatMul", since=1)
def mat_mul(a, b):
    if is_ml_dtype(a.dtype) or a.dtype == np.float16:
        # bfloat16, float16...: accumulate in float32 with BLAS (numpy has no half-precision BLAS: its own
        # float16 loop was ~100x slower on a BERT layer, and accumulates in float16)
        return np.asarray(np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype))
    return matrix_product(a, b)


def matrix_product(a, b) -> np.ndarray:
    """``a @ b`` as an array: ``np.dot`` when both are matrices (the same BLAS call, and the same
    product, as ``matmul``'s for 2-D operands, without the generalized ufunc's dispatch: 0.3-0.6 us
    less a call on small products, 1.0 against 1.5 us for 8x64 @ 64x64, numpy 2.4); a contiguous
    stack of matrices times one matrix as ONE product of its rows (``matmul`` calls BLAS once per
    matrix of the stack: 16x2x64 @ 64x192 6.4 against 7.9 us, 4x50x256 @ 256x256 145 against 208 us,
    the same values); ``np.matmul`` otherwise (``np.dot`` of a 3-D operand is not a batched product)."""
    if b.ndim == 2:
        if a.ndim == 2:
            return np.dot(a, b)
        if a.ndim > 2 and a.flags.c_contiguous and a.shape[-1] == b.shape[0]:
            rows = math.prod(a.shape[:-1])  # (not -1: an empty inner dimension leaves it undetermined)
            return np.dot(a.reshape(rows, b.shape[0]), b).reshape(a.shape[:-1] + (b.shape[1],))
    return np.asarray(np.matmul(a, b))


def integer_product(a: np.ndarray, b: np.ndarray, a_bound: float | None = None,
                    b_bound: float | None = None) -> np.ndarray:
    """Exact ``a @ b`` of integer-valued float operands with ``|a| <= a_bound`` and ``|b| <= b_bound``
    (measured from the data when not given), as floats.

    BLAS does the work in float32, whose 24-bit mantissa holds every partial sum exactly while
    ``terms * a_bound * b_bound < 2**24``: the inner dimension is cut into chunks that short (1032 terms
    for uint8 activations around zero point 128 times symmetric int8 weights) and the chunk products,
    each exact, are added in float64. Float64 BLAS, exact to 2**53, is left for bounds so large that
    chunks would be tiny."""
    if a_bound is None:
        a_bound = _abs_max(a)
    if b_bound is None:
        b_bound = _abs_max(b)
    depth = a.shape[-1] if a.ndim else 1
    per_term = max(float(a_bound) * float(b_bound), 1.0)
    chunk = int(((1 << 24) - 1) // per_term)
    if depth <= chunk:
        return np.matmul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False))
    if chunk < 32:
        return np.matmul(a.astype(np.float64, copy=False), b.astype(np.float64, copy=False))
    a32 = a.astype(np.float32, copy=False)
    b32 = b.astype(np.float32, copy=False)
    out = None
    for start in range(0, depth, chunk):
        part = np.matmul(a32[..., start:start + chunk],
                         b32[start:start + chunk] if b32.ndim == 1 else b32[..., start:start + chunk, :])
        out = part.astype(np.float64) if out is None else np.add(out, part, out=out)
    return out


def _abs_max(x: np.ndarray) -> float:
    if not x.size:
        return 0.0
    return max(abs(float(x.min())), abs(float(x.max())))


def integer_matmul(a, b, bound: float | None = None) -> np.ndarray:
    """Exact int32 ``a @ b`` of small-integer (already zero-point shifted) operands, wrapping like int32."""
    out = integer_product(a, b, bound, bound)
    # Accumulation wraps in 32 bits per the spec; go through int64 so the wrap is two's complement.
    return np.asarray(out.astype(np.int64).astype(np.int32))


def shifted_operand(x: np.ndarray, zero_point, row_zero_point: bool = False) -> tuple[np.ndarray, float]:
    """(``x - zero_point`` as float32, its largest magnitude): exact for 8/16-bit integers, and kept
    between runs for a read-only ``x`` (an initializer, see :mod:`.derived_cache`). ``row_zero_point``: a
    1-D zero point applies per row of ``x`` (the A side of MatMulInteger), else per column (or scalar)."""
    def build():
        out = x.astype(np.float32)
        if zero_point is not None:
            zp = np.asarray(zero_point).astype(np.float32)
            if row_zero_point and zp.ndim == 1 and zp.size > 1 and x.ndim >= 2:
                zp = zp.reshape(-1, 1)
            out -= zp
        return out, _abs_max(out)

    return derived("shifted-row" if row_zero_point else "shifted", (x, zero_point), build,
                   lambda v: v[0].nbytes, readonly_inputs=True)


@kernel("MatMulInteger", since=10)
def mat_mul_integer(a, b, a_zero_point=None, b_zero_point=None):
    # 8-bit operands minus their zero points: exact float32 integers (B, a constant, converted once)
    a32, a_bound = shifted_operand(a, a_zero_point, row_zero_point=True)
    b32, b_bound = shifted_operand(b, b_zero_point)  # scalar or per column: broadcasts on N
    out = integer_product(a32, b32, a_bound, b_bound)
    return np.asarray(out.astype(np.int64).astype(np.int32))


def _gemm(a, b, c, alpha, beta, trans_a, trans_b):
    if a.dtype == np.float16 or is_ml_dtype(a.dtype):  # in float32 with BLAS, as mat_mul does
        c32 = None if c is None else c.astype(np.float32)
        y = _gemm(a.astype(np.float32), b.astype(np.float32), c32, alpha, beta, trans_a, trans_b)
        return y.astype(a.dtype)
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
