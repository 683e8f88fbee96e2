"""Rule ``conv_integer`` (ConvInteger with constant weights as a prepared float conv of exact integer
sums) against the ConvInteger kernel at ``optimize=0`` and onnxruntime: int32 results must be equal,
not close. Each line of ``CASES`` is a model; add one for a new geometry or dtype combination."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, node_model, run_onnxruntime

from onnxtext import Evaluator
from onnxtext.evaluator.fused.conv_integer import PreparedConvInteger

# name, x dtype and shape, w dtype and shape, w zero point (None: absent; a list: per output channel),
# x zero point ("feed": a graph input; a number: a constant; None: absent), attributes, float32 sums
CASES = [
    ("uint8_stride2_pads", np.uint8, (2, 3, 9, 8), np.uint8, (4, 3, 3, 3), 128, "feed",
     {"strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
    ("int8_weights_no_zero_points", np.uint8, (1, 2, 6, 7), np.int8, (3, 2, 3, 2), None, None, {}, True),
    ("per_channel_weight_zero_points", np.uint8, (1, 2, 5, 5), np.uint8, (3, 2, 3, 3), [1, 200, 77], 9,
     {"pads": [1, 1, 1, 1]}, True),
    ("int8_input", np.int8, (2, 2, 6, 6), np.int8, (4, 1, 3, 3), 0, "feed", {"group": 2, "dilations": [2, 1]}, True),
    ("pointwise", np.uint8, (1, 8, 4, 4), np.uint8, (5, 8, 1, 1), 100, "feed", {}, True),
    # 64 * 9 taps * 255 * 255 > 2**24: the sums need float64
    ("float64_sums", np.uint8, (1, 64, 5, 5), np.uint8, (2, 64, 3, 3), 0, "feed", {"pads": [1, 1, 1, 1]}, False),
]

# cases onnxruntime cannot run, with its reason (the kernel comparison still applies)
ORT_CANNOT = {
    "per_channel_weight_zero_points": "onnxruntime's ConvInteger: per-tensor weight zero points only",
}


def _values(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _case(name, x_dtype, x_shape, w_dtype, w_shape, w_zp, x_zp, attrs):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = _values(rng, x_dtype, x_shape)
    w = _values(rng, w_dtype, w_shape)
    if name == "float64_sums":
        x[...] = np.iinfo(x_dtype).max  # the largest sums: the float32 path would round them
        w[...] = np.iinfo(w_dtype).max
    inputs, constants = {"x": x}, {"w": w}
    if x_zp == "feed":
        inputs["x_zp"] = np.array(rng.integers(0, 50), x_dtype)
    elif x_zp is not None:
        constants["x_zp"] = np.array(x_zp, x_dtype)
    if w_zp is not None:
        if x_zp is None:
            constants["x_zp"] = np.array(0, x_dtype)
        constants["w_zp"] = np.array(w_zp, w_dtype)
    model = node_model("ConvInteger", inputs, {"kernel_shape": list(w_shape[2:]), **attrs}, constants=constants,
                       opset=13, ir_version=8)
    if x_zp == "feed":  # the node's inputs in ONNX order: x, w, x_zero_point, w_zero_point
        node = model.graph.node[0]
        names = ["x", "w", "x_zp"] + (["w_zp"] if w_zp is not None else [])
        del node.input[:]
        node.input.extend(names)
    return model, inputs


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prepared_conv_integer_equals_the_kernel_and_onnxruntime(case):
    name, *spec, float32_sums = case
    model, feeds = _case(name, *spec)
    optimized = Evaluator(model)
    step = optimized._main.steps[0]
    assert isinstance(step.fn, PreparedConvInteger)
    assert step.fn.work == (np.float32 if float32_sums else np.float64)
    for _ in range(2):  # the second call reuses the prepared shape
        got = optimized.run(None, feeds)
        assert_close(got, Evaluator(model, optimize=0).run(None, feeds), 0, 0, "prepared vs kernel:")
    if name not in ORT_CANNOT:
        assert_close(got, run_onnxruntime(model, feeds), 0, 0, "prepared vs onnxruntime:")


def test_inputs_it_was_not_prepared_for_take_the_kernel():
    """A zero point of another type than the input runs the original step (the kernel decides)."""
    model, feeds = _case("uint8_stride2_pads", *CASES[0][1:-1])
    fn = Evaluator(model)._main.steps[0].fn
    x = feeds["x"]
    calls = []
    fallback = fn.fallback
    fn.fallback = lambda *a: calls.append(a) or fallback(*a)
    fn(x.astype(np.int8), np.array(1, np.int8))  # an int8 input of the same values: the fast path
    assert not calls
    fn(x, np.array([1, 2], np.uint8))  # a zero point of two values: the kernel
    assert len(calls) == 1
