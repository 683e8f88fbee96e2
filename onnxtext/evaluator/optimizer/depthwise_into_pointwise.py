"""Rule ``depthwise_into_pointwise``: a depthwise prepared Conv writes straight into the column buffer
of the pointwise prepared Conv that is its only reader (``kernels.conv_fused.DepthwisePointwise``).
Level 1.
"""

from __future__ import annotations

from collections import Counter

def _depthwise_into_pointwise_convs(steps, keep, known=None):
    """A depthwise prepared Conv without bias or Relu (one input channel per group, as many outputs
    as inputs) whose only reader is a pointwise prepared Conv becomes, with it, one
    :class:`~.kernels.conv_fused.DepthwisePointwise` step at the pointwise Conv's place."""
    from ..kernels.conv_fused import DepthwisePointwise
    from ..kernels.conv_prepared import PreparedConv
    from .graph import is_pointwise_conv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        dw = step[0]
        if type(dw) is not PreparedConv or dw.relu or dw.b is not None or dw.w.ndim < 3 or \
                dw.w.shape[1] != 1 or dw.attrs.get("group", 1) != dw.w.shape[0] or dw.w.shape[0] < 2:
            continue
        name = step[2][0]
        j = reader_of.get(name)
        if readers[name] != 1 or name in keep or j is None or j <= i or out[j] is None:
            continue
        pw = out[j][0][0]
        if type(pw) is not PreparedConv or out[j][0][1] != (name,) or pw.w.dtype != dw.w.dtype or \
                pw.w.ndim != dw.w.ndim or not is_pointwise_conv(PreparedConv(pw.w, None, pw.attrs)):
            continue
        out[j] = ((DepthwisePointwise(dw, pw), step[1]) + out[j][0][2:], list(used))
        out[i] = None
    return [s for s in out if s is not None]


NAME = "depthwise_into_pointwise"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _depthwise_into_pointwise_convs(steps, keep)
