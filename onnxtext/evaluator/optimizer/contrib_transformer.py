"""Rule ``contrib_transformer``: the com.microsoft operators onnxruntime's transformer optimizer writes
for every BERT/GPT-2-style layer, prepared once when their weights are constants:

* ``Attention`` (packed Q/K/V weights, optional bias and ``mask_index``; no past, attention bias or
  past length, its ``present`` output not read) becomes a
  :class:`~..fused.attention.PackedQkvAttention` step: weights converted to float32 once, the bias
  added as a tile of the projection's shape, no per-call context;
* ``SkipLayerNormalization`` / ``SkipSimplifiedLayerNormalization`` whose gamma, beta and bias are
  constants of one float type and whose mean and inverse-deviation outputs are not read becomes a
  :class:`~..fused.normalization.PreparedSkipNorm` step: gamma, beta and bias repeated to the input's
  shape once per shape (numpy's broadcast along rows of 64 costs twice a same-shape pass), the sum
  output only when something reads it.

Both compute the kernels' own values (level 1); anything else about the inputs (another type or
rank) runs the original step.
"""

from __future__ import annotations

import numpy as np

from ..fused.attention import PackedQkvAttention
from ..fused.normalization import PreparedEmbedNorm, PreparedSkipNorm
from ..fused.original import OriginalSteps
from .graph import GraphView

NAME = "contrib_transformer"
LEVEL = 1
MS = "com.microsoft"


def _kernels():
    from ..kernels.contrib.attention import attention
    from ..kernels.contrib.normalization import (embed_layer_normalization, skip_layer_normalization,
                                                 skip_simplified_layer_normalization)

    return attention, skip_layer_normalization, skip_simplified_layer_normalization, embed_layer_normalization


def _unread(view: GraphView, name: str) -> bool:
    return not name or (view.readers[name] == 0 and name not in view.keep)


def _float_constants(values) -> bool:
    return all(v is None or (isinstance(v, np.ndarray) and v.dtype in (np.float32, np.float16)) for v in values)


def _attention(view, step, kernel):
    fn, ins, outs, attrs, free, info, context = step[:7]
    ins = tuple(ins) + ("",) * (7 - len(ins))
    x, w, b, mask = ins[:4]
    if any(ins[4:]) or len(outs) > 2 or (len(outs) == 2 and not _unread(view, outs[1])) or \
            attrs.get("do_rotary", 0) or attrs.get("past_present_share_buffer", 0) or "num_heads" not in attrs:
        return None
    weights, bias = view.constant(w), view.constant(b) if b else None
    if weights is None or (b and bias is None) or not _float_constants((weights, bias)) or weights.ndim != 2 or \
            (bias is not None and bias.shape != (weights.shape[1],)):
        return None
    inputs = (x, mask) if mask else (x,)
    fallback = OriginalSteps([step], inputs, outs[:1], {n: view.constant(n) for n in (w, b) if n})
    run = PackedQkvAttention(weights, bias, dict(attrs), fallback)
    return (run, inputs, outs[:1], {}, free, info, False), list(inputs)


def _skip_norm(view, step, simplified):
    fn, ins, outs, attrs, free, info, context = step[:7]
    ins = tuple(ins) + ("",) * (5 - len(ins))
    if simplified:
        x, skip, g, b, bias = ins[0], ins[1], ins[2], "", ins[3]
    else:
        x, skip, g, b, bias = ins[:5]
    outs = tuple(outs) + ("",) * (4 - len(outs))
    if not _unread(view, outs[1]) or not _unread(view, outs[2]) or not outs[0]:
        return None
    gamma = view.constant(g)
    beta, bias_value = (view.constant(b) if b else None), (view.constant(bias) if bias else None)
    if gamma is None or (b and beta is None) or (bias and bias_value is None) or \
            not _float_constants((gamma, beta, bias_value)) or \
            len({v.dtype for v in (gamma, beta, bias_value) if v is not None}) != 1 or \
            any(v is not None and v.ndim != 1 for v in (gamma, beta, bias_value)):
        return None
    with_sum = not _unread(view, outs[3])
    new_outs = (outs[0], outs[3]) if with_sum else (outs[0],)
    fallback = OriginalSteps([step], (x, skip), new_outs, {n: view.constant(n) for n in (g, b, bias) if n})
    run = PreparedSkipNorm(attrs.get("epsilon", 1e-12), gamma, beta, bias_value, simplified, gamma.dtype, with_sum,
                           fallback)
    return (run, (x, skip), new_outs, {}, free, info, False), [x, skip]


_EMBED_INPUTS = ("input_ids", "segment_ids", "word", "position", "segment", "gamma", "beta", "mask", "position_ids")


def _embed_norm(view, step):
    fn, ins, outs, attrs, free, info, context = step[:7]
    names = dict(zip(_EMBED_INPUTS, tuple(ins) + ("",) * (9 - len(ins))))
    outs = tuple(outs) + ("",) * (3 - len(outs))
    if not outs[0] or not _unread(view, outs[2]) or names["position_ids"]:
        return None
    tables = [view.constant(names[k]) if names[k] else None for k in ("word", "position", "segment", "gamma", "beta")]
    word, position, segment, gamma, beta = tables
    if any(names[k] and v is None for k, v in zip(("word", "position", "segment", "gamma", "beta"), tables)) or \
            word is None or position is None or gamma is None or \
            any(v is not None and v.dtype != np.float32 for v in tables) or word.ndim != 2 or position.ndim != 2 or \
            (segment is not None and segment.ndim != 2) or gamma.ndim != 1 or (beta is not None and beta.ndim != 1) or \
            len({v.shape[-1] for v in tables if v is not None}) != 1 or (names["segment_ids"] and segment is None):
        return None
    taken = [k for k in ("segment_ids", "mask") if names[k]]
    inputs = (names["input_ids"],) + tuple(names[k] for k in taken)
    new_outs = (outs[0], outs[1]) if outs[1] and not _unread(view, outs[1]) else (outs[0],)
    constants = {names[k]: view.constant(names[k]) for k in ("word", "position", "segment", "gamma", "beta") if names[k]}
    fallback = OriginalSteps([step], inputs, new_outs, constants)
    run = PreparedEmbedNorm(word, position, segment, gamma, beta, attrs.get("epsilon", 1e-12),
                            attrs.get("mask_index_type", 1), taken, len(new_outs) == 2, fallback)
    return (run, inputs, new_outs, {}, free, info, False), list(inputs)


def apply(steps: list, keep: set, known) -> list:
    attention, skip_norm, skip_simplified, embed_norm = _kernels()
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        step = view.step(i)
        if step is None or step[5] is None or step[5].domain != MS:
            continue
        fn = step[0]
        if fn is attention:
            new = _attention(view, step, fn)
        elif fn is skip_norm or fn is skip_simplified:
            new = _skip_norm(view, step, fn is skip_simplified)
        elif fn is embed_norm:
            new = _embed_norm(view, step)
        else:
            continue
        if new is not None:
            view.replace(i, *new)
            changed = True
    return view.entries() if changed else steps
