"""ConvInteger with constant weights (rule ``conv_integer``): onnxruntime's dynamic quantization of a
Conv (``DynamicQuantizeLinear -> ConvInteger -> Add bias -> Cast -> Mul scale``) in older exports."""

from __future__ import annotations

import numpy as np

_INT32 = np.dtype(np.int32)
_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


class PreparedConvInteger:
    """``ConvInteger(x, W, x_zero_point, W_zero_point)`` for constant ``W`` and ``W_zero_point``.

    The weights minus their zero points are converted once (float32 when every partial sum is
    exact there: ``taps * 255 * max|W - W_zp| < 2**24``, the input being 8-bit, else float64) and run
    through the conv algorithm selector (:class:`~..kernels.conv_prepared.PreparedConv` with
    ``exact=True``: no Winograd transforms) on the input minus its zero point, which may vary per call
    (DynamicQuantizeLinear computes it). The sums are exact integers, so the int32 result equals the
    kernel's. Inputs that are not 8-bit, or a zero point of another type or of more than one value,
    run ``fallback``."""

    __slots__ = ("conv", "work", "fallback")

    def __init__(self, conv, work, fallback):
        self.conv, self.work, self.fallback = conv, np.dtype(work), fallback

    def __call__(self, x, x_zero_point=None):
        if type(x) is not np.ndarray or x.dtype not in _EIGHT_BITS or (
                x_zero_point is not None and (np.size(x_zero_point) != 1 or
                                              np.asarray(x_zero_point).dtype != x.dtype)):
            return self.fallback(x) if x_zero_point is None else self.fallback(x, x_zero_point)
        xf = x.astype(self.work)
        if x_zero_point is not None:
            zero = self.work.type(np.asarray(x_zero_point).reshape(-1)[0])
            if zero:
                xf -= zero  # padding with 0 after the shift is padding with the zero point before it
        return self.conv(xf).astype(_INT32)
