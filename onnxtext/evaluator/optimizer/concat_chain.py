"""Rule ``concat_chain``: chains of Concats each extending the previous result (DenseNet's dense
blocks) share one buffer per run instead of copying the growing prefix at every step. Level 1."""

from __future__ import annotations

from ..steps import UNUSED

NAME = "concat_chain"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return chain_concats(steps)


def chain_concats(raw_steps: list) -> list:
    """Concat steps whose first input is the result of the previous such step (and of no other
    extending step) become the links of one :class:`~..kernels.shape.ConcatChain`, sharing a buffer
    instead of copying the growing prefix at every step (DenseNet's dense blocks). A step the fusion
    pass made a :class:`~..kernels.conv_fused.ConcatInto` keeps computing its Convs straight into their slices."""
    from ..kernels.conv_fused import ConcatInto
    from ..kernels.shape import ConcatChain, ConcatLink, concat

    def candidate(step):
        """(axis, parts) of a Concat step that can be a link, else None."""
        fn, ins, outs, attrs, _, _, context = step
        if context or len(ins) < 2 or len(outs) != 1 or outs[0] == UNUSED or not all(ins):
            return None
        if fn is concat:
            return attrs.get("axis", 1), None
        # (read defensively: a ConcatInto without these attributes simply stays what it is)
        parts, fn_attrs = getattr(fn, "parts", None), getattr(fn, "attrs", None)
        if type(fn) is ConcatInto and getattr(fn, "relu", True) is False and getattr(fn, "concat", None) is concat \
                and parts and parts[0] is None and isinstance(fn_attrs, dict) and \
                all(p is None or callable(getattr(p, "output_shape", None)) for p in parts):
            return fn_attrs.get("axis", 1), list(parts)
        return None

    chains = {}  # output name -> (first step index, position)
    extended = set()
    members: dict[int, list[int]] = {}
    found = {}
    for i, (step, _) in enumerate(raw_steps):
        found[i] = c = candidate(step)
        if c is None:
            continue
        ins, outs = step[1], step[2]
        prev = chains.get(ins[0])
        if prev is not None and ins[0] not in extended and found[prev[0]][0] == c[0]:
            extended.add(ins[0])
            chains[outs[0]] = (prev[0], prev[1] + 1)
            members[prev[0]].append(i)
        else:
            chains[outs[0]] = (i, 0)
            members[i] = [i]
    raw_steps = list(raw_steps)
    for head, indices in members.items():
        if len(indices) < 2:
            continue  # a lone Concat gains nothing
        chain = ConcatChain(found[head][0])
        for position, i in enumerate(indices):
            step, used = raw_steps[i]
            link = ConcatLink(chain, position, step[0], step[3], found[i][1])
            raw_steps[i] = ((link, step[1], step[2], {}) + step[4:], used)
    return raw_steps
