"""Rule ``pool_before_pointwise_conv``: ``AveragePool(Conv(x))`` runs as ``Conv(AveragePool(x))`` when
the Conv is pointwise (1x1 kernel, unit strides, no padding, no fused Relu: a per-pixel linear map)
and every pooling window is whole (no padding, no ceil mode, no dilation). Averaging commutes with a
per-pixel linear map, bias included, and the Conv then runs on the pooled, smaller image (DenseNet's
transition layers: 4x fewer multiply-adds for a 2x2 pool). Only strided pools: they shrink the image
(a pool that does not goes the other way: rule ``pool_after_pointwise_map``). Level 2 (the sums are
reassociated).
"""

from __future__ import annotations

from collections import Counter

from .graph import is_pointwise_conv

NAME = "pool_before_pointwise_conv"
LEVEL = 2


def whole_windows(attrs) -> bool:
    """Whether every AveragePool window lies inside the image whatever its size."""
    return attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID") and not any(attrs.get("pads") or ()) and \
        not attrs.get("ceil_mode", 0) and all(d == 1 for d in attrs.get("dilations") or ()) and \
        bool(attrs.get("kernel_shape"))


def apply(raw_steps: list, keep: set, known) -> list:
    """Each strided whole-window AveragePool whose input is only a pointwise PreparedConv's output
    swaps places with that Conv (see the module docstring)."""
    from ..kernels.conv_prepared import PreparedConv
    from ..kernels.pool import average_pool

    readers = Counter(n for _, used in raw_steps for n in used)
    producer = {n: i for i, (step, _) in enumerate(raw_steps) for n in step[2]}
    steps = list(raw_steps)
    for j, (pool, _) in enumerate(raw_steps):
        fn, ins, outs, attrs, _, _, context = pool
        if fn is not average_pool or context or len(ins) != 1 or len(outs) != 1 or not whole_windows(attrs) or \
                all(s == 1 for s in attrs.get("strides") or ()):
            continue
        i = producer.get(ins[0])
        if i is None or readers[ins[0]] != 1 or ins[0] in keep:
            continue
        conv = steps[i][0]
        if type(conv[0]) is not PreparedConv or not is_pointwise_conv(conv[0]) or len(conv[1]) != 1:
            continue
        pooled = ins[0] + "\x00pooled"
        steps[i] = ((fn, conv[1], (pooled,), attrs, (), pool[5], False), [conv[1][0]])
        steps[j] = ((conv[0], (pooled,), outs, {}, (), conv[5], False), [pooled])
        producer[pooled] = i
    return steps
