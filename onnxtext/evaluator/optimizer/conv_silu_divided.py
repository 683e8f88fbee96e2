"""Rule ``conv_silu_divided``: the SiLU of an :class:`~..fused.conv_activation.ActivatedConv` (rule
``conv_activation``: YOLOv5/v8's ``Conv -> Sigmoid -> Mul``) computed as ``y / (1 + exp(-y))``, four
passes over the block instead of five (a :class:`~..fused.conv_activation.DividedSiLUConv` step).

Level 2: the quotient rounds once where the nodes' ``y * (1 / (1 + exp(-y)))`` rounds twice, so results
differ from the nodes' by at most one ulp (the quotient is the closer one). Runs after
``conv_activation`` and before ``convs_into_concat``, which takes the step into a Concat's slice as it is.
"""

from __future__ import annotations

from ..fused.conv_activation import ActivatedConv, DividedSiLUConv, InPlaceSiLU

NAME = "conv_silu_divided"
LEVEL = 2


def apply(steps: list, keep: set, known) -> list:
    out = list(steps)
    changed = False
    for i, (st, used) in enumerate(steps):
        fn = st[0]
        if type(fn) is ActivatedConv and type(fn.activation) is InPlaceSiLU:
            out[i] = ((DividedSiLUConv(fn.conv),) + st[1:], used)
            changed = True
    return out if changed else steps
