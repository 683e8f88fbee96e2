"""The Evaluator's API: loading, input checks, error messages, prepared plans (folding, release),
functions, training, the onnxruntime engine switch, and the ``onnxtext run`` command.

Models are built with onnx.helper so these tests do not depend on the text parser. (Note for the
examples folder: a commented ``examples/linear_regression_training.onnxtext`` can mirror
``training_model`` below once training_info has a text syntax.)
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from onnxtext import EvalError, OnnxTextError
from onnxtext.evaluator import Evaluator

F = np.float32


def vi(name, elem=T.FLOAT, shape=("N",)):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=(), opset=18, functions=(), **kw):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in {f.domain for f in functions}]
    return helper.make_model(graph, opset_imports=opsets, functions=list(functions), ir_version=9, **kw)


def add_relu():
    return model([helper.make_node("Add", ["X", "Y"], ["T"], name="add1"),
                  helper.make_node("Relu", ["T"], ["Z"], name="relu1")],
                 [vi("X"), vi("Y")], [vi("Z")])


# ---------------------------------------------------------------------------------------------- API
def test_run_all_outputs_and_names():
    ev = Evaluator(add_relu())
    assert ev.input_names == ["X", "Y"] and ev.output_names == ["Z"]
    (z,) = ev.run(None, {"X": np.array([1, -5], F), "Y": np.array([1, 2], F)})
    np.testing.assert_array_equal(z, [2, 0])
    assert z.dtype == F


def test_run_intermediate_value_by_name():
    ev = Evaluator(add_relu())
    t, z = ev.run(["T", "Z"], {"X": np.array([1, -5], F), "Y": np.array([1, 2], F)})
    np.testing.assert_array_equal(t, [2, -3])
    np.testing.assert_array_equal(z, [2, 0])


def test_load_from_path_and_bytes_and_text(tmp_path):
    m = add_relu()
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    feeds = {"X": np.array([1], F), "Y": np.array([2], F)}
    for source in (str(path), path, m.SerializeToString()):
        assert Evaluator(source).run(None, feeds)[0].tolist() == [3]
    text = '<ir_version: 8, opset_import: ["" : 18]>\nagraph (float[N] X) => (float[N] Z) {\n  Z = Relu(X)\n}\n'
    assert Evaluator(text).run(None, {"X": np.array([-1, 2], F)})[0].tolist() == [0, 2]


def test_external_data_resolved_next_to_model(tmp_path):
    w = helper.make_tensor("W", T.FLOAT, [3], [1.0, 2.0, 3.0])
    m = model([helper.make_node("Add", ["X", "W"], ["Z"])], [vi("X", shape=[3])], [vi("Z", shape=[3])], [w])
    onnx.save(m, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    (z,) = Evaluator(str(tmp_path / "m.onnx")).run(None, {"X": np.zeros(3, F)})
    assert z.tolist() == [1, 2, 3]


def test_missing_file_is_a_clean_error():
    with pytest.raises(OnnxTextError, match="no such file"):
        Evaluator("does/not/exist.onnx")


# ---------------------------------------------------------------------------------------------- input checks
@pytest.mark.parametrize("feeds,message", [
    ({"X": np.array([1], np.float64), "Y": np.array([1], F)}, "input 'X': expected element type float, got float64"),
    ({"X": np.array([[1]], F), "Y": np.array([1], F)}, r"input 'X': expected rank 1, got shape \[1, 1\]"),
    ({"X": np.array([1], F)}, "missing input 'Y'"),
    ({"X": np.array([1], F), "Y": np.array([1], F), "W": np.array([1], F)}, "'W' is not an input"),
    ({"X": "abc", "Y": np.array([1], F)}, "input 'X'"),
])
def test_inputs_are_checked(feeds, message):
    with pytest.raises(EvalError, match=message):
        Evaluator(add_relu()).run(None, feeds)


def test_python_scalars_and_lists_take_the_declared_type():
    (z,) = Evaluator(add_relu()).run(None, {"X": [1, 2], "Y": np.array([1, 1], F)})
    assert z.dtype == F and z.tolist() == [2, 3]


def test_error_names_the_node_and_input_shapes():
    m = model([helper.make_node("Add", ["X", "Y"], ["T"], name="add1")], [vi("X"), vi("Y", shape=("M",))], [vi("T")])
    with pytest.raises(EvalError) as info:
        Evaluator(m).run(None, {"X": np.zeros(2, F), "Y": np.zeros(3, F)})
    msg = str(info.value)
    assert "node 'add1' (ai.onnx::Add)" in msg and "X: float32[2]" in msg and "Y: float32[3]" in msg


def test_error_inside_a_subgraph_names_both_nodes():
    then = helper.make_graph([helper.make_node("Add", ["X", "Y"], ["R"], name="inner")], "then", [], [vi("R")])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["R2"])], "else", [], [vi("R2")])
    m = model([helper.make_node("If", ["C"], ["Z"], name="branch", then_branch=then, else_branch=other)],
              [vi("C", T.BOOL, []), vi("X"), vi("Y", shape=("M",))], [vi("Z")])
    ev = Evaluator(m)
    assert ev.run(None, {"C": np.array(False), "X": np.zeros(2, F), "Y": np.zeros(3, F)})[0].shape == (2,)
    with pytest.raises(EvalError, match=r"in node 'branch' \(ai.onnx::If\): node 'inner' \(ai.onnx::Add\)"):
        ev.run(None, {"C": np.array(True), "X": np.zeros(2, F), "Y": np.zeros(3, F)})


def test_unknown_operator_fails_at_construction():
    m = model([helper.make_node("NoSuchOp", ["X"], ["Z"], name="n")], [vi("X")], [vi("Z")])
    with pytest.raises(EvalError, match="no kernel for ai.onnx::NoSuchOp"):
        Evaluator(m)


# ---------------------------------------------------------------------------------------------- plans
def test_constant_subgraphs_are_folded_once():
    shape = helper.make_tensor("shape", T.INT64, [1], [3])
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["W"], value=helper.make_tensor("v", T.FLOAT, [1], [2.0])),
             helper.make_node("Constant", [], ["B"], value_floats=[1.0, 1.0, 1.0]),
             helper.make_node("Mul", ["W", "B"], ["WB"]),
             helper.make_node("Add", ["X", "WB"], ["Z"])]
    ev = Evaluator(model(nodes, [vi("X", shape=[3])], [vi("Z", shape=[3])], [shape]))
    assert [s[5].node.op_type for s in ev._main.steps] == ["Add"]
    assert ev.run(None, {"X": np.ones(3, F)})[0].tolist() == [3, 3, 3]


def test_random_operators_are_not_folded():
    nodes = [helper.make_node("RandomUniform", [], ["R"], shape=[4], dtype=T.FLOAT),
             helper.make_node("Add", ["X", "R"], ["Z"])]
    ev = Evaluator(model(nodes, [vi("X", shape=[4])], [vi("Z", shape=[4])]), seed=0)
    a, b = (ev.run(None, {"X": np.zeros(4, F)})[0] for _ in range(2))
    assert not np.array_equal(a, b)


def test_intermediates_are_released_after_last_use():
    nodes = [helper.make_node("Relu", ["X"], ["A"]), helper.make_node("Relu", ["A"], ["B"]),
             helper.make_node("Add", ["A", "B"], ["C"]), helper.make_node("Neg", ["C"], ["Z"])]
    ev = Evaluator(model(nodes, [vi("X")], [vi("Z")]))
    frees = [set(s[4]) for s in ev._main.steps]
    assert frees == [{"X"}, set(), {"A", "B"}, {"C"}]  # the env drops feeds too; callers keep theirs


def test_initializer_listed_as_input_is_an_overridable_default():
    w = helper.make_tensor("W", T.FLOAT, [1], [10.0])
    m = model([helper.make_node("Add", ["X", "W"], ["Z"])], [vi("X", shape=[1]), vi("W", shape=[1])],
              [vi("Z", shape=[1])], [w])
    ev = Evaluator(m)
    assert ev.input_names == ["X"]
    assert ev.run(None, {"X": np.ones(1, F)})[0].tolist() == [11]
    assert ev.run(None, {"X": np.ones(1, F), "W": np.zeros(1, F)})[0].tolist() == [1]


def test_loop_reads_outer_scope_values():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["acc", "step"], ["acc2"])],
        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc", shape=[1])],
        [vi("cond_out", T.BOOL, []), vi("acc2", shape=[1])])
    m = model([helper.make_node("Loop", ["M", "", "init"], ["out"], body=body)],
              [vi("M", T.INT64, []), vi("init", shape=[1]), vi("step", shape=[1])], [vi("out", shape=[1])])
    (out,) = Evaluator(m).run(None, {"M": np.array(5), "init": np.zeros(1, F), "step": np.full(1, 2, F)})
    assert out.tolist() == [10]


# ---------------------------------------------------------------------------------------------- functions
def test_model_local_function_with_defaults_refs_and_nested_calls():
    scale = helper.make_function(
        "local", "Scale", ["x"], ["y"],
        [helper.make_node("Constant", [], ["a"], value_float=0.0),
         helper.make_node("Constant", [], ["k"]),
         helper.make_node("Mul", ["x", "k"], ["y"])],
        [helper.make_opsetid("", 18)], attributes=[])
    # Constant k takes the caller's "factor" attribute via ref_attr_name
    ref = helper.make_attribute_ref("value_float", onnx.AttributeProto.FLOAT)
    ref.ref_attr_name = "factor"
    scale.node[1].attribute.append(ref)
    scale.attribute_proto.append(helper.make_attribute("factor", 3.0))
    twice = helper.make_function(
        "local", "ScaleTwice", ["x"], ["y"],
        [helper.make_node("Scale", ["x"], ["t"], domain="local"),
         helper.make_node("Scale", ["t"], ["y"], domain="local", factor=10.0)],
        [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
    m = model([helper.make_node("ScaleTwice", ["X"], ["Z"], domain="local")], [vi("X")], [vi("Z")],
              functions=[scale, twice])
    (z,) = Evaluator(m).run(None, {"X": np.array([1, 2], F)})
    assert z.tolist() == [30, 60]


def test_schema_function_body_is_used_without_kernel():
    # MeanVarianceNormalization has a function body in its schema
    x = np.arange(24, dtype=F).reshape(2, 3, 2, 2)
    m = model([helper.make_node("MeanVarianceNormalization", ["X"], ["Z"])], [vi("X", shape=[2, 3, 2, 2])],
              [vi("Z", shape=[2, 3, 2, 2])])
    (z,) = Evaluator(m).run(None, {"X": x})
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(z, (x - mean) / std, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- training
def training_model():
    """Linear regression y = x @ W + B, trained by plain gradient descent written with ordinary ops."""
    inference = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])],
        "linear", [vi("X", shape=["N", 2])], [vi("Y", shape=["N", 1])],
        [helper.make_tensor("W", T.FLOAT, [2, 1], [0.0, 0.0]), helper.make_tensor("B", T.FLOAT, [1], [0.0])])
    c = helper.make_tensor
    algorithm = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["pred"]),
         helper.make_node("Sub", ["pred", "Y_true"], ["diff"]), helper.make_node("Mul", ["diff", "diff"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
         # d loss / d pred = 2 * diff / N
         helper.make_node("Shape", ["X"], ["xshape"], end=1), helper.make_node("Cast", ["xshape"], ["n"], to=T.FLOAT),
         helper.make_node("Div", ["diff", "n"], ["dmean"]), helper.make_node("Mul", ["dmean", "two"], ["dpred"]),
         helper.make_node("Transpose", ["X"], ["XT"]), helper.make_node("MatMul", ["XT", "dpred"], ["gW"]),
         helper.make_node("ReduceSum", ["dpred", "axis0"], ["gB"], keepdims=0),
         helper.make_node("Mul", ["gW", "lr"], ["sW"]), helper.make_node("Sub", ["W", "sW"], ["W_new"]),
         helper.make_node("Mul", ["gB", "lr"], ["sB"]), helper.make_node("Sub", ["B", "sB"], ["B_new"])],
        "sgd", [vi("X", shape=["N", 2]), vi("Y_true", shape=["N", 1])],
        [vi("loss", shape=[]), vi("W_new", shape=[2, 1]), vi("B_new", shape=[1])],
        [c("two", T.FLOAT, [], [2.0]), c("lr", T.FLOAT, [], [0.1]), c("axis0", T.INT64, [1], [0])])
    init = helper.make_graph(
        [helper.make_node("Constant", [], ["W0"], value=c("w0", T.FLOAT, [2, 1], [0.5, -0.5])),
         helper.make_node("Constant", [], ["B0"], value=c("b0", T.FLOAT, [1], [0.0]))],
        "init", [], [vi("W0", shape=[2, 1]), vi("B0", shape=[1])])
    ti = onnx.TrainingInfoProto()
    ti.algorithm.CopyFrom(algorithm)
    ti.initialization.CopyFrom(init)
    for key, value in (("W", "W0"), ("B", "B0")):
        b = ti.initialization_binding.add()
        b.key, b.value = key, value
    for key, value in (("W", "W_new"), ("B", "B_new")):
        b = ti.update_binding.add()
        b.key, b.value = key, value
    m = helper.make_model(inference, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    m.training_info.append(ti)
    return m


def test_training_converges_and_inference_sees_the_state():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(F)
    y = (x @ np.array([[3.0], [-2.0]], F) + 0.5).astype(F)
    ev = Evaluator(training_model())
    assert ev.run(None, {"X": x})[0].tolist() == np.zeros((64, 1)).tolist()
    ev.initialize()
    assert ev.state["W"].tolist() == [[0.5], [-0.5]]
    losses = [float(ev.train_step({"X": x, "Y_true": y})["loss"]) for _ in range(200)]
    assert losses[-1] < losses[0] * 1e-4, losses[::50]
    np.testing.assert_allclose(ev.state["W"], [[3.0], [-2.0]], atol=1e-3)
    np.testing.assert_allclose(ev.run(None, {"X": x})[0], y, atol=1e-3)


def test_training_needs_the_numpy_engine():
    ev = Evaluator(add_relu(), engine="onnxruntime")
    with pytest.raises(EvalError, match="numpy engine"):
        ev.train_step({})


# ---------------------------------------------------------------------------------------------- engines
def test_onnxruntime_engine_gives_the_same_results():
    feeds = {"X": np.array([1, -5, 3], F), "Y": np.array([1, 2, -9], F)}
    ours = Evaluator(add_relu()).run(None, feeds)
    theirs = Evaluator(add_relu(), engine="onnxruntime").run(None, feeds)
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_threads_limit_numpy_blas_and_keep_results():
    from onnxtext.evaluator.runtime import get_blas_threads, set_blas_threads
    before = get_blas_threads()
    if before is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS found in /proc/self/maps (threads= has no effect here)")
    feeds = {"X": np.array([1, -5, 3], F), "Y": np.array([1, 2, -9], F)}
    try:
        ours = Evaluator(add_relu(), threads=1).run(None, feeds)
        assert get_blas_threads() == 1
    finally:
        set_blas_threads(before)
    np.testing.assert_array_equal(ours[0], Evaluator(add_relu()).run(None, feeds)[0])


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2"])
def test_threads_must_be_a_positive_integer(threads):
    with pytest.raises(EvalError, match="threads must be a positive integer"):
        Evaluator(add_relu(), threads=threads)


def test_onnxruntime_engine_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EvalError, match="needs the onnxruntime package"):
        Evaluator(add_relu(), engine="onnxruntime")


def test_unknown_engine():
    with pytest.raises(EvalError, match="unknown engine"):
        Evaluator(add_relu(), engine="tvm")


# ---------------------------------------------------------------------------------------------- CLI
@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(add_relu(), str(path))
    return str(path)


def test_cli_run_literals_and_files(model_file, tmp_path, capsys):
    from onnxtext.cli import main

    np.save(tmp_path / "y.npy", np.array([1, 2, 3], F))
    out_dir = tmp_path / "out"
    rc = main(["run", model_file, "--input", "X=[1,-5,3]", "--input", f"Y={tmp_path / 'y.npy'}",
               "--output-dir", str(out_dir)])
    assert rc == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["Z: float[3]", "[2. 0. 6.]"]
    assert np.load(out_dir / "Z.npy").tolist() == [2, 0, 6]


def test_cli_run_random_and_engine(model_file, capsys):
    from onnxtext.cli import main

    assert main(["run", model_file, "--random", "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["run", model_file, "--random", "--seed", "3", "--engine", "onnxruntime"]) == 0
    assert capsys.readouterr().out == first and first.startswith("Z: float[3]")  # --random sizes N as 3


def test_cli_large_outputs_are_elided(tmp_path, capsys):
    from onnxtext.cli import main

    path = tmp_path / "big.onnx"
    onnx.save(model([helper.make_node("Relu", ["X"], ["Z"])], [vi("X", shape=[1000])], [vi("Z", shape=[1000])]),
              str(path))
    assert main(["run", str(path), "--random"]) == 0
    out = capsys.readouterr().out
    assert "..." in out and len(out) < 500


@pytest.mark.parametrize("argv,message", [
    ([], "missing inputs: X (float[N]), Y (float[N])"),
    (["--input", "X=[1"], "neither a .npy/.pb file nor a JSON number or list"),
    (["--input", "Q=[1]"], "the model has no input 'Q'"),
    (["--input", "X=[1.0]", "--input", "Y=[[1.0]]"], "expected rank 1"),
])
def test_cli_run_errors_are_clean(model_file, capsys, argv, message):
    from onnxtext.cli import main

    assert main(["run", model_file, *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
