"""BatchNormalization [-> Mul -> Add] -> Relu -> pointwise Conv as one threshold step (rule ``clamped_pointwise``).

Each case builds that chain (DenseNet's layer start), runs it with the evaluator and compares with a
float64 reference computed here with plain numpy formulas straight from the operator definitions
(no evaluator code); the plan is checked to hold a ClampedPointwise step exactly when every
normalization factor is positive and the Conv is a one-group pointwise Conv. To add a case, add a
line to the table.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import graph_model

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.fused.clamped_pointwise import ClampedPointwise

F = TensorProto.FLOAT
EPS = 1e-5

# (name, input shape, output channels, conv attributes, factor signs, conv bias, Relu after the conv,
#  Mul/Add after the BN, expect the fused step)
CASES = [
    ("densenet_layer", (1, 16, 9, 9), 8, {}, "+", True, True, True, True),
    ("no_bias", (1, 12, 5, 7), 6, {}, "+", False, False, False, True),
    ("batch", (3, 10, 4, 4), 5, {}, "+", True, False, False, True),
    ("more_outputs", (1, 4, 6, 6), 12, {}, "+", True, True, False, True),
    ("negative_factor", (1, 8, 5, 5), 4, {}, "-", True, True, False, False),
    ("zero_factor", (1, 8, 5, 5), 4, {}, "0", True, False, False, False),
    ("grouped", (1, 8, 5, 5), 4, {"group": 2}, "+", True, False, False, False),
    ("strided", (1, 8, 6, 6), 4, {"strides": [2, 2]}, "+", True, False, False, False),
    ("kernel3", (1, 8, 6, 6), 4, {"pads": [1, 1, 1, 1]}, "+", True, False, False, False),
]


def _case(shape, m, attrs, signs, bias, relu_after, mul_add, seed):
    rng = np.random.default_rng(seed)
    c = shape[1]
    group = attrs.get("group", 1)
    k = 3 if attrs.get("pads") else 1
    scale = rng.uniform(0.5, 2.0, c)
    if signs == "-":
        scale[c // 2] = -scale[c // 2]
    elif signs == "0":
        scale[0] = 0.0
    values = {
        "s": scale, "t": rng.normal(size=c), "mu": rng.normal(size=c), "var": rng.uniform(0.1, 2.0, c),
        "W": rng.normal(size=(m, c // group, k, k)),
    }
    if bias:
        values["B"] = rng.normal(size=m)
    if mul_add:
        values["mul"] = rng.uniform(0.5, 1.5, (c, 1, 1))
        values["add"] = rng.normal(size=(c, 1, 1))
    nodes = [helper.make_node("BatchNormalization", ["X", "s", "t", "mu", "var"], ["bn"], epsilon=EPS)]
    src = "bn"
    if mul_add:
        nodes += [helper.make_node("Mul", ["bn", "mul"], ["m1"]), helper.make_node("Add", ["m1", "add"], ["a1"])]
        src = "a1"
    nodes.append(helper.make_node("Relu", [src], ["r"]))
    nodes.append(helper.make_node("Conv", ["r", "W"] + (["B"] if bias else []), ["y"], **attrs))
    out = "y"
    if relu_after:
        nodes.append(helper.make_node("Relu", ["y"], ["z"]))
        out = "z"
    model = graph_model(nodes, {"X": None}, [out], {n: v.astype(np.float32) for n, v in values.items()},
                        opset=15)
    x = rng.normal(size=shape).astype(np.float32)
    return model, x, {n: v.astype(np.float32).astype(np.float64) for n, v in values.items()}


def _reference(x, v, attrs, bias, relu_after, mul_add):
    """BN, Mul/Add, Relu and the Conv in float64, by their definitions (the Conv by loops over taps)."""
    x = x.astype(np.float64)
    c = x.shape[1]
    per = (1, c, 1, 1)
    y = (x - v["mu"].reshape(per)) / np.sqrt(v["var"].reshape(per) + EPS) * v["s"].reshape(per) + v["t"].reshape(per)
    if mul_add:
        y = y * v["mul"][None] + v["add"][None]
    y = np.maximum(y, 0)
    w = v["W"]
    m, cg, k, _ = w.shape
    group = attrs.get("group", 1)
    stride = attrs.get("strides", [1, 1])[0]
    pad = attrs.get("pads", [0, 0, 0, 0])[0]
    yp = np.pad(y, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (yp.shape[2] - k) // stride + 1
    ow = (yp.shape[3] - k) // stride + 1
    out = np.zeros((x.shape[0], m, oh, ow))
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(k):
            for j in range(k):
                window = yp[:, g * cg:(g + 1) * cg, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                out[:, o] += np.einsum("ncij,c->nij", window, w[o, :, i, j])
        if bias:
            out[:, o] += v["B"][o]
    return np.maximum(out, 0) if relu_after else out


@pytest.mark.parametrize("name,shape,m,attrs,signs,bias,relu_after,mul_add,fused", CASES, ids=[c[0] for c in CASES])
def test_clamped_pointwise(name, shape, m, attrs, signs, bias, relu_after, mul_add, fused):
    model, x, values = _case(shape, m, attrs, signs, bias, relu_after, mul_add, seed=len(name))
    ev = Evaluator(model)
    got = ev.run(None, {"X": x})[0]
    expected = _reference(x, values, attrs, bias, relu_after, mul_add)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    steps = ev._plan_for(None, ()).steps
    assert any(isinstance(st[0], ClampedPointwise) for st in steps) == fused
    # another input shape and a float64 input take the prepared path again and the fallback
    x2 = np.concatenate([x, x[:1]], axis=0)
    np.testing.assert_allclose(ev.run(None, {"X": x2})[0][-1], expected[0], rtol=1e-4,
                               atol=1e-4 * np.abs(expected).max())


def test_shared_relu_output_is_not_fused():
    """The Relu result has a second reader (a graph output): it must stay a separate value."""
    model, x, _ = _case((1, 8, 4, 4), 4, {}, "+", True, False, False, seed=3)
    model.graph.output.append(helper.make_tensor_value_info("r", F, None))
    ev = Evaluator(model)
    y, r = ev.run(None, {"X": x})
    assert not any(isinstance(st[0], ClampedPointwise) for st in ev._plan_for(None, ()).steps)
    assert (r >= 0).all() and r.shape == x.shape


def test_densenet_uses_the_threshold_step():
    """Every dense layer of the onnx package's light DenseNet-121 starts with such a chain."""
    import os

    import onnx

    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_densenet121.onnx")
    ev = Evaluator(onnx.load(path))
    steps = ev._plan_for(None, ()).steps
    assert sum(isinstance(st[0], ClampedPointwise) for st in steps) == 58  # 6 + 12 + 24 + 16 dense layers


def test_fallback_for_inputs_not_prepared_for():
    """A float64 input (the weights are float32) runs the original affine and Conv steps."""
    model, x, values = _case((1, 6, 5, 5), 3, {}, "+", True, False, False, seed=11)
    ev = Evaluator(model)
    step = next(st[0] for st in ev._plan_for(None, ()).steps if isinstance(st[0], ClampedPointwise))
    expected = _reference(x, values, {}, True, False, False)
    got = step(x.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
