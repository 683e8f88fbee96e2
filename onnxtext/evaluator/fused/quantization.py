"""Run-time objects of the quantization rules: :class:`FakeQuantize` (rule ``qdq_pair``),
:class:`ConvFakeQuantize` (rule ``fake_quantize_into_conv``), :class:`PreparedQLinearConv` and
:class:`QuantizedInputConv` (rule ``qlinear_conv``), :class:`IntegerMatMulToFloat` (rule
``integer_matmul_to_float``), :class:`DynamicQuantizeCodes`, :class:`CodesMatMulToFloat` and
:class:`QuantizedInputMatMul` (rule ``dynamic_quantized_matmul``), :class:`SharedCodesProducts` (rule
``shared_codes_products``), :class:`DequantizedGather` (rule
``dequantized_gather``), :class:`DequantizedMatMul` (rule ``prepared_matmul_nbits``),
:class:`PreparedQGemm` (rule ``qgemm_constant``), :class:`PreparedQLinearAdd` and
:class:`PreparedQLinearGlobalAveragePool` (rule ``prepared_qlinear_ops``). Each computes exactly the values of the nodes it
replaces, but for :class:`ConvFakeQuantize` (level 2).

A QuantizeLinear whose only reader is a DequantizeLinear with the same per-tensor parameters is
"fake quantization", the way onnxruntime's QDQ quantizer marks a float value as quantized: the pair
is ``clip(rint(x / s), min - zp, max - zp) * s``. Computed in float32 in one buffer, every step but the
last multiply is exact, so the result equals the two nodes' bit for bit (NaN included: both give
``(min - zp) * s``, as the quantizer saturates NaN to the minimum code).
"""

from __future__ import annotations

import copy

import numpy as np

from ..kernels.contrib.qlinear import (exact_global_sums, global_average_codes, global_average_factor,
                                        qlinear_add_sum)
from ..kernels.quantize import (clip_ufunc, dynamic_quantize_codes, dynamic_quantize_linear, integer_range,
                                round_float32,
                                requantize_finite, saturate_float32, shifted_codes)

_F32 = np.dtype(np.float32)
_min_all = np.minimum.reduce


class FakeQuantize:
    """``DequantizeLinear(QuantizeLinear(x, s, zp), s, zp)`` for float32 ``x``; ``fallback(x)`` (the
    two original steps) for other inputs."""

    __slots__ = ("scale", "low", "high", "fallback")

    def __init__(self, scale: np.float32, zero_point: float, target: np.dtype, fallback):
        info = np.iinfo(target)
        self.scale = np.float32(scale)
        self.low, self.high = np.float32(info.min - zero_point), np.float32(info.max - zero_point)
        self.fallback = fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            return self.fallback(x)
        q = shifted_codes(x, self.scale, self.low, self.high)  # (NaN becomes the minimum code, as QuantizeLinear's)
        q += np.float32(0)  # -0.0 (rint of a small negative ratio) is the code's +0.0, as q - zp is
        q *= self.scale
        return q


class ConvFakeQuantize(FakeQuantize):
    """A :class:`FakeQuantize` whose neighbouring convolutions took its scale into their weights (rule
    ``fake_quantize_into_conv``, level 2): without ``divide`` its input is already ``x / s`` (the producing
    conv's weights and bias were divided by ``s``); without ``multiply`` its result is the codes ``c``, not
    ``c * s`` (the reading convs' weights were multiplied by ``s``). Other inputs than float32 are
    converted to float32."""

    __slots__ = ("divide", "multiply")

    def __init__(self, fake: FakeQuantize, divide: bool, multiply: bool):
        self.scale, self.low, self.high, self.fallback = fake.scale, fake.low, fake.high, fake.fallback
        self.divide, self.multiply = divide, multiply

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            x = np.asarray(x, _F32)
        if self.divide:
            q = shifted_codes(x, self.scale, self.low, self.high)
        else:
            q = saturate_float32(np.rint(x), self.low, self.high)  # (a new array: the conv's result may be kept)
        if self.multiply:
            q += np.float32(0)
            q *= self.scale
        return q


class PooledFakeQuantize:
    """``MaxPool(FakeQuantize(x))`` as ``FakeQuantize(MaxPool(x))`` (rule ``max_pool_before_fake_quantize``):
    the fake quantization (a :class:`FakeQuantize` or :class:`ConvFakeQuantize` with a scale > 0) never
    decreases, so the largest fake-quantized value of a window is the fake-quantized largest value, and
    a 2x2 pool quantizes a quarter of the values. NaN is where the orders differ (the pair makes it the
    lowest code, which a window's other values then exceed; MaxPool propagates it): a pooled NaN (one
    reduction over the pooled values) runs ``fallback``, the original steps, as do inputs other than
    float32. The rule only pools windows that hold at least one input value (no window wholly in
    padding, whose -inf the pair would turn into the lowest code)."""

    __slots__ = ("pool", "quantize", "fallback")

    def __init__(self, pool, quantize: FakeQuantize, fallback):
        self.pool, self.quantize, self.fallback = pool, quantize, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            return self.fallback(x)
        pooled = self.pool(x)
        if pooled.size:
            low = _min_all(pooled, axis=None)
            if low != low:  # (NaN)
                return self.fallback(x)
        return self.quantize(pooled)


class PreparedQLinearConv:
    """QLinearConv with constant weights, scales, zero points and bias (rule ``qlinear_conv``).

    The weights minus their zero points are converted once to float32 and run through the conv
    algorithm selector (:class:`~..kernels.conv_prepared.PreparedConv`, with ``exact=True``: no
    Winograd transforms) on the input minus its zero point; the int32 bias is the conv's bias. Every
    partial sum is an integer of magnitude at most ``taps * max|x - x_zp| * max|w - w_zp| + max|B|``:
    below 2**24 float32 holds them all exactly, else the prepared conv runs in float64. The result is
    requantized as the QLinearConv kernel does (float32 multiplier, round half to even, zero point,
    saturation), so it equals the kernel's bit for bit.

    With ``pool`` (see :meth:`with_pool`), a MaxPool reading the result is part of the step and pools
    the float32 sums before the requantization, on a quarter of the values for a 2x2 pool: the
    requantization is non-decreasing (a multiplier > 0, rounding, saturation, an exact zero point),
    so the largest requantized value of a window is the requantized largest sum, and the sums are
    never NaN (a window wholly in padding: -inf, requantized to the lowest code, the 8-bit pool's
    padding value).

    With ``codes_in``, the input may be float32 codes (the 8-bit values minus the zero point, see
    :class:`CodesOf`); with ``codes_out`` the result is such codes (rule ``quantized_codes``).
    """

    __slots__ = ("conv", "dtype", "work", "x_scale", "x_zero_point", "multiplier", "low", "high", "y_zero_point",
                 "target", "fallback", "pool", "codes_in", "codes_out")

    def __init__(self, conv, x_dtype, work, x_scale, x_zero_point, multiplier, y_zero_point, target, fallback):
        info = np.iinfo(target)
        self.conv, self.dtype, self.work = conv, np.dtype(x_dtype), np.dtype(work)
        self.x_scale = x_scale  # (the input's scale: rule qlinear_conv's input fusion compares it)
        self.x_zero_point = self.work.type(x_zero_point)
        self.multiplier = multiplier
        self.low, self.high = np.float32(info.min - y_zero_point), np.float32(info.max - y_zero_point)
        self.y_zero_point, self.target = np.float32(y_zero_point), np.dtype(target)
        self.fallback = fallback
        self.pool = None
        self.codes_in = self.codes_out = False

    def with_pool(self, pool, fallback) -> PreparedQLinearConv:
        """This conv followed by ``pool`` (float32 sums -> pooled sums: a MaxPool) in one step;
        ``fallback``: the original steps of both. Only for a multiplier > 0 (the caller checks)."""
        run = copy.copy(self)
        run.pool, run.fallback = pool, fallback
        return run

    def with_codes(self, codes_in: bool, codes_out: bool) -> PreparedQLinearConv:
        """This conv reading (``codes_in``) and/or giving (``codes_out``) float32 codes."""
        run = copy.copy(self)
        run.__class__ = QLinearConvOnCodes
        run.codes_in, run.codes_out = codes_in or self.codes_in, codes_out or self.codes_out
        if codes_out and not self.codes_out:
            run.fallback = CodesOf(self.fallback, self.y_zero_point)
        return run

    def __call__(self, x):
        if type(x) is np.ndarray:
            if x.dtype == self.dtype:
                xf = x.astype(self.work)
                if self.x_zero_point:
                    xf -= self.x_zero_point  # padding with 0 after the shift is padding with the zero point
                return self.on_shifted(xf)
            if self.codes_in and x.dtype == _F32:
                return self.on_shifted(x if self.work == _F32 else x.astype(self.work))
        return self.fallback(x)

    def on_shifted(self, xf):
        """The result from the input minus its zero point, in the ``work`` type."""
        acc = self.conv(xf)
        if acc.dtype != _F32:
            acc = acc.astype(_F32)  # (the float64 path: the kernel converts its int32 sums the same way)
        if self.pool is not None:
            acc = self.pool(acc)
            if not acc.flags.writeable:
                acc = acc.copy()
        acc *= self.multiplier
        np.rint(acc, out=acc)
        clip_ufunc(acc, self.low, self.high, out=acc)  # (integer sums times a multiplier: never NaN)
        if self.codes_out:
            return acc
        if self.y_zero_point:
            acc += self.y_zero_point
        return acc.astype(self.target)


class QLinearConvOnCodes(PreparedQLinearConv):
    """A :class:`PreparedQLinearConv` reading or giving float32 codes (rule ``quantized_codes``)."""

    __slots__ = ()


class QuantizedInputConv:
    """``QLinearConv(QuantizeLinear(x, s, zp), s, zp, ...)`` with the quantized tensor read by nothing else
    (rule ``qlinear_conv``: a QOperator model's entry): the conv's input minus its zero point is
    ``clip(rint(x / s), min - zp, max - zp)``, computed from float32 ``x`` as the QuantizeLinear fast path
    computes it, without the 8-bit tensor and its conversion back. The conv's exact integer sums make a
    -0.0 code (a small negative ratio) give the same result as +0.0. ``fallback(x)``: the two nodes."""

    __slots__ = ("conv", "scale", "low", "high", "fallback")

    def __init__(self, conv: PreparedQLinearConv, scale: np.float32, zero_point: float, fallback):
        info = np.iinfo(conv.dtype)
        self.conv, self.scale, self.fallback = conv, np.float32(scale), fallback
        self.low, self.high = np.float32(info.min - zero_point), np.float32(info.max - zero_point)

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            return self.fallback(x)
        q = shifted_codes(x, self.scale, self.low, self.high)
        return self.conv.on_shifted(q if self.conv.work == _F32 else q.astype(self.conv.work))

    def with_codes_out(self) -> QuantizedInputConv:
        """This step giving float32 codes (rule ``quantized_codes``)."""
        run = copy.copy(self)
        run.__class__ = QuantizedInputConvToCodes
        run.conv = self.conv.with_codes(False, True)
        run.fallback = CodesOf(self.fallback, self.conv.y_zero_point)
        return run


class QuantizedInputConvToCodes(QuantizedInputConv):
    """A :class:`QuantizedInputConv` giving float32 codes (rule ``quantized_codes``)."""

    __slots__ = ()


class CodesOf:
    """``fallback(*args)``, an 8-bit result, as float32 codes: the values minus ``zero_point`` (exact).
    Rule ``quantized_codes`` hands 8-bit values between QOperator steps this way when every reader
    takes them: the producer skips adding the zero point and converting to 8 bits, a reading conv
    skips converting back and subtracting it."""

    __slots__ = ("fallback", "zero_point")

    def __init__(self, fallback, zero_point):
        self.fallback, self.zero_point = fallback, np.float32(zero_point)

    def __call__(self, *args):
        y = np.asarray(self.fallback(*args)).astype(_F32)
        y -= self.zero_point
        return y


_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


class IntegerMatMulToFloat:
    """``MatMulInteger(a, W, a_zp, W_zp) -> Cast(float) -> Mul(scale) (-> Add(bias))`` with constant
    ``W`` (rule ``integer_matmul_to_float``), what onnxruntime's dynamic quantizer writes for every
    MatMul. ``W - W_zp`` is converted to float32 once; ``a - a_zp`` (8-bit values: magnitude at most 255)
    times it is exact in float32, as the rule checked (``K * 255 * max|W - W_zp| < 2**24``), so the
    product equals the int32 result converted to float32; the scale and the bias are then applied in
    place, as the Mul and Add steps would. ``scale_factor``: the constant the pattern's scale product
    multiplies ``scale`` by (None: ``scale`` is the factor itself)."""

    __slots__ = ("w", "scale_factor", "bias", "fallback")

    def __init__(self, w_shifted, scale_factor, bias, fallback):
        self.w, self.scale_factor, self.bias, self.fallback = w_shifted, scale_factor, bias, fallback

    def __call__(self, a, a_zero_point, scale):
        if type(a) is not np.ndarray or a.dtype not in _EIGHT_BITS or a.ndim < 1 or \
                (a_zero_point is not None and (type(a_zero_point) is not np.ndarray or a_zero_point.size != 1 or
                                               a_zero_point.dtype != a.dtype)) or \
                type(scale) is not np.ndarray or scale.dtype != _F32:
            return self.fallback(a, a_zero_point, scale)
        a32 = a.astype(_F32)
        if a_zero_point is not None:
            zp = a_zero_point.reshape(-1)[0]
            if zp:
                a32 -= _F32.type(zp)
        y = np.matmul(a32, self.w)
        factor = scale if self.scale_factor is None else np.multiply(scale, self.scale_factor)
        if factor.dtype != _F32 or factor.ndim > y.ndim or (factor.size != 1 and factor.shape != y.shape[-1:]):
            return self.fallback(a, a_zero_point, scale)  # (a factor that would broadcast y to a larger shape)
        y *= factor
        if self.bias is not None:
            y += self.bias
        return y


class DynamicQuantizeCodes:
    """``DynamicQuantizeLinear(x)`` read only by :class:`CodesMatMulToFloat` steps (rule
    ``dynamic_quantized_matmul``): ``(codes - zero point as float32, scale)``, the values the
    products read; the uint8 tensor and its zero point are never made (three numpy passes fewer for
    the quantization and two per product)."""

    __slots__ = ()

    def __call__(self, x):
        fast = dynamic_quantize_codes(x)
        if fast is not None:
            return fast[0], np.asarray(fast[1])
        q, scale, zero_point = dynamic_quantize_linear(x)  # (NaN, infinities: the kernel's general path)
        codes = q.astype(_F32)
        codes -= zero_point.astype(_F32)
        return codes, scale

    def __repr__(self):
        return "DynamicQuantizeCodes()"


class CodesMatMulToFloat:
    """An :class:`IntegerMatMulToFloat` reading :class:`DynamicQuantizeCodes`' shifted codes (float32
    integers of magnitude at most 255, the values it would have made from the uint8 tensor and its
    zero point) and scale: one product, then the scale and the bias in place. A one-element scale
    times a one-element constant factor is multiplied in Python floats and rounded once to float32:
    the product of two float32 values is exact in float64, so this is the Mul node's float32 product
    (without two numpy scalar operations)."""

    __slots__ = ("w", "scale_factor", "bias", "factor_value")

    def __init__(self, product: IntegerMatMulToFloat):
        self.w, self.scale_factor, self.bias = product.w, product.scale_factor, product.bias
        f = self.scale_factor
        self.factor_value = float(f) if f is not None and f.ndim == 0 and f.dtype == _F32 else None

    def __call__(self, codes, scale):
        y = np.matmul(codes, self.w)
        if self.factor_value is not None and type(scale) is np.ndarray and scale.ndim == 0 and scale.dtype == _F32:
            y *= round_float32(float(scale) * self.factor_value)
        else:
            factor = scale if self.scale_factor is None else np.multiply(scale, self.scale_factor)
            if factor.ndim > y.ndim or (factor.size != 1 and factor.shape != y.shape[-1:]):
                y = y * factor  # (a factor that broadcasts y to a larger shape, as the Mul node does)
            else:
                y *= factor
        if self.bias is not None:
            y = y + self.bias if self.bias.ndim > y.ndim else np.add(y, self.bias, out=y)
        return y


class SharedCodesProducts:
    """Several :class:`CodesMatMulToFloat` steps reading the same codes and scale (the query, key and
    value projections after onnxruntime's dynamic quantizer) as ONE product with the weights side by
    side (rule ``shared_codes_products``), each result a view of its columns. The same values as the
    separate steps: the codes times each weight column are exact integer sums in float32 whatever the
    width of the product (the condition of rule ``integer_matmul_to_float``, unchanged by adding
    columns); ``factors`` holds each column's constant factor (1 for a product scaled by the scale
    itself), and ``factors * scale`` is the float32 product the separate steps compute per column
    (correctly rounded either way); the biases are concatenated. ``fallback`` (the original steps) for
    a scale that is not a float32 scalar or codes that are not float32."""

    __slots__ = ("w", "factors", "bias", "bounds", "fallback")

    def __init__(self, w, factors, bias, bounds, fallback):
        self.w, self.factors, self.bias, self.bounds, self.fallback = w, factors, bias, bounds, fallback

    def __call__(self, codes, scale):
        if type(codes) is not np.ndarray or codes.dtype != _F32 or codes.ndim < 1 or \
                type(scale) is not np.ndarray or scale.dtype != _F32 or scale.ndim:
            return self.fallback(codes, scale)
        y = np.matmul(codes, self.w)
        y *= np.multiply(self.factors, scale)
        if self.bias is not None:
            y += self.bias
        return tuple(y[..., start:stop] for start, stop in self.bounds)


class QuantizedInputMatMul:
    """A :class:`DynamicQuantizeCodes` whose codes and scale only one :class:`CodesMatMulToFloat` reads
    (rule ``dynamic_quantized_matmul``: a classifier's head after onnxruntime's dynamic quantizer), as
    one step ``x -> y``: the same two computations without a step between them."""

    __slots__ = ("quantize", "product")

    def __init__(self, quantize: DynamicQuantizeCodes, product: CodesMatMulToFloat):
        self.quantize, self.product = quantize, product

    def __call__(self, x):
        codes, scale = self.quantize(x)
        return self.product(codes, scale)


class DequantizedMatMul:
    """MatMulNBits with constant weights (rule ``prepared_matmul_nbits``): ``a @ w (+ bias)`` for float32
    ``a``, ``w`` the weights dequantized once (float32, K x N), the bias added in place, as the kernel
    computes it; ``fallback(a)`` (the kernel) for other inputs (float16 activations)."""

    __slots__ = ("w", "bias", "fallback")

    def __init__(self, w, bias, fallback):
        self.w, self.bias, self.fallback = w, bias, fallback

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != _F32 or a.ndim < 1:
            return self.fallback(a)
        y = np.matmul(a, self.w)
        if self.bias is not None:
            y += self.bias
        return y


class PreparedQGemm:
    """com.microsoft QGemm with constant B, scales, zero points and C (rule ``qgemm_constant``): ``A`` minus
    its zero point times ``op(B)`` minus its zero points (converted once) in float32, exact while
    ``K * 255 * max|B - zp| + max|C| < 2**24`` (the rule's condition), plus C, times the kernel's factor
    (:func:`~..kernels.contrib.qlinear.qgemm_factor`), requantized as the kernel does. With
    ``dequantize_scale``, a DequantizeLinear of the result with the same scale and zero point is part of
    the step: the codes minus the zero point times the scale, without the 8-bit tensor (+0.0 added, so a
    -0.0 code is the node's +0.0). ``fallback(A)``: the original steps."""

    __slots__ = ("b", "c", "a_dtype", "a_zero_point", "trans_a", "factor", "y_zero_point", "target",
                 "dequantize_scale", "low", "high", "fallback")

    def __init__(self, b, c, a_dtype, a_zero_point, trans_a, factor, y_zero_point, dequantize_scale, fallback):
        self.b, self.c, self.a_dtype, self.trans_a = b, c, np.dtype(a_dtype), bool(trans_a)
        self.a_zero_point, self.factor = np.float32(a_zero_point), factor
        self.y_zero_point, self.target = y_zero_point, self.a_dtype  # (the kernel's output type: A's)
        self.dequantize_scale, self.fallback = dequantize_scale, fallback
        low, high = integer_range(self.a_dtype)
        zp = 0.0 if y_zero_point is None else y_zero_point
        self.low, self.high = np.float32(low - zp), np.float32(high - zp)

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != self.a_dtype or a.ndim != 2:
            return self.fallback(a)
        x = a.astype(_F32)
        if self.a_zero_point:
            x -= self.a_zero_point
        acc = np.matmul(x.T if self.trans_a else x, self.b)
        if self.c is not None:
            acc += self.c
        acc *= self.factor
        if self.y_zero_point is None:
            return acc
        if self.dequantize_scale is None:
            return requantize_finite(acc, self.y_zero_point, self.target)
        np.rint(acc, out=acc)
        clip_ufunc(acc, self.low, self.high, out=acc)
        acc += np.float32(0)
        acc *= self.dequantize_scale
        return acc


class PreparedQLinearAdd:
    """com.microsoft QLinearAdd with constant scales and zero points (rule ``prepared_qlinear_ops``): the
    kernel's ratios and fixed term (:func:`~..kernels.contrib.qlinear.qlinear_add_parameters`) computed
    once, the kernel's arithmetic per call, so the same values; ``fallback`` (the node) for operands
    other than two arrays of the zero points' type. ``codes`` (rule ``quantized_codes``): whether A, B
    may be and the result is float32 codes (see :class:`CodesOf`): an operand's 8-bit values are its
    codes plus its zero point (exact), the result's codes its rounded, saturated values minus the
    output zero point (exact)."""

    __slots__ = ("parameters", "dtype", "zero_points", "codes", "low", "high", "fallback")

    def __init__(self, parameters, dtype, zero_points, fallback):
        self.parameters, self.dtype, self.fallback = parameters, np.dtype(dtype), fallback
        self.zero_points = tuple(np.float32(z) for z in zero_points)  # (A's, B's, the result's)
        self.codes = (False, False, False)
        low, high = integer_range(self.dtype)
        self.low, self.high = np.float32(low), np.float32(high)

    def with_codes(self, a_in: bool, b_in: bool, out: bool) -> PreparedQLinearAdd:
        run = copy.copy(self)
        run.__class__ = QLinearAddOnCodes
        run.codes = tuple(new or old for new, old in zip((a_in, b_in, out), self.codes))
        if out and not self.codes[2]:
            run.fallback = CodesOf(self.fallback, self.zero_points[2])
        return run

    def __call__(self, a, b):
        a_in, b_in, out = self.codes
        a32 = self._operand(a, a_in, self.zero_points[0])
        b32 = self._operand(b, b_in, self.zero_points[1])
        if a32 is None or b32 is None:
            return self.fallback(self._eight_bits(a, a_in, self.zero_points[0]),
                                 self._eight_bits(b, b_in, self.zero_points[1]))
        value = qlinear_add_sum(a32, b32, *self.parameters)
        if not out:
            return requantize_finite(value, 0.0, self.dtype)
        np.rint(value, out=value)
        clip_ufunc(value, self.low, self.high, out=value)  # (never NaN: 8-bit values times finite ratios)
        value -= self.zero_points[2]
        return value

    def _operand(self, v, codes: bool, zero_point):
        """The operand's 8-bit values as a new float32 array, or None for an unexpected operand."""
        if type(v) is not np.ndarray:
            return None
        if v.dtype == self.dtype:
            return v.astype(_F32)
        if codes and v.dtype == _F32:
            return np.add(v, zero_point)
        return None

    def _eight_bits(self, v, codes: bool, zero_point):
        """Codes back to the 8-bit tensor the original node reads (other values unchanged)."""
        if codes and type(v) is np.ndarray and v.dtype == _F32:
            return np.add(v, zero_point).astype(self.dtype)
        return v


class QLinearAddOnCodes(PreparedQLinearAdd):
    """A :class:`PreparedQLinearAdd` reading or giving float32 codes (rule ``quantized_codes``)."""

    __slots__ = ()


class PreparedQLinearGlobalAveragePool:
    """com.microsoft QLinearGlobalAveragePool (channels first) with constant scales and zero points (rule
    ``prepared_qlinear_ops``): the kernel's factor kept per spatial size, the kernel's exact float32 path
    (:func:`~..kernels.contrib.qlinear.global_average_codes`) per call; ``fallback`` (the node) for other
    inputs or sums that would not be exact in float32."""

    __slots__ = ("x_scale", "y_scale", "x_zero_point", "y_zero_point", "dtype", "factors", "fallback")

    def __init__(self, x_scale, x_zero_point, y_scale, y_zero_point, dtype, fallback):
        self.x_scale, self.y_scale, self.dtype, self.fallback = x_scale, y_scale, np.dtype(dtype), fallback
        self.x_zero_point, self.y_zero_point = float(x_zero_point), float(y_zero_point)
        self.factors: dict = {}

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != self.dtype or x.ndim < 3 or not x.size:
            return self.fallback(x)
        size = x[0, 0].size
        factor = self.factors.get(size)
        if factor is None:
            if not exact_global_sums(x, size):
                return self.fallback(x)
            factor = self.factors[size] = global_average_factor(self.x_scale, self.y_scale, size)
        return global_average_codes(x, size, self.x_zero_point, factor, self.y_zero_point)


class DequantizedGather:
    """``DequantizeLinear(Gather(table, ids, axis), scale, zero_point)`` with per-tensor parameters (rule
    ``dequantized_gather``): without ``lookup``, ``table`` is the quantized table dequantized once and a
    run is one ``take``; with it, ``table`` holds the codes and ``lookup`` the dequantized value of every
    code (indexed by the code itself, negative codes from the end), a run is two ``take`` calls. The same
    values as the two nodes, out-of-range ids refused as Gather refuses them; ``fallback`` (the original
    steps) for ids that are not an integer array."""

    __slots__ = ("table", "axis", "lookup", "fallback")

    def __init__(self, table: np.ndarray, axis: int, lookup, fallback):
        self.table, self.axis, self.lookup, self.fallback = table, axis, lookup, fallback

    def __call__(self, ids):
        if type(ids) is not np.ndarray or ids.dtype.kind not in "iu":
            return self.fallback(ids)
        rows = self.table.take(ids, axis=self.axis)
        if self.lookup is None:
            return rows
        return self.lookup.take(rows)
