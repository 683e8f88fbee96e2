"""Run-time objects of the quantization rules for QOperator models (onnxruntime's QOperator quantizer:
QLinearConv, QLinearAdd, QGemm...): :class:`PreparedQLinearConv` and :class:`QuantizedInputConv` (rule
``qlinear_conv``), :class:`PreparedQGemm` (rule ``qgemm_constant``), :class:`PreparedQLinearAdd` and
:class:`PreparedQLinearGlobalAveragePool` (rule ``prepared_qlinear_ops``), their variants on float32 codes
:class:`QLinearConvOnCodes`, :class:`QuantizedInputConvToCodes`, :class:`QLinearAddOnCodes` and
:class:`CodesOf` (rule ``quantized_codes``). Each computes exactly the values of the nodes it replaces.
"""

from __future__ import annotations

import copy

import numpy as np

from ..kernels.contrib.qlinear import (exact_global_sums, global_average_codes, global_average_factor,
                                        global_average_offset, qlinear_add_sum)
from ..kernels.quantize import clip_ufunc, integer_range, requantize_finite, shifted_codes

_F32 = np.dtype(np.float32)
_ZERO = np.float32(0)  # (added to codes: -0.0 becomes +0.0; made once, a numpy scalar costs ~0.4 us)


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
        if self.pool is None and self.work == _F32:
            # the multiplier in the conv's crop where it has one (PreparedConv.combined): one pass fewer
            acc = self.conv.combined(xf, np.multiply, self.multiplier)
        else:
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
        acc += _ZERO
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
    inputs or sums that would not be exact in float32. ``factors``: per spatial size, the float32 offset
    (zero point times size) and factor."""

    __slots__ = ("x_scale", "y_scale", "x_zero_point", "y_zero_point", "dtype", "factors", "fallback")

    def __init__(self, x_scale, x_zero_point, y_scale, y_zero_point, dtype, fallback):
        self.x_scale, self.y_scale, self.dtype, self.fallback = x_scale, y_scale, np.dtype(dtype), fallback
        self.x_zero_point, self.y_zero_point = float(x_zero_point), float(y_zero_point)
        self.factors: dict = {}

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != self.dtype or x.ndim < 3 or not x.size:
            return self.fallback(x)
        size = x[0, 0].size
        per_size = self.factors.get(size)
        if per_size is None:
            if not exact_global_sums(x, size):
                return self.fallback(x)
            per_size = self.factors[size] = (global_average_offset(self.x_zero_point, size),
                                             global_average_factor(self.x_scale, self.y_scale, size))
        return global_average_codes(x, size, per_size[0], per_size[1], self.y_zero_point)
