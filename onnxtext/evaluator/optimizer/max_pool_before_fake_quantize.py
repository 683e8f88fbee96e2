"""Rule ``max_pool_before_fake_quantize``: a fake quantization (rules ``qdq_pair``,
``fake_quantize_into_conv``) whose result only a MaxPool reads is computed after the pool instead,
on the pooled values: one :class:`~..fused.quantization.PooledFakeQuantize` step. onnxruntime's QDQ
quantizer writes this at every Conv -> MaxPool of a CNN (the pool between the conv's pair and the next
one); a 2x2 pool leaves a quarter of the values to quantize.

Condition: a scale > 0 (the pair never decreases, so it commutes with a maximum); the MaxPool runs its
own kernel with one output, without ``ceil_mode`` or dilations and with every pad smaller than its
window (so every window holds an input value: a window wholly in padding would give -inf, which the
pair turns into the lowest code). NaN is handled at run time (see the step's class). The same values as the nodes
(level 1).
"""

from __future__ import annotations

from ..fused.original import OriginalSteps
from ..fused.quantization import ConvFakeQuantize, FakeQuantize, PooledFakeQuantize
from .graph import GraphView
from .qlinear_conv import sole_max_pool

NAME = "max_pool_before_fake_quantize"
LEVEL = 1


def _windows_hold_values(attrs: dict) -> bool:
    """No MaxPool window wholly in padding: no ceil_mode, no dilation (a dilated window can step over
    a small input), every explicit pad smaller than the window, or an auto_pad (SAME pads are)."""
    kernel = attrs.get("kernel_shape")
    if attrs.get("ceil_mode") or not kernel or any(d != 1 for d in attrs.get("dilations") or ()):
        return False
    pads = attrs.get("pads") or [0] * (2 * len(kernel))
    return all(p < k for p, k in zip(pads, list(kernel) * 2))


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    changed = False
    for j in range(len(view)):
        st = view.step(j)
        fq = st[0] if st is not None else None
        if type(fq) not in (FakeQuantize, ConvFakeQuantize) or not fq.scale > 0 or len(st[1]) != 1 or \
                len(st[2]) != 1:
            continue
        found = sole_max_pool(view, st[2][0])
        if found is None or not _windows_hold_values(view.step(found[0])[3]):
            continue
        k, pool = found
        pst = view.step(k)
        fallback = OriginalSteps([st, pst], st[1], pst[2], {})
        view.replace(j, (PooledFakeQuantize(pool, fq, fallback), st[1], pst[2], {}, st[4], st[5], False), st[1])
        view.remove(k)
        changed = True
    return view.entries() if changed else steps
