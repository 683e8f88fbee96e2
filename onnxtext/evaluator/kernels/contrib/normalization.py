"""com.microsoft normalizations: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
SimplifiedLayerNormalization (RMS norm, also registered in the ONNX domain where onnxruntime puts it),
EmbedLayerNormalization; and LayerNormalization in the ONNX domain before opset 17, which onnxruntime
has as a contrib operator and its transformer optimizer emits into opset-14 models (the same
computation as the standard one of opset 17).

All normalize over the last axis in float32 (float16 inputs are widened, like onnxruntime's CPU
kernels), then scale by ``gamma`` and add ``beta``. The "skip" forms first add ``skip`` and the
optional ``bias`` (in float32 for float16 inputs, rounded only in the sum output, as onnxruntime);
their optional outputs are the mean, the inverse standard deviation (both with the last axis kept
as 1) and the sum before normalization.
"""

from __future__ import annotations

import numpy as np

from ...registry import kernel
from ..normalization import layer_normalization, normalize_rows
from . import MS

_DEFAULT_EPSILON = 1e-12  # the transformer optimizer always sets it; onnxruntime's default


def _mean(x):
    """np.mean(x, axis=-1, keepdims=True) (the same sum and division) without its argument handling."""
    total = np.add.reduce(x, axis=-1, keepdims=True)
    total /= x.dtype.type(x.shape[-1]) if x.shape[-1] else x.dtype.type("nan")
    return total


def _layer_norm(x, gamma, beta, epsilon, simplified):
    """(normalized, mean, inv_std) over the last axis, computed in float32 (or float64)."""
    work = x.astype(np.float64 if x.dtype == np.float64 else np.float32, copy=False)
    if simplified:
        mean = None
        var = _mean(work * work)
        centered = work
    else:
        mean = _mean(work)
        centered = work - mean
        var = _mean(centered * centered)
    var += np.asarray(epsilon, work.dtype)
    inv_std = 1 / np.sqrt(var)
    y = centered * inv_std  # (centered is a temporary, or the input itself when simplified)
    y *= gamma.astype(work.dtype, copy=False)
    if beta is not None:
        y += beta.astype(work.dtype, copy=False)
    return y.astype(x.dtype, copy=False), mean, inv_std


def _wide(x):
    """float16 (and other narrow floats) as float32: sums are formed before any rounding, as onnxruntime."""
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _skip_norm(ctx, input, skip, gamma, beta, bias, epsilon, simplified):
    total = _wide(input) + _wide(skip)
    if bias is not None:
        total += _wide(bias)
    outputs = ctx.node.output
    want_statistics = any(outputs[1:3])
    if not want_statistics and total.dtype == np.float32 and total.ndim >= 2 and total.shape[-1] and \
            gamma.dtype == input.dtype and (beta is None or beta.dtype == input.dtype):
        want_sum = len(outputs) > 3 and bool(outputs[3])  # (GPT-2's residual stream)
        y = normalize_rows(total, epsilon, _wide(gamma), None if beta is None else _wide(beta), simplified,
                           in_place=not want_sum).astype(input.dtype, copy=False)
        if len(outputs) == 1:
            return y
        return (y, None, None) + ((total.astype(input.dtype, copy=False),) if len(outputs) > 3 else ())
    y, mean, inv_std = _layer_norm(total, gamma, beta, epsilon, simplified)
    y = y.astype(input.dtype, copy=False)
    if ctx.num_outputs == 1:  # (the usual node: the optional outputs, a float16 copy of the sum, not made)
        return y
    mean = np.zeros_like(inv_std) if mean is None else mean
    return (y, mean.astype(np.float32, copy=False), inv_std.astype(np.float32, copy=False),
            total.astype(input.dtype, copy=False))


@kernel("SkipLayerNormalization", since=1, domain=MS, context=True)
def skip_layer_normalization(ctx, input, skip, gamma, beta=None, bias=None, *, epsilon=_DEFAULT_EPSILON):
    return _skip_norm(ctx, input, skip, gamma, beta, bias, epsilon, simplified=False)


@kernel("SkipSimplifiedLayerNormalization", since=1, domain=MS, context=True)
def skip_simplified_layer_normalization(ctx, input, skip, gamma, bias=None, *, epsilon=_DEFAULT_EPSILON):
    return _skip_norm(ctx, input, skip, gamma, None, bias, epsilon, simplified=True)


def _simplified_layer_normalization(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    axis = axis % X.ndim
    shape = X.shape
    rows = X.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
    y, _, inv_std = _layer_norm(rows, scale.reshape(-1), None, epsilon, simplified=True)
    return y.reshape(shape), inv_std.reshape(shape[:axis] + (1,) * (X.ndim - axis)).astype(np.float32)


kernel("SimplifiedLayerNormalization", since=1, domain=MS)(_simplified_layer_normalization)
kernel("SimplifiedLayerNormalization", since=1)(_simplified_layer_normalization)


@kernel("EmbedLayerNormalization", since=1, domain=MS, context=True)
def embed_layer_normalization(ctx, input_ids, segment_ids, word_embedding, position_embedding,
                              segment_embedding=None, gamma=None, beta=None, mask=None, position_ids=None,
                              *, epsilon=_DEFAULT_EPSILON, mask_index_type=1):
    """Word + position (+ segment) embeddings, layer-normalized; mask_index = per row, the number of mask
    values equal to 1 (as onnxruntime counts: a 2 or 3 is not counted), zeros without a mask (as
    onnxruntime writes)."""
    batch, seq = input_ids.shape
    if position_ids is None:  # positions 0 .. seq-1 for every row: the table's first rows, broadcast
        total = _wide(word_embedding[input_ids]) + _wide(position_embedding[:seq])
    else:
        total = _wide(word_embedding[input_ids]) + _wide(position_embedding[np.broadcast_to(position_ids,
                                                                                           (batch, seq))])
    if segment_ids is not None and segment_embedding is not None:
        total += _wide(segment_embedding[segment_ids])
    want_sum = ctx.num_outputs > 2 and bool(ctx.node.output[2])
    if not want_sum and total.dtype == np.float32 and total.shape[-1] and gamma is not None and \
            gamma.dtype == word_embedding.dtype and (beta is None or beta.dtype == word_embedding.dtype):
        y = normalize_rows(total, epsilon, _wide(gamma), None if beta is None else _wide(beta), in_place=True)
    else:
        y, _, _ = _layer_norm(total, gamma, beta, epsilon, simplified=False)
    y = y.astype(word_embedding.dtype, copy=False)
    if mask is not None:
        mask_index = np.count_nonzero(mask == 1, axis=1).astype(np.int32)
    else:  # (onnxruntime writes zeros when no mask is given)
        mask_index = np.zeros(batch, np.int32)
    if not mask_index_type:
        mask_index = np.zeros(0, np.int32)
    if ctx.num_outputs < 3:
        return y, mask_index
    return y, mask_index, total.astype(word_embedding.dtype) if want_sum else None


@kernel("LayerNormalization", since=1)
def layer_normalization_contrib(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    return layer_normalization(X, Scale, B, axis=axis, epsilon=epsilon, stash_type=stash_type)
