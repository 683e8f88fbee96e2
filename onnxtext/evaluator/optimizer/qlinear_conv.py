"""Rule ``qlinear_conv``: a QLinearConv whose weights, scales, zero points and bias are constants
becomes a :class:`~..fused.qoperator.PreparedQLinearConv`: shifted weights converted to float once,
the convolution through the conv algorithm selector (prepared per input shape), float32 when every
partial sum is exact in float32, float64 otherwise. The same values as the kernel (level 1).

When its input comes from a QuantizeLinear of a float32 value with the conv's own (per-tensor,
constant) input scale and zero point, read by nothing else (a QOperator model's entry), both become
one :class:`~..fused.qoperator.QuantizedInputConv`: the conv's shifted input computed from the
float value directly, without the 8-bit tensor.

When its result is read only by a MaxPool (one output, its own kernel) and every requantization
multiplier is > 0, the MaxPool is part of the step and pools the float32 sums before they are
requantized (a requantization that never decreases commutes with taking a maximum; see
:class:`~..fused.qoperator.PreparedQLinearConv`): a 2x2 pool requantizes a quarter of the values.
"""

from __future__ import annotations

import functools

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.qoperator import PreparedQLinearConv, QuantizedInputConv
from ..kernels.quantize import per_tensor_float32
from ..steps import KernelContext
from .graph import GraphView

_EXACT_FLOAT32 = 1 << 24


def _prepared(entry, known):
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step[:7]
    if info.node.op_type != "QLinearConv" or info.domain or context or len(outs) != 1 or fn is not _kernel():
        return entry
    consts = [known.get(n) if n else None for n in ins[1:]]
    if len(ins) < 8 or any(c is None for c in consts[:7]) or (len(ins) > 8 and ins[8] and consts[7] is None):
        return entry
    x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = consts[:7]
    b = consts[7] if len(consts) > 7 else None
    if x_zp.dtype not in (np.uint8, np.int8) or w.dtype not in (np.uint8, np.int8) or x_zp.size != 1 or \
            y_zp.dtype not in (np.uint8, np.int8) or x_scale.size != 1 or y_scale.size != 1 or \
            w_scale.size not in (1, w.shape[0]) or w_zp.size not in (1, w.shape[0]) or w.ndim < 3:
        return entry
    spatial = (1,) * (w.ndim - 2)
    wf = w.astype(np.float64) - w_zp.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1) if w_zp.size > 1 else ())
    xz = float(x_zp.reshape(-1)[0])
    info_x = np.iinfo(x_zp.dtype)
    x_bound = max(abs(info_x.min - xz), abs(info_x.max - xz))
    b64 = None if b is None else b.astype(np.float64)
    total = wf[0].size * x_bound * float(np.abs(wf).max(initial=0)) + (0.0 if b64 is None else
                                                                        float(np.abs(b64).max(initial=0)))
    work = np.float32 if total < _EXACT_FLOAT32 else np.float64
    from ..kernels.conv_prepared import PreparedConv

    conv = PreparedConv(wf.astype(work), None if b64 is None else b64.astype(work), attrs, exact=True)
    w_scale32 = np.asarray(w_scale, np.float32)
    multiplier = (np.float32(x_scale.reshape(-1)[0]) * w_scale32 / np.float32(y_scale.reshape(-1)[0]))
    multiplier = multiplier.astype(np.float32).reshape((-1,) + spatial if multiplier.size > 1 else ())
    constants = {n: known.get(n) for n in ins[1:] if n}
    fallback = OriginalSteps([step], ins[:1], outs, constants)
    run = PreparedQLinearConv(conv, x_zp.dtype, work, x_scale.reshape(-1)[0], xz, multiplier,
                              float(y_zp.reshape(-1)[0]), y_zp.dtype, fallback)
    return (run, ins[:1], outs, {}, free, info, False), [ins[0]]


def _quantize_linear_of(st, known, scale, zero_point, dtype):
    """The float input of QuantizeLinear step ``st`` when it quantizes per tensor to ``dtype`` with exactly
    ``scale`` and ``zero_point`` (constants) in the QuantizeLinear kernel's float32 path, else None."""
    info = st[5]
    if info.node.op_type != "QuantizeLinear" or info.domain or st[6] or len(st[1]) < 3 or len(st[2]) != 1:
        return None
    from ..kernels.quantize import quantize_linear

    if st[0] is not quantize_linear:
        return None
    s, z = known.get(st[1][1]), known.get(st[1][2]) if st[1][2] else None
    attrs = st[3]
    if s is None or z is None or not per_tensor_float32(s, z) or z.dtype != dtype or \
            attrs.get("block_size") or attrs.get("precision", 0) not in (0, 1) or \
            attrs.get("output_dtype", 0) not in (0, _dtype_enum(z.dtype)):
        return None
    if s.reshape(-1)[0] != scale or z.reshape(-1)[0] != zero_point:
        return None
    return st[1][0]


def _dtype_enum(dtype) -> int:
    from ... import dtypes

    return dtypes.from_numpy(dtype).enum


def _with_quantized_input(steps: list, keep: set, known) -> list:
    producers, readers = {}, {}
    for i, (st, used) in enumerate(steps):
        for n in set(used):
            readers.setdefault(n, []).append(i)
        for o in st[2]:
            producers[o] = i
    out = list(steps)
    for j, (st, _) in enumerate(steps):
        run = st[0]
        if type(run) is not PreparedQLinearConv or type(run.x_scale) is not np.float32:
            continue
        q = st[1][0]
        i = producers.get(q)
        if i is None or q in keep or readers.get(q) != [j] or out[i] is None:
            continue
        qst = steps[i][0]
        x = _quantize_linear_of(qst, known, run.x_scale, float(run.x_zero_point), run.dtype)
        if x is None:
            continue
        constants = {n: known.get(n) for n in qst[1][1:] if n}
        constants.update(run.fallback.constants)
        fallback = OriginalSteps([qst] + run.fallback.steps, (x,), st[2], constants)
        fused = QuantizedInputConv(run, run.x_scale, float(run.x_zero_point), fallback)
        out[j] = ((fused, (x,), st[2], {}, st[4], st[5], False), [x])
        out[i] = None
    return [entry for entry in out if entry is not None]


def _with_pool(steps: list, keep: set, known) -> list:
    """PreparedQLinearConv steps followed by the MaxPool that alone reads their result, as one step."""
    view = GraphView(steps, keep, known)
    changed = False
    for j in range(len(view)):
        st = view.step(j)
        run = st[0] if st is not None else None
        if type(run) is not PreparedQLinearConv or run.pool is not None or \
                not bool(np.all(np.asarray(run.multiplier) > 0)):
            continue
        found = sole_max_pool(view, st[2][0])
        if found is None:
            continue
        k, pool = found
        pst = view.step(k)
        fallback = OriginalSteps(run.fallback.steps + [pst], run.fallback.inputs, pst[2], run.fallback.constants)
        view.replace(j, (run.with_pool(pool, fallback), st[1], pst[2], {}, st[4], st[5], False), st[1])
        view.remove(k)
        changed = True
    return view.entries() if changed else steps


def sole_max_pool(view: GraphView, name: str):
    """``(index, pooled(values))`` of the MaxPool step that alone reads ``name`` (not a kept value),
    running MaxPool's own kernel with one output (:func:`max_pool_of`), else None."""
    k = view.only_reader(name)
    if k is None:
        return None
    pool = max_pool_of(view.step(k), name)
    return None if pool is None else (k, pool)


def max_pool_of(st, x: str):
    """``pooled(values)``, the MaxPool of step ``st`` as a function, when ``st`` runs MaxPool's own kernel
    on ``x`` alone with one output (no indices), else None."""
    from ..kernels.pool import max_pool

    info = st[5]
    if info.node.op_type != "MaxPool" or info.domain or st[1] != (x,) or st[0] is not max_pool or \
            len(st[2]) != 1 or len([o for o in info.node.output if o]) != 1:
        return None
    return functools.partial(max_pool, KernelContext(info, {}), **st[3])


def _kernel():
    from ..kernels.conv import qlinear_conv

    return qlinear_conv


NAME = "qlinear_conv"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return _with_quantized_input(_with_pool([_prepared(entry, known) for entry in steps], keep, known), keep, known)
