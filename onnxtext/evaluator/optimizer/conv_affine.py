"""Rule ``fold_affine_and_relu``: per-channel affine chains folded, Relus run in place.

* Conv followed by inference BatchNormalization, and by Mul/Add with constant per-channel operands,
  becomes ONE Conv with folded weights and bias (``W' = W * f``, ``B' = B * f + s``).
* A BatchNormalization that does not follow a Conv (DenseNet's Concat -> BN -> Mul -> Add), with the
  Mul/Add after it, becomes one :class:`~..fused.affine.FusedAffine` step.
* A Relu whose input is produced by a step that returns a fresh array (Conv, the fused steps, Add,
  Sum, Concat, Gemm...) and read by nothing else runs in place inside the producing step
  (:class:`~..fused.affine.InPlaceRelu`).

A fold only applies when the intermediate value has exactly one reader and is not an output (nor a
value kept for a subgraph), and when the operands it folds are constants. Level 2 (folded weights
round differently).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..fused.affine import _FLOATS, FusedAffine, InPlaceRelu

_FRESH = {"Conv", "Add", "Sub", "Mul", "Div", "Concat", "Gemm", "MatMul", "BatchNormalization"}


def fold_pairs(raw_steps: list, keep: set, known) -> list:
    """``raw_steps`` (a list of ``(step, used names)``) with Conv/BatchNormalization + per-channel
    Mul/Add folded and Relus run in place in their producers (the first three bullets above)."""
    readers = Counter(n for _, used in raw_steps for n in used)
    producer: dict[str, int] = {}
    steps = list(raw_steps)
    for i, (step, used) in enumerate(raw_steps):
        j = _single_producer(step, producer, readers, keep, known)
        fused = _fuse_pair(steps[j][0], step, known) if j is not None else None
        if fused is None:
            for n in step[2]:
                producer[n] = i
            continue
        steps[j] = (fused, [n for n in fused[1] if n])
        steps[i] = None
        for n in step[2]:
            producer[n] = j
    return [s for s in steps if s is not None]


def _single_producer(step, producer, readers, keep, known):
    """Index of the step computing this step's data input, when this step is its only reader."""
    op, domain = step[5].node.op_type, step[5].domain
    if domain or op not in ("BatchNormalization", "Mul", "Add", "Relu") or not step[1]:
        return None
    ins = step[1]
    data = ins[0]
    if op in ("Mul", "Add") and len(ins) == 2 and ins[0] in known and ins[1] not in known:
        data = ins[1]
    if data not in producer or readers[data] != 1 or data in keep:
        return None
    return producer[data]


def _fuse_pair(first, second, known):
    """One step doing ``first`` then ``second`` (second reads first's only output), or None."""
    op1, op2 = first[5].node.op_type, second[5].node.op_type
    if first[5].domain or len(first[2]) != 1 or isinstance(first[0], InPlaceRelu):
        return None
    if op2 == "Relu":
        if isinstance(first[0], FusedAffine):
            first[0].relu = True
            return first[:2] + second[2:3] + first[3:]
        if op1 in _FRESH or (op1 == "Sum" and len(first[1]) >= 2):
            return (InPlaceRelu(first[0]),) + first[1:2] + second[2:3] + first[3:]
        return None
    affine = _channel_affine(second, known)
    if affine is None:
        return None
    if isinstance(first[0], FusedAffine):
        return first[:2] + second[2:3] + first[3:] if first[0].compose(affine, second, known) else None
    if op1 == "Conv":
        return _fold_into_conv(first, second, affine, known)
    if op1 == "BatchNormalization":
        base = _channel_affine(first, known)
        if base is None:
            return None
        fused = FusedAffine(base, first, known)
        if not fused.compose(affine, second, known):
            return None
        return (fused, first[1][:1], second[2], {}, (), first[5], False)
    return None


def _channel_affine(step, known):
    """``(factor, shift, rank)`` when ``step`` computes ``x * factor + shift`` per channel (axis 1)
    with constant 1-D ``factor``/``shift`` (or size-1 ones); ``rank`` is the rank of x this requires
    (None: any rank >= 2). None when the step is not such an operation."""
    node, ins, attrs = step[5].node, step[1], step[3]
    op = node.op_type
    if op == "BatchNormalization":
        if len([o for o in node.output if o]) != 1 or attrs.get("training_mode", 0) or len(ins) != 5:
            return None
        params = [known.get(n) for n in ins[1:]]
        if any(p is None or p.ndim != 1 or p.dtype not in _FLOATS for p in params):
            return None
        scale, bias, mean, var = (p.astype(np.float64) for p in params)
        factor = scale / np.sqrt(var + attrs["epsilon"])
        return factor, bias - mean * factor, None
    if op not in ("Mul", "Add") or len(ins) != 2 or attrs.get("broadcast", 0):
        return None
    c = known.get(ins[1]) if ins[1] in known else known.get(ins[0])
    if not isinstance(c, np.ndarray) or c.dtype not in _FLOATS:
        return None
    rank = None
    if c.size == 1:
        values = c.reshape(1).astype(np.float64)
        if c.ndim > 2:
            rank = c.ndim  # a (1, 1, 1) constant still raises the result's rank to its own
    elif c.ndim >= 2 and all(d == 1 for d in c.shape[1:]):
        values, rank = c.reshape(-1).astype(np.float64), c.ndim + 1  # (C, 1, 1) against (N, C, H, W)
    elif c.ndim >= 3 and c.shape[0] == 1 and all(d == 1 for d in c.shape[2:]):
        values, rank = c.reshape(-1).astype(np.float64), c.ndim  # (1, C, 1, 1)
    else:
        return None
    if op == "Mul":
        return values, np.zeros_like(values), rank
    return np.ones_like(values), values, rank


def _fold_into_conv(conv, after, affine, known):
    """The Conv step with ``after`` (a per-channel affine op) folded into its weights and bias."""
    factor, shift, rank = affine
    ins = conv[1]
    w = known.get(ins[1]) if len(ins) > 1 else None
    has_bias = len(ins) > 2 and ins[2]
    b = known.get(ins[2]) if has_bias else None
    if w is None or w.dtype not in _FLOATS or (has_bias and (b is None or b.dtype != w.dtype)):
        return None
    m = w.shape[0]
    if (rank is not None and rank != w.ndim) or factor.size not in (1, m) or w.ndim < 3:
        return None
    f = np.broadcast_to(factor, (m,))
    new_w = (w.astype(np.float64) * f.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
    base = np.zeros(m) if b is None else b.astype(np.float64)
    new_b = (base * f + shift).astype(w.dtype)
    w_name, b_name = after[2][0] + "\x00W", after[2][0] + "\x00B"
    known.add(w_name, new_w)
    known.add(b_name, new_b)
    return (conv[0], (ins[0], w_name, b_name)) + after[2:3] + conv[3:]


NAME = "fold_affine_and_relu"
LEVEL = 2


def apply(steps: list, keep: set, known) -> list:
    return fold_pairs(steps, keep, known)
