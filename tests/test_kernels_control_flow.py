"""Control-flow kernels beyond the node suite: a Scan body run once over all slices
(kernels/scan_vectorized.py) and a Loop body's loop-invariant steps run once (kernels/control_flow.py).

Each case is checked against onnxruntime (the oracle) and against the evaluator's own slice-by-slice loop.
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
