"""Rule ``relu_after_max_pool``: a Relu fused into a step whose result only a MaxPool reads moves
after the MaxPool (``max`` and ``relu`` commute when every window holds input): it then runs on the
pooled result. Level 1.
"""

from __future__ import annotations

from collections import Counter

from ..fused.affine import InPlaceRelu

def _relus_after_max_pools(steps, keep, known=None):
    """Move the Relu fused into a producer after the MaxPool that is its only reader."""
    from ..kernels.conv_fused import ConcatInto
    from ..kernels.conv_prepared import PreparedConv
    from ..kernels.pool import max_pool

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        fn = step[0]
        if len(step[2]) != 1 or step[2][0] in keep or readers[step[2][0]] != 1:
            continue
        j = reader_of.get(step[2][0])
        pool = out[j][0] if j is not None else None
        if pool is None or pool[0] is not max_pool or pool[5].domain or len(pool[2]) != 1 or \
                not _pool_windows_touch_input(pool[3]):
            continue
        if isinstance(fn, PreparedConv) and fn.relu:
            fn.relu = False  # not called yet: its closures read the flag when first prepared
        elif isinstance(fn, ConcatInto) and (fn.relu or (all(isinstance(p, PreparedConv) and p.relu
                                                             for p in fn.parts))):
            fn.relu = False
            for p in fn.parts:
                p.relu = False
        elif isinstance(fn, InPlaceRelu):
            out[i] = ((fn.fn,) + step[1:], used)
        else:
            continue
        out[j] = ((InPlaceRelu(pool[0]),) + pool[1:], out[j][1])
    return out


def _pool_windows_touch_input(attrs):
    """True when every pooling window holds at least one input element (padding narrower than
    the window): then the Relu of the max is the max of the Relus."""
    pads, kernel = attrs.get("pads"), attrs.get("kernel_shape")
    if not pads or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return True
    if not kernel:
        return False
    dilations = attrs.get("dilations") or [1] * len(kernel)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    return all(p < e for p, e in zip(pads, extents + extents))


NAME = "relu_after_max_pool"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _relus_after_max_pools(steps, keep)
