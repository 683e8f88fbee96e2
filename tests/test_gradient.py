"""Gradient (ai.onnx.preview.training): reverse-mode derivatives checked against finite differences.

Each row of ``CASES`` builds ``y = Op(x0, x1, ..., constants...)`` plus ``Gradient(xs=[x0, x1...], y=y)``
in float64, and compares every gradient with central differences of ``sum(y)`` computed by running the
same model forward. To cover a new rule, add a row.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxtext.errors import EvalError
from onnxtext.evaluator import Evaluator

TRAINING = "ai.onnx.preview.training"
rng = np.random.default_rng(1234)


def i64(*values):
    return np.array(values, dtype=np.int64)


# (id, op, shapes of the differentiated inputs, constant inputs after them, attributes, opset, positive)
# ``positive`` draws inputs in [0.5, 2] (Log, Sqrt, Pow bases, divisors), else standard normal
CASES = [
    ("add_broadcast", "Add", [(2, 3), (3,)], [], {}, 17, False),
    ("sub_broadcast", "Sub", [(2, 3), (2, 1)], [], {}, 17, False),
    ("mul_broadcast", "Mul", [(1, 3), (2, 1)], [], {}, 17, False),
    ("div", "Div", [(2, 3), (2, 3)], [], {}, 17, True),
    ("neg", "Neg", [(4,)], [], {}, 17, False),
    ("abs", "Abs", [(2, 3)], [], {}, 17, False),
    ("sqrt", "Sqrt", [(5,)], [], {}, 17, True),
    ("exp", "Exp", [(2, 2)], [], {}, 17, False),
    ("log", "Log", [(3,)], [], {}, 17, True),
    ("pow", "Pow", [(2, 3), (3,)], [], {}, 17, True),
    ("reciprocal", "Reciprocal", [(4,)], [], {}, 17, True),
    ("sin", "Sin", [(4,)], [], {}, 17, False),
    ("cos", "Cos", [(4,)], [], {}, 17, False),
    ("relu", "Relu", [(3, 4)], [], {}, 17, False),
    ("leaky_relu", "LeakyRelu", [(3, 4)], [], {"alpha": 0.2}, 17, False),
    ("sigmoid", "Sigmoid", [(3, 4)], [], {}, 17, False),
    ("tanh", "Tanh", [(3, 4)], [], {}, 17, False),
    ("softmax_13", "Softmax", [(2, 3, 4)], [], {"axis": 1}, 17, False),
    ("softmax_11_flattens", "Softmax", [(2, 3, 4)], [], {"axis": 1}, 11, False),
    ("log_softmax_13", "LogSoftmax", [(2, 3, 4)], [], {"axis": 2}, 17, False),
    ("log_softmax_11_flattens", "LogSoftmax", [(2, 3, 4)], [], {"axis": 1}, 11, False),
    ("sum_three", "Sum", [(2, 3), (3,), (1, 3)], [], {}, 17, False),
    ("identity", "Identity", [(2, 3)], [], {}, 17, False),
    ("matmul_2d", "MatMul", [(2, 3), (3, 4)], [], {}, 17, False),
    ("matmul_batch_broadcast", "MatMul", [(2, 1, 2, 3), (3, 3, 2)], [], {}, 17, False),
    ("matmul_vector_left", "MatMul", [(3,), (2, 3, 4)], [], {}, 17, False),
    ("matmul_vector_right", "MatMul", [(2, 3), (3,)], [], {}, 17, False),
    ("gemm", "Gemm", [(2, 3), (3, 4), (4,)], [], {"alpha": 0.5, "beta": 2.0}, 17, False),
    ("gemm_transposed", "Gemm", [(3, 2), (4, 3), (2, 1)], [], {"transA": 1, "transB": 1}, 17, False),
    ("reshape", "Reshape", [(2, 3, 2)], [i64(3, -1)], {}, 17, False),
    ("flatten", "Flatten", [(2, 3, 2)], [], {"axis": 2}, 17, False),
    ("unsqueeze_13", "Unsqueeze", [(2, 3)], [i64(0, 3)], {}, 17, False),
    ("squeeze_11", "Squeeze", [(2, 1, 3)], [], {"axes": [1]}, 11, False),
    ("transpose", "Transpose", [(2, 3, 4)], [], {"perm": [1, 2, 0]}, 17, False),
    ("transpose_default", "Transpose", [(2, 3, 4)], [], {}, 17, False),
    ("concat", "Concat", [(2, 1), (2, 3)], [], {"axis": -1}, 17, False),
    ("reducesum_13", "ReduceSum", [(2, 3, 4)], [i64(0, 2)], {"keepdims": 0}, 17, False),
    ("reducesum_all", "ReduceSum", [(2, 3)], [], {}, 17, False),
    ("reducesum_11_attr", "ReduceSum", [(2, 3, 4)], [], {"axes": [-1]}, 11, False),
    ("reducemean_18", "ReduceMean", [(2, 3, 4)], [i64(1)], {"keepdims": 0}, 18, False),
    ("reducemean_13_attr", "ReduceMean", [(2, 3, 4)], [], {"axes": [0, 2]}, 13, False),
]


def gradient_model(op, shapes, constants, attrs, opset):
    names = [f"x{k}" for k in range(len(shapes))]
    inits = [numpy_helper.from_array(c, f"c{k}") for k, c in enumerate(constants)]
    nodes = [helper.make_node(op, names + [t.name for t in inits], ["y"], **attrs),
             helper.make_node("Gradient", names, [f"d_{n}" for n in names], domain=TRAINING, xs=names, y="y")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.DOUBLE, s) for n, s in zip(names, shapes)],
        [helper.make_tensor_value_info(o, TensorProto.DOUBLE, None) for o in ["y"] + [f"d_{n}" for n in names]],
        initializer=inits)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", opset),
                                                                 helper.make_opsetid(TRAINING, 1)])


def finite_difference(evaluator, feeds, name, eps=1e-6):
    """Central differences of sum(y) with respect to the input ``name``."""
    x = feeds[name]
    grad = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        values = []
        for step in (eps, -eps):
            moved = x.copy()
            moved[j] += step
            values.append(evaluator.run(["y"], {**feeds, name: moved})[0].sum())
        grad[j] = (values[0] - values[1]) / (2 * eps)
    return grad


@pytest.mark.parametrize("op, shapes, constants, attrs, opset, positive",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(op, shapes, constants, attrs, opset, positive):
    ev = Evaluator(gradient_model(op, shapes, constants, attrs, opset))
    feeds = {f"x{k}": (rng.uniform(0.5, 2.0, s) if positive else rng.standard_normal(s)) for k, s in enumerate(shapes)}
    outputs = dict(zip(ev.output_names, ev.run(None, feeds)))
    for name, x in feeds.items():
        got = outputs[f"d_{name}"]
        assert got.shape == x.shape and got.dtype == x.dtype
        np.testing.assert_allclose(got, finite_difference(ev, feeds, name), rtol=1e-5, atol=1e-7, err_msg=name)


MLP = """
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
mlp (float[4, 3] X, float[3, 5] W1, float[5] b1, float[5, 2] W2) => (float loss, float[3, 5] dW1, float[5] db1,
                                                                    float[5, 2] dW2) {
    h = Gemm(X, W1, b1)
    a = Relu(h)
    logits = MatMul(a, W2)
    p = Softmax<axis = -1>(logits)
    logp = Log(p)
    nll = Neg(logp)
    loss = ReduceMean<keepdims = 0>(nll)
    dW1, db1, dW2 = ai.onnx.preview.training.Gradient<xs = ["W1", "b1", "W2"], zs = ["X"], y = "loss">(W1, b1, W2, X)
}
"""


def test_chain_of_ops_float32_against_float64_finite_differences():
    ev = Evaluator(MLP)
    feeds = {"X": rng.standard_normal((4, 3)), "W1": rng.standard_normal((3, 5)), "b1": rng.standard_normal(5),
             "W2": rng.standard_normal((5, 2))}
    feeds32 = {k: v.astype(np.float32) for k, v in feeds.items()}
    out = dict(zip(ev.output_names, ev.run(None, feeds32)))
    # finite differences in float64 on a float64 copy of the model (float32 steps would be noise)
    ev64 = Evaluator(MLP.replace("float", "double"))
    for x in ("W1", "b1", "W2"):
        got = out[f"d{x}"]
        assert got.dtype == np.float32 and got.shape == feeds[x].shape
        expected = finite_difference(_Renamed(ev64, "loss"), {k: v.astype(np.float64) for k, v in feeds32.items()}, x)
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-5, err_msg=x)


class _Renamed:
    """Runs output ``name`` of an evaluator when asked for "y" (finite_difference asks for y)."""

    def __init__(self, evaluator, name):
        self.evaluator, self.name = evaluator, name

    def run(self, _names, feeds):
        return self.evaluator.run([self.name], feeds)


def test_values_given_to_gradient_are_where_it_is_evaluated():
    # the spec's H_1 example: Gradient(xs=[a]) fed another value than the graph's a
    ev = Evaluator("""
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
g (double[3] a, double[3] other) => (double[3] da) {
    c = Mul(a, a)
    da = ai.onnx.preview.training.Gradient<xs = ["a"], y = "c">(other)
}
""")
    a, other = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(ev.run(None, {"a": a, "other": other})[0], 2 * other)


def test_gradient_with_respect_to_an_intermediate_value():
    # the spec's dY/dH example: the nodes computing h from a are not differentiated
    ev = Evaluator("""
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
g (double[3] a) => (double[3] dh) {
    h = Exp(a)
    y = Mul(h, h)
    dh = ai.onnx.preview.training.Gradient<xs = ["h"], y = "y">(h)
}
""")
    a = rng.standard_normal(3)
    np.testing.assert_allclose(ev.run(None, {"a": a})[0], 2 * np.exp(a))


def test_unreached_x_gets_zeros_and_constants_are_read():
    ev = Evaluator("""
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
g (double[2] a, double[2] b) => (double[2] da, double[2] db) {
    k = Constant<value = double[2] {3.0, 4.0}>()
    c = Mul(a, k)
    da, db = ai.onnx.preview.training.Gradient<xs = ["a", "b"], y = "c">(a, b)
}
""")
    da, db = ev.run(None, {"a": np.ones(2), "b": np.ones(2)})
    np.testing.assert_array_equal(da, [3.0, 4.0])
    np.testing.assert_array_equal(db, [0.0, 0.0])


def test_node_without_rule_is_named():
    ev = Evaluator("""
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
g (double[2] a) => (double[2] da) {
    [the_erf] s = Erf(a)
    c = Add(s, a)
    da = ai.onnx.preview.training.Gradient<xs = ["a"], y = "c">(a)
}
""")
    with pytest.raises(EvalError, match=r"no differentiation rule for node 'the_erf' \(ai.onnx::Erf\)"):
        ev.run(None, {"a": np.ones(2)})


def test_value_outside_xs_and_zs_that_is_gone_says_to_list_it():
    ev = Evaluator("""
<ir_version: 8, opset_import: ["": 17, "ai.onnx.preview.training": 1]>
g (double[2] a, double[2] w) => (double[2] da) {
    c = Mul(a, w)
    da = ai.onnx.preview.training.Gradient<xs = ["a"], y = "c">(a)
}
""")
    with pytest.raises(EvalError, match=r"depends on 'w'.*list it in zs"):
        ev.run(None, {"a": np.ones(2), "w": np.ones(2)})


def test_training_step_with_gradient_and_momentum_converges():
    """The spec's use: an algorithm graph differentiates its loss and feeds an optimizer (IR training info)."""
    import onnx

    T, F = TensorProto, np.float32
    vi = helper.make_tensor_value_info
    inference = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])],
        "linear", [vi("X", T.FLOAT, ["N", 2])], [vi("Y", T.FLOAT, ["N", 1])],
        [helper.make_tensor("W", T.FLOAT, [2, 1], [0.0, 0.0]), helper.make_tensor("B", T.FLOAT, [1], [0.0]),
         helper.make_tensor("VW", T.FLOAT, [2, 1], [0.0, 0.0]), helper.make_tensor("VB", T.FLOAT, [1], [0.0])])
    algorithm = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["pred"]),
         helper.make_node("Sub", ["pred", "Y_true"], ["diff"]), helper.make_node("Mul", ["diff", "diff"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
         helper.make_node("Gradient", ["W", "B", "X", "Y_true"], ["gW", "gB"], domain=TRAINING,
                          xs=["W", "B"], zs=["X", "Y_true"], y="loss"),
         helper.make_node("Momentum", ["lr", "step", "W", "B", "gW", "gB", "VW", "VB"],
                          ["W_new", "B_new", "VW_new", "VB_new"], domain=TRAINING,
                          alpha=0.9, beta=1.0, norm_coefficient=0.0, mode="standard")],
        "sgd_momentum", [vi("X", T.FLOAT, ["N", 2]), vi("Y_true", T.FLOAT, ["N", 1])],
        [vi(n, T.FLOAT, None) for n in ("loss", "W_new", "B_new", "VW_new", "VB_new")],
        [helper.make_tensor("lr", T.FLOAT, [], [0.05]), helper.make_tensor("step", T.INT64, [], [1])])
    ti = onnx.TrainingInfoProto()
    ti.algorithm.CopyFrom(algorithm)
    for key in ("W", "B", "VW", "VB"):
        b = ti.update_binding.add()
        b.key, b.value = key, f"{key}_new"
    model = helper.make_model(inference, ir_version=9, opset_imports=[helper.make_opsetid("", 18),
                                                                     helper.make_opsetid(TRAINING, 1)])
    model.training_info.append(ti)
    x = rng.standard_normal((64, 2)).astype(F)
    y = (x @ np.array([[3.0], [-2.0]], F) + 0.5).astype(F)
    ev = Evaluator(model)
    losses = [float(ev.train_step({"X": x, "Y_true": y})["loss"]) for _ in range(300)]
    assert losses[-1] < losses[0] * 1e-4, losses[::30]
    np.testing.assert_allclose(ev.state["W"], [[3.0], [-2.0]], atol=1e-3)
    np.testing.assert_allclose(ev.run(None, {"X": x})[0], y, atol=1e-3)
