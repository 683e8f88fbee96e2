"""Rule ``shuffle_into_conv``: a channel shuffle after a prepared Conv (Reshape to (N, g, C/g, ...),
Transpose of axes 1 and 2, Reshape back: ShuffleNet) becomes part of the Conv
(:class:`~..kernels.conv_prepared.ShuffledConv`), whose matmul writes the channels in shuffled order.
Level 1.
"""

from __future__ import annotations

from collections import Counter

def _shuffles_into_convs(steps, keep, known):
    """PreparedConv -> Reshape -> Transpose -> Reshape chains (each value read only by the next
    step) with constant shapes become one :class:`ShuffledConv` step; whether the chain really is a
    channel shuffle is decided per input shape at run time (:class:`ChannelShuffle`)."""
    from ..kernels.conv_fused import ChannelShuffle
    from ..kernels.conv_prepared import PreparedConv, ShuffledConv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        conv = step[0]
        if type(conv) is not PreparedConv or out[i] is None:
            continue
        chain, name = [], step[2][0]
        for op in ("Reshape", "Transpose", "Reshape"):
            j = reader_of.get(name)
            if readers[name] != 1 or name in keep or j is None or out[j] is None:
                break
            nxt = out[j][0]
            fn, ins, outs, attrs, _, info, context = nxt
            if info.node.op_type != op or info.domain or context or len(outs) != 1 or ins[0] != name:
                break
            if op == "Reshape" and (len(ins) != 2 or known.get(ins[1]) is None or ins[1] == name):
                break
            if op == "Transpose" and len(ins) != 1:
                break
            chain.append((j, fn, known.get(ins[1]) if op == "Reshape" else None, attrs))
            name = outs[0]
        if len(chain) != 3:
            continue
        shuffle = ChannelShuffle([c[1:] for c in chain])
        fused = ShuffledConv(conv.w, conv.b, conv.attrs, conv.relu, shuffle)
        out[i] = ((fused,) + step[1:2] + out[chain[-1][0]][0][2:3] + step[3:], used)
        for j, *_ in chain:
            out[j] = None
    return [s for s in out if s is not None]


NAME = "shuffle_into_conv"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _shuffles_into_convs(steps, keep, known)
