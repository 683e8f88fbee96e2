"""AveragePool after a pointwise Conv runs first (on the Conv's input) when that gives the same result.

Averaging over whole windows commutes with a per-pixel linear map, so the plan pools before a 1x1,
unit-stride, unpadded Conv without Relu (DenseNet's transitions). Each case builds Conv -> [Relu] ->
AveragePool with constant weights and checks the result against plain numpy (an einsum for the
Conv, the nested-loop pooling reference of ``test_pool_windows``), and whether the plan reordered
the steps. To add a case, add a line to ``CASES``.
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
    ((1, 4, 6, 6), (3, 4, 1, 1), {"pads": [0, 0, 0, 0]}, {"kernel_shape": [2, 2], "auto_pad": "VALID"}, False, False,
     True),
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
    outputs = [helper.make_tensor_value_info("z", F, None)]
    if both:
        nodes.append(helper.make_node("Neg", ["y"], ["n"]))
        outputs.append(helper.make_tensor_value_info("n", F, None))
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
