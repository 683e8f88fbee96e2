"""Run-time objects of the quantization rules: :class:`FakeQuantize` (rule ``qdq_pair``).

A QuantizeLinear whose only reader is a DequantizeLinear with the same per-tensor parameters is
"fake quantization", the way onnxruntime's QDQ quantizer marks a float value as quantized: the pair
is ``clip(rint(x / s), min - zp, max - zp) * s``. Computed in float32 in one buffer, every step but the
last multiply is exact, so the result equals the two nodes' bit for bit (NaN included: both give
``(min - zp) * s``, as the quantizer saturates NaN to the minimum code).
"""

from __future__ import annotations

import numpy as np

_F32 = np.dtype(np.float32)


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
        q = np.divide(x, self.scale)
        np.rint(q, out=q)
        np.fmax(q, self.low, out=q)  # fmax: NaN becomes the minimum code, as QuantizeLinear's
        np.minimum(q, self.high, out=q)
        q += np.float32(0)  # -0.0 (rint of a small negative ratio) is the code's +0.0, as q - zp is
        q *= self.scale
        return q


class PreparedQLinearConv:
    """QLinearConv with constant weights, scales, zero points and bias (rule ``qlinear_conv``).

    The weights minus their zero points are converted once to float32 and run through the conv
    algorithm selector (:class:`~..kernels.conv_prepared.PreparedConv`, with ``exact=True``: no
    Winograd transforms) on the input minus its zero point; the int32 bias is the conv's bias. Every
    partial sum is an integer of magnitude at most ``taps * max|x - x_zp| * max|w - w_zp| + max|B|``:
    below 2**24 float32 holds them all exactly, else the prepared conv runs in float64. The result is
    requantized as the QLinearConv kernel does (float32 multiplier, round half to even, zero point,
    saturation), so it equals the kernel's bit for bit."""

    __slots__ = ("conv", "dtype", "work", "x_zero_point", "multiplier", "low", "high", "y_zero_point",
                 "target", "fallback")

    def __init__(self, conv, x_dtype, work, x_zero_point, multiplier, y_zero_point, target, fallback):
        info = np.iinfo(target)
        self.conv, self.dtype, self.work = conv, np.dtype(x_dtype), np.dtype(work)
        self.x_zero_point = self.work.type(x_zero_point)
        self.multiplier = multiplier
        self.low, self.high = np.float32(info.min - y_zero_point), np.float32(info.max - y_zero_point)
        self.y_zero_point, self.target = np.float32(y_zero_point), np.dtype(target)
        self.fallback = fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != self.dtype:
            return self.fallback(x)
        xf = x.astype(self.work)
        if self.x_zero_point:
            xf -= self.x_zero_point  # padding with 0 after the shift is padding with the zero point
        acc = self.conv(xf)
        if acc.dtype != _F32:
            acc = acc.astype(_F32)  # (the float64 path: the kernel converts its int32 sums the same way)
        acc *= self.multiplier
        np.rint(acc, out=acc)
        np.fmax(acc, self.low, out=acc)
        np.minimum(acc, self.high, out=acc)
        if self.y_zero_point:
            acc += self.y_zero_point
        return acc.astype(self.target)
