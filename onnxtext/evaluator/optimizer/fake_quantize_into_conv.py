"""Rule ``fake_quantize_into_conv`` (level 2): the scale of a fake quantization (a
:class:`~..fused.quantization.FakeQuantize` of rule ``qdq_pair``) moves into the constant weights of the
convolutions around it, as onnxruntime's QDQ graphs place one between every two convolutions:

* a convolution whose result only the fake quantization reads computes ``y / s`` (weights and bias
  divided by ``s``; ``relu(y) / s = relu(y / s)`` for ``s > 0``), so the fake quantization skips its
  division;
* convolutions that are the only readers of the fake quantization take the codes ``c`` with their weights
  multiplied by ``s`` (``conv(c * s, W) = conv(c, s * W)``), so it skips its multiplication;

the fake quantization becomes a :class:`~..fused.quantization.ConvFakeQuantize`.

Between two convolutions a fake quantization is then ``rint`` and the saturation: three numpy passes
instead of six. Only :class:`~..kernels.conv_prepared.PreparedConv` steps themselves (rule
``prepared_conv``) take part. The products are reassociated: values differ by float rounding, and a
code whose ratio lies within that rounding of a half-integer can round the other way (level 2).
"""

from __future__ import annotations

import numpy as np

from ..fused.quantization import ConvFakeQuantize, FakeQuantize

NAME = "fake_quantize_into_conv"
LEVEL = 2


def _plain_conv(st) -> bool:
    from ..kernels.conv_prepared import PreparedConv

    conv = st[0]
    return type(conv) is PreparedConv and len(st[1]) == 1 and conv.w.dtype == np.float32 and \
        (conv.b is None or conv.b.dtype == np.float32)


def apply(steps: list, keep: set, known) -> list:
    producer = {n: i for i, (st, _) in enumerate(steps) for n in st[2]}
    readers: dict[str, list[int]] = {}
    for i, (_, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
    divisor: dict[int, np.float32] = {}  # conv step -> the scale its result is divided by
    factor: dict[int, np.float32] = {}  # conv step -> the scale its input codes are multiplied by
    variants: dict[int, tuple[bool, bool]] = {}
    for f, (st, _) in enumerate(steps):
        fq = st[0]
        if type(fq) is not FakeQuantize or not fq.scale > 0 or len(st[1]) != 1:
            continue
        divide, multiply = True, True
        x, y = st[1][0], st[2][0]
        p = producer.get(x)
        if p is not None and x not in keep and readers.get(x) == [f] and _plain_conv(steps[p][0]) and \
                p not in divisor:
            divisor[p] = fq.scale
            divide = False
        convs = readers.get(y, [])
        if y not in keep and convs and all(_plain_conv(steps[r][0]) and r not in factor for r in convs):
            for r in convs:
                factor[r] = fq.scale
            multiply = False
        if not (divide and multiply):
            variants[f] = (divide, multiply)
    if not variants:
        return steps
    out = []
    for i, (st, used) in enumerate(steps):
        if i in variants:
            st = (ConvFakeQuantize(st[0], *variants[i]),) + st[1:]
        elif i in divisor or i in factor:
            st = (_scaled(st[0], factor.get(i, 1.0), divisor.get(i, 1.0)),) + st[1:]
        out.append((st, used))
    return out


def _scaled(conv, factor, divisor):
    """A new PreparedConv computing ``conv(x * factor) / divisor``."""
    from ..kernels.conv_prepared import PreparedConv

    w = (conv.w.astype(np.float64) * (float(factor) / float(divisor))).astype(np.float32)
    b = None if conv.b is None else (conv.b.astype(np.float64) / float(divisor)).astype(np.float32)
    return PreparedConv(w, b, conv.attrs, relu=conv.relu, exact=conv.exact)
