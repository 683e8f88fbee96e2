"""Layer and RMS normalization over the last axis, as exporters' decompositions compute them
(rules ``layer_norm`` and ``rms_norm``): one step with few passes instead of six to nine steps."""

from __future__ import annotations

import numpy as np

from ..kernels.normalization import RowNorm, row_moments_ready, row_tile
from .linear import tiled_bias

_sum = np.add.reduce


def _last_axis_mean(x):
    """np.mean(x, axis=-1, keepdims=True) without its argument handling (which costs more than a
    small row block's reduction), float16 summed in float32 as np.mean does."""
    n = x.shape[-1]
    if x.dtype == np.float16:
        total = _sum(x, axis=-1, keepdims=True, dtype=np.float32)
        total *= np.float32(1 / n) if n else np.float32(np.nan)
        return total.astype(np.float16)
    total = _sum(x, axis=-1, keepdims=True)
    total *= x.dtype.type(1 / n) if n else x.dtype.type(np.nan)
    return total


class LastAxisLayerNorm:
    """``(x - mean) / sqrt(var + eps) * scale + bias`` over the last axis (scale, bias optional);
    ``fallback`` (the original steps) runs for inputs that are not float arrays. Scale and bias are
    applied as tiles of the input's shape (:class:`~..kernels.normalization.RowNorm`)."""

    __slots__ = ("eps", "scale", "bias", "fallback", "norm")

    def __init__(self, eps, scale, bias, fallback):
        self.eps, self.scale, self.bias, self.fallback = eps, scale, bias, fallback
        self.norm = RowNorm(eps, scale, bias)

    def __call__(self, x):
        if type(x) is np.ndarray and self.norm.prepared(x):  # (a shape and type that passed the tests below)
            return self.norm(x)
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or \
                (self.scale is not None and self.scale.dtype != x.dtype) or \
                (self.bias is not None and self.bias.dtype != x.dtype):
            return self.fallback(x)
        if row_moments_ready(x):
            return self.norm(x)
        d = x - _last_axis_mean(x)
        var = _last_axis_mean(np.square(d))
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

    __slots__ = ("eps", "scale", "fallback", "norm")

    def __init__(self, eps, scale, fallback):
        self.eps, self.scale, self.fallback = eps, scale, fallback
        self.norm = RowNorm(eps, scale, simplified=True)

    def __call__(self, x):
        if type(x) is np.ndarray and self.norm.prepared(x):  # (a shape and type that passed the tests below)
            return self.norm(x)
        if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or \
                (self.scale is not None and self.scale.dtype != x.dtype):
            return self.fallback(x)
        if row_moments_ready(x):
            return self.norm(x)
        ms = _last_axis_mean(np.square(x))
        ms += x.dtype.type(self.eps)
        np.sqrt(ms, out=ms)
        y = x / ms
        if self.scale is not None:
            y *= self.scale
        return y


class CastNorm:
    """A last-axis normalization with the Casts exporters put around it (to float32 before, back after:
    Llama and T5 exports, float32 models included) and the scale Mul after them, as one step (rule
    ``norm_casts``): ``norm`` (a :class:`LastAxisRmsNorm` or :class:`LastAxisLayerNorm` carrying the
    scale) runs when the Casts change nothing, i.e. its input already has ``in_dtype`` (the first
    Cast's type, or the scale's; None: any) and its result ``out_dtype`` (the second Cast's; None:
    any); ``fallback`` (the original steps) otherwise."""

    __slots__ = ("norm", "in_dtype", "out_dtype", "fallback")

    def __init__(self, norm, in_dtype, out_dtype, fallback):
        self.norm, self.in_dtype, self.out_dtype, self.fallback = norm, in_dtype, out_dtype, fallback

    def __call__(self, x):
        if type(x) is np.ndarray and (self.in_dtype is None or x.dtype == self.in_dtype) and x.ndim:
            try:
                y = self.norm(x)
            except ValueError:  # (a scale that broadcasts the result to a larger shape: the Mul's own)
                return self.fallback(x)
            if type(y) is np.ndarray and (self.out_dtype is None or y.dtype == self.out_dtype):
                return y
        return self.fallback(x)


class PreparedSkipNorm:
    """com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization with constant gamma,
    beta and bias (rule ``contrib_transformer``): ``input + skip (+ bias)`` normalized over the last
    axis by a :class:`~..kernels.normalization.RowNorm` holding gamma and beta, the bias added as a
    tile of the input's shape; float16 inputs (``dtype``) are summed and normalized in float32 and
    rounded once, as the kernel does. Returns the normalized value, and the sum too when
    ``with_sum`` (GPT-2's residual stream). The same values as the kernel; ``fallback`` (the
    original step) runs for inputs of another type or shape."""

    __slots__ = ("norm", "bias", "dtype", "narrow", "with_sum", "fallback", "bias_tiles")

    def __init__(self, epsilon, gamma, beta, bias, simplified, dtype, with_sum, fallback):
        wide = (lambda v: None if v is None else v.astype(np.float32))
        self.norm = RowNorm(epsilon, wide(gamma), wide(beta), simplified)
        self.bias, self.dtype, self.with_sum, self.fallback = wide(bias), np.dtype(dtype), with_sum, fallback
        self.narrow = self.dtype != np.float32  # (computed in float32, rounded to dtype once)
        self.bias_tiles: dict = {}

    def __call__(self, input, skip):
        dtype = self.dtype
        if type(input) is not np.ndarray or type(skip) is not np.ndarray or input.dtype != dtype or \
                skip.dtype != dtype or input.shape != skip.shape or input.ndim < 2 or not input.shape[-1]:
            return self.fallback(input, skip)
        if self.narrow:
            total = input.astype(np.float32)
            total += skip
        else:
            total = np.add(input, skip)
        if self.bias is not None:
            total += tiled_bias(self.bias_tiles, self.bias, total.shape)
        with_sum = self.with_sum
        y = self.norm(total, not with_sum)
        if self.narrow:
            y = y.astype(dtype)
            if with_sum:
                total = total.astype(dtype)
        return (y, total) if with_sum else y


class PreparedEmbedNorm:
    """com.microsoft EmbedLayerNormalization with constant float32 tables, gamma and beta (rule
    ``contrib_transformer``): word (+ position, + segment) embeddings summed and layer-normalized by a
    :class:`~..kernels.normalization.RowNorm`, the position rows repeated to the batch once per
    (batch, sequence) shape; the second output is the count of mask values equal to 1 per row (zeros without a
    mask, as onnxruntime writes), returned only ``with_mask_index``. ``inputs`` says which of
    segment_ids and mask the step takes after input_ids. The same values as the kernel;
    ``fallback`` (the original step) for ids that are not 2-D integer arrays."""

    __slots__ = ("word", "position", "segment", "norm", "mask_index_type", "inputs", "with_mask_index", "fallback",
                 "positions")

    def __init__(self, word, position, segment, gamma, beta, epsilon, mask_index_type, inputs, with_mask_index,
                 fallback):
        self.word, self.position, self.segment = word, position, segment
        self.norm = RowNorm(epsilon, gamma, beta)
        self.mask_index_type, self.inputs, self.with_mask_index = mask_index_type, tuple(inputs), with_mask_index
        self.fallback = fallback
        self.positions: dict = {}

    def __call__(self, input_ids, *rest):
        given = dict(zip(self.inputs, rest))
        segment_ids, mask = given.get("segment_ids"), given.get("mask")
        if type(input_ids) is not np.ndarray or input_ids.ndim != 2 or input_ids.dtype.kind not in "iu" or \
                (segment_ids is not None and self.segment is None):
            return self.fallback(input_ids, *rest)
        batch, seq = input_ids.shape
        total = self.word[input_ids]
        tile = self.positions.get((batch, seq))
        if tile is None:
            if len(self.positions) >= 16:
                self.positions.clear()
            tile = self.positions[(batch, seq)] = row_tile(self.position[:seq], total.shape)
        total += tile
        if segment_ids is not None:
            total += self.segment[segment_ids]
        y = self.norm(total, in_place=True)
        if not self.with_mask_index:
            return y
        if not self.mask_index_type:
            return y, np.zeros(0, np.int32)
        if mask is not None:
            return y, np.count_nonzero(mask == 1, axis=1).astype(np.int32)
        return y, np.zeros(batch, np.int32)
