"""Depthwise prepared convolutions sharing their scratch buffers, against the definition of Conv.

``conv_depthwise`` keeps its columns, padded images and products in per-thread buffers shared by every
layer (``conv.scratch``, ``conv.shared_image``), and the columns closure writes a row of ones under
each block of columns once per call (the bias as one more weight). Here depthwise layers of different
geometries run interleaved, as a network runs them, so each call finds the buffers last written by
another layer; every result is compared with ``test_conv_paths.reference_conv``. To add a network's
run of layers, add a line to ``SEQUENCES``.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnx import helper

from helpers import graph_model
from onnxtext import Evaluator
from onnxtext.evaluator.kernels import conv_depthwise
from onnxtext.evaluator.kernels.activation import hard_sigmoid, hard_swish
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from test_conv_paths import reference_conv

# each sequence: layers (input shape, kernel, strides, pads) run in this order, twice
SEQUENCES = {
    "unit then strided then unit": [((1, 6, 9, 9), 3, [1, 1], [1, 1, 1, 1]),
                                    ((1, 6, 9, 9), 3, [2, 2], [1, 1, 1, 1]),
                                    ((1, 12, 5, 5), 3, [1, 1], [1, 1, 1, 1])],
    "bigger block first": [((2, 8, 12, 10), 3, [1, 1], [1, 1, 1, 1]),
                           ((1, 3, 4, 4), 3, [1, 1], [1, 1, 1, 1]),
                           ((2, 8, 12, 10), 3, [2, 1], [1, 1, 1, 1])],
    "5x5 short rows between 3x3 columns": [((1, 4, 8, 8), 3, [1, 1], [1, 1, 1, 1]),
                                           ((1, 4, 2, 8), 5, [1, 1], [2, 2, 2, 2]),
                                           ((1, 4, 8, 8), 3, [2, 2], [0, 0, 1, 1])],
}


def _layer(shape, k, strides, pads, rng):
    c = shape[1]
    w = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    attrs = {"auto_pad": "NOTSET", "group": c, "strides": strides, "dilations": [1, 1], "pads": pads,
             "kernel_shape": [k, k]}
    return PreparedConv(w, b, attrs), w, b, attrs


@pytest.mark.parametrize("bias_by_ones", [True, False])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_interleaved_depthwise_layers_match_the_definition(name, bias_by_ones, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "BIAS_BY_ONES", bias_by_ones)
    monkeypatch.setattr(conv_depthwise, "BLOCK", 64)  # several blocks per layer
    rng = np.random.default_rng(3)
    layers = [(_layer(shape, k, strides, pads, rng), shape) for shape, k, strides, pads in SEQUENCES[name]]
    for _ in range(2):
        for (conv, w, b, attrs), shape in layers:
            x = rng.standard_normal(shape).astype(np.float32)
            expected = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])
            np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)


# row-band closure (unit strides, outputs at least BAND_MIN_WIDTH wide), as (input shape, kernel shape,
# dilations, pads): bands that do and do not divide the output rows, 4x3, 3x2, dilations, no padding,
# end padding cut off by the output size
BANDS = [
    ((1, 3, 9, 30), (3, 3), [1, 1], [1, 1, 1, 1]),
    ((2, 2, 16, 28), (3, 3), [1, 1], [1, 1, 1, 1]),
    ((1, 3, 11, 29), (3, 2), [1, 1], [1, 0, 1, 1]),
    ((1, 2, 13, 32), (4, 3), [1, 1], [2, 1, 1, 1]),
    ((1, 2, 10, 33), (3, 3), [2, 2], [2, 2, 2, 2]),
    ((1, 3, 7, 31), (3, 3), [1, 1], [0, 0, 0, 0]),
    ((1, 2, 6, 30), (3, 3), [1, 1], [1, 2, 0, 1]),
    ((1, 4, 3, 40), (3, 3), [1, 1], [1, 1, 1, 1]),  # fewer rows than a band
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("geometry", BANDS, ids=str)
def test_row_bands_match_the_definition(geometry, with_bias, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "BAND_MIN_WIDTH", 28)
    shape, kshape, dilations, pads = geometry
    rng = np.random.default_rng(5)
    c = shape[1]
    w = rng.standard_normal((c, 1) + kshape).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if with_bias else None
    attrs = {"auto_pad": "NOTSET", "group": c, "strides": [1, 1], "dilations": dilations, "pads": pads,
             "kernel_shape": list(kshape)}
    conv = PreparedConv(w, b, attrs)
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        expected = reference_conv(x, w, b, c, [1, 1], dilations, pads)
        assert expected.shape[-1] >= 28
        np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)
        assert conv._shapes[x.shape].__name__ == "depthwise_bands"
        # into a channel slice of a bigger buffer, and into a (N, G, C / G, H, W) view of one
        buffer = np.full((shape[0], c + 2) + expected.shape[2:], 7.0, np.float32)
        conv(x, buffer[:, 1:1 + c])
        np.testing.assert_allclose(buffer[:, 1:1 + c], expected, rtol=1e-4, atol=1e-4)
        assert (buffer[:, 0] == 7).all() and (buffer[:, -1] == 7).all()
        if c % 2 == 0:
            cols = np.full((shape[0], 2, c // 2 + 1) + expected.shape[2:], 7.0, np.float32)
            run = conv_depthwise.prepare_depthwise(w, shape, pads[:2], [1, 1], dilations, expected.shape[2:], b)
            run(x, cols[:, :, :c // 2])
            np.testing.assert_allclose(cols[:, :, :c // 2].reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
            assert (cols[:, :, -1] == 7).all()


# depthwise layers whose activation runs on the prepared conv's result (rule ``conv_activation``, or the
# Relu of ``fold_affine_and_relu``), as (input shape, kernel, strides, pads, closure the layer takes)
ACTIVATED_LAYERS = [
    ((1, 4, 10, 40), 3, [1, 1], [1, 1, 1, 1], "depthwise_bands"),
    ((1, 3, 20, 20), 5, [1, 1], [2, 2, 2, 2], "depthwise_bands"),
    ((2, 6, 9, 9), 3, [1, 1], [1, 1, 1, 1], "depthwise"),
    ((1, 6, 12, 11), 3, [2, 2], [1, 1, 1, 1], "depthwise"),
    ((2, 5, 14, 14), 3, [2, 1], [0, 1, 1, 1], "depthwise"),
    ((2, 4, 3, 20), 5, [1, 1], [2, 2, 2, 2], "depthwise_short_rows"),
]
# (activation node(s) reading "c" and writing "y", extra constants, the activation on an array)
ACTIVATIONS = {
    "HardSwish": ([("HardSwish", ["c"], {})], {}, hard_swish),
    "HardSigmoid": ([("HardSigmoid", ["c"], {"alpha": 0.2, "beta": 0.5})], {}, lambda c: hard_sigmoid(c, 0.2, 0.5)),
    "Relu6": ([("Clip", ["c", "lo", "hi"], {})], {"lo": np.float32(0), "hi": np.float32(6)},
              lambda c: np.minimum(np.maximum(c, np.float32(0)), np.float32(6))),
    "Relu": ([("Relu", ["c"], {})], {}, lambda c: np.maximum(c, np.float32(0))),
}


def _activated_model(layers, activation, concat=False):
    """Depthwise Convs of ``layers`` ((weights, bias, attrs) each) on input x, each followed by
    ``activation``; their results are the outputs, or one Concat of them (channels)."""
    ops, constants, _ = ACTIVATIONS[activation]
    nodes, outputs, consts = [], [], dict(constants)
    for i, (w, b, attrs) in enumerate(layers):
        consts.update({f"w{i}": w, f"b{i}": b})
        nodes.append(helper.make_node("Conv", ["x", f"w{i}", f"b{i}"], [f"c{i}"],
                                      **{k: v for k, v in attrs.items() if k != "auto_pad"}))
        for op, inputs, op_attrs in ops:
            nodes.append(helper.make_node(op, [f"c{i}"] + inputs[1:], [f"y{i}"], **op_attrs))
        outputs.append(f"y{i}")
    if concat:
        nodes.append(helper.make_node("Concat", outputs, ["y"], axis=1))
        outputs = ["y"]
    return nodes, outputs, consts


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("geometry", ACTIVATED_LAYERS, ids=lambda g: f"{g[0]}-{g[1]}x{g[1]}-s{g[2]}")
def test_activated_depthwise_is_the_activation_of_the_prepared_conv(geometry, activation):
    """The fused step's values are exactly the activation's kernel applied to the same prepared
    conv's result (the rules are level 1 for these activations), alone and written into a Concat's
    channel slices; and they match the definition of Conv then the activation, and optimize=0."""
    shape, k, strides, pads, closure = geometry
    rng = np.random.default_rng(7)
    layers = [_layer(shape, k, strides, pads, rng)[1:] for _ in range(2)]
    for layer in layers:  # scaled so values fall on both sides of the activations' corners
        layer[0][...] *= 2
    x = rng.standard_normal(shape).astype(np.float32) * 2
    kernel = ACTIVATIONS[activation][2]
    conv_nodes = [helper.make_node("Conv", ["x", f"w{i}", f"b{i}"], [f"c{i}"],
                                   **{k: v for k, v in attrs.items() if k != "auto_pad"})
                  for i, (w, b, attrs) in enumerate(layers)]
    consts = {name: value for i, (w, b, _) in enumerate(layers) for name, value in ((f"w{i}", w), (f"b{i}", b))}
    convs = Evaluator(graph_model(conv_nodes, {"x": x}, ["c0", "c1"], consts)).run(None, {"x": x})
    expected = [np.asarray(kernel(c), np.float32) for c in convs]
    for concat in (False, True):
        nodes, outputs, constants = _activated_model(layers, activation, concat)
        model = graph_model(nodes, {"x": x}, outputs, constants, opset=14)
        ev = Evaluator(model)
        got = ev.run(None, {"x": x})
        want = [np.concatenate(expected, axis=1)] if concat else expected
        for g, e in zip(got, want):
            np.testing.assert_array_equal(g, e)
            assert np.signbit(g).tolist() == np.signbit(e).tolist()
        steps = []
        ev.run(None, {"x": x}, trace=lambda step, outputs: steps.append(step.fn))
        # one step per Conv and its activation (one step in all when they write a Concat's slices)
        assert len(steps) == (1 if concat else 2), steps
        parts = steps[0].parts if concat else steps
        prepared = [getattr(p, "conv", p) for p in parts]
        assert all(type(c) is PreparedConv for c in prepared), parts
        # (a fused Relu wraps the closure: ``conv_prepared._finished``)
        assert all(c._shapes[x.shape].__name__ == ("finished" if c.relu else closure) for c in prepared)
        assert all(c.relu for c in prepared) == (activation == "Relu")
        reference = Evaluator(model, optimize=0).run(None, {"x": x})
        for g, r in zip(got, reference):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    for (w, b, attrs), e in zip(layers, expected):
        definition = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])
        np.testing.assert_allclose(e, kernel(definition.astype(np.float32)), rtol=1e-4, atol=1e-4)
