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
from .qlinear_conv import max_pool_of

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
    readers: dict[str, list[int]] = {}
    for i, (_, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
    out = list(steps)
    changed = False
    for j, (st, used) in enumerate(steps):
        fq = st[0]
        if type(fq) not in (FakeQuantize, ConvFakeQuantize) or not fq.scale > 0 or len(st[1]) != 1 or \
                len(st[2]) != 1:
            continue
        y = st[2][0]
        pools = readers.get(y)
        if y in keep or pools is None or len(pools) != 1 or out[pools[0]] is None:
            continue
        k = pools[0]
        pst = steps[k][0]
        pool = max_pool_of(pst, y)
        if pool is None or not _windows_hold_values(pst[3]):
            continue
        fallback = OriginalSteps([st, pst], st[1], pst[2], {})
        out[j] = ((PooledFakeQuantize(pool, fq, fallback), st[1], pst[2], {}, st[4], st[5], False), list(used))
        out[k] = None
        changed = True
    return [entry for entry in out if entry is not None] if changed else steps
