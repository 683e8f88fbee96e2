"""Rule ``shared_codes_products``: several :class:`~..fused.quantization.CodesMatMulToFloat` steps
reading the same codes and scale (rule ``dynamic_quantized_matmul``: the query, key and value
projections of every attention layer after onnxruntime's dynamic quantizer, a gated MLP's two
products) become one :class:`~..fused.quantization.SharedCodesProducts` step: the shifted weights (and
biases) concatenated once, one product, one scaling and one bias addition per call instead of one
each per projection, each result a view of its columns. When the codes and scale are read by these products only, the
:class:`~..fused.quantization.DynamicQuantizeCodes` step joins them
(:class:`~..fused.quantization.QuantizedInputSharedProducts`, one step ``x -> (y1, y2, ...)``).

Condition: at least two such steps read the same codes and scale, with weights of the same number of
rows, float32 constant factors of one element or one per column (or none), all with a bias or all
without. The same values as the separate steps, bit for bit (level 1): the codes times the shifted
weights are integer sums exact in float32 in any order and any width (rule ``integer_matmul_to_float``
checked each column's bound), each column's scale factor is the same float32 product, and the biases
are added to the same sums.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.quantization import (CodesMatMulToFloat, DynamicQuantizeCodes, QuantizedInputSharedProducts,
                                  SharedCodesProducts)
from .graph import GraphView

NAME = "shared_codes_products"
LEVEL = 1

_F32 = np.dtype(np.float32)


def _columns(p: CodesMatMulToFloat):
    """``(weights, factor per column, bias per column or None)`` of product ``p``, or None when its
    factor or bias is not a float32 constant of one element or one per column."""
    w = p.w
    if type(w) is not np.ndarray or w.ndim != 2 or w.dtype != _F32:
        return None
    n = w.shape[1]
    f = p.scale_factor
    if f is None:
        factors = np.ones(n, _F32)
    elif type(f) is np.ndarray and f.dtype == _F32 and f.ndim <= 1 and f.size in (1, n):
        factors = np.broadcast_to(f.reshape(-1), (n,))
    else:
        return None
    b = p.bias
    if b is not None and (type(b) is not np.ndarray or b.dtype != _F32 or b.ndim > 1 or b.size not in (1, n)):
        return None
    return w, factors, None if b is None else np.broadcast_to(b.reshape(-1), (n,))


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    groups: dict[tuple, list] = {}
    for i in range(len(view)):
        st = view.step(i)
        if type(st[0]) is not CodesMatMulToFloat or len(st[1]) != 2 or len(st[2]) != 1 or st[6]:
            continue
        cols = _columns(st[0])
        if cols is not None:
            groups.setdefault((st[1], cols[0].shape[0], cols[2] is None), []).append((i, cols))
    changed = False
    for (inputs, _, _), members in groups.items():
        if len(members) < 2:
            continue
        indices = [i for i, _ in members]
        originals = [view.step(i) for i in indices]
        outputs = tuple(st[2][0] for st in originals)
        w = np.ascontiguousarray(np.concatenate([c[0] for _, c in members], axis=1))
        factors = np.ascontiguousarray(np.concatenate([c[1] for _, c in members]))
        bias = None if members[0][1][2] is None else np.ascontiguousarray(np.concatenate([c[2] for _, c in members]))
        stops = np.cumsum([c[0].shape[1] for _, c in members]).tolist()
        bounds = tuple(zip([0] + stops[:-1], stops))
        fused = SharedCodesProducts(w, factors, bias, bounds, OriginalSteps(originals, inputs, outputs, {}))
        for i in indices[1:]:
            view.remove(i)
        k = view.producer.get(inputs[0])
        quantize = view.step(k) if k is not None else None
        if quantize is not None and type(quantize[0]) is DynamicQuantizeCodes and tuple(quantize[2]) == inputs and \
                all(view.readers[n] == len(members) and n not in view.keep for n in inputs):
            # (the codes and scale read by these products only: the quantization joins the step)
            x = quantize[1][0]
            view.remove(k)
            view.replace(indices[0], (QuantizedInputSharedProducts(quantize[0], fused), (x,), outputs, {}, (),
                                      originals[0][5], False), [x])
        else:
            view.replace(indices[0], (fused, inputs, outputs, {}, (), originals[0][5], False), list(inputs))
        changed = True
    return view.entries() if changed else steps
