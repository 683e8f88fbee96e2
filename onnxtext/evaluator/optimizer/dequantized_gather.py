"""Rule ``dequantized_gather``: ``DequantizeLinear(Gather(table, ids))`` with a constant quantized table and
per-tensor parameters (the embedding lookups onnxruntime's dynamic quantizer writes) becomes one
:class:`~..fused.quantization.DequantizedGather` step: rows taken from a table dequantized once at
preparation, without the integer rows and their per-call conversion.

DequantizeLinear with one scale and one zero point is elementwise, so ``Dequantize(Gather(W, i))`` and
``Gather(Dequantize(W), i)`` are the same values bit for bit, the table dequantized by the kernel itself
(level 1). Tables whose float copy would exceed :data:`FLOAT_TABLE_LIMIT` bytes keep their codes and a
lookup table of the 256 (or 65536) dequantized codes instead: two ``take`` calls per run, no float copy
of the table.

Condition: the table, scale and zero point constants; the table 8- or 16-bit, the scale one element,
the zero point absent or one element; no ``block_size``; the gathered rows read only by the
DequantizeLinear.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import original_steps
from ..fused.quantization import DequantizedGather
from ..kernels.quantize import dequantize_linear
from .pattern import PatternRule

#: above this many bytes of float table, the codes and a lookup table of the dequantized codes are kept
FLOAT_TABLE_LIMIT = 16 << 20

WITH_ZERO_POINT = """dequantized_gather (ids) => (y) {
  g = Gather(table, ids)
  y = DequantizeLinear(g, scale, zero_point)
}"""

WITHOUT_ZERO_POINT = """dequantized_gather_uint8 (ids) => (y) {
  g = Gather(table, ids)
  y = DequantizeLinear(g, scale)
}"""

_CODES = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16))


def build(match):
    n = match.names
    table, scale = match.constant("table"), match.constant("scale")
    zero_point = match.constant("zero_point") if "zero_point" in n else None
    if type(table) is not np.ndarray or table.dtype not in _CODES or table.ndim == 0:
        return None
    if scale.size != 1 or (zero_point is not None and (zero_point.size != 1 or zero_point.dtype != table.dtype)):
        return None
    dq = match.attrs("y")
    if dq.get("block_size"):
        return None
    axis = match.attrs("g").get("axis", 0)
    if not -table.ndim <= axis < table.ndim:
        return None
    axis %= table.ndim

    def dequantized(codes):
        return dequantize_linear(codes, scale, zero_point, **({"output_dtype": dq["output_dtype"]}
                                                             if dq.get("output_dtype") else {}))

    ids = n["ids"]
    fallback = original_steps(match, (ids,))
    if table.size * np.dtype(scale.dtype).itemsize <= FLOAT_TABLE_LIMIT:
        return DequantizedGather(dequantized(table), axis, None, fallback), (ids,)
    # every code in the order a negative index reads it: position i holds code i (uint) or i - 2**bits (int)
    codes = np.arange(1 << (8 * table.dtype.itemsize)).astype(table.dtype)
    return DequantizedGather(table, axis, dequantized(codes), fallback), (ids,)


RULE = PatternRule("dequantized_gather", 1, (WITH_ZERO_POINT, WITHOUT_ZERO_POINT), build, __doc__)
