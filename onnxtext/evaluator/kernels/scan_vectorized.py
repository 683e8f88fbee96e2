"""Scan bodies run once over all slices instead of once per slice, when that provably gives the same result.

skl2onnx writes nearest neighbours, kernel PCA and Gaussian processes as a Scan over the training samples whose
body computes one row of distances (``Sub`` then ``ReduceSumSquare``, or ``Abs``/``Pow`` then ``ReduceSum``) and
passes its state through unchanged. Run slice by slice, such a body costs a few microseconds of evaluator work
per step and slice (300 samples x 4 steps); run once on the stacked slices it is a handful of numpy calls.

:func:`run_vectorized` does that when the body is a pure function of one slice:

* every state output is its state input, directly or through ``Identity`` (so the final states are the
  initial ones and no iteration depends on another);
* every step's kernel is the registered ONNX kernel of its node (no optimizer rewrite; a step holding the
  kernel's prepared form runs the kernel itself with the node's attributes) and has a batching rule below, or reads no scanned value at all (then it runs once, if it is deterministic and not a
  control-flow or other context kernel);
* no intermediate would exceed :data:`MAX_BATCHED_ELEMENTS` (checked from shapes before computing).

Otherwise it returns None and the Scan kernel runs its loop. A batched value carries a leading axis of
length L (one entry per iteration, in iteration order); each rule computes, for every l, what the kernel
computes on slice l (``f(x)[l] == f(x[l])``):

* elementwise ops (unary, and broadcasting n-ary ones): batched operands get unit axes after the batch axis
  so that their slice ranks agree with the other operands'; numpy's trailing-axis broadcasting then pairs
  slice elements exactly as the per-slice call does;
* reductions and ArgMax/ArgMin: the slice's axes (normalized against the slice rank) shifted by one;
* Transpose: the permutation shifted by one, the batch axis first;
* MatMul: a batched left operand against an unbatched matrix, an unbatched matrix against a batched
  stack of matrices, or two batched stacks of matrices (numpy's matmul broadcasts leading axes).

tests/test_kernels_control_flow.py compares these bodies with the loop (``VECTORIZED = False``) and with onnxruntime.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import lookup, prepared_form
from ..steps import CONTROL, UNUSED
from .derived_cache import derived

#: Largest intermediate (in elements) a vectorized body may create; a larger one runs the loop instead.
MAX_BATCHED_ELEMENTS = 1 << 22

#: Switch for tests and measurements: False always runs the loop.
VECTORIZED = True

_UNARY = frozenset("""Abs Neg Sqrt Exp Log Reciprocal Relu Sigmoid Tanh Floor Ceil Round Sign Not Erf Sin Cos Tan
    Asin Acos Atan Sinh Cosh Asinh Acosh Atanh IsNaN IsInf Identity Cast LeakyRelu Elu Selu Softplus Softsign
    HardSigmoid HardSwish ThresholdedRelu Celu Mish Gelu BitwiseNot""".split())
_BROADCASTING = frozenset("""Add Sub Mul Div Pow Max Min Sum Mean Equal Less Greater LessOrEqual GreaterOrEqual
    And Or Xor Where Mod BitwiseAnd BitwiseOr BitwiseXor""".split())
_REDUCE = frozenset("""ReduceSum ReduceSumSquare ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2
    ReduceLogSum ReduceLogSumExp""".split())
_ARG = frozenset(("ArgMax", "ArgMin"))


class _Decline(Exception):
    """This body (or these shapes) cannot be vectorized: run the loop."""


def _body_kernels(plan) -> list | None:
    """Per step of a body plan, the ``(kernel, attributes)`` the batching rules call, or None when a step is
    not its node's registered kernel (or prepared form of it), is a context kernel or is not
    deterministic (decided once per plan). A prepared form (registry.prepares) holds its attributes:
    the node's are read again for the plain kernel."""
    from ..plan import find_schema, prepare_node

    def kernels():
        found = []
        for st in plan.steps:
            info = st.info
            node = info.node
            registered = lookup(node.op_type, info.domain, info.opset or 0) if info.domain == "" else None
            if registered is None or st.context or info.subplans:
                return None
            if registered.fn is st.fn:
                found.append((st.fn, st.attrs))
            elif prepared_form(registered.fn) is not None and not st.attrs:
                _, fn, attrs, context = prepare_node(node, info.index, info.prep, info.graph, info.path)
                if fn is not registered.fn or context:
                    return None
                found.append((fn, attrs))
            else:
                return None
            schema = find_schema(node.op_type, info.domain, info.opset or 0)
            if schema is None or schema.non_deterministic:
                return None
        return found
    return derived("scan-vectorizable", (plan,), kernels)


def run_vectorized(plan, base: dict, states: list, scan_inputs: list, in_axes, in_dirs, n_scan_out: int):
    """(final states, stacked scan outputs in iteration order) of a Scan body run once over all slices, or
    None when the body does not qualify (see the module docstring)."""
    if not VECTORIZED or CONTROL in base or not scan_inputs:
        return None
    kernels = _body_kernels(plan)
    if kernels is None:
        return None
    n_states = len(states)
    state_names = plan.input_names[:n_states]
    if not _states_pass_through(plan, state_names):
        return None
    lengths = {x.shape[a] for x, a in zip(scan_inputs, in_axes)}
    if len(lengths) != 1:
        return None  # the loop reports the mismatch
    length = lengths.pop()
    if length == 0:
        return None
    env = dict(base)
    batched = set()
    for name, value in zip(state_names, states):
        env[name] = value
    for name, x, axis, reverse in zip(plan.input_names[n_states:], scan_inputs, in_axes, in_dirs):
        moved = np.moveaxis(x, axis, 0)
        env[name] = moved[::-1] if reverse else moved
        batched.add(name)
    try:
        for st, (fn, attrs) in zip(plan.steps, kernels):
            _run_step(st, fn, attrs, env, batched, length)
    except _Decline:
        return None
    outputs = []
    for name in plan.output_names[n_states:]:
        value = np.asarray(env[name])
        if name in plan.input_names[n_states:]:  # a scanned input passed through: a copy, as the loop stacks
            value = value.copy()
        elif name not in batched:  # the same value in every iteration
            _check_size((length,) + value.shape)
            value = np.broadcast_to(value, (length,) + value.shape).copy()
        outputs.append(value)
    return list(states), outputs


def _states_pass_through(plan, state_names) -> bool:
    """Whether each state output is its state input, directly or through one Identity step."""
    produced_by_identity = {st.outputs[0]: st.inputs[0] for st in plan.steps if st.info.node.op_type == "Identity"}
    for name, out in zip(state_names, plan.output_names):
        if out != name and produced_by_identity.get(out) != name:
            return False
    return True


def _check_size(shape) -> None:
    if math.prod(shape) > MAX_BATCHED_ELEMENTS:
        raise _Decline


def _run_step(st, fn, attrs, env, batched, length) -> None:
    ins, outs = st.inputs, st.outputs
    args = [env[n] for n in ins]
    if not any(n in batched for n in ins if n):
        out = fn(*args, **attrs)  # reads no scanned value: the same in every iteration, computed once
        for n, v in zip(outs, out if type(out) is tuple else (out,)):
            if n != UNUSED:
                env[n] = v
        return
    op = st.info.node.op_type
    is_batched = [bool(n) and n in batched for n in ins]
    if op in _UNARY or op == "Clip":
        if any(is_batched[1:]):
            raise _Decline
        out = fn(*args, **attrs)
    elif op in _BROADCASTING:
        out = _broadcasting(fn, args, is_batched, attrs)
    elif op in _REDUCE:
        out = _reduce(fn, args, is_batched, attrs)
    elif op in _ARG:
        rank = args[0].ndim - 1
        if rank == 0:
            raise _Decline
        out = fn(args[0], **dict(attrs, axis=attrs.get("axis", 0) % rank + 1))
    elif op == "Transpose":
        rank = args[0].ndim - 1
        perm = attrs.get("perm") or list(range(rank))[::-1]
        out = fn(args[0], perm=[0] + [p % rank + 1 for p in perm])
    elif op == "MatMul":
        out = _matmul(fn, args, is_batched)
    else:
        raise _Decline
    if type(out) is tuple or np.ndim(out) == 0 or np.shape(out)[0] != length:
        raise _Decline  # not a stack of per-slice results (a rule's assumption failed)
    env[outs[0]] = out
    batched.add(outs[0])


def _broadcasting(fn, args, is_batched, attrs):
    """Batched operands padded with unit axes after the batch axis to the largest slice rank."""
    ranks = [a.ndim - 1 if b else np.ndim(a) for a, b in zip(args, is_batched) if a is not None]
    top = max(ranks)
    padded = []
    for a, b in zip(args, is_batched):
        if b and a.ndim - 1 < top:
            a = a.reshape((a.shape[0],) + (1,) * (top - a.ndim + 1) + a.shape[1:])
        padded.append(a)
    _check_size(np.broadcast_shapes(*[np.shape(a) for a in padded if a is not None]))
    return fn(*padded, **attrs)


def _reduce(fn, args, is_batched, attrs):
    """The slice's reduction axes, shifted past the batch axis."""
    data = args[0]
    if any(is_batched[1:]):
        raise _Decline
    rank = data.ndim - 1
    axes = args[1] if len(args) > 1 else attrs.get("axes")
    rest = {k: v for k, v in attrs.items() if k not in ("axes", "noop_with_empty_axes")}
    axes_as_input = "noop_with_empty_axes" in attrs  # the opset 13/18 form (axes an input)
    if axes is None or np.size(axes) == 0:
        if attrs.get("noop_with_empty_axes"):
            return data  # no axes and noop: the identity
        if rank == 0:
            raise _Decline
        shifted = list(range(1, rank + 1))
    else:
        if rank == 0:
            raise _Decline
        shifted = [int(a) % rank + 1 for a in np.asarray(axes).reshape(-1)]
    if axes_as_input:
        return fn(data, np.array(shifted, np.int64), **rest, noop_with_empty_axes=0)
    return fn(data, axes=shifted, **rest)


def _matmul(fn, args, is_batched):
    a, b = args
    (ba, bb), ra, rb = is_batched, a.ndim - is_batched[0], b.ndim - is_batched[1]
    if ba and not bb and ra >= 1 and rb == 2:
        shape = a.shape[:-1] + b.shape[-1:]
    elif bb and not ba and ra == 2 and rb == 2:
        shape = (b.shape[0], a.shape[0], b.shape[2])
    elif ba and bb and ra == 2 and rb == 2:
        shape = (a.shape[0], a.shape[1], b.shape[2])
    else:
        raise _Decline
    _check_size(shape)
    return fn(a, b)
