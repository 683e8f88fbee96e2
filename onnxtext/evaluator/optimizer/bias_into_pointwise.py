"""Rule ``bias_into_pointwise``: a prepared Conv's bias moved into the pointwise Conv that is its only
reader. Level 2.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

def _biases_into_pointwise_convs(steps, keep, known=None):
    """A prepared Conv without Relu whose only reader is a pointwise prepared Conv (1x1 kernel, unit
    strides, no padding) hands its bias to that Conv: ``W2 (y + b1) + b2 = W2 y + (W2 b1 + b2)``.

    Its own bias is a pass over its result, broadcast per channel (a depthwise Conv adds it while
    cropping its computed rows: measured 2-3x the cost of the plain crop copy on ShuffleNet's
    layers), while the pointwise Conv adds a bias anyway (ShuffleNet's depthwise -> grouped 1x1).
    """
    from ..kernels.conv_prepared import PreparedConv
    from .graph import is_pointwise_conv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        first = out[i][0][0]
        if type(first) is not PreparedConv or first.relu or first.b is None:
            continue
        name = step[2][0]
        j = reader_of.get(name)
        if readers[name] != 1 or name in keep or j is None or j <= i:
            continue
        second = out[j][0][0]
        if type(second) is not PreparedConv or out[j][0][1] != (name,) or \
                not is_pointwise_conv(PreparedConv(second.w, None, second.attrs)) or second.w.dtype != first.w.dtype:
            continue
        w2, group = second.w, second.attrs.get("group", 1)
        m2, cg = w2.shape[:2]
        if cg * group != first.w.shape[0] or m2 % group:
            continue
        # output m of the second Conv (group m // (m2 / group)) reads input channels g * cg ... g * cg + cg
        b1 = first.b.astype(np.float64).reshape(group, 1, cg)
        moved = (w2.reshape(group, m2 // group, cg).astype(np.float64) * b1).sum(axis=2).reshape(m2)
        b2 = moved if second.b is None else moved + second.b
        out[i] = ((PreparedConv(first.w, None, first.attrs),) + out[i][0][1:], out[i][1])
        out[j] = ((PreparedConv(w2, b2.astype(w2.dtype), second.attrs, second.relu),) + out[j][0][1:], out[j][1])
    return out


NAME = "bias_into_pointwise"
LEVEL = 2


def apply(steps: list, keep: set, known) -> list:
    return _biases_into_pointwise_convs(steps, keep)
