"""AveragePool moves across pointwise Convs when that gives the same result on less data.

Averaging commutes with a per-pixel linear map, so the plan runs a strided pool over whole windows
before a 1x1, unit-stride, unpadded Conv without Relu (DenseNet's transitions: the Conv runs on the
smaller image), and a unit-stride pool after a channel-narrowing pointwise Conv and the per-channel
affine steps that follow it (Inception's pool projections: the pool averages fewer channels). Each
case builds the chain with constant weights and checks the result against plain numpy (a direct
convolution, the nested-loop pooling reference of ``test_pool_windows``), and whether the plan
reordered the steps. To add a case, add a line to ``CASES`` or ``NARROWING``.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxtext.evaluator import Evaluator
from test_pool_windows import reference_pool

F = TensorProto.FLOAT

# (input shape, weight shape, Conv attributes, AveragePool attributes, relu, Conv output also read, commuted)
CASES = [
    ((1, 8, 8, 8), (4, 8, 1, 1), {}, {"kernel_shape": [2, 2], "strides": [2, 2]}, False, False, True),
    ((2, 6, 9, 7), (5, 6, 1, 1), {}, {"kernel_shape": [3, 2], "strides": [2, 1]}, False, False, True),
    ((1, 6, 8, 8), (6, 2, 1, 1), {"group": 3}, {"kernel_shape": [2, 2], "strides": [2, 2]}, False, False, True),
    ((1, 4, 6, 6), (3, 4, 1, 1), {"pads": [0, 0, 0, 0]}, {"kernel_shape": [2, 2], "strides": [2, 2],
                                                           "auto_pad": "VALID"}, False, False, True),
    ((1, 4, 6, 6), (3, 4, 1, 1), {}, {"kernel_shape": [2, 2]}, False, False, False),  # unit strides: no smaller image
    ((1, 4, 6, 6), (3, 4, 1, 1), {}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, False, False, False),  # padded
    ((1, 4, 7, 7), (3, 4, 1, 1), {}, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, False, False, False),
    ((1, 4, 6, 6), (3, 4, 1, 1), {}, {"kernel_shape": [2, 2], "strides": [2, 2]}, True, False, False),  # Relu between
    ((1, 4, 6, 6), (3, 4, 1, 1), {}, {"kernel_shape": [2, 2], "strides": [2, 2]}, False, True, False),  # two readers
    ((1, 4, 8, 8), (3, 4, 3, 3), {"pads": [1, 1, 1, 1]}, {"kernel_shape": [2, 2], "strides": [2, 2]}, False, False,
     False),  # not pointwise
    ((1, 4, 8, 8), (3, 4, 1, 1), {"strides": [2, 2]}, {"kernel_shape": [2, 2], "strides": [2, 2]}, False, False,
     False),  # strided Conv
]


def build(x_shape, w, b, conv_attrs, pool_attrs, relu, both):
    inits = [helper.make_tensor("w", F, w.shape, w.reshape(-1).tolist()),
             helper.make_tensor("b", F, b.shape, b.tolist())]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], **conv_attrs)]
    pooled = "y"
    if relu:
        nodes.append(helper.make_node("Relu", ["y"], ["r"]))
        pooled = "r"
    nodes.append(helper.make_node("AveragePool", [pooled], ["z"], **pool_attrs))
    return model_of(nodes, x_shape, inits, "y" if both else None)


def model_of(nodes, x_shape, inits, also_read=None):
    """The model of ``nodes`` from input x to output z; with ``also_read``, a second output Neg of that
    value, so it has another reader than the rewritten steps."""
    outputs = [helper.make_tensor_value_info("z", F, None)]
    if also_read:
        nodes = nodes + [helper.make_node("Neg", [also_read], ["neg"])]
        outputs.append(helper.make_tensor_value_info("neg", F, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def conv_reference(x, w, b, attrs):
    """Direct convolution: a sum over kernel taps and groups (float64)."""
    group = attrs.get("group", 1)
    pads = attrs.get("pads", [0] * 4)
    strides = attrs.get("strides", [1, 1])
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, cg, kh, kw = w.shape
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    y = np.zeros((x.shape[0], m, oh, ow)) + b.reshape(1, -1, 1, 1)
    per = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                taps = xs[:, :, i:i + (oh - 1) * strides[0] + 1:strides[0], j:j + (ow - 1) * strides[1] + 1:strides[1]]
                y[:, g * per:(g + 1) * per] += np.einsum("mc,nchw->nmhw", w[g * per:(g + 1) * per, :, i, j], taps)
    return y


@pytest.mark.parametrize("x_shape,w_shape,conv_attrs,pool_attrs,relu,both,commuted", CASES)
def test_pool_before_pointwise_conv(x_shape, w_shape, conv_attrs, pool_attrs, relu, both, commuted):
    rng = np.random.default_rng(5)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    ev = Evaluator(build(x_shape, w, b, conv_attrs, pool_attrs, relu, both))
    order = [st[5].node.op_type for st in ev._main.steps]
    assert (order.index("AveragePool") < order.index("Conv")) == commuted
    for _ in range(2):
        x = rng.standard_normal(x_shape).astype(np.float32)
        y = conv_reference(x, w, b, conv_attrs)
        want = reference_pool(np.maximum(y, 0) if relu else y, "avg", **pool_attrs)
        got = ev.run(None, {"x": x})
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
        if both:
            np.testing.assert_allclose(got[1], -y, rtol=1e-5, atol=1e-5)


# AveragePool -> Conv (pointwise, narrowing) -> [BatchNormalization -> Mul -> Add] -> Relu: the pool moves
# after the linear steps, onto the narrower result.
# (input shape, weight shape, AveragePool attributes, affine steps, pooled value also read, pool moved)
NARROWING = [
    ((1, 8, 6, 6), (3, 8, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True, False, True),
    ((2, 8, 7, 5), (3, 8, 1, 1), {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1]}, False, False, True),
    ((2, 8, 7, 5), (3, 8, 1, 1), {"kernel_shape": [3, 2], "strides": [2, 1]}, False, False, False),  # strided
    ((1, 8, 6, 6), (3, 8, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, True,
     False, False),  # padding counted: a per-channel shift does not commute
    ((1, 8, 6, 6), (3, 8, 1, 1), {"kernel_shape": [3, 3], "count_include_pad": 1}, True, False, True),  # no padding
    ((1, 8, 6, 6), (3, 8, 1, 1), {"kernel_shape": [2, 2], "ceil_mode": 1}, True, False, True),
    ((1, 3, 6, 6), (8, 3, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True, False, False),  # widening
    ((1, 8, 6, 6), (3, 8, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True, True, False),  # two readers
    ((1, 8, 6, 6), (3, 8, 3, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True, False, False),  # 3x3 Conv
]


def build_narrowing(x_shape, w, params, pool_attrs, affine, both):
    inits = [helper.make_tensor("w", F, w.shape, w.reshape(-1).tolist())]
    for name, value in params.items():
        inits.append(helper.make_tensor(name, F, value.shape, value.reshape(-1).tolist()))
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], **pool_attrs),
             helper.make_node("Conv", ["p", "w", "b"], ["y"])]
    last = "y"
    if affine:
        nodes += [helper.make_node("BatchNormalization", ["y", "scale", "bias", "mean", "var"], ["n"], epsilon=1e-3),
                  helper.make_node("Mul", ["n", "m"], ["t"]), helper.make_node("Add", ["a", "t"], ["u"])]
        last = "u"
    nodes.append(helper.make_node("Relu", [last], ["z"]))
    return model_of(nodes, x_shape, inits, "p" if both else None)


@pytest.mark.parametrize("x_shape,w_shape,pool_attrs,affine,both,moved", NARROWING)
def test_pool_after_narrowing_pointwise_conv(x_shape, w_shape, pool_attrs, affine, both, moved):
    rng = np.random.default_rng(6)
    m = w_shape[0]
    w = rng.standard_normal(w_shape).astype(np.float32)
    params = {"b": rng.standard_normal(m), "scale": rng.standard_normal(m), "bias": rng.standard_normal(m),
              "mean": rng.standard_normal(m), "var": rng.random(m) + 0.5, "m": rng.standard_normal((m, 1, 1)),
              "a": rng.standard_normal((1, m, 1, 1))}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    ev = Evaluator(build_narrowing(x_shape, w, params, pool_attrs, affine, both))
    order = [st[5].node.op_type for st in ev._main.steps]
    assert (order.index("AveragePool") > order.index("Conv")) == moved
    for _ in range(2):
        x = rng.standard_normal(x_shape).astype(np.float32)
        pooled = reference_pool(x, "avg", **pool_attrs)
        y = conv_reference(pooled, w, params["b"], {})
        if affine:
            p = {k: v.astype(np.float64) for k, v in params.items()}
            y = (y - p["mean"].reshape(-1, 1, 1)) / np.sqrt(p["var"].reshape(-1, 1, 1) + 1e-3)
            y = (y * p["scale"].reshape(-1, 1, 1) + p["bias"].reshape(-1, 1, 1)) * p["m"] + p["a"]
        got = ev.run(None, {"x": x})
        np.testing.assert_allclose(got[0], np.maximum(y, 0), rtol=1e-4, atol=1e-5)
        if both:
            np.testing.assert_allclose(got[1], -pooled, rtol=1e-5, atol=1e-6)
