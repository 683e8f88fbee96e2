"""Control-flow kernels: If, Loop, Scan (opset 8 with a batch axis, opset 9+ with axes and directions)
and SequenceMap.

They are context kernels: bodies are prepared once by the runtime (one plan per graph attribute) and
run through :class:`_BodyRunner`, which binds the outer-scope values a body reads once per node
execution rather than once per iteration and runs the body's loop-invariant steps once. A Scan body
that is a pure function of one slice runs once over all slices (:mod:`.scan_vectorized`).
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from ... import dtypes
from ...errors import EvalError
from .. import limits
from ..limits import charge_run, check_allocation, check_loop_iterations
from ..plan import GraphPlan, find_schema
from ..registry import kernel
from ..steps import CONTROL
from .derived_cache import derived
from .scan_vectorized import run_vectorized


class _BodyRunner:
    """Runs a Loop/Scan/SequenceMap body many times: ``runner(inputs) -> outputs``.

    Outer-scope values are bound once per node execution, and the body's loop-invariant steps (those that
    read only outer values, constants and other invariant results, and are deterministic plain kernels) run
    once, just before the first iteration, instead of in every iteration: exporters put such steps in loop
    bodies (torch's Slice of an outer input, Unsqueeze of outer constants). The steps of an iteration keep
    their values to its end (:func:`_without_frees`). A run with a trace or a timeout keeps every step in
    the loop as the model has it, so the trace sees what the model says."""

    __slots__ = ("plan", "base", "pending")

    def __init__(self, ctx, graph):
        plan = ctx.info.subplan(graph)
        self.base = plan.bind_outer(ctx.scope)
        if CONTROL in self.base:
            self.plan, self.pending = plan, None
            return
        self.pending, self.plan = _body_plans(plan)

    def run_invariant(self) -> None:
        """Run the hoisted loop-invariant steps (once, before the first iteration)."""
        if self.pending is not None:
            self.base = dict(self.base)
            self.pending.execute(self.base)
            self.pending = None

    def __call__(self, inputs) -> list:
        if self.pending is not None:
            self.run_invariant()
        return self.plan.run_bound(self.base, inputs)


def _body_plans(plan):
    """(plan of the body's loop-invariant steps or None, plan of an iteration): decided once per body plan
    (one cache lookup per node execution)."""
    def make():
        split = _invariant_split(plan)
        pending, kept = (None, plan) if split is None else split
        return pending, _without_frees(kept)
    return derived("loop-body", (plan,), make)


def _without_frees(plan):
    """The body plan with no step dropping values it no longer needs: an iteration's values all go
    with its copy of the bound values at its end anyway, and the drops cost a dict pop each (about 20
    per iteration of torch's exported loop bodies)."""
    return GraphPlan(plan.name, plan.input_names, plan.output_names, plan.constants, plan.free,
                     [st._replace(free=()) for st in plan.steps], plan.keep)


def _invariant_split(plan):
    """(plan of the loop-invariant steps, plan of the others) of a body, or None when none is invariant."""
    def split():
        varying = set(plan.input_names)
        hoisted, kept = [], []
        for st in plan.steps:
            info = st.info
            schema = find_schema(info.node.op_type, info.domain, info.opset or 0)
            if (st.context or info.subplans or schema is None or schema.non_deterministic
                    or any(n in varying for n in st.inputs)):
                varying.update(st.outputs)
                kept.append(st)
            else:
                hoisted.append(st._replace(free=()))  # run on the shared values: nothing is dropped
        if not hoisted:
            return None
        shared = set(plan.keep).union(*(st.outputs for st in hoisted))  # the iterations read them all
        return (GraphPlan(plan.name, [], [], {}, (), hoisted, shared),
                GraphPlan(plan.name, plan.input_names, plan.output_names, plan.constants, plan.free, kept, plan.keep))
    return split()


def _truth(cond) -> bool:
    if type(cond) is np.ndarray and cond.size == 1:
        return bool(cond)
    c = np.asarray(cond)
    if c.size != 1:
        raise EvalError(f"condition must hold a single element, got shape {list(c.shape)}")
    return bool(c.reshape(()))


# ---------------------------------------------------------------------------------------------- If
@kernel("If", since=1, context=True)
def if_(ctx, cond, then_branch, else_branch):
    # a branch has no inputs: run on the enclosing values themselves (GraphPlan.run_in_scope)
    truth = bool(cond) if type(cond) is np.ndarray and cond.size == 1 else _truth(cond)
    out = ctx.info.subplan(then_branch if truth else else_branch).run_in_scope(ctx.scope)
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------------------------------------- Loop
def _empty_scan_output(value_info) -> np.ndarray:
    """The stacked value of a scan output after zero iterations, shaped from the body's declared type."""
    tt = value_info.type.tensor_type
    dtype = dtypes.np_dtype(tt.elem_type) if tt.elem_type else np.float32
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
    return np.empty((0, *dims), dtype=dtype)


# the condition passed to every iteration of a Loop (only iterations whose condition holds run)
_TRUE = np.array(True)
_TRUE.flags.writeable = False


@kernel("Loop", since=1, context=True)
def loop(ctx, M, cond, *v_initial, body):
    max_trips = None if M is None else int(np.asarray(M).reshape(()))
    keep_going = True if cond is None else _truth(cond)
    n_carried = len(v_initial)
    n_scan = len(body.output) - 1 - n_carried
    if n_scan < 0:
        raise EvalError(f"Loop body has {len(body.output)} outputs, fewer than 1 + {n_carried} carried values")
    runner = _BodyRunner(ctx, body)
    runner.run_invariant()
    # the iteration below is run_bound written out: per iteration a copy of the bound values, the
    # iteration number, the carried values, the body's steps, and its outputs in one C call
    plan, base = runner.plan, runner.base
    execute = plan.execute
    names = list(plan.input_names)
    if len(names) != 2 + n_carried:
        raise EvalError(f"Loop body has {len(names)} inputs, not 2 + {n_carried} carried values")
    iteration_name, cond_name, carried_names = names[0], names[1], names[2:]
    outputs = plan.output_names
    get_outputs = itemgetter(*outputs) if len(outputs) > 1 else (lambda env: (env[outputs[0]],))
    carried = list(v_initial)
    scans: list[list] = [[] for _ in range(n_scan)]
    i = 0
    trips = max(max_trips, 0) if max_trips is not None else -1  # -1: no trip count
    cap = limits.MAX_LOOP_ITERATIONS
    scan_bytes = [0] * n_scan
    while keep_going and i != trips:
        if i >= cap:
            check_loop_iterations(i, "Loop")
        env = base.copy()
        env[iteration_name] = np.array(i, dtype=np.int64)
        env[cond_name] = _TRUE
        for name, value in zip(carried_names, carried):
            env[name] = value
        execute(env)
        out = get_outputs(env)
        if cond is not None:  # without a cond input the body's condition output is ignored
            keep_going = _truth(out[0])
        carried = out[1:1 + n_carried]
        for k in range(n_scan):
            value = np.asarray(out[1 + n_carried + k])
            scan_bytes[k] += value.nbytes
            # the stack so far against the per-tensor limit (check_allocation's message when over it: its
            # call at every iteration cost about 1 us); the run is charged once, when it is stacked
            if scan_bytes[k] > limits.MAX_ALLOCATION_BYTES:
                check_allocation(scan_bytes[k], 1, f"Loop scan output {k} after {i + 1} iterations", charge=False)
            scans[k].append(value)
        i += 1
    for k in range(n_scan):
        charge_run(scan_bytes[k], f"Loop scan output {k}")
    stacked = [_stacked(s) if s else _empty_scan_output(body.output[1 + n_carried + k])
               for k, s in enumerate(scans)]
    return tuple(list(carried) + stacked)


def _stacked(values: list) -> np.ndarray:
    """np.stack of a Loop's scan values: one concatenation when every value has the first one's shape and
    type (np.stack's own checks and expansions take twice as long at six 2x8 values), else np.stack (which
    refuses different shapes)."""
    first = values[0]
    shape, dtype = first.shape, first.dtype
    if shape and all(v.shape == shape and v.dtype == dtype for v in values):
        return np.concatenate(values).reshape((len(values),) + shape)
    return np.stack(values)


# ---------------------------------------------------------------------------------------------- Scan
def _scan(run_body, states, scan_inputs, in_axes, in_dirs, out_axes, out_dirs, n_scan_out, vectorized=None):
    """One scan over ``scan_inputs`` (no batch axis): final states and stacked scan outputs.

    ``vectorized`` is a ``(plan, bound outer values)`` pair of the body, tried first: a body that is a pure
    function of one slice runs once over all slices (:mod:`.scan_vectorized`)."""
    result = None if vectorized is None else \
        run_vectorized(*vectorized, states, scan_inputs, in_axes, in_dirs, n_scan_out)
    if result is not None:
        states, stacks = result
    else:
        states, stacks = _scan_loop(run_body, states, scan_inputs, in_axes, in_dirs, n_scan_out)
    outputs = []
    for k, stacked in enumerate(stacks):
        if out_dirs[k]:
            stacked = stacked[::-1]
        outputs.append(np.moveaxis(stacked, 0, out_axes[k]) if out_axes[k] else stacked)
    return states, outputs


def _scan_loop(run_body, states, scan_inputs, in_axes, in_dirs, n_scan_out):
    """Final states and scan outputs stacked in iteration order, one body run per slice."""
    lengths = {x.shape[a] for x, a in zip(scan_inputs, in_axes)}
    if len(lengths) > 1:
        raise EvalError(f"scan inputs have different sequence lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else 0
    # move each scan axis first (a view), so iteration t takes x[t] or x[length - 1 - t]
    moved = [np.moveaxis(x, a, 0) for x, a in zip(scan_inputs, in_axes)]
    collected: list[list] = [[] for _ in range(n_scan_out)]
    states = list(states)
    for t in range(length):
        elems = [x[length - 1 - t] if d else x[t] for x, d in zip(moved, in_dirs)]
        out = run_body(states + elems)
        states = out[:len(states)]
        for k in range(n_scan_out):
            collected[k].append(out[len(states) + k])
    if n_scan_out and not length:
        raise EvalError("Scan over a sequence of length 0 cannot shape its scan outputs")
    return states, [np.stack(values) for values in collected]


@kernel("Scan", since=9, context=True)
def scan(ctx, *inputs, body, num_scan_inputs, scan_input_axes=None, scan_input_directions=None,
         scan_output_axes=None, scan_output_directions=None):
    m = num_scan_inputs
    states, scan_inputs = list(inputs[:len(inputs) - m]), list(inputs[len(inputs) - m:])
    n_scan_out = len(body.output) - len(states)
    in_axes = [a + x.ndim if a < 0 else a for a, x in zip(scan_input_axes or [0] * m, scan_inputs)]
    in_dirs = scan_input_directions or [0] * m
    out_axes = scan_output_axes or [0] * n_scan_out
    out_ranks = []
    for k in range(n_scan_out):  # rank of the stacked output: element rank + 1
        tt = body.output[len(states) + k].type.tensor_type
        out_ranks.append(len(tt.shape.dim) + 1 if tt.HasField("shape") else None)
    out_axes = [a + r if a < 0 and r is not None else a for a, r in zip(out_axes, out_ranks)]
    out_dirs = scan_output_directions or [0] * n_scan_out
    plan = ctx.info.subplan(body)
    final, outputs = _scan(_BodyRunner(ctx, body), states, scan_inputs, in_axes, in_dirs, out_axes, out_dirs,
                           n_scan_out, vectorized=(plan, plan.bind_outer(ctx.scope)))
    return tuple(final + outputs)


@kernel("Scan", since=8, context=True)
def scan_batched(ctx, sequence_lens, *inputs, body, num_scan_inputs, directions=None):
    # opset 8: axis 0 of every input and output is a batch axis, axis 1 the sequence axis
    m = num_scan_inputs
    states, scan_inputs = list(inputs[:len(inputs) - m]), list(inputs[len(inputs) - m:])
    n_scan_out = len(body.output) - len(states)
    run_body = _BodyRunner(ctx, body)
    batch = (states or scan_inputs)[0].shape[0]
    max_len = scan_inputs[0].shape[1] if scan_inputs else 0
    lens = [max_len] * batch if sequence_lens is None else [int(v) for v in np.asarray(sequence_lens).ravel()]
    finals, outs = [], []
    for b in range(batch):
        final, scanned = _scan(run_body, [s[b] for s in states], [x[b, :lens[b]] for x in scan_inputs],
                               [0] * m, directions or [0] * m, [0] * n_scan_out, [0] * n_scan_out, n_scan_out)
        # shorter sequences are padded with zeros up to the batch's longest one
        scanned = [np.concatenate([y, np.zeros((max_len - y.shape[0], *y.shape[1:]), y.dtype)])
                   if y.shape[0] < max_len else y for y in scanned]
        finals.append(final)
        outs.append(scanned)
    return tuple([np.stack([f[i] for f in finals]) for i in range(len(states))] +
                 [np.stack([o[k] for o in outs]) for k in range(n_scan_out)])


# ---------------------------------------------------------------------------------------------- SequenceMap
@kernel("SequenceMap", since=17, context=True)
def sequence_map(ctx, input_sequence, *additional_inputs, body):
    n = len(input_sequence)
    for extra in additional_inputs:
        if isinstance(extra, list) and len(extra) != n:
            raise EvalError(f"SequenceMap: sequences of lengths {n} and {len(extra)}")
    run_body = _BodyRunner(ctx, body)
    results: list[list] = [[] for _ in body.output]
    for i in range(n):
        args = [input_sequence[i]] + [x[i] if isinstance(x, list) else x for x in additional_inputs]
        for k, v in enumerate(run_body(args)):
            results[k].append(v)
    return tuple(results)
