"""com.microsoft attention: Attention (the BERT optimizer's fused QKV form), QAttention (the same with
quantized input and weights, from onnxruntime's dynamic quantizer run on an optimized model),
MultiHeadAttention, GroupQueryAttention (decoder with KV cache, optional rotary) and RotaryEmbedding.

Masks follow onnxruntime's CPU kernels: a key-padding or raw mask adds ``mask_filter_value``
(default -10000, not -inf) to the scores of masked keys, so a row whose keys are all masked becomes a
uniform average, as in onnxruntime; the causal (``unidirectional``) frontier removes future keys
entirely. Scores are ``scale * Q K^T`` (``scale`` defaults to ``1/sqrt(head_size)``) plus the mask and
the optional ``attention_bias``; softmax and products run in float32 for float16 inputs.
"""

from __future__ import annotations

import math

import numpy as np

from ....errors import EvalError
from ...registry import kernel
from ..activation import row_max
from ..attention import rotary_embedding as _rotary_onnx
from ..attention import softmax_product
from ..linalg import integer_product, shifted_operand
from . import MS

_MASK_FILTER = -10000.0


def _heads(x, num_heads):
    """(B, L, N*H) -> (B, N, L, H)."""
    b, length, hidden = x.shape
    return x.reshape(b, length, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def _merge(x):
    """(B, N, S, H) -> (B, S, N*H)."""
    b, n, s, h = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, n * h)


_MASKS: dict = {}  # (mask bytes, shape, type, geometry) -> additive mask: the same mask comes every run
_MASKS_KEPT = 64


class FullyMasked:
    """The additive mask of a padding mask that masks every key of some query rows (onnxruntime's
    dummy ``mask_index`` of zeros masks all of them): ``array`` is the (B, 1, S, T) mask, ``uniform``
    its one value when every key of every row gets the same (else None). Those rows' exponentials all
    underflow without their own maximum, so the attention takes the per-row softmax directly, or,
    for a uniform mask, adds the value and subtracts it again (the scores rounded as onnxruntime's
    sum rounds them, then the usual softmax, whose result a per-row shift does not change)."""

    __slots__ = ("array", "uniform")

    def __init__(self, array, uniform):
        self.array, self.uniform = array, uniform


def _padding_mask(mask, batch, seq, total, mask_filter_value):
    """The additive (B, 1, S, T) float32 mask of an onnxruntime ``mask_index`` / key padding mask
    (read-only: kept per mask value, as a run's mask is usually the previous run's); None when it
    masks nothing (every key valid: adding zeros changes no probability), a :class:`FullyMasked`
    when some query rows have no valid key."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    key = (mask.tobytes(), mask.shape, mask.dtype.str, batch, seq, total, mask_filter_value)
    out = _MASKS.get(key, _MASKS)
    if out is _MASKS:
        if len(_MASKS) >= _MASKS_KEPT:
            _MASKS.clear()
        out = _additive_mask(mask, batch, seq, total, mask_filter_value)
        if out is not None and not out.any():
            out = None
        if out is not None:
            out.flags.writeable = False
            if total and (out != 0).all(axis=-1).any():
                first = out.reshape(-1)[0]
                uniform = np.isfinite(first) and (out == first).all()  # (an infinite value: the per-row form)
                out = FullyMasked(out, float(first) if uniform else None)
        _MASKS[key] = out
    return out


def _additive_mask(mask, batch, seq, total, mask_filter_value):
    positions = np.arange(total)
    if mask.ndim == 1:  # key padding: the same for every query, (B, 1, 1, T)
        end = mask[:batch].astype(np.int64)
        masked = positions[None, :] >= end[:, None]
        if mask.shape[0] == 2 * batch:
            start = np.minimum(mask[batch:].astype(np.int64), total)
            masked |= positions[None, :] < start[:, None]
        out = np.where(masked, np.float32(mask_filter_value), np.float32(0))[:, None, None, :]
    elif mask.ndim == 2:
        if mask.shape[1] == 1:  # a dummy [B, 1] / [1, 1] mask: no masking
            return None
        out = np.where(mask > 0, np.float32(0), np.float32(mask_filter_value))[:, None, None, :]
    elif mask.ndim == 3:
        out = np.where(mask > 0, np.float32(0), np.float32(mask_filter_value))[:, None]
    else:
        raise EvalError(f"a {mask.ndim}-D attention mask is not supported (onnxruntime's CPU kernel has none)")
    return np.broadcast_to(out, (batch, 1) + out.shape[2:]) if out.shape[0] != batch else out


def _causal(seq, total, past):
    """(S, T) bool: True where key j lies in the future of query i (j > past + i)."""
    return np.arange(total)[None, :] > past + np.arange(seq)[:, None]


def _scores(q, k, scale, mask, bias, causal):
    """``scale Q K^T + mask + bias`` with future keys at -inf, a fresh float32 array (a float mask, see
    :class:`FullyMasked`, added and subtracted again)."""
    scores = np.matmul(q, k.swapaxes(-1, -2))
    scores *= np.float32(scale)
    if type(mask) is float:
        scores += mask
        scores -= mask
    elif mask is not None:
        scores += mask
    if bias is not None:
        bias = bias.astype(np.float32, copy=False)
        try:
            scores += bias
        except ValueError:  # a bias that broadcasts the scores to a larger shape
            scores = scores + bias
    if causal is not None:
        np.copyto(scores, np.float32(-np.inf), where=causal)
    return scores


def _attend(q, k, v, scale, mask=None, bias=None, causal=None, keep_scores=False):
    """softmax(scale Q K^T + mask + bias, future keys removed) V over (B, N, S, H) float32 arrays, and
    the scores before the softmax when ``keep_scores`` (else None). One buffer, updated in place;
    without a per-row maximum when the scores allow it (:func:`~..attention.softmax_product`)."""
    per_row = False
    if type(mask) is FullyMasked:
        per_row = mask.uniform is None
        mask = mask.array if per_row or keep_scores else mask.uniform
    scores = _scores(q, k, scale, mask, bias, causal)
    if keep_scores:
        kept = scores.copy()
    elif per_row:
        kept = None
    else:
        kept = None
        y = softmax_product(scores, v)
        if y is not None:
            return y, None
        scores = _scores(q, k, scale, mask, bias, causal)
    scores -= row_max(scores)
    np.exp(scores, out=scores)
    scores /= _row_sums(scores)
    return np.matmul(scores, v), kept


_ONES: dict = {}


def _row_sums(x):
    """Sums over the last axis, kept as 1: one matrix-vector product with a column of ones for float32
    (BLAS; numpy's reduction along short rows costs twice as much)."""
    if x.dtype != np.float32:
        return np.add.reduce(x, axis=-1, keepdims=True)
    n = x.shape[-1]
    ones = _ONES.get(n)
    if ones is None:
        ones = _ONES[n] = np.ones((n, 1), np.float32)
    return np.matmul(x, ones)


def _scale(scale, head_size):
    return scale if scale else 1 / math.sqrt(head_size)


def _wants_present(ctx) -> bool:
    """Whether the node asks for its ``present`` output (stacking K and V is a copy of both)."""
    return ctx.num_outputs > 1 and bool(ctx.node.output[1])


@kernel("Attention", since=1, domain=MS, context=True)
def attention(ctx, input, weights, bias=None, mask_index=None, past=None, attention_bias=None,
              past_sequence_length=None, *, num_heads, qkv_hidden_sizes=None, unidirectional=0,
              mask_filter_value=_MASK_FILTER, scale=0.0, do_rotary=0, past_present_share_buffer=0,
              rotary_embedding_dim=0):
    if do_rotary or past_present_share_buffer:
        raise EvalError("Attention with do_rotary=1 or past_present_share_buffer=1 is not supported "
                        "(onnxruntime's GPU-only forms)")
    qkv = np.matmul(input.astype(np.float32, copy=False), weights.astype(np.float32, copy=False))
    if bias is not None:
        qkv += bias.astype(np.float32, copy=False)
    return attention_of_qkv(qkv, input.dtype, weights.shape[1], mask_index, past, attention_bias,
                             num_heads, qkv_hidden_sizes, unidirectional, mask_filter_value, scale,
                             _wants_present(ctx))


@kernel("QAttention", since=1, domain=MS, context=True)
def qattention(ctx, input, weight, bias, input_scale, weight_scale, mask_index=None, input_zero_point=None,
               weight_zero_point=None, past=None, *, num_heads, unidirectional=0, do_rotary=0,
               past_present_share_buffer=0, mask_filter_value=_MASK_FILTER, scale=0.0):
    """Attention whose input (uint8/int8, from a DynamicQuantizeLinear) and weight are quantized: the QKV
    projection is an exact integer product scaled by input_scale * weight_scale (per tensor or per
    column), plus the float bias; the rest is Attention's."""
    if do_rotary or past_present_share_buffer:
        raise EvalError("QAttention with do_rotary=1 or past_present_share_buffer=1 is not supported")
    x, x_bound = shifted_operand(input, input_zero_point)
    w, w_bound = shifted_operand(weight, weight_zero_point)
    acc = integer_product(x, w, x_bound, w_bound).astype(np.float32)
    qkv = acc * (np.float32(np.asarray(input_scale).reshape(-1)[0]) * np.asarray(weight_scale, np.float32))
    qkv = qkv + bias.astype(np.float32)
    return attention_of_qkv(qkv, np.dtype(np.float32), weight.shape[1], mask_index, past, None, num_heads, None,
                             unidirectional, mask_filter_value, scale, _wants_present(ctx))


def attention_of_qkv(qkv, dtype, width, mask_index, past, attention_bias, num_heads, qkv_hidden_sizes,
                      unidirectional, mask_filter_value, scale, want_present=True):
    """Attention's computation from the projected (B, S, Dq + Dk + Dv) float32 QKV (``present`` None
    when not wanted); also the prepared step's (:class:`~...fused.attention.PackedQkvAttention`)."""
    hidden = width // 3
    sizes = list(qkv_hidden_sizes) if qkv_hidden_sizes else [hidden, hidden, hidden]
    dq, dk = sizes[0], sizes[0] + sizes[1]
    q, k, v = qkv[..., :dq], qkv[..., dq:dk], qkv[..., dk:]
    q, k, v = _heads(q, num_heads), _heads(k, num_heads), _heads(v, num_heads)
    batch, _, seq, head_size = q.shape
    past_len = 0
    if past is not None and past.shape[3] > 0:
        past32 = past.astype(np.float32)
        k = np.concatenate([past32[0], k], axis=2)
        v = np.concatenate([past32[1], v], axis=2)
        past_len = past.shape[3]
    total = k.shape[2]
    mask = _padding_mask(mask_index, batch, seq, total, mask_filter_value)
    causal = _causal(seq, total, past_len) if unidirectional else None
    out, _ = _attend(q, k, v, _scale(scale, head_size), mask, attention_bias, causal)
    present = np.stack([k, v]).astype(dtype) if want_present and k.shape == v.shape else None
    return _merge(out).astype(dtype, copy=False), present


@kernel("MultiHeadAttention", since=1, domain=MS)
def multi_head_attention(query, key=None, value=None, bias=None, key_padding_mask=None, attention_bias=None,
                         past_key=None, past_value=None, past_sequence_length=None, cache_indirection=None,
                         *, num_heads, mask_filter_value=_MASK_FILTER, scale=0.0, unidirectional=0):
    dtype = query.dtype
    q = query.astype(np.float32)
    if cache_indirection is not None:
        raise EvalError("MultiHeadAttention with cache_indirection (beam search) is not supported")
    if key is None or key.ndim == 5:
        raise EvalError("MultiHeadAttention with packed QKV or KV is not supported (onnxruntime's CPU kernel "
                        "has none either)")
    k, v = key.astype(np.float32), value.astype(np.float32)
    projected = k.ndim == 4  # already (B, N, L, H): cross-attention keys, no bias, no past
    if q.ndim == 3:
        d = q.shape[2]
        if bias is not None:
            bias32 = bias.astype(np.float32)
            q = q + bias32[:d]
            if not projected:
                k = k + bias32[d:2 * d]
                v = v + bias32[2 * d:]
        q = _heads(q, num_heads)
        if not projected:
            k, v = _heads(k, num_heads), _heads(v, num_heads)
    batch, _, seq, head_size = q.shape
    past_len = 0
    if past_key is not None and not projected and past_key.shape[2] > 0:
        k = np.concatenate([past_key.astype(np.float32), k], axis=2)
        v = np.concatenate([past_value.astype(np.float32), v], axis=2)
        past_len = past_key.shape[2]
    total = k.shape[2]
    mask = _padding_mask(key_padding_mask, batch, seq, total, mask_filter_value)
    causal = _causal(seq, total, past_len) if unidirectional else None
    out, scores = _attend(q, k, v, _scale(scale, head_size), mask, attention_bias, causal, keep_scores=True)
    return _merge(out).astype(dtype), k.astype(dtype), v.astype(dtype), scores.astype(dtype)


@kernel("GroupQueryAttention", since=1, domain=MS)
def group_query_attention(query, key=None, value=None, past_key=None, past_value=None, seqlens_k=None,
                          total_sequence_length=None, cos_cache=None, sin_cache=None, position_ids=None,
                          attention_bias=None, head_sink=None, *, num_heads, kv_num_heads, scale=0.0,
                          softcap=0.0, local_window_size=-1, do_rotary=0, rotary_interleaved=0,
                          smooth_softmax=0, qk_output=0):
    """Causal attention with a KV cache: batch b has ``seqlens_k[b] + 1`` valid keys in total, the new
    tokens appended after its ``past`` ones in the present buffers (of the past buffer's length, or
    ``total_sequence_length`` when longer)."""
    dtype = query.dtype
    q = query.astype(np.float32)
    batch, seq = q.shape[:2]
    if key is None:  # packed QKV on the last axis
        kv_hidden = (q.shape[2] - 0) // (num_heads + 2 * kv_num_heads) * kv_num_heads
        d = q.shape[2] - 2 * kv_hidden
        q, k, v = q[..., :d], q[..., d:d + kv_hidden], q[..., d + kv_hidden:]
    else:
        k, v = key.astype(np.float32), value.astype(np.float32)
    q, k, v = _heads(q, num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    head_size = q.shape[3]
    total_len = int(np.asarray(total_sequence_length).reshape(-1)[0])
    seqlens = np.asarray(seqlens_k).reshape(-1).astype(np.int64) + 1  # valid keys per batch
    first_prompt = seq == total_len
    past_lens = np.zeros(batch, np.int64) if first_prompt else seqlens - seq
    if do_rotary:
        if position_ids is not None:
            pos = np.broadcast_to(position_ids, (batch, seq)).astype(np.int64)
        else:
            pos = past_lens[:, None] + np.arange(seq)[None, :]
        cos, sin = cos_cache.astype(np.float32), sin_cache.astype(np.float32)
        rotary = dict(interleaved=rotary_interleaved, rotary_embedding_dim=2 * cos.shape[1])
        q, k = _rotary_onnx(q, cos, sin, pos, **rotary), _rotary_onnx(k, cos, sin, pos, **rotary)
    buffer = past_key.shape[2] if past_key is not None else 0
    present_len = max(buffer, total_len)
    present_k = np.zeros((batch, kv_num_heads, present_len, head_size), np.float32)
    present_v = np.zeros_like(present_k)
    if buffer:  # each batch keeps its own number of past positions
        kept = (np.arange(buffer)[None, :] < past_lens[:, None])[:, None, :, None]
        present_k[:, :, :buffer] = np.where(kept, past_key.astype(np.float32), 0)
        present_v[:, :, :buffer] = np.where(kept, past_value.astype(np.float32), 0)
    # the new tokens go after each batch's past: positions past_lens[b] + s
    rows = np.arange(batch)[:, None]
    slots = past_lens[:, None] + np.arange(seq)[None, :]
    present_k.transpose(0, 2, 1, 3)[rows, slots] = k.transpose(0, 2, 1, 3)
    present_v.transpose(0, 2, 1, 3)[rows, slots] = v.transpose(0, 2, 1, 3)
    group = num_heads // kv_num_heads
    keys = np.repeat(present_k, group, axis=1)
    values = np.repeat(present_v, group, axis=1)
    scores = np.matmul(q, keys.swapaxes(-1, -2)) * np.float32(_scale(scale, head_size))
    if softcap:
        scores = np.float32(softcap) * np.tanh(scores / np.float32(softcap))
    if attention_bias is not None:
        scores = scores + attention_bias.astype(np.float32)
    query_pos = past_lens[:, None] + np.arange(seq)[None, :]  # (B, S) absolute positions
    key_pos = np.arange(present_len)
    allowed = (key_pos[None, None, :] <= query_pos[:, :, None]) & (key_pos[None, None, :] < seqlens[:, None, None])
    if local_window_size >= 0:
        allowed &= key_pos[None, None, :] > query_pos[:, :, None] - local_window_size
    scores = np.where(allowed[:, None], scores, -np.inf)
    peak = row_max(scores)
    if head_sink is not None or smooth_softmax:
        sink = (np.zeros(num_heads, np.float32) if head_sink is None else head_sink.astype(np.float32))
        peak = np.maximum(peak, sink[None, :, None, None])
    peak = np.where(np.isneginf(peak), 0, peak)
    e = np.exp(scores - peak)
    total = np.sum(e, axis=-1, keepdims=True)
    if head_sink is not None or smooth_softmax:
        total = total + np.exp(sink[None, :, None, None] - peak)
    probs = e / np.where(total > 0, total, 1)
    out = np.matmul(probs, values)
    return _merge(out).astype(dtype, copy=False), present_k.astype(dtype), present_v.astype(dtype)


@kernel("RotaryEmbedding", since=1, domain=MS)
def rotary_embedding(input, position_ids, cos_cache, sin_cache, *, interleaved=0, num_heads=0,
                     rotary_embedding_dim=0, scale=1.0, is_packed_batching=0):
    """onnxruntime's form: ``position_ids`` (B, S), or one offset (shape [1]) for positions offset + s."""
    seq = input.shape[2] if input.ndim == 4 else input.shape[1]
    batch = input.shape[0]
    pos = np.asarray(position_ids).astype(np.int64)
    if pos.size == 1:
        pos = np.broadcast_to(pos.reshape(-1)[0] + np.arange(seq), (batch, seq))
    if input.ndim == 3 and not num_heads:
        num_heads = input.shape[2] // (2 * cos_cache.shape[1])
    return _rotary_onnx(input, cos_cache, sin_cache, pos, interleaved=interleaved, num_heads=num_heads,
                        rotary_embedding_dim=rotary_embedding_dim)
