"""Attention kernels: Attention (opset 23/24/25), RotaryEmbedding, LinearAttention and
ai.onnx.preview::FlexAttention.

Attention works on 4-D (batch, heads, sequence, head_size) tensors; 3-D inputs are unpacked with
``q_num_heads``/``kv_num_heads`` and the output packed back. Grouped-query attention repeats each K/V
head for its contiguous group of query heads. The additive bias combines a float mask (added), a
boolean mask (False -> -inf), the padding given by ``nonpad_kv_seqlen``, the bottom-right causal
frontier ``j <= i + offset`` and (opset 25) the sliding window. A query row with no allowed key
yields zeros, not NaN, both in Y and in the softmax debug output.

bfloat16 inputs keep bfloat16 for the element-wise steps (each rounds, like the op's function body
does); only the two matrix products accumulate in float32.
"""

from __future__ import annotations

import math

import numpy as np

from ... import dtypes
from ..registry import kernel
from .activation import row_max
from .cast import is_ml_dtype


def _work_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if is_ml_dtype(dtype) else dtype


def _matmul(a, b):
    """matmul keeping the operands' type; bfloat16 products accumulate in float32 (BLAS), then round."""
    if is_ml_dtype(a.dtype):
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return np.matmul(a, b)


def _to_heads(x, num_heads):
    """(B, S, H*D) -> (B, H, S, D); 4-D inputs are already in that layout."""
    if x.ndim == 4:
        return x
    batch, seq, hidden = x.shape
    return x.reshape(batch, seq, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def _repeat_kv(x, q_heads):
    """Share each K/V head with its contiguous group of query heads (GQA / MQA)."""
    groups = q_heads // x.shape[1]
    return x if groups == 1 else np.repeat(x, groups, axis=1)


def masked_softmax(scores):
    """Softmax over the last axis where a row of only -inf becomes a row of zeros."""
    peak = row_max(scores)
    peak = np.where(np.isneginf(peak), 0, peak)
    with np.errstate(all="ignore"):
        e = np.exp(scores - peak)
        total = np.sum(e, axis=-1, keepdims=True)
        return np.where(total > 0, e / np.where(total > 0, total, 1), 0).astype(scores.dtype)


#: the largest score exponentiated without subtracting a maximum: exp(60) ~ 1e26, so rows of up to
#: 1e12 keys sum without overflow in float32
SAFE_TOP = 60.0
#: the smallest row sum accepted without a per-row maximum: every row then holds a term of at least
#: ~exp(-57), a normal float32, beside which the terms that underflow weigh less than 1e-13
SAFE_SUM = 1e-25
_ONES: dict = {}


def softmax_product(s, v, product=None):
    """``softmax(s) @ v`` over the last axis of the float32/float64 scores ``s`` (a fresh contiguous
    array, overwritten), or None when a row needs its own maximum subtracted (``s`` is then spoiled:
    the caller computes it again and takes the per-row form).

    Softmax is invariant under subtracting any constant per row; subtracting nothing is exact in
    float arithmetic as long as no exponential overflows (the largest score at most 60) and every row
    keeps a normal-sized term (each row sum at least 1e-25): then one whole-array maximum replaces
    the per-row maximum and its broadcast subtraction (slow on short rows), the row sums are one
    matrix-vector product, and the division is applied to the product. A row fully masked (all
    -inf, or all the mask's large negative value) fails the second test. Future keys set to -inf
    (a causal frontier) are fine: each row keeps its own key.

    ``product(p, v)`` replaces ``np.matmul`` (grouped heads). (Writing the division straight into
    the merged heads' layout, a transposed view, was measured no faster than this contiguous division
    and the merge's copy: 1.0-1.04x.)"""
    n = s.shape[-1]
    flat = s.reshape(-1, n)
    top = np.maximum.reduce(flat, axis=None)
    if not top <= SAFE_TOP:  # (NaN fails too)
        return None
    np.exp(s, out=s)
    ones = _ONES.get((n, s.dtype))
    if ones is None:
        ones = _ONES[(n, s.dtype)] = np.ones(n, s.dtype)
    sums = np.matmul(flat, ones)
    if not np.minimum.reduce(sums, axis=None) >= SAFE_SUM:
        return None
    y = np.matmul(s, v) if product is None else product(s, v)
    if type(y) is not np.ndarray or y.shape[:-1] != s.shape[:-1]:
        return None
    y /= sums.reshape(s.shape[:-1] + (1,))
    return y


def _attention_bias(attn_mask, batch, q_len, total_len, past_len, nonpad_kv_seqlen, is_causal,
                    left_window, right_window, dtype):
    """The additive (B or 1, H or 1, Sq, T) bias, or None when nothing is masked."""
    bias = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.shape[-1] < total_len:  # a short key dimension is padded as "not attended"
            pad = [(0, 0)] * (mask.ndim - 1) + [(0, total_len - mask.shape[-1])]
            mask = np.pad(mask, pad, constant_values=False if mask.dtype == np.bool_ else -np.inf)
        if mask.dtype == np.bool_:
            bias = np.where(mask, 0, -np.inf).astype(dtype)
        else:
            bias = mask.astype(dtype)
        while bias.ndim < 4:
            bias = bias[np.newaxis]
    # Structural constraints on key index j for query i, per batch: (B, 1, Sq, T) boolean.
    key_index = np.arange(total_len).reshape(1, 1, 1, -1)
    query_index = np.arange(q_len).reshape(1, 1, -1, 1)
    if past_len:
        offset = np.full((batch, 1, 1, 1), past_len)
    elif nonpad_kv_seqlen is not None:
        offset = (np.asarray(nonpad_kv_seqlen, dtype=np.int64) - q_len).reshape(-1, 1, 1, 1)
    else:
        offset = np.zeros((batch, 1, 1, 1), np.int64)
    position = query_index + offset
    allowed = np.ones((batch, 1, q_len, total_len), np.bool_)
    if nonpad_kv_seqlen is not None:
        allowed &= key_index < np.asarray(nonpad_kv_seqlen, dtype=np.int64).reshape(-1, 1, 1, 1)
    if is_causal:
        allowed &= key_index <= position
    if left_window >= 0:
        allowed &= key_index >= position - left_window
    if right_window >= 0:
        allowed &= key_index <= position + right_window
    if not allowed.all():
        structural = np.where(allowed, 0, -np.inf).astype(dtype)
        bias = structural if bias is None else bias + structural
    return bias


def _attention(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *,
               is_causal=0, kv_num_heads=None, q_num_heads=None, qk_matmul_output_mode=0, scale=None,
               softcap=0.0, softmax_precision=None, left_window_size=-1, right_window_size=-1):
    out_dtype = q.dtype
    work = out_dtype
    packed = q.ndim == 3
    q4 = _to_heads(q, q_num_heads).astype(work, copy=False)
    k4 = _to_heads(k, kv_num_heads)
    v4 = _to_heads(v, kv_num_heads)
    if past_key is not None:
        k4 = np.concatenate([past_key, k4], axis=2)
        v4 = np.concatenate([past_value, v4], axis=2)
    present_key, present_value = k4, v4
    batch, heads, q_len, head_size = q4.shape
    total_len = k4.shape[2]
    past_len = 0 if past_key is None else past_key.shape[2]
    if scale is None:
        scale = 1.0 / math.sqrt(head_size)
    root = np.asarray(np.sqrt(scale)).astype(work)
    keys = _repeat_kv(k4.astype(work, copy=False), heads)
    values = _repeat_kv(v4.astype(work, copy=False), heads)
    # Q and K are both scaled by sqrt(scale) before the product, as the spec's diagram shows.
    scores = _matmul(q4 * root, np.swapaxes(keys * root, -1, -2))
    qk_output = scores
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
        if qk_matmul_output_mode == 1:
            qk_output = scores
    elif qk_matmul_output_mode == 1:
        qk_output = scores
    bias = _attention_bias(attn_mask, batch, q_len, total_len, past_len, nonpad_kv_seqlen, is_causal,
                           left_window_size, right_window_size, scores.dtype)
    if bias is not None:
        scores = scores + bias
    if qk_matmul_output_mode == 2:
        qk_output = scores
    soft_dtype = dtypes.from_enum(softmax_precision).np if softmax_precision else scores.dtype
    probs = masked_softmax(scores.astype(soft_dtype)).astype(scores.dtype)
    if qk_matmul_output_mode == 3:
        qk_output = probs
    y = _matmul(probs, values)
    if packed:
        y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, -1)
    return (np.asarray(y.astype(out_dtype)), present_key, present_value,
            np.asarray(qk_output.astype(out_dtype)))


@kernel("Attention", since=23)
def attention_23(q, k, v, attn_mask=None, past_key=None, past_value=None, **attrs):
    return _attention(q, k, v, attn_mask, past_key, past_value, None, **attrs)


@kernel("Attention", since=24)
def attention(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, **attrs):
    """Opset 24 adds ``nonpad_kv_seqlen``, opset 25 the window attributes (same computation)."""
    return _attention(q, k, v, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attrs)


# ------------------------------------------------------------------------------------ RoPE


@kernel("RotaryEmbedding", since=23)
def rotary_embedding(x, cos_cache, sin_cache, position_ids=None, interleaved=0, num_heads=0,
                     rotary_embedding_dim=0):
    """Rotate pairs of features by position-dependent angles (halves, or interleaved pairs)."""
    original_shape = x.shape
    if x.ndim == 4:  # (B, H, S, D) -> (B, S, H, D)
        data = x.transpose(0, 2, 1, 3)
    else:
        batch, seq, hidden = x.shape
        data = x.reshape(batch, seq, num_heads, hidden // num_heads)
    head_size = data.shape[-1]
    dim = rotary_embedding_dim or head_size
    if position_ids is not None:
        cos_cache = cos_cache[position_ids]
        sin_cache = sin_cache[position_ids]
    cos = cos_cache[:, :, np.newaxis, :]  # (B, S, 1, dim/2)
    sin = sin_cache[:, :, np.newaxis, :]
    rotated = data[..., :dim]
    if interleaved:
        x1, x2 = rotated[..., 0::2], rotated[..., 1::2]
    else:
        x1, x2 = rotated[..., : dim // 2], rotated[..., dim // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = np.stack([real, imag], axis=-1).reshape(rotated.shape)
    else:
        rotated = np.concatenate([real, imag], axis=-1)
    out = np.concatenate([rotated, data[..., dim:]], axis=-1).astype(x.dtype)
    if len(original_shape) == 4:
        return np.ascontiguousarray(out.transpose(0, 2, 1, 3))
    return out.reshape(original_shape)


# --------------------------------------------------------------------------- LinearAttention


@kernel("LinearAttention", since=27)
def linear_attention(query, key, value, past_state=None, decay=None, beta=None, *, q_num_heads,
                     kv_num_heads, scale=0.0, update_rule="gated_delta", chunk_size=64):
    """The recurrence run token by token (a loop over T, vectorized over batch and heads)."""
    out_dtype = query.dtype
    batch, steps, _ = query.shape
    d_k = query.shape[-1] // q_num_heads
    d_v = value.shape[-1] // kv_num_heads
    groups = q_num_heads // kv_num_heads
    q = query.astype(np.float32).reshape(batch, steps, kv_num_heads, groups, d_k)
    k = key.astype(np.float32).reshape(batch, steps, kv_num_heads, d_k)
    v = value.astype(np.float32).reshape(batch, steps, kv_num_heads, d_v)
    state_dtype = past_state.dtype if past_state is not None else out_dtype
    state = (past_state.astype(np.float32) if past_state is not None
             else np.zeros((batch, kv_num_heads, d_k, d_v), np.float32))
    if not scale:
        scale = 1.0 / math.sqrt(d_k)
    gated = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if gated:
        g = decay.astype(np.float32)
        # Per key dimension (B, T, H*d_k) scales state rows; per head (B, T, H) the whole state.
        g = g.reshape(batch, steps, kv_num_heads, d_k, 1) if g.shape[-1] == kv_num_heads * d_k \
            else g.reshape(batch, steps, kv_num_heads, 1, 1)
    if delta:
        b = beta.astype(np.float32).reshape(batch, steps, -1)
        b = np.broadcast_to(b, (batch, steps, kv_num_heads))[..., np.newaxis]  # (B, T, H, 1)
    outputs = np.empty((batch, steps, kv_num_heads, groups, d_v), np.float32)
    for t in range(steps):
        if gated:
            state = np.exp(g[:, t]) * state
        k_t, v_t = k[:, t], v[:, t]
        if delta:
            recalled = np.einsum("bhkv,bhk->bhv", state, k_t)  # S^T k
            v_t = b[:, t] * (v_t - recalled)
        state = state + k_t[..., :, np.newaxis] * v_t[..., np.newaxis, :]
        outputs[:, t] = scale * np.einsum("bhgk,bhkv->bhgv", q[:, t], state)
    output = outputs.reshape(batch, steps, q_num_heads * d_v).astype(out_dtype)
    return output, state.astype(state_dtype)


# ----------------------------------------------------------------------------- FlexAttention


@kernel("FlexAttention", since=1, domain="ai.onnx.preview", context=True)
def flex_attention(ctx, q, k, v, scale=None, score_mod=None, prob_mod=None, softmax_precision=None):
    """Scaled dot-product attention with optional score/probability modifier subgraphs."""
    if softmax_precision:
        soft = _work_dtype(dtypes.from_enum(softmax_precision).np)
    else:
        soft = np.dtype(np.float64) if q.dtype == np.float64 else np.dtype(np.float32)
    heads, head_size = q.shape[1], q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(head_size)
    keys = _repeat_kv(k.astype(soft), heads)
    values = _repeat_kv(v.astype(soft), heads)
    scores = (np.matmul(q.astype(soft), np.swapaxes(keys, -1, -2)) * scale).astype(soft)
    if score_mod is not None:
        scores = np.asarray(ctx.run_graph(score_mod, [scores])[0])
    probs = masked_softmax(scores)
    if prob_mod is not None:
        probs = np.asarray(ctx.run_graph(prob_mod, [probs])[0])
    return np.matmul(probs, values).astype(q.dtype)
