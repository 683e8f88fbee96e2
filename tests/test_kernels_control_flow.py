"""Control-flow kernels beyond the node suite: a Scan body run once over all slices
(kernels/scan_vectorized.py), a Loop body's loop-invariant steps run once, the forms of Loop (trip count,
condition, both, none taken) and If (kernels/control_flow.py).

Each case is checked against onnxruntime (the oracle) and against the evaluator's own slice-by-slice loop
or a traced run (which keeps every step in the loop).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import assert_close, run_onnxruntime
from onnx import TensorProto as TP
from onnx import helper

from onnxtext.evaluator import Evaluator

pytest.importorskip("onnxruntime")

F, I64 = TP.FLOAT, TP.INT64


# ---------------------------------------------------------------- Scan bodies run once over all slices
# (kernels/scan_vectorized.py). Each case is a Scan whose body is built from the nodes below; it must give
# onnxruntime's outputs and the slice-by-slice loop's, and ``vectorized`` says whether the body qualifies
# (a state that changes, or an op without a batching rule, runs the loop).
# (id, body nodes, body state inputs, body scan inputs, body outputs (states first), scan attributes,
#  feeds (states then scanned), body initializers, opset, vectorized)
def _vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


_SAMPLES = np.random.default_rng(11).normal(size=(40, 6)).astype(np.float32)
_QUERIES = np.random.default_rng(12).normal(size=(5, 6)).astype(np.float32)
_N = helper.make_node
SCAN_CASES = [
    ("cdist_sqeuclidean", [_N("Identity", ["s"], ["s_out"]), _N("Sub", ["s", "row"], ["d"]),
                           _N("ReduceSumSquare", ["d", "axes"], ["y"], keepdims=0)],
     [_vi("s", [None, 6])], [_vi("row", [6])], [_vi("s_out", [None, 6]), _vi("y", [None])], {},
     [_QUERIES, _SAMPLES], {"axes": np.array([1], np.int64)}, 18, True),
    ("cdist_minkowski", [_N("Identity", ["s"], ["s_out"]), _N("Sub", ["s", "row"], ["d"]), _N("Abs", ["d"], ["a"]),
                         _N("Pow", ["a", "p"], ["ap"]), _N("ReduceSum", ["ap", "axes"], ["r"], keepdims=0),
                         _N("Pow", ["r", "inv_p"], ["y"])],
     [_vi("s", [None, 6])], [_vi("row", [6])], [_vi("s_out", [None, 6]), _vi("y", [None])], {},
     [_QUERIES, np.abs(_SAMPLES)], {"axes": np.array([-1], np.int64), "p": np.array(3, np.float32),
                                    "inv_p": np.array(1 / 3, np.float32)}, 13, True),
    ("axes_and_directions_reduce_attribute", [_N("Mul", ["x", "w"], ["m"]),
                                              _N("ReduceMax", ["m"], ["y"], axes=[0], keepdims=1)],
     [], [_vi("x", [5, 3])], [_vi("y", [1, 3])],
     dict(scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1], scan_output_directions=[1]),
     [np.random.default_rng(1).normal(size=(5, 7, 3)).astype(np.float32)], {"w": np.arange(3, dtype=np.float32)},
     11, True),
    ("matmul_tanh_argmax", [_N("Identity", ["s"], ["s_out"]), _N("MatMul", ["x", "w"], ["h"]),
                            _N("Add", ["h", "s"], ["z"]), _N("Tanh", ["z"], ["t"]),
                            _N("ArgMax", ["t"], ["k"], axis=-1, keepdims=0)],
     [_vi("s", [4])], [_vi("x", [6])], [_vi("s_out", [4]), _vi("t", [4]), _vi("k", [], TP.INT64)], {},
     [np.array([0.1, -0.2, 0.3, 0.0], np.float32), _SAMPLES],
     {"w": np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32)}, 13, True),
    ("matrix_slices_transpose_where", [_N("Transpose", ["x"], ["xt"]), _N("MatMul", ["xt", "x"], ["g"]),
                                       _N("Greater", ["g", "zero"], ["pos"]), _N("Where", ["pos", "g", "zero"], ["y"]),
                                       _N("Cast", ["pos"], ["c"], to=TP.INT32)],
     [], [_vi("x", [3, 2])], [_vi("y", [2, 2]), _vi("c", [2, 2], TP.INT32)], {},
     [np.random.default_rng(3).normal(size=(9, 3, 2)).astype(np.float32)], {"zero": np.array(0, np.float32)},
     13, True),
    # the state accumulates: every iteration depends on the previous one, so the loop runs
    ("running_sum_is_not_vectorized", [_N("Add", ["s", "x"], ["s_out"]), _N("Mul", ["s_out", "two"], ["y"])],
     [_vi("s", [6])], [_vi("x", [6])], [_vi("s_out", [6]), _vi("y", [6])], {},
     [np.zeros(6, np.float32), _SAMPLES], {"two": np.array(2, np.float32)}, 13, False),
    # the scanned slice and an outer constant as scan outputs
    ("pass_through_outputs", [_N("Identity", ["x"], ["same"]), _N("Identity", ["w"], ["const"])], [],
     [_vi("x", [2])], [_vi("same", [2]), _vi("const", [2])], dict(scan_input_directions=[1]),
     [np.arange(8, dtype=np.float32).reshape(4, 2)], {"w": np.array([5, 6], np.float32)}, 13, True),
    # Softmax has no batching rule here
    ("no_rule_runs_the_loop", [_N("Softmax", ["x"], ["y"], axis=-1)], [], [_vi("x", [6])], [_vi("y", [6])], {},
     [_SAMPLES], {}, 13, False),
]


def _scan_model(nodes, states, scanned, outputs, attrs, feeds, inits, opset):
    body = helper.make_graph(nodes, "body", states + scanned, outputs,
                             [onnx.numpy_helper.from_array(v, n) for n, v in inits.items()])
    names = [f"in{i}" for i in range(len(feeds))]
    outs = [f"out{i}" for i in range(len(outputs))]
    node = helper.make_node("Scan", names, outs, body=body, num_scan_inputs=len(scanned), **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(
        v.dtype), list(v.shape)) for n, v in zip(names, feeds)], [helper.make_value_info(o, onnx.TypeProto())
                                                                    for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, dict(zip(names, feeds))


@pytest.mark.parametrize("case", SCAN_CASES, ids=[c[0] for c in SCAN_CASES])
def test_scan_body_vectorized_matches_loop_and_onnxruntime(case, monkeypatch):
    from onnxtext.evaluator.kernels import control_flow, scan_vectorized

    _, nodes, states, scanned, outputs, attrs, feeds, inits, opset, vectorized = case
    model, feed = _scan_model(nodes, states, scanned, outputs, attrs, feeds, inits, opset)
    results = []
    real = scan_vectorized.run_vectorized
    monkeypatch.setattr(control_flow, "run_vectorized", lambda *a: results.append(real(*a)) or results[-1])
    for optimize in (0, None):
        results.clear()
        got = Evaluator(model, **({} if optimize is None else {"optimize": optimize})).run(None, feed)
        assert [r is not None for r in results] == [vectorized], optimize
        assert_close(got, run_onnxruntime(model, feed), 1e-5, 1e-6, "against onnxruntime:")
        monkeypatch.setattr(scan_vectorized, "VECTORIZED", False)
        loop = Evaluator(model).run(None, feed)
        monkeypatch.setattr(scan_vectorized, "VECTORIZED", True)
        assert_close(got, loop, 1e-6, 1e-6, "against the loop:")


def test_loop_invariant_steps_run_once_and_match_onnxruntime():
    """A Loop body's steps that read only outer values and constants (a Slice of an outer input, an Unsqueeze
    of an outer constant) run once per Loop (kernels/control_flow._invariant_split); the results equal
    onnxruntime's and a traced run's, which keeps every step in the loop."""
    from onnxtext.evaluator.kernels.control_flow import _invariant_split

    body = helper.make_graph(
        [_N("Unsqueeze", ["zero", "axis0"], ["start"]), _N("Slice", ["x", "start", "end", "axis0"], ["rows"]),
         _N("Gather", ["rows", "i"], ["row"], axis=0), _N("Mul", ["acc", "decay"], ["kept"]),
         _N("Add", ["kept", "row"], ["acc2"]), _N("Identity", ["c"], ["c2"]), _N("Mul", ["acc2", "decay"], ["scan"])],
        "body", [_vi("i", [], I64), _vi("c", [], TP.BOOL), _vi("acc", [3])],
        [_vi("c2", [], TP.BOOL), _vi("acc2", [3]), _vi("scan", [3])],
        [onnx.numpy_helper.from_array(np.array([0], np.int64), "axis0"),
         onnx.numpy_helper.from_array(np.array([4], np.int64), "end"),
         onnx.numpy_helper.from_array(np.array(0.5, np.float32), "decay")])
    graph = helper.make_graph(
        [_N("Loop", ["M", "", "init"], ["final", "scanned"], body=body)], "g",
        [_vi("M", [], I64), _vi("init", [3]), _vi("x", [5, 3]), _vi("zero", [], I64)],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("final", "scanned")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"M": np.array(3), "init": np.ones(3, np.float32), "zero": np.array(1),
             "x": np.random.default_rng(5).normal(size=(5, 3)).astype(np.float32)}
    ev = Evaluator(model)
    got = ev.run(None, feeds)
    traced = ev.run(None, feeds, trace=lambda step, outputs: None)
    assert_close(got, run_onnxruntime(model, feeds), 1e-6, 1e-6, "against onnxruntime:")
    assert_close(got, traced, 0, 0, "against a traced run:")
    (loop_step,) = ev._plan_for(None).steps
    (_, body_plan), = loop_step.info.subplans.values()
    hoisted, kept = _invariant_split(body_plan)
    assert [s.info.node.op_type for s in hoisted.steps] == ["Unsqueeze", "Slice"]
    assert [s.info.node.op_type for s in kept.steps] == ["Gather", "Mul", "Add", "Identity", "Mul"]


def test_scan_output_that_is_the_scanned_input_is_a_copy():
    """A body output that is its scanned input itself (onnxruntime returns garbage for it, so the loop is the
    oracle here) stacks to a new array, never a view of the caller's feed."""
    model, feed = _scan_model([], [], [_vi("x", [2])], [_vi("x", [2])], dict(scan_input_directions=[1]),
                              [np.arange(8, dtype=np.float32).reshape(4, 2)], {}, 13)
    (got,) = Evaluator(model).run(None, feed)
    np.testing.assert_array_equal(got, feed["in0"][::-1])
    assert not np.shares_memory(got, feed["in0"])


# ---------------------------------------------------------------- Loop forms and If against onnxruntime
# Each Loop case: (id, M or None, cond or None, body nodes, body outputs after the condition (carried then
# scanned), carried initial values). The body's inputs are i (int64), c (bool) and the carried values
# acc (float32 [3]); "two" and "limit" are outer constants a body may read. Add a case: one line.
def _cast_i():
    return _N("Cast", ["i"], ["i_f"], to=F)


LOOP_CASES = [
    ("trip_count_only", 4, None, [_cast_i(), _N("Add", ["acc", "i_f"], ["acc2"]), _N("Identity", ["c"], ["c2"]),
                                  _N("Mul", ["acc2", "two"], ["scan"])], ["acc2", "scan"]),
    ("while_condition", None, True, [_N("Mul", ["acc", "two"], ["acc2"]), _N("ReduceSum", ["acc2"], ["s"], keepdims=0),
                                     _N("Less", ["s", "limit"], ["c2"])], ["acc2"]),
    ("condition_stops_before_trip_count", 10, True,
     [_N("Less", ["i", "three"], ["c2"]), _N("Add", ["acc", "two"], ["acc2"]), _N("Identity", ["i"], ["scan"])],
     ["acc2", "scan"]),
    ("zero_trips", 0, None, [_N("Identity", ["c"], ["c2"]), _N("Add", ["acc", "two"], ["acc2"]),
                             _N("Mul", ["acc", "two"], ["scan"])], ["acc2", "scan"]),
    ("negative_trip_count", -2, True, [_N("Identity", ["c"], ["c2"]), _N("Add", ["acc", "two"], ["acc2"])], ["acc2"]),
    ("condition_false_at_start", 5, False, [_N("Identity", ["c"], ["c2"]), _N("Add", ["acc", "two"], ["acc2"])],
     ["acc2"]),
    ("condition_input_scanned", 3, True, [_N("Identity", ["c"], ["c2"]), _N("Identity", ["acc"], ["acc2"]),
                                          _N("Identity", ["c"], ["scan"])], ["acc2", "scan"]),
    ("if_in_body", 6, None,
     [_N("Identity", ["c"], ["c2"]), _N("ReduceSum", ["acc"], ["s"], keepdims=0), _N("Greater", ["s", "limit"], ["big"]),
      _N("If", ["big"], ["acc2"],
         then_branch=helper.make_graph([_N("Sub", ["acc", "two"], ["t"])], "then", [], [_vi("t", [3])]),
         else_branch=helper.make_graph([_N("Add", ["acc", "two"], ["e"])], "else", [], [_vi("e", [3])]))],
     ["acc2"]),
]


def _loop_model(M, cond, nodes, outputs):
    scan_elem = {n.output[0]: n for n in nodes}
    out_info = [_vi("c2", [], TP.BOOL)]
    for name in outputs:
        if name == "acc2":
            out_info.append(_vi(name, [3]))
        else:  # a scan output typed like what the body computes for it
            source = scan_elem[name].input[0]
            elem = {"i": I64, "c": TP.BOOL}.get(source, F)
            out_info.append(_vi(name, [] if elem != F else [3], elem))
    body = helper.make_graph(nodes, "body", [_vi("i", [], I64), _vi("c", [], TP.BOOL), _vi("acc", [3])], out_info)
    loop = _N("Loop", ["M" if M is not None else "", "cond" if cond is not None else "", "init"],
              ["final"] + [f"out_{n}" for n in outputs[1:]], body=body)
    inits = [onnx.numpy_helper.from_array(v, n) for n, v in (
        ("two", np.array(2, np.float32)), ("limit", np.array(40, np.float32)), ("three", np.array(3, np.int64)))]
    if M is not None:
        inits.append(onnx.numpy_helper.from_array(np.array(M, np.int64), "M"))
    if cond is not None:
        inits.append(onnx.numpy_helper.from_array(np.array(cond), "cond"))
    graph = helper.make_graph([loop], "g", [_vi("init", [3])],
                              [helper.make_value_info(n, onnx.TypeProto()) for n in loop.output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("case", LOOP_CASES, ids=lambda c: c[0])
def test_loop_forms_match_onnxruntime(case):
    """Trip count only, condition only, both, zero or negative trips, a condition false from the start, the
    condition input scanned, an If in the body: onnxruntime's outputs, and a traced run's (every step kept)."""
    _, M, cond, nodes, outputs = case
    model = _loop_model(M, cond, nodes, outputs)
    feeds = {"init": np.array([1.0, -2.0, 3.5], np.float32)}
    ev = Evaluator(model)
    got = ev.run(None, feeds)
    assert_close(got, run_onnxruntime(model, feeds), 1e-6, 1e-6, "against onnxruntime:")
    assert_close(got, ev.run(None, feeds, trace=lambda step, outputs: None), 0, 0, "against a traced run:")


# If: (id, condition value, branch outputs). The then branch adds 1 to the outer x, the else branch subtracts
# it; with two outputs each branch also gives x itself (an outer value passed through).
IF_CASES = [
    ("then_scalar_condition", np.array(True), 1),
    ("else_scalar_condition", np.array(False), 1),
    ("then_condition_of_shape_1", np.array([True]), 1),
    ("else_two_outputs", np.array([[False]]), 2),
    ("then_two_outputs", np.array(True), 2),
]


@pytest.mark.parametrize("case", IF_CASES, ids=lambda c: c[0])
def test_if_matches_onnxruntime(case):
    _, condition, n_outputs = case
    extra = [_N("Identity", ["x"], ["x_then"])] if n_outputs == 2 else []
    then_b = helper.make_graph([_N("Add", ["x", "one"], ["t"])] + extra, "then", [],
                               [_vi("t", [4])] + ([_vi("x_then", [4])] if extra else []))
    extra = [_N("Identity", ["x"], ["x_else"])] if n_outputs == 2 else []
    else_b = helper.make_graph([_N("Sub", ["x", "one"], ["e"])] + extra, "else", [],
                               [_vi("e", [4])] + ([_vi("x_else", [4])] if extra else []))
    outs = ["y", "y2"][:n_outputs]
    graph = helper.make_graph([_N("If", ["cond"], outs, then_branch=then_b, else_branch=else_b)], "g",
                              [_vi("x", [4]), _vi("cond", list(condition.shape), TP.BOOL)],
                              [helper.make_value_info(n, onnx.TypeProto()) for n in outs],
                              [onnx.numpy_helper.from_array(np.array(1, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": np.arange(4, dtype=np.float32), "cond": condition}
    got = Evaluator(model).run(None, feeds)
    assert_close(got, run_onnxruntime(model, feeds), 0, 0, "against onnxruntime:")


def test_loop_scan_outputs_of_different_shapes_are_an_error():
    """Scan values of lengths 2, 1, 3: as many elements as three of the first one's shape, which one
    concatenation reshaped would take without a word; the Loop stacks them by concatenation only when
    every shape agrees (control_flow._stacked), so this is np.stack's error, as before."""
    from onnxtext.errors import EvalError

    body = helper.make_graph(
        [_N("Gather", ["lengths", "i"], ["n"], axis=0), _N("Range", ["zero", "n", "one"], ["s"]),
         _N("Identity", ["c"], ["c2"])],
        "body", [_vi("i", [], I64), _vi("c", [], TP.BOOL)], [_vi("c2", [], TP.BOOL), _vi("s", [None], I64)],
        [onnx.numpy_helper.from_array(np.array([2, 1, 3], np.int64), "lengths"),
         onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"),
         onnx.numpy_helper.from_array(np.array(1, np.int64), "one")])
    graph = helper.make_graph([_N("Loop", ["M", ""], ["out"], body=body)], "g", [_vi("M", [], I64)],
                              [helper.make_value_info("out", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(EvalError, match="same shape"):
        Evaluator(model).run(None, {"M": np.array(3, np.int64)})
    # the same lengths throughout: stacked
    model.graph.node[0].attribute[0].g.initializer[0].CopyFrom(
        onnx.numpy_helper.from_array(np.array([2, 2, 2], np.int64), "lengths"))
    got = Evaluator(model).run(None, {"M": np.array(3, np.int64)})
    assert_close(got, run_onnxruntime(model, {"M": np.array(3, np.int64)}), 0, 0, "against onnxruntime:")
