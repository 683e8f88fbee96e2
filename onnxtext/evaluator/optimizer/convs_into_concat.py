"""Rule ``convs_into_concat``: a Concat along channels of prepared Conv results (SqueezeNet's fire
modules, Inception's branches) computes those Convs itself, each writing straight into its slice of
the Concat result (``kernels.conv_fused.ConcatInto``). Level 1.
"""

from __future__ import annotations

from collections import Counter

from ..fused.affine import InPlaceRelu

def _convs_into_concat(steps, keep, known=None):
    """Concat steps along axis 1 whose inputs include prepared Conv results read by nothing else
    become :class:`ConcatInto` steps that run those Convs (the Conv steps are removed). The Convs
    run later than before, at the Concat, which is safe: their inputs are still there (values are
    released after their last reader, computed after fusion) and nothing else reads their results."""
    from ..fused.conv_activation import ActivatedConv, DividedSiLUConv
    from ..kernels.conv_fused import ConcatInto, DepthwisePointwise
    from ..kernels.conv_prepared import PreparedConv

    readers = Counter(n for _, used in steps for n in used)
    producer = {n: i for i, (step, _) in enumerate(steps) for n in step[2]}
    out = list(steps)
    for j, (step, used) in enumerate(steps):
        fn, ins, outs, attrs, free, info, context = step
        relu = isinstance(fn, InPlaceRelu)
        if info.node.op_type != "Concat" or info.domain or context or len(outs) != 1 or len(ins) < 2 or \
                (relu and fn.fn is not _concat_kernel()) or (not relu and fn is not _concat_kernel()):
            continue
        parts, args, taken = [], [], []
        for name in ins:
            k = producer.get(name)
            conv = out[k][0][0] if k is not None and out[k] is not None else None
            if type(conv) in (PreparedConv, DepthwisePointwise, ActivatedConv, DividedSiLUConv) and readers[name] == 1 and name not in keep and \
                    attrs.get("axis") in (1, 1 - conv.w.ndim):
                parts.append(conv)
                args.append(out[k][0][1][0])
                taken.append(k)
            else:
                parts.append(None)
                args.append(name)
        if not taken:
            continue
        for k in taken:
            out[k] = None
        fused = ConcatInto(parts, fn.fn if relu else fn, attrs, relu)
        out[j] = ((fused, tuple(args), outs, {}, free, info, False), [a for a in args if a])
    return [s for s in out if s is not None]


def _concat_kernel():
    from ..kernels.shape import concat

    return concat


NAME = "convs_into_concat"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _convs_into_concat(steps, keep)
