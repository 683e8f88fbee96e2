"""Rule ``quantized_codes``: an 8-bit value passed between QOperator steps (rules ``qlinear_conv`` and
``prepared_qlinear_ops``) travels as float32 codes, its values minus its zero point (exact, see
:class:`~..fused.qoperator.CodesOf`), when every step reading it takes codes: a producing conv or
QLinearAdd skips adding the zero point and converting to 8 bits, a reading conv skips converting back
and subtracting it (a QLinearAdd adds the zero point where it converted). onnxruntime's QOperator
quantizer writes such chains through a whole CNN: conv -> conv, conv -> residual add -> conv.

Condition: the value is neither a graph output nor read by a subgraph; its producer is a
:class:`~..fused.qoperator.PreparedQLinearConv`, :class:`~..fused.qoperator.QuantizedInputConv`
or :class:`~..fused.qoperator.PreparedQLinearAdd`; every reader is a PreparedQLinearConv or a
PreparedQLinearAdd whose zero point and 8-bit type for it are the producer's. The same values as the
nodes (level 1). The steps become :class:`~..fused.qoperator.QLinearConvOnCodes`,
:class:`~..fused.qoperator.QuantizedInputConvToCodes` and :class:`~..fused.qoperator.QLinearAddOnCodes`.
"""

from __future__ import annotations

from ..fused.qoperator import PreparedQLinearAdd, PreparedQLinearConv, QuantizedInputConv

NAME = "quantized_codes"
LEVEL = 1


def _output_grid(run):
    """(zero point, 8-bit type) of the result of a step that can give codes, else None."""
    if isinstance(run, PreparedQLinearConv):
        return float(run.y_zero_point), run.target
    if isinstance(run, QuantizedInputConv):
        return float(run.conv.y_zero_point), run.conv.target
    if isinstance(run, PreparedQLinearAdd):
        return float(run.zero_points[2]), run.dtype
    return None


def _reads_codes(st, name: str, grid) -> bool:
    """Whether step ``st`` can read ``name`` as codes of ``grid`` (zero point, type)."""
    run, ins = st[0], st[1]
    if isinstance(run, PreparedQLinearConv):
        return ins == (name,) and (float(run.x_zero_point), run.dtype) == grid
    if isinstance(run, PreparedQLinearAdd):
        return name in ins and all((float(run.zero_points[k]), run.dtype) == grid
                                   for k in range(2) if ins[k] == name)
    return False


def _with_codes_in(st, name: str):
    run, ins = st[0], st[1]
    if isinstance(run, PreparedQLinearConv):
        run = run.with_codes(True, False)
    else:
        run = run.with_codes(ins[0] == name, ins[1] == name, False)
    return (run,) + tuple(st[1:])


def _with_codes_out(st):
    run = st[0]
    if isinstance(run, QuantizedInputConv):
        run = run.with_codes_out()
    elif isinstance(run, PreparedQLinearConv):
        run = run.with_codes(False, True)
    else:
        run = run.with_codes(False, False, True)
    return (run,) + tuple(st[1:])


def apply(steps: list, keep: set, known) -> list:
    readers: dict[str, list[int]] = {}
    for i, (_, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
    out = [list(entry) for entry in steps]
    changed = False
    for i, (st, _) in enumerate(steps):
        grid = _output_grid(st[0])
        if grid is None or len(st[2]) != 1:
            continue
        y = st[2][0]
        js = readers.get(y)
        if y in keep or not js or not all(_reads_codes(out[j][0], y, grid) for j in js):
            continue
        out[i][0] = _with_codes_out(out[i][0])
        for j in js:
            out[j][0] = _with_codes_in(out[j][0], y)
        changed = True
    return [tuple(entry) for entry in out] if changed else steps
