"""The QOperator quantization rewrites (rules ``qlinear_conv``, ``qgemm_constant``, ``prepared_qlinear_ops``,
``quantized_codes``) on small synthetic models: the optimized plan must use the rewrite and give exactly
the values of ``optimize=0`` (every node its own step) and of onnxruntime (QLinearAdd: within one step of
its fixed-point kernel). One row per case; add a line to add a case."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import graph_model, run_onnxruntime
from onnx import helper
from quantized_cases import MS_OPSET, RNG, ints, step_classes

from onnxtext import Evaluator

# (id, x dtype, x shape, weight shape, weight dtype, per-channel weight parameters, bias, attributes)
QLINEAR_CONV = [
    ("uint8_pads", np.uint8, (2, 4, 7, 7), (6, 4, 3, 3), np.int8, False, True, dict(pads=[1, 1, 1, 1])),
    ("uint8_stride2_per_channel", np.uint8, (1, 3, 9, 8), (5, 3, 3, 3), np.int8, True, True,
     dict(pads=[1, 0, 1, 2], strides=[2, 2])),
    ("int8_pointwise_no_bias", np.int8, (2, 8, 5, 5), (4, 8, 1, 1), np.int8, False, False, {}),
    ("uint8_grouped", np.uint8, (1, 6, 6, 6), (6, 2, 3, 3), np.uint8, True, True, dict(group=3, pads=[1, 1, 1, 1])),
    ("depthwise", np.uint8, (2, 8, 10, 10), (8, 1, 3, 3), np.int8, True, True, dict(group=8, pads=[1, 1, 1, 1])),
    ("winograd_sized_exact", np.uint8, (1, 32, 16, 16), (64, 32, 3, 3), np.int8, False, True,
     dict(pads=[1, 1, 1, 1])),  # float32 Conv would take Winograd here: not exact, so never for integers
    ("float64_path_many_taps", np.uint8, (1, 300, 5, 5), (4, 300, 3, 3), np.int8, False, True, {}),
    ("conv1d", np.int8, (2, 5, 11), (3, 5, 3), np.int8, True, False, dict(pads=[1, 1])),
]


@pytest.mark.parametrize("case", QLINEAR_CONV, ids=[c[0] for c in QLINEAR_CONV])
def test_qlinear_conv_rule(case):
    _, x_dtype, x_shape, w_shape, w_dtype, per_channel, bias, attrs = case
    m = w_shape[0]
    x = ints(x_dtype, x_shape)
    consts = {
        "xs": np.array(0.02, np.float32), "xz": np.array(17 if x_dtype == np.uint8 else -5, x_dtype),
        "w": ints(w_dtype, w_shape, *((-127, 127) if w_dtype == np.int8 else (0, 255))),
        "ws": (RNG.random(m) * 0.01 + 0.001).astype(np.float32) if per_channel else np.array(0.004, np.float32),
        "wz": (ints(w_dtype, (m,), 0, 9) if per_channel else np.array(0, w_dtype)) if w_dtype == np.uint8 or
        not per_channel else np.zeros(m, w_dtype),
        "ys": np.array(0.37, np.float32), "yz": np.array(100 if x_dtype == np.uint8 else 10, x_dtype),
    }
    if bias:
        consts["b"] = ints(np.int32, (m,), -3000, 3000)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else []),
                            ["y"], **attrs)
    model = graph_model([node], {"x": x}, [("y", 2 if x_dtype == np.uint8 else 3)], consts, opset=13)
    model.graph.input[0].type.tensor_type.ClearField("shape")  # any shape: a second one is fed below
    optimized = Evaluator(model)
    assert "PreparedQLinearConv" in step_classes(optimized)
    got = optimized.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, Evaluator(model, optimize=0).run(None, {"x": x})[0])
    np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])
    # a second shape on the same Evaluator (prepared per input shape)
    x2 = ints(x_dtype, (1,) + x_shape[1:-1] + (x_shape[-1] + 2,))
    want = Evaluator(model, optimize=0).run(None, {"x": x2})[0]
    np.testing.assert_array_equal(optimized.run(None, {"x": x2})[0], want)


# (id, x dtype, per-channel weight scales, the y scale's sign, MaxPool attributes, with a QuantizeLinear
# before the conv): QLinearConv -> MaxPool, pooled before the requantization when every multiplier >= 0
POOLED_QLINEAR_CONV = [
    ("uint8_tiles", np.uint8, False, 1, dict(kernel_shape=[2, 2], strides=[2, 2]), False),
    ("int8_per_channel_tiles", np.int8, True, 1, dict(kernel_shape=[2, 2], strides=[2, 2]), False),
    ("overlapping_padded", np.uint8, True, 1, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), False),
    ("ceil_mode_dilated", np.int8, False, 1, dict(kernel_shape=[2, 2], strides=[2, 1], dilations=[2, 1],
                                                  ceil_mode=1), False),
    ("quantized_input", np.uint8, False, 1, dict(kernel_shape=[2, 2], strides=[2, 2]), True),
    ("negative_scale_kept", np.uint8, False, -1, dict(kernel_shape=[2, 2], strides=[2, 2]), False),
]


@pytest.mark.parametrize("case", POOLED_QLINEAR_CONV, ids=[c[0] for c in POOLED_QLINEAR_CONV])
def test_qlinear_conv_then_max_pool_is_exactly_the_nodes(case):
    _, x_dtype, per_channel, sign, pool_attrs, quantize_first = case
    m = 5
    consts = {"xs": np.array(0.02, np.float32), "xz": np.array(17 if x_dtype == np.uint8 else -5, x_dtype),
              "w": ints(np.int8, (m, 3, 3, 3), -127, 127),
              "ws": (RNG.random(m) * 0.01 + 0.001).astype(np.float32) if per_channel else np.array(0.004, np.float32),
              "wz": np.zeros(m, np.int8) if per_channel else np.array(0, np.int8),
              "ys": np.array(0.11 * sign, np.float32), "yz": np.array(100 if x_dtype == np.uint8 else 10, x_dtype),
              "b": ints(np.int32, (m,), -3000, 3000)}
    nodes = [helper.make_node("QLinearConv", ["q" if quantize_first else "x", "xs", "xz", "w", "ws", "wz", "ys", "yz",
                                              "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["y"], **pool_attrs)]
    if quantize_first:
        nodes.insert(0, helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]))
        x = (RNG.standard_normal((2, 3, 9, 8)) * 3).astype(np.float32)
    else:
        x = ints(x_dtype, (2, 3, 9, 8))
    model = graph_model(nodes, {"x": x}, [("y", 2 if x_dtype == np.uint8 else 3)], consts, opset=13)
    model.graph.input[0].type.tensor_type.ClearField("shape")  # any shape: a second one is fed below
    optimized = Evaluator(model)
    names = step_classes(optimized)
    fused = sign > 0
    conv = "QuantizedInputConv" if quantize_first else "PreparedQLinearConv"
    assert names == ([conv] if fused else [conv, "function"]), names  # (a kernel function: the MaxPool's own)
    got = optimized.run(None, {"x": x})[0]
    want = Evaluator(model, optimize=0).run(None, {"x": x})[0]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])
    # a second shape: the pooled conv prepares per input shape
    x2 = x[:1, :, :7, :6].copy()
    assert optimized.run(None, {"x": x2})[0].tobytes() == Evaluator(model, optimize=0).run(None, {"x": x2})[0].tobytes()


def _quantized_input_conv(x_dtype, extra_reader: bool):
    """QuantizeLinear(x) -> QLinearConv with the same input scale and zero point (and, with
    ``extra_reader``, the quantized tensor as an output too)."""
    m = 4
    zero_point = np.array(117 if x_dtype == np.uint8 else -9, x_dtype)
    consts = {"xs": np.array(0.02, np.float32), "xz": zero_point, "w": ints(np.int8, (m, 3, 3, 3), -127, 127),
              "ws": np.array(0.004, np.float32), "wz": np.array(0, np.int8), "ys": np.array(0.3, np.float32),
              "yz": np.array(100 if x_dtype == np.uint8 else 5, x_dtype), "b": ints(np.int32, (m,), -900, 900)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                              pads=[1, 1, 1, 1], strides=[2, 2])]
    elem = 2 if x_dtype == np.uint8 else 3
    outputs = [("y", elem)] + ([("q", elem)] if extra_reader else [])
    return graph_model(nodes, {"x": (None, 3, None, None)}, outputs, consts, opset=13)


def _image(kind):
    x = (RNG.standard_normal((2, 3, 7, 6)) * 3).astype(np.float32)  # (ratios up to ~500: saturates)
    if kind == "nan_inf":
        x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    if kind == "small_negative":  # rint gives -0.0 codes
        x[:] = -0.004
    return x


@pytest.mark.parametrize("x_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("kind", ["normal", "nan_inf", "small_negative"])
def test_qlinear_conv_from_quantize_linear_is_exactly_the_nodes(x_dtype, kind):
    model = _quantized_input_conv(x_dtype, extra_reader=False)
    x = _image(kind)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["QuantizedInputConv"]
    with np.errstate(all="ignore"):
        got = optimized.run(None, {"x": x})[0]
        want = Evaluator(model, optimize=0).run(None, {"x": x})[0]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if kind == "normal":
        np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])


def test_qlinear_conv_with_its_quantized_input_read_elsewhere_keeps_the_quantize_linear():
    model = _quantized_input_conv(np.uint8, extra_reader=True)
    x = _image("normal")
    optimized = Evaluator(model)
    assert "QuantizedInputConv" not in step_classes(optimized) and "PreparedQLinearConv" in step_classes(optimized)
    for got, want in zip(optimized.run(None, {"x": x}), run_onnxruntime(model, {"x": x})):
        np.testing.assert_array_equal(got, want)


# (id, A type, transA, transB, per-column B scales, bias C, quantized output, DequantizeLinear after it)
QGEMM = [
    ("uint8_transb_per_column_bias_dequantized", np.uint8, 0, 1, True, True, True, True),
    ("uint8_requantized", np.uint8, 0, 0, False, True, True, False),
    ("int8_transa_no_bias", np.int8, 1, 0, False, False, True, False),
    ("int8_float_output", np.int8, 0, 1, True, True, False, False),
    ("uint8_trans_both_dequantized", np.uint8, 1, 1, False, False, True, True),
]


@pytest.mark.parametrize("case", QGEMM, ids=[c[0] for c in QGEMM])
def test_qgemm_constant_is_exactly_the_nodes(case):
    _, a_dtype, trans_a, trans_b, per_column, bias, quantized, dequantized = case
    k, n = 24, 6
    zp = np.array(128 if a_dtype == np.uint8 else -3, a_dtype)
    consts = {"as": np.array(0.05, np.float32), "az": zp, "b": ints(np.int8, (n, k) if trans_b else (k, n), -127, 127),
              "bs": (RNG.random(n) * 0.02 + 0.005).astype(np.float32) if per_column else np.array(0.01, np.float32),
              "bz": np.zeros(n, np.int8) if per_column else np.array(0, np.int8)}
    inputs = ["a", "as", "az", "b", "bs", "bz"]
    if bias:
        consts["c"] = ints(np.int32, (n,), -5000, 5000)
    inputs.append("c" if bias else "")
    if quantized:
        consts["ys"], consts["yz"] = np.array(0.2, np.float32), np.array(100 if a_dtype == np.uint8 else 7, a_dtype)
        inputs += ["ys", "yz"]
    nodes = [helper.make_node("QGemm", inputs, ["q" if dequantized else "y"], domain="com.microsoft",
                              transA=trans_a, transB=trans_b, alpha=0.75)]
    if dequantized:
        nodes.append(helper.make_node("DequantizeLinear", ["q", "ys", "yz"], ["y"]))
    elem = 1 if dequantized or not quantized else (2 if a_dtype == np.uint8 else 3)
    a = ints(a_dtype, (k, 5) if trans_a else (5, k))
    model = graph_model(nodes, {"a": a}, [("y", elem)], consts, opset=13, extra_opsets={"com.microsoft": 1})
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["PreparedQGemm"]
    got = optimized.run(None, {"a": a})[0]
    want = Evaluator(model, optimize=0).run(None, {"a": a})[0]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    theirs = run_onnxruntime(model, {"a": a})[0]
    np.testing.assert_allclose(got.astype(np.float64), theirs.astype(np.float64), rtol=1e-6,
                               atol=1 if quantized and not dequantized else 0.21)  # (one step of 0.2)


def test_qgemm_constant_keeps_a_dequantize_linear_of_other_parameters():
    """The DequantizeLinear reads the result with another scale: only the QGemm is prepared."""
    consts = {"as": np.array(0.05, np.float32), "az": np.array(128, np.uint8), "b": ints(np.int8, (8, 3), -127, 127),
              "bs": np.array(0.01, np.float32), "bz": np.array(0, np.int8), "ys": np.array(0.2, np.float32),
              "yz": np.array(100, np.uint8), "ds": np.array(0.4, np.float32)}
    nodes = [helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"], ["q"],
                              domain="com.microsoft"),
             helper.make_node("DequantizeLinear", ["q", "ds", "yz"], ["y"])]
    a = ints(np.uint8, (4, 8))
    model = graph_model(nodes, {"a": a}, ["y"], consts, opset=13, extra_opsets={"com.microsoft": 1})
    optimized = Evaluator(model)
    assert step_classes(optimized)[0] == "PreparedQGemm" and len(step_classes(optimized)) == 2
    assert optimized.run(None, {"a": a})[0].tobytes() == Evaluator(model, optimize=0).run(None, {"a": a})[0].tobytes()


def test_qgemm_constant_beyond_the_float32_bound_is_kept():
    """K * 255 * max|B - zp| >= 2**24: float32 sums could round, so the kernel (chunked sums) runs."""
    consts = {"as": np.array(0.05, np.float32), "az": np.array(0, np.uint8), "b": np.full((600, 2), 127, np.int8),
              "bs": np.array(0.01, np.float32), "bz": np.array(0, np.int8)}
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz"], ["y"], domain="com.microsoft")
    a = np.full((2, 600), 255, np.uint8)
    model = graph_model([node], {"a": a}, ["y"], consts, opset=13, extra_opsets={"com.microsoft": 1})
    optimized = Evaluator(model)
    assert "PreparedQGemm" not in step_classes(optimized)
    np.testing.assert_array_equal(optimized.run(None, {"a": a})[0], run_onnxruntime(model, {"a": a})[0])


# (id, zero points' type, A's shape, B's shape) for QLinearAdd -> QLinearGlobalAveragePool with constant
# parameters (rule prepared_qlinear_ops)
PREPARED_QLINEAR_OPS = [
    ("uint8_same_shape", np.uint8, (2, 4, 6, 5), (2, 4, 6, 5)),
    ("int8_per_channel_b", np.int8, (2, 4, 6, 5), (1, 4, 1, 1)),
    ("uint8_scalar_b", np.uint8, (1, 3, 7, 7), ()),
    ("int8_three_dims", np.int8, (2, 5, 9), (2, 5, 9)),
]


@pytest.mark.parametrize("case", PREPARED_QLINEAR_OPS, ids=[c[0] for c in PREPARED_QLINEAR_OPS])
def test_prepared_qlinear_ops_are_exactly_the_nodes(case):
    _, dtype, a_shape, b_shape = case
    zp = (lambda v: np.array(v, dtype)) if dtype == np.uint8 else (lambda v: np.array(v - 128, dtype))
    consts = {"sa": np.array(0.031, np.float32), "za": zp(120), "sb": np.array(0.017, np.float32), "zb": zp(3),
              "sc": np.array(0.045, np.float32), "zc": zp(131), "sy": np.array(0.021, np.float32), "zy": zp(60)}
    nodes = [helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"],
                              domain="com.microsoft"),
             helper.make_node("QLinearGlobalAveragePool", ["c", "sc", "zc", "sy", "zy"], ["y"],
                              domain="com.microsoft")]
    feeds = {"a": ints(dtype, a_shape), "b": ints(dtype, b_shape)}
    elem = 2 if dtype == np.uint8 else 3
    model = graph_model(nodes, feeds, [("c", elem), ("y", elem)], consts, opset=13, extra_opsets=MS_OPSET)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["PreparedQLinearAdd", "PreparedQLinearGlobalAveragePool"]
    got = optimized.run(None, feeds)
    for g, w in zip(got, Evaluator(model, optimize=0).run(None, feeds)):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
    for g, w in zip(got, run_onnxruntime(model, feeds)):
        assert g.shape == w.shape
        assert np.abs(g.astype(np.int32) - w.astype(np.int32)).max() <= 1  # (onnxruntime's fixed-point QLinearAdd)


def test_prepared_qlinear_global_average_pool_of_an_empty_batch_is_the_nodes():
    consts = {"sx": np.array(0.5, np.float32), "zx": np.array(7, np.uint8), "sy": np.array(0.25, np.float32),
              "zy": np.array(2, np.uint8)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft")
    x = np.zeros((0, 3, 4, 4), np.uint8)
    model = graph_model([node], {"x": x}, [("y", 2)], consts, opset=13, extra_opsets=MS_OPSET)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["PreparedQLinearGlobalAveragePool"]
    got, want = optimized.run(None, {"x": x})[0], Evaluator(model, optimize=0).run(None, {"x": x})[0]
    assert got.dtype == want.dtype and got.shape == want.shape == (0, 3, 1, 1)


def test_prepared_qlinear_global_average_pool_beyond_exact_float32_sums():
    """65,536 values a channel: float32 sums could round, so the step runs the node's int64 path."""
    consts = {"sx": np.array(0.5, np.float32), "zx": np.array(7, np.uint8), "sy": np.array(0.25, np.float32),
              "zy": np.array(2, np.uint8)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft")
    feeds = {"x": ints(np.uint8, (1, 2, 256, 256))}
    model = graph_model([node], feeds, [("y", 2)], consts, opset=13, extra_opsets=MS_OPSET)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["PreparedQLinearGlobalAveragePool"]
    got = optimized.run(None, feeds)[0]
    assert got.tobytes() == Evaluator(model, optimize=0).run(None, feeds)[0].tobytes()
    np.testing.assert_array_equal(got, run_onnxruntime(model, feeds)[0])


def _codes_chain(dtype, second_reader: str):
    """QLinearConv -> QLinearConv -> QLinearAdd(first conv's result, second's) with ``second_reader`` also
    reading the first conv's result: "" (nothing), "add_twice" (the add reads it as both operands, no second
    conv), "dequantize" (a DequantizeLinear: the 8-bit tensor must exist), "output" (a graph output)."""
    zp = (lambda v: np.array(v, dtype)) if dtype == np.uint8 else (lambda v: np.array(v - 128, dtype))
    consts = {"sx": np.array(0.05, np.float32), "zx": zp(128), "sw": np.array(0.004, np.float32),
              "zw": np.array(0, np.int8), "w1": ints(np.int8, (4, 3, 3, 3), -127, 127),
              "w2": ints(np.int8, (4, 4, 1, 1), -127, 127), "s1": np.array(0.3, np.float32), "z1": zp(100),
              "s2": np.array(0.2, np.float32), "z2": zp(90), "s3": np.array(0.4, np.float32), "z3": zp(120)}
    nodes = [helper.make_node("QLinearConv", ["x", "sx", "zx", "w1", "sw", "zw", "s1", "z1"], ["c1"], pads=[1, 1, 1, 1])]
    if second_reader == "add_twice":
        nodes.append(helper.make_node("QLinearAdd", ["c1", "s1", "z1", "c1", "s1", "z1", "s3", "z3"], ["y"],
                                      domain="com.microsoft"))
    else:
        nodes += [helper.make_node("QLinearConv", ["c1", "s1", "z1", "w2", "sw", "zw", "s2", "z2"], ["c2"]),
                  helper.make_node("QLinearAdd", ["c1", "s1", "z1", "c2", "s2", "z2", "s3", "z3"], ["y"],
                                   domain="com.microsoft")]
    elem = 2 if dtype == np.uint8 else 3
    outputs = [("y", elem)]
    if second_reader == "dequantize":
        nodes.append(helper.make_node("DequantizeLinear", ["c1", "s1", "z1"], ["d"]))
        outputs.append("d")
    if second_reader == "output":
        outputs.append(("c1", elem))
    return graph_model(nodes, {"x": ints(dtype, (2, 3, 6, 5))}, outputs, consts, opset=13, extra_opsets=MS_OPSET)


# (id, 8-bit type, other reader of the first conv's result, the plan)
QUANTIZED_CODES = [
    ("uint8_chain", np.uint8, "", ["QLinearConvOnCodes", "QLinearConvOnCodes", "QLinearAddOnCodes"]),
    ("int8_chain", np.int8, "", ["QLinearConvOnCodes", "QLinearConvOnCodes", "QLinearAddOnCodes"]),
    ("add_reads_it_twice", np.uint8, "add_twice", ["QLinearConvOnCodes", "QLinearAddOnCodes"]),
    ("dequantized_too", np.uint8, "dequantize",
     ["PreparedQLinearConv", "QLinearConvOnCodes", "QLinearAddOnCodes", "function"]),
    ("graph_output_too", np.int8, "output", ["PreparedQLinearConv", "QLinearConvOnCodes", "QLinearAddOnCodes"]),
]


@pytest.mark.parametrize("case", QUANTIZED_CODES, ids=[c[0] for c in QUANTIZED_CODES])
def test_quantized_codes_are_exactly_the_nodes(case):
    _, dtype, second_reader, plan = case
    model = _codes_chain(dtype, second_reader)
    optimized = Evaluator(model)
    assert step_classes(optimized) == plan
    feeds = {"x": ints(dtype, (2, 3, 6, 5))}
    got = optimized.run(None, feeds)
    for g, w in zip(got, Evaluator(model, optimize=0).run(None, feeds)):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
    for g, w in zip(got, run_onnxruntime(model, feeds)):  # (onnxruntime's fixed-point QLinearAdd: one step)
        assert np.abs(g.astype(np.float64) - w.astype(np.float64)).max() <= (1 if g.dtype.kind in "iu" else 0.3)


def test_codes_of_an_eight_bit_result_are_its_values_minus_the_zero_point():
    from onnxtext.evaluator.fused.qoperator import CodesOf

    codes = CodesOf(lambda v: v, 128)(np.array([0, 127, 128, 255], np.uint8))
    assert codes.dtype == np.float32 and codes.tolist() == [-128.0, -1.0, 0.0, 127.0]
