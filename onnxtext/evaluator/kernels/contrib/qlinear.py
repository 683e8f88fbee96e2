"""com.microsoft static quantization in QOperator form: QLinearAdd, QLinearMul, QLinearConcat,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearGlobalAveragePool, QLinearAveragePool,
QGemm, and the com.microsoft QuantizeLinear/DequantizeLinear the older quantizer emits.

Every operand carries its scale and zero point. The element-wise kernels work as onnxruntime's:
add and mul in float32 on the zero-point-shifted integers scaled by the ratios of the scales, then
round half to even, add the output zero point and saturate; unary ones (sigmoid, leaky relu) and
concat's requantization use a 256-entry lookup table ``quantize(f(dequantize(v)))`` built per call.
The pools average in float32 on dequantized values (global: integer sums, one scale). QGemm
multiplies exactly in integers (BLAS, :func:`..linalg.integer_product`), adds the int32 ``C``, then
scales by ``alpha * a_scale * b_scale`` and requantizes to ``y_scale``/``y_zero_point`` (float output
when ``y_scale`` is absent).
"""

from __future__ import annotations

import math

import numpy as np

from ...registry import kernel
from ..derived_cache import derived
from ..activation import _sigmoid, row_max
from ..pool import average_pool
from ..linalg import integer_product, shifted_operand
from ..quantize import dequantize_linear, quantize_linear, requantize_finite
from . import MS


_EXACT_FLOAT32 = 1 << 24


def _scalar(v, default=0.0):
    if type(v) is np.ndarray and v.size == 1:
        return np.float32(v.item())
    return np.float32(default) if v is None else np.float32(np.asarray(v).reshape(-1)[0])


def _requantize(values, zero_point, like):
    """float32 values (already divided by the output scale) -> the integer type of ``like``: rounded
    half to even, zero point added, saturated (in place on ``values`` when it is a float32 array)."""
    info = np.iinfo(like)
    if type(values) is not np.ndarray or values.dtype != np.float32 or not values.flags.writeable:
        values = np.asarray(values, np.float32).copy()
    np.rint(values, out=values)
    values += _scalar(zero_point)
    np.fmax(values, np.float32(info.min), out=values)  # (fmax: NaN saturates to the minimum)
    np.minimum(values, np.float32(info.max), out=values)
    return values.astype(like)


def _shifted(x, zero_point):
    """x - zero_point as a new float32 array (exact for 8-bit values)."""
    out = x.astype(np.float32)
    zp = _scalar(zero_point)
    if zp:
        out -= zp
    return out


@kernel("QLinearAdd", since=1, domain=MS)
def qlinear_add(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):
    return qlinear_add_values(A, B, *qlinear_add_parameters(A_scale, A_zero_point, B_scale, B_zero_point, C_scale,
                                                            C_zero_point))


def qlinear_add_parameters(A_scale, A_zero_point, B_scale, B_zero_point, C_scale, C_zero_point=None):
    """QLinearAdd's ``(ratio_a, ratio_b, fixed)`` as float32 scalars: ``A * (sa / sc) + B * (sb / sc) +
    (zc - za * sa / sc - zb * sb / sc)``, the zero points in one constant, as onnxruntime's float kernels
    (its AVX2 one is fixed-point: both within one step). Computed once for constant parameters (rule
    ``prepared_qlinear_ops``)."""
    c_scale = _scalar(C_scale)
    ratio_a, ratio_b = _scalar(A_scale) / c_scale, _scalar(B_scale) / c_scale
    fixed = _scalar(C_zero_point) - (ratio_a * _scalar(A_zero_point) + ratio_b * _scalar(B_zero_point))
    return ratio_a, ratio_b, fixed


def qlinear_add_values(A, B, ratio_a, ratio_b, fixed):
    """QLinearAdd from its parameters (:func:`qlinear_add_parameters`): A's type."""
    return requantize_finite(qlinear_add_sum(A.astype(np.float32), B.astype(np.float32), ratio_a, ratio_b, fixed),
                             0.0, A.dtype)


def qlinear_add_sum(a, b, ratio_a, ratio_b, fixed):
    """The float32 sum QLinearAdd rounds, from its operands' 8-bit values as NEW float32 arrays ``a`` and
    ``b`` (scaled in place)."""
    a *= ratio_a
    b *= ratio_b
    try:
        value = np.add(a, b, out=a)
    except ValueError:  # B broadcasts A to a larger shape
        value = a + b
    value += fixed
    return value


@kernel("QLinearMul", since=1, domain=MS)
def qlinear_mul(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):
    ratio = _scalar(A_scale) * _scalar(B_scale) / _scalar(C_scale)
    value = _shifted(A, A_zero_point) * _shifted(B, B_zero_point)
    value *= ratio
    return _requantize(value, C_zero_point, A.dtype)


def _table(dtype, x_scale, x_zero_point, y_scale, y_zero_point, fn):
    """The 256-entry table v -> quantize(fn(dequantize(v))) for 8-bit ``dtype``, indexed by v - min."""
    info = np.iinfo(dtype)
    codes = np.arange(info.min, info.max + 1, dtype=np.int64)
    real = (codes.astype(np.float32) - _scalar(x_zero_point)) * _scalar(x_scale)
    return _requantize(fn(real) / _scalar(y_scale), y_zero_point, dtype)


def _lookup(X, table):
    return table[X.astype(np.int64) - np.iinfo(X.dtype).min]


@kernel("QLinearSigmoid", since=1, domain=MS)
def qlinear_sigmoid(X, X_scale, X_zero_point, Y_scale, Y_zero_point=None):
    return _lookup(X, _table(X.dtype, X_scale, X_zero_point, Y_scale, Y_zero_point, _sigmoid))


@kernel("QLinearLeakyRelu", since=1, domain=MS)
def qlinear_leaky_relu(X, X_scale, X_zero_point, Y_scale, Y_zero_point=None, *, alpha=0.01):
    def leaky(v):
        return np.where(v >= 0, v, v * np.float32(alpha))
    return _lookup(X, _table(X.dtype, X_scale, X_zero_point, Y_scale, Y_zero_point, leaky))


@kernel("QLinearConcat", since=1, domain=MS)
def qlinear_concat(Y_scale, Y_zero_point, *inputs, axis):
    """Inputs come in triples (tensor, scale, zero point); each is requantized to Y's parameters."""
    parts = []
    for x, scale, zero_point in zip(inputs[0::3], inputs[1::3], inputs[2::3]):
        if _scalar(scale) == _scalar(Y_scale) and _scalar(zero_point) == _scalar(Y_zero_point):
            parts.append(x)
        else:
            parts.append(_lookup(x, _table(x.dtype, scale, zero_point, Y_scale, Y_zero_point, lambda v: v)))
    return np.concatenate(parts, axis=axis)


@kernel("QLinearSoftmax", since=1, domain=MS)
def qlinear_softmax(X, X_scale, x_zero_point, y_scale, y_zero_point, *, axis=-1, opset=13):
    real = (_shifted(X, x_zero_point) * _scalar(X_scale))
    if opset < 13:
        shape = X.shape
        real = real.reshape(int(np.prod(shape[:axis % X.ndim])), -1)
        axis = -1
    e = np.exp(real - row_max(real, axis))
    probs = (e / e.sum(axis=axis, keepdims=True)).reshape(X.shape)
    return _requantize(probs / _scalar(y_scale), y_zero_point, X.dtype)


def _channels_first(X, channels_last):
    return np.moveaxis(X, -1, 1) if channels_last else X


@kernel("QLinearGlobalAveragePool", since=1, domain=MS)
def qlinear_global_average_pool(X, x_scale, x_zero_point, y_scale, y_zero_point, *, channels_last=0):
    x = _channels_first(X, channels_last)
    size = math.prod(x.shape[2:])
    factor = global_average_factor(x_scale, y_scale, size)
    if not channels_last and exact_global_sums(X, size):
        return global_average_codes(X, size, global_average_offset(x_zero_point, size), factor,
                                    float(_scalar(y_zero_point)))
    spatial = tuple(range(2, x.ndim))
    sums = x.astype(np.int64).sum(axis=spatial, keepdims=True) - np.int64(_scalar(x_zero_point)) * size
    value = sums.astype(np.float32) * factor
    y = _requantize(value, y_zero_point, X.dtype)
    return np.moveaxis(y, 1, -1) if channels_last else y


def global_average_factor(x_scale, y_scale, size: int) -> np.float32:
    """What QLinearGlobalAveragePool multiplies its sums minus the zero points by: ``x_scale / (y_scale *
    size)`` in float32."""
    return _scalar(x_scale) / (_scalar(y_scale) * np.float32(size))


def exact_global_sums(X, size: int) -> bool:
    """Whether the sums of ``size`` 8-bit values of ``X`` are exact in float32 (every partial sum
    below 2**24)."""
    return size * 256 < _EXACT_FLOAT32 and X.dtype.itemsize == 1


_ONES: dict = {}


def global_average_offset(x_zero_point, size: int):
    """What QLinearGlobalAveragePool subtracts from each sum: ``size`` times the input's zero point, a
    float32 scalar (exact: an integer below 2**24 where the sums are exact), or None for zero."""
    zp = float(_scalar(x_zero_point))
    return np.float32(zp * size) if zp else None


def global_average_codes(X, size: int, offset, factor, y_zero_point: float):
    """QLinearGlobalAveragePool of channels-first 8-bit ``X`` whose sums are exact in float32
    (:func:`exact_global_sums`): the sums as one float32 matrix-vector product with a column of ones
    (every partial sum an integer below 2**24, so any order gives the same sums: measured 2.4 us
    against 3.9 us for numpy's reduction with a float32 accumulator on 2x32x8x8), minus ``offset``
    (:func:`global_average_offset`), times the factor, requantized."""
    ones = _ONES.get(size)
    if ones is None:
        ones = _ONES[size] = np.ones(size, np.float32)
    sums = np.matmul(X.reshape(-1, size).astype(np.float32), ones)
    if offset is not None:
        sums -= offset
    sums *= factor
    return requantize_finite(sums, y_zero_point, X.dtype).reshape(X.shape[:2] + (1,) * (X.ndim - 2))


@kernel("QLinearAveragePool", since=1, domain=MS)
def qlinear_average_pool(X, x_scale, x_zero_point, y_scale, y_zero_point=None, *, auto_pad="NOTSET",
                         ceil_mode=0, count_include_pad=0, kernel_shape, pads=None, strides=None,
                         channels_last=0):
    x = _channels_first(X, channels_last)
    real = _shifted(x, x_zero_point) * _scalar(x_scale)
    pooled = average_pool(real, auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                          kernel_shape=kernel_shape, pads=pads, strides=strides)
    y = _requantize(pooled / _scalar(y_scale), y_zero_point, X.dtype)
    return np.moveaxis(y, 1, -1) if channels_last else y


@kernel("QGemm", since=1, domain=MS)
def qgemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C=None, y_scale=None, y_zero_point=None, *,
          alpha=1.0, transA=0, transB=0):
    if A.dtype.itemsize == 1:  # 8-bit A: |A - zp| <= 255, no need to measure it
        a = A.astype(np.float32)
        zp = _scalar(a_zero_point)
        if zp:
            a -= zp
        a_bound = 255.0
    else:
        a, a_bound = shifted_operand(A, a_zero_point)
    b, b_bound, c, c_bound = derived(f"qgemm-{transB}", (B, b_zero_point, C),
                                     lambda: qgemm_constants(B, b_zero_point, C, transB),
                                     lambda v: v[0].nbytes, readonly_inputs=True)
    if transA:
        a = a.T
    acc = integer_product(a, b, a_bound, b_bound)
    if c is not None:
        if acc.dtype == np.float32 and a.shape[-1] * a_bound * b_bound + c_bound >= _EXACT_FLOAT32:
            acc = acc.astype(np.float64)  # (float32 sums with C would round)
        c = C.astype(np.float64) if acc.dtype != np.float32 else c
        try:
            acc += c
        except ValueError:  # C broadcasts the product to a larger shape
            acc = acc + c
    if acc.dtype != np.float32:
        acc = acc.astype(np.float32)  # (the exact sum rounded once)
    acc *= qgemm_factor(alpha, a_scale, b_scale, y_scale)
    if y_scale is None:
        return acc
    return requantize_finite(acc, float(_scalar(y_zero_point)), A.dtype)


def qgemm_factor(alpha, a_scale, b_scale, y_scale):
    """What QGemm multiplies its integer sums by, in float32: ``alpha * a_scale * b_scale`` (per column of
    the result when ``b_scale`` has several values), divided by ``y_scale`` when the output is quantized."""
    b_scale = np.asarray(b_scale).astype(np.float32)
    scale = np.float32(alpha) * _scalar(a_scale) * (b_scale.reshape(1, -1) if b_scale.size > 1 else b_scale.reshape(()))
    return scale if y_scale is None else scale / _scalar(y_scale)


def qgemm_constants(B, b_zero_point, C, trans_b):
    """QGemm's B side, kept between runs for constants: (op(B) - zero point as float32, its largest
    magnitude, C as float32 or None, max |C|). B's zero point is per column of op(B): per row of a
    transposed B."""
    b, b_bound = shifted_operand(B, b_zero_point, row_zero_point=bool(trans_b))
    if trans_b:
        b = np.ascontiguousarray(b.T)
    if C is None:
        return b, b_bound, None, 0.0
    c_bound = max(abs(float(C.min())), abs(float(C.max()))) if C.size else 0.0
    return b, b_bound, C.astype(np.float32), c_bound


@kernel("QuantizeLinear", since=1, domain=MS)
def quantize_linear_ms(x, y_scale, y_zero_point=None, *, axis=1):
    return quantize_linear(x, y_scale, y_zero_point, axis=axis)


@kernel("DequantizeLinear", since=1, domain=MS)
def dequantize_linear_ms(x, x_scale, x_zero_point=None, *, axis=1):
    return dequantize_linear(x, x_scale, x_zero_point, axis=axis)
