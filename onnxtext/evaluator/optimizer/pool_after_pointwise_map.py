"""Rule ``pool_after_pointwise_map``: an ``AveragePool`` with unit strides followed by per-pixel linear
steps that narrow the channels runs after them.

The steps: pointwise Convs with constant weights (1x1 kernel, unit strides, no padding), inference
BatchNormalization, Mul/Add by a constant that is the same at every pixel (per channel or scalar),
each the only reader of the previous result (Inception's pool projections: a 3x3 average of 576
channels, a 1x1 Conv to 128, its BatchNormalization). Averaging commutes with them when each window
is divided by the number of taps it sums (``count_include_pad`` 0, or no padding), a per-channel
shift included, so the pool averages the narrower result; the Conv, now reading the pool's input,
still gets its BatchNormalization folded in by rule ``conv_affine``, which runs afterwards. A
strided pool goes the other way (rule ``pool_before_pointwise_conv``). Level 2 (the sums are
reassociated).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .pool_before_pointwise_conv import whole_windows

NAME = "pool_after_pointwise_map"
LEVEL = 2


def apply(raw_steps: list, keep: set, known) -> list:
    """``raw_steps`` with each such pool moved after its chain (see the module docstring)."""
    from ..kernels.pool import average_pool

    readers = Counter(n for _, used in raw_steps for n in used)
    reader_of = {}
    for i, (_, used) in enumerate(raw_steps):
        for n in used:
            reader_of.setdefault(n, i)
    steps = list(raw_steps)
    after: dict[int, tuple] = {}  # index of a chain's last step -> the moved pool step
    for j, (pool, _) in enumerate(raw_steps):
        fn, ins, outs, attrs, _, info, context = pool
        if fn is not average_pool or context or len(ins) != 1 or len(outs) != 1 or steps[j] is None or \
                not attrs.get("kernel_shape") or any(s != 1 for s in attrs.get("strides") or ()) or \
                (attrs.get("count_include_pad", 0) and not whole_windows(attrs)):
            continue
        chain, name, channels = [], outs[0], None
        while readers[name] == 1 and name not in keep and reader_of.get(name, -1) > j:
            k = reader_of[name]
            if steps[k] is None or k in after:
                break
            change = _linear_step(steps[k][0], name, known, len(attrs["kernel_shape"]))
            if change is None:
                break
            if change != (None, None):  # a Conv: channels before the first one, after the last one
                channels = (change[0] if channels is None else channels[0], change[1])
            chain.append(k)
            name = steps[k][0][2][0]
        if not chain or channels is None or channels[1] >= channels[0]:
            continue  # nothing gained: the pool would average as many channels or more
        first, last = chain[0], chain[-1]
        step, used = steps[first]
        step = (step[0], tuple(ins[0] if n == outs[0] else n for n in step[1])) + step[2:]
        steps[first] = (step, [ins[0] if n == outs[0] else n for n in used])
        final = steps[last][0][2][0]
        unpooled = final + "\x00unpooled"
        steps[last] = (steps[last][0][:2] + ((unpooled,),) + steps[last][0][3:], steps[last][1])
        after[last] = ((fn, (unpooled,), (final,), attrs, (), info, context), [unpooled])
        steps[j] = None
    result = []
    for i, entry in enumerate(steps):
        if entry is not None:
            result.append(entry)
        if i in after:
            result.append(after[i])
    return result


def _linear_step(step, data, known, nd):
    """How a step reading ``data`` is a per-pixel linear map: ``(in, out)`` channels of a pointwise
    Conv, ``(None, None)`` for a per-channel affine step; None when it is neither."""
    fn, ins, outs, attrs, _, info, context = step
    op = info.node.op_type
    if info.domain or len(outs) != 1 or not ins or ins[0] != data and op not in ("Mul", "Add"):
        return None
    if op == "BatchNormalization":  # (a context kernel: it reads how many outputs the node has)
        return (None, None) if not attrs.get("training_mode", 0) and len(info.node.output) == 1 else None
    if context:
        return None
    if op == "Conv":
        w = known.get(ins[1]) if len(ins) > 1 else None
        bias_ok = len(ins) < 3 or not ins[2] or known.get(ins[2]) is not None
        if w is None or w.dtype not in (np.float32, np.float64) or w.ndim != nd + 2 or not bias_ok or \
                any(k != 1 for k in w.shape[2:]) or any(s != 1 for s in attrs.get("strides") or ()) or \
                any(attrs.get("pads") or ()) or attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            return None
        return w.shape[1] * attrs.get("group", 1), w.shape[0]
    if op in ("Mul", "Add") and len(ins) == 2 and data in ins and not attrs.get("broadcast", 0):
        c = known.get(ins[1] if ins[0] == data else ins[0])
        if isinstance(c, np.ndarray) and c.dtype.kind == "f" and c.ndim <= nd + 2 and \
                (c.size == 1 or (c.ndim > nd and all(d == 1 for d in c.shape[c.ndim - nd:]))):
            return None, None
    return None
