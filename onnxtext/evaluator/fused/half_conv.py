"""A float16 Conv with constant weights computed by a float32 PreparedConv (rule ``prepared_conv``).

numpy has no half-precision BLAS: the plain Conv kernel converts the image and the weights to float32
at every call. Here the weights are converted once and the prepared float32 convolution runs on the
converted image; the result is rounded back to float16 (float32 accumulation, as onnxruntime's CPU
kernels do)."""

from __future__ import annotations

import numpy as np

from ..kernels.cast import float16_to_float32


class HalfConv:
    """``conv(x.astype(float32)).astype(float16)``; ``fallback(x)`` for inputs that are not float16."""

    __slots__ = ("conv", "fallback")

    def __init__(self, conv, fallback):
        self.conv, self.fallback = conv, fallback

    def __call__(self, x):
        if type(x) is np.ndarray and x.dtype == np.float16:
            return self.conv(float16_to_float32(x)).astype(np.float16)
        return self.fallback(x)
