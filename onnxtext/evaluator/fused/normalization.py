"""Layer and RMS normalization over the last axis, as exporters' decompositions compute them
(rules ``layer_norm`` and ``rms_norm``): one step with few passes instead of six to nine steps."""

from __future__ import annotations

import numpy as np


class LastAxisLayerNorm:
    """``(x - mean) / sqrt(var + eps) * scale + bias`` over the last axis (scale, bias optional);
    ``fallback`` (the original steps) runs for inputs that are not float arrays."""

    __slots__ = ("eps", "scale", "bias", "fallback")

    def __init__(self, eps, scale, bias, fallback):
        self.eps, self.scale, self.bias, self.fallback = eps, scale, bias, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or \
                (self.scale is not None and self.scale.dtype != x.dtype) or \
                (self.bias is not None and self.bias.dtype != x.dtype):
            return self.fallback(x)
        d = x - np.mean(x, axis=-1, keepdims=True)
        var = np.mean(np.square(d), axis=-1, keepdims=True)
        var += x.dtype.type(self.eps)
        np.sqrt(var, out=var)
        d /= var
        if self.scale is not None:
            d *= self.scale
        if self.bias is not None:
            d += self.bias
        return d


class LastAxisRmsNorm:
    """``x / sqrt(mean(x^2) + eps) (* scale)`` over the last axis."""

    __slots__ = ("eps", "scale", "fallback")

    def __init__(self, eps, scale, fallback):
        self.eps, self.scale, self.fallback = eps, scale, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or \
                (self.scale is not None and self.scale.dtype != x.dtype):
            return self.fallback(x)
        ms = np.mean(np.square(x), axis=-1, keepdims=True)
        ms += x.dtype.type(self.eps)
        np.sqrt(ms, out=ms)
        y = x / ms
        if self.scale is not None:
            y *= self.scale
        return y
