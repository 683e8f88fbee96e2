"""A Conv's bias handed to the pointwise Conv that is its only reader (rule ``bias_into_pointwise``).

Each case is Conv(X, W1, B1) -> [BatchNormalization] -> Conv 1x1 (W2, B2) -> [Relu], checked against a
float64 reference computed here with plain loops over output positions (no evaluator code), and
the plan is checked to have moved the bias (or not, for the cases where it must stay). To add a
case, add a line to a table.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import graph_model
from onnx import helper

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.kernels.conv_fused import DepthwisePointwise
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
RNG = np.random.default_rng(7)


def _conv_reference(x, w, b, strides, pads, dilations, group):
    """2-D convolution in float64 by loops over (image, output channel, output position)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]))
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for i, o in itertools.product(range(n), range(m)):
        g = o // mg
        for r, s in itertools.product(range(oh), range(ow)):
            window = xp[i, g * cg:(g + 1) * cg, r * sh:r * sh + (kh - 1) * dh + 1:dh, s * sw:s * sw + (kw - 1) * dw + 1:dw]
            y[i, o, r, s] = np.sum(window * w[o]) + (b[o] if b is not None else 0.0)
    return y


# (input shape, first Conv: weight shape and attributes, second Conv: output channels and group)
CASES = [
    ((1, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}, 9, 3),  # depthwise -> grouped 1x1
    ((2, 8, 7, 7), (8, 1, 3, 3), {"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}, 8, 4),
    ((1, 4, 9, 9), (8, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, 6, 2),  # depth multiplier 2
    ((1, 5, 6, 6), (7, 5, 3, 3), {"pads": [0, 1, 2, 1]}, 4, 1),  # an ordinary Conv first
    ((1, 6, 10, 10), (6, 1, 3, 3), {"group": 6, "pads": [2, 2, 2, 2], "dilations": [2, 2]}, 12, 6),
    ((1, 3, 5, 5), (4, 3, 1, 1), {}, 5, 1),  # pointwise -> pointwise
]


def _model(x_shape, w1, b1, attrs, w2, b2, group, relu, batchnorm, second_attrs):
    tensors = {"W1": w1, "B1": b1, "W2": w2}
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], **attrs)]
    source = "a"
    if batchnorm is not None:  # folded into the first Conv first: its bias is then moved
        for key, value in zip(("s", "t", "mu", "var"), batchnorm):
            tensors[key] = value
        nodes.append(helper.make_node("BatchNormalization", ["a", "s", "t", "mu", "var"], ["bn"], epsilon=1e-3))
        source = "bn"
    inputs = [source, "W2"]
    if b2 is not None:
        tensors["B2"] = b2
        inputs.append("B2")
    nodes.append(helper.make_node("Conv", inputs, ["z"], group=group, **second_attrs))
    out = "z"
    if relu:
        nodes.append(helper.make_node("Relu", ["z"], ["r"]))
        out = "r"
    return graph_model(nodes, {"X": tuple(x_shape)}, [out], tensors)


def _prepared(ev):
    """The plan's prepared Convs in order (a fused depthwise + pointwise pair counts as both)."""
    convs = []
    for step in ev._plan_for(None, ()).steps:
        if isinstance(step[0], DepthwisePointwise):
            convs.append(step[0].depthwise)
        if isinstance(step[0], PreparedConv):
            convs.append(step[0])
    return convs


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("second_bias", [False, True])
@pytest.mark.parametrize("batchnorm", [False, True])
@pytest.mark.parametrize("x_shape, w_shape, attrs, m2, group", CASES)
def test_bias_moves_into_pointwise_conv(x_shape, w_shape, attrs, m2, group, relu, second_bias, batchnorm):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w1 = RNG.standard_normal(w_shape).astype(np.float32)
    b1 = RNG.standard_normal(w_shape[0]).astype(np.float32)
    w2 = RNG.standard_normal((m2, w_shape[0] // group, 1, 1)).astype(np.float32)
    b2 = RNG.standard_normal(m2).astype(np.float32) if second_bias else None
    bn = [RNG.uniform(0.5, 1.5, w_shape[0]).astype(np.float32) for _ in range(4)] if batchnorm else None
    ev = Evaluator(_model(x_shape, w1, b1, attrs, w2, b2, group, relu, bn, {}))
    got = ev.run(None, {"X": x})[0]

    full = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "group": 1, **attrs}
    a = _conv_reference(x.astype(np.float64), w1.astype(np.float64), b1.astype(np.float64), full["strides"],
                        full["pads"], full["dilations"], full["group"])
    if bn is not None:
        s, t, mu, var = (v.astype(np.float64).reshape(-1, 1, 1) for v in bn)
        a = (a - mu) / np.sqrt(var + 1e-3) * s + t
    want = _conv_reference(a, w2.astype(np.float64), None if b2 is None else b2.astype(np.float64),
                           (1, 1), (0, 0, 0, 0), (1, 1), group)
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    first, second = _prepared(ev)
    assert first.b is None and second.b is not None  # the bias moved
    ev.run(None, {"X": x[:, :, ::-1].copy()})  # another input of the same shape reuses the plan


# second Convs that must keep the first Conv's bias where it is: (second Conv attributes, weight shape)
KEPT = [
    ({"pads": [1, 1, 1, 1]}, (3, 6, 1, 1)),  # padded: the border outputs would see no bias
    ({"strides": [2, 2]}, (3, 6, 1, 1)),  # strided: only unit-stride readers are handled
    ({}, (3, 6, 3, 3)),  # not 1x1
]


@pytest.mark.parametrize("second_attrs, w2_shape", KEPT)
def test_bias_stays_when_the_reader_is_not_pointwise(second_attrs, w2_shape):
    x = RNG.standard_normal((1, 6, 8, 8)).astype(np.float32)
    w1 = RNG.standard_normal((6, 1, 3, 3)).astype(np.float32)
    b1 = RNG.standard_normal(6).astype(np.float32)
    w2 = RNG.standard_normal(w2_shape).astype(np.float32)
    ev = Evaluator(_model(x.shape, w1, b1, {"group": 6, "pads": [1, 1, 1, 1]}, w2, None, 1, False, None,
                          second_attrs))
    got = ev.run(None, {"X": x})[0]
    a = _conv_reference(x.astype(np.float64), w1.astype(np.float64), b1.astype(np.float64), (1, 1), (1, 1, 1, 1),
                        (1, 1), 6)
    full = {"strides": [1, 1], "pads": [0, 0, 0, 0], **second_attrs}
    want = _conv_reference(a, w2.astype(np.float64), None, full["strides"], full["pads"], (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert _prepared(ev)[0].b is not None


def test_bias_stays_when_the_result_has_another_reader():
    x = RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w1 = RNG.standard_normal((4, 1, 3, 3)).astype(np.float32)
    b1 = RNG.standard_normal(4).astype(np.float32)
    w2 = RNG.standard_normal((2, 4, 1, 1)).astype(np.float32)
    tensors = {"W1": w1, "B1": b1, "W2": w2}
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], group=4, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "W2"], ["z"])]
    ev = Evaluator(graph_model(nodes, {"X": x}, ["z", "a"], tensors))
    z, a = ev.run(None, {"X": x})
    want_a = _conv_reference(x.astype(np.float64), w1.astype(np.float64), b1.astype(np.float64), (1, 1),
                             (1, 1, 1, 1), (1, 1), 4)
    np.testing.assert_allclose(a, want_a, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(z, _conv_reference(want_a, w2.astype(np.float64), None, (1, 1), (0, 0, 0, 0), (1, 1),
                                                  1), rtol=1e-4, atol=1e-4)
