"""Rule ``conv_stem``: a stride-2 prepared Conv (with its Relu or not) read only by a 3x3 stride-2
MaxPool (the CNN stem) becomes one :class:`~..kernels.conv_stem.ConvStem` step, which computes the
conv directly in the pool's stride phases. Level 1.
"""

from __future__ import annotations

from collections import Counter

from .relu_after_max_pool import _pool_windows_touch_input

def _stems(steps, keep, known=None):
    """A prepared float32 Conv (with its fused Relu or not) whose result only a MaxPool (without
    Indices output) reads becomes one :class:`~.kernels.conv_stem.ConvStem` step at the Conv's
    place when the attributes make a stem (stride-2 conv, 3x3 stride-2 pool, see ``is_stem``); the
    rest of the geometry is checked per input shape, the separate kernels running otherwise."""
    from ..kernels.conv_prepared import PreparedConv
    from ..kernels.conv_stem import ConvStem, is_stem
    from ..kernels.pool import max_pool

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        conv = step[0]
        if type(conv) is not PreparedConv:
            continue
        y = step[2][0]
        j = reader_of.get(y)
        if readers[y] != 1 or y in keep or j is None or j <= i or out[j] is None:
            continue
        pool = out[j][0]
        if pool[0] is not max_pool or pool[5].domain or pool[1] != (y,) or len(pool[2]) != 1 or \
                not is_stem(conv, pool[3]):
            continue
        relu = conv.relu
        if relu:  # the Relu runs on the pooled result (a quarter of the elements), when that commutes
            if not _pool_windows_touch_input(pool[3]):
                continue
            conv = PreparedConv(conv.w, conv.b, conv.attrs)
        fused = ConvStem(conv, relu, max_pool, pool[3], pool[5])
        out[i] = ((fused, step[1], pool[2], {}, (), step[5], False), list(used))
        out[j] = None
    return [s for s in out if s is not None]


NAME = "conv_stem"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _stems(steps, keep)
