"""Rule ``conv_activation``: a prepared Conv whose only reader is HardSwish, HardSigmoid or Clip with
constant bounds (ReLU6), or whose two readers are ``s = Sigmoid(y)`` and ``Mul(y, s)`` (SiLU), becomes one :class:`~..fused.conv_activation.ActivatedConv` step, which
applies the activation to the conv's fresh result in place, block by block, with the operator
kernel's own arithmetic. Level 1 (the results are identical). Relu has its own fusion (rule
``fold_affine_and_relu``).
"""

from __future__ import annotations

import numpy as np

from .graph import GraphView

NAME = "conv_activation"
LEVEL = 1


def _activation(view, j, dtype):
    """The in-place activation computing step ``j`` (a HardSwish, HardSigmoid or Clip step), or None."""
    from ..fused.conv_activation import HardSwishStep, InPlaceClip, InPlaceHardSigmoid, InPlaceHardSwish

    st = view.step(j)
    if st is None or len(st[2]) != 1:
        return None
    if type(st[0]) is HardSwishStep:
        return InPlaceHardSwish()
    op = view.op(j)
    if op == "HardSwish":
        return InPlaceHardSwish()
    if op == "HardSigmoid":
        alpha, beta = st[3].get("alpha", 0.2), st[3].get("beta", 0.5)
        if type(alpha) is not float or type(beta) is not float:
            return None
        return InPlaceHardSigmoid(alpha, beta)
    if op == "Clip" and (st[5].opset or 0) >= 11:
        bounds = []
        for name in st[1][1:3]:
            if not name:
                bounds.append(None)
                continue
            c = view.constant(name)
            if c is None or np.size(c) != 1:
                return None
            bounds.append(np.asarray(c).reshape(()).astype(dtype))
        bounds += [None] * (2 - len(bounds))
        return InPlaceClip(*bounds)
    return None


def _silu(view, y, readers):
    """(InPlaceSiLU, [sigmoid step, product step]) when the two readers of ``y`` are ``s = Sigmoid(y)``
    and ``Mul(y, s)`` (s read by nothing else), else (None, None)."""
    from ..fused.conv_activation import InPlaceSiLU

    sig, mul = readers
    if view.op(sig) != "Sigmoid" or view.op(mul) != "Mul":
        return None, None
    s = view.step(sig)[2][0]
    if not view.single_reader_value(s) or sorted(view.step(mul)[1]) != sorted((y, s)):
        return None, None
    return InPlaceSiLU(), [sig, mul]


def apply(steps: list, keep: set, known) -> list:
    from ..fused.conv_activation import ActivatedConv
    from ..kernels.conv_prepared import PreparedConv

    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        st = view.step(i)
        if st is None or type(st[0]) is not PreparedConv or st[0].relu or len(st[2]) != 1:
            continue
        y = st[2][0]
        if y in keep:
            continue
        readers = [k for k in range(i + 1, len(view)) if view.step(k) is not None and y in view.step(k)[1]]
        if len(readers) != view.readers[y]:  # a reader outside the steps (a subgraph's)
            continue
        if len(readers) == 1 and view.step(readers[0])[1][:1] == (y,):
            act, removed = _activation(view, readers[0], st[0].w.dtype), readers
        elif len(readers) == 2:
            act, removed = _silu(view, y, readers)
        else:
            continue
        if act is None:
            continue
        after = view.step(removed[-1])
        view.replace(i, (ActivatedConv(st[0], act),) + st[1:2] + after[2:3] + st[3:], steps[i][1])
        for k in removed:
            view.remove(k)
        changed = True
    return view.entries() if changed else steps
