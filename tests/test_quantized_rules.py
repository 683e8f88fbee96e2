"""The quantization rewrites of QDQ and dynamically quantized models (rules ``qdq_pair``,
``redundant_fake_quantize``, ``fake_quantize_into_conv``, ``max_pool_before_fake_quantize``,
``integer_matmul_to_float``, ``dynamic_quantized_matmul``, ``shared_codes_products``,
``prepared_matmul_nbits``) on small synthetic models: the optimized plan must use the rewrite and give
exactly the values of ``optimize=0`` (every node its own step) and of onnxruntime. One row per case;
add a line to add a case. QOperator rules: tests/test_quantized_qoperator.py."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import graph_model, run_onnxruntime
from onnx import helper
from quantized_cases import RNG, ints, step_classes

from onnxtext import Evaluator

_SPECIAL = np.array([np.nan, -np.inf, np.inf, 0.0, 0.00625, -0.00625, 0.01875, 1e6, -1e6, 3.2, -1.6], np.float32)


@pytest.mark.parametrize("zero_point", [np.uint8(131), np.int8(-3), np.uint16(40000), np.int16(7), None])
def test_qdq_pair_is_exactly_the_two_nodes(zero_point):
    """FakeQuantize equals QuantizeLinear then DequantizeLinear bit for bit: ties, saturation, NaN, inf."""
    x = np.concatenate([_SPECIAL, RNG.standard_normal(200).astype(np.float32) * 3])
    consts = {"s": np.array(0.0125, np.float32)}
    ins = ["x", "s"]
    if zero_point is not None:
        consts["z"] = np.array(zero_point)
        ins.append("z")
    nodes = [helper.make_node("QuantizeLinear", ins, ["q"]),
             helper.make_node("DequantizeLinear", ["q"] + ins[1:], ["y"])]
    model = graph_model(nodes, {"x": x}, ["y"], consts, opset=21)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["FakeQuantize"]
    got = optimized.run(None, {"x": x})[0]
    assert got.tobytes() == Evaluator(model, optimize=0).run(None, {"x": x})[0].tobytes()
    np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])


def test_qdq_pair_with_another_reader_of_the_quantized_value_is_kept():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    model = graph_model(nodes, {"x": x}, ["y", ("q", 2)], {"s": np.array(0.1, np.float32), "z": np.array(3, np.uint8)})
    assert "FakeQuantize" not in step_classes(Evaluator(model))


# (id, activation dtype, weight dtype, weight zero point per column, scale product, bias, input shape, K)
INTEGER_MATMUL = [
    ("uint8_int8_product_bias", np.uint8, np.int8, False, True, True, (2, 5, 16), 16),
    ("uint8_uint8_per_column_zp", np.uint8, np.uint8, True, True, False, (7, 32), 32),
    ("int8_scale_bias", np.int8, np.int8, False, False, True, (3, 24), 24),
    ("int8_scale_only", np.int8, np.int8, False, False, False, (1, 4, 8), 8),
]


@pytest.mark.parametrize("case", INTEGER_MATMUL, ids=[c[0] for c in INTEGER_MATMUL])
def test_integer_matmul_to_float_rule(case):
    """Bit for bit the values of MatMulInteger -> Cast -> Mul (-> Add), on DynamicQuantizeLinear's outputs
    (uint8) or on fed int8 activations."""
    _, a_dtype, w_dtype, per_column, product, bias, shape, k = case
    n = 6
    w = ints(w_dtype, (k, n), *((-127, 127) if w_dtype == np.int8 else (0, 255)))
    zero_point = ints(w_dtype, (n,), 0, 9) if per_column else np.array(3 if w_dtype == np.uint8 else 0, w_dtype)
    consts = {"w": w, "wz": zero_point}
    nodes, feeds = [], {}
    if a_dtype == np.uint8:
        x = RNG.standard_normal(shape).astype(np.float32)
        feeds["x"] = x
        nodes.append(helper.make_node("DynamicQuantizeLinear", ["x"], ["a", "xs", "az"]))
    else:
        feeds = {"a": ints(np.int8, shape), "az": np.array(-7, np.int8), "xs": np.array(0.03, np.float32)}
    nodes.append(helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["p"]))
    nodes.append(helper.make_node("Cast", ["p"], ["c"], to=1))
    scale = "xs"
    if product:
        consts["ws"] = np.array(0.0125, np.float32)
        nodes.append(helper.make_node("Mul", ["xs", "ws"], ["s"]))
        scale = "s"
    nodes.append(helper.make_node("Mul", ["c", scale], ["m"]))
    if bias:
        consts["b"] = RNG.standard_normal(n).astype(np.float32)
        nodes.append(helper.make_node("Add", ["b", "m"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["m"], ["y"]))
    model = graph_model(nodes, feeds, ["y"], consts, opset=13)
    optimized = Evaluator(model)
    # on DynamicQuantizeLinear's outputs, rule dynamic_quantized_matmul hands the product float32 codes, in
    # one step with it when the product is the only reader (of the scale too)
    fused = ["QuantizedInputMatMul"] if a_dtype == np.uint8 else ["IntegerMatMulToFloat"]
    assert [n for n in step_classes(optimized) if n in fused] == fused
    got = optimized.run(None, feeds)[0]
    assert got.tobytes() == Evaluator(model, optimize=0).run(None, feeds)[0].tobytes()
    np.testing.assert_allclose(got, run_onnxruntime(model, feeds)[0], rtol=1e-6, atol=1e-6)


def test_integer_matmul_to_float_beyond_the_float32_bound_is_kept():
    """K * 255 * max|W| >= 2**24: partial sums could round in float32, so the nodes stay."""
    k = 600
    w = np.full((k, 2), 127, np.int8)
    nodes = [helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["p"]),
             helper.make_node("Cast", ["p"], ["c"], to=1), helper.make_node("Mul", ["c", "s"], ["y"])]
    feeds = {"a": ints(np.uint8, (2, k)), "az": np.array(0, np.uint8), "s": np.array(0.5, np.float32)}
    model = graph_model(nodes, feeds, ["y"], {"w": w, "wz": np.array(0, np.int8)}, opset=13)
    ev = Evaluator(model)
    assert "IntegerMatMulToFloat" not in step_classes(ev)
    np.testing.assert_array_equal(ev.run(None, feeds)[0], run_onnxruntime(model, feeds)[0])


def _shared_dynamic_quantization(extra_reader: bool, biases=(False, False), weight_scales=(None, None)):
    """DynamicQuantizeLinear read by two MatMulInteger -> Cast -> Mul (-> Add bias) chains (and, with
    ``extra_reader``, by a DequantizeLinear too); a weight scale multiplies the activation scale first."""
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])]
    consts = {}
    for i, (n, bias, ws) in enumerate(zip((5, 3), biases, weight_scales)):
        consts[f"w{i}"] = ints(np.int8, (8, n), -127, 127)
        consts[f"wz{i}"] = np.array(0, np.int8)
        nodes += [helper.make_node("MatMulInteger", ["q", f"w{i}", "z", f"wz{i}"], [f"p{i}"]),
                  helper.make_node("Cast", [f"p{i}"], [f"c{i}"], to=1)]
        scale = "s"
        if ws is not None:
            consts[f"ws{i}"] = np.asarray(ws, np.float32)
            nodes.append(helper.make_node("Mul", ["s", f"ws{i}"], [f"sc{i}"]))
            scale = f"sc{i}"
        nodes.append(helper.make_node("Mul", [f"c{i}", scale], [f"m{i}" if bias else f"y{i}"]))
        if bias:
            consts[f"b{i}"] = RNG.standard_normal(n).astype(np.float32)
            nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"y{i}"]))
    outputs = ["y0", "y1"]
    if extra_reader:
        nodes.append(helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]))
        outputs.append("d")
    return graph_model(nodes, {"x": (None, 8)}, outputs, consts, opset=13)


# (id, the input: finite values, or with a NaN or an infinity, which take the kernel's general path)
SHARED_INPUTS = [
    ("finite", RNG.standard_normal((4, 8)).astype(np.float32)),
    ("nan", np.where(np.arange(32).reshape(4, 8) == 5, np.nan, RNG.standard_normal((4, 8))).astype(np.float32)),
    ("infinity", np.where(np.arange(32).reshape(4, 8) == 9, np.inf, RNG.standard_normal((4, 8))).astype(np.float32)),
    ("zeros", np.zeros((4, 8), np.float32)),
]
# (id, biases, weight scales: None for the activation's scale alone, a scalar or one per column)
SHARED_FORMS = [
    ("no_bias", (False, False), (None, None)),
    ("biases_and_scales", (True, True), (0.0125, [0.5, 0.25, 0.125])),
    ("one_bias", (True, False), (0.0125, None)),
]


@pytest.mark.parametrize("form", SHARED_FORMS, ids=[f[0] for f in SHARED_FORMS])
@pytest.mark.parametrize("x", [c[1] for c in SHARED_INPUTS], ids=[c[0] for c in SHARED_INPUTS])
@pytest.mark.parametrize("shared", [False, True], ids=["separate", "shared_codes_products"])
def test_dynamic_quantized_matmul_is_exactly_the_nodes(x, form, shared):
    """Both products as their own CodesMatMulToFloat steps after a DynamicQuantizeCodes, or (rule
    shared_codes_products, when both or neither has a bias) one QuantizedInputSharedProducts step (the
    quantization and the products, the codes read nowhere else): bit for bit the nodes' values either way."""
    _, biases, weight_scales = form
    model = _shared_dynamic_quantization(False, biases, weight_scales)
    optimized = Evaluator(model) if shared else Evaluator(model, disable=("shared_codes_products",))
    names = step_classes(optimized)
    merged = shared and biases[0] == biases[1]
    assert names.count("DynamicQuantizeCodes") == (0 if merged else 1)
    assert names.count("CodesMatMulToFloat") == (0 if merged else 2)
    assert names.count("QuantizedInputSharedProducts") == (1 if merged else 0)
    with np.errstate(all="ignore"):
        got = optimized.run(None, {"x": x})
        want = Evaluator(model, optimize=0).run(None, {"x": x})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == np.ascontiguousarray(w).tobytes()


def test_dynamic_quantized_matmul_with_another_reader_is_kept():
    """The quantized tensor is also read by a DequantizeLinear: the uint8 tensor must exist, so the
    DynamicQuantizeLinear stays (the products are still rule integer_matmul_to_float's)."""
    model = _shared_dynamic_quantization(extra_reader=True)
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    optimized = Evaluator(model)
    names = step_classes(optimized)
    assert "DynamicQuantizeCodes" not in names and names.count("IntegerMatMulToFloat") == 2
    for g, w in zip(optimized.run(None, {"x": x}), run_onnxruntime(model, {"x": x})):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


# (id, bits, K, N, block size, packed zero points, bias, activation dtype)
MATMUL_NBITS = [
    ("bits4_zero_points_bias", 4, 32, 6, 16, True, True, np.float32),
    ("bits4_default_zero_point", 4, 40, 5, 16, False, False, np.float32),  # K not a multiple of the block
    ("bits8", 8, 32, 3, 32, True, False, np.float32),
    ("bits2_bias", 2, 64, 4, 32, True, True, np.float32),
    ("float16_activation_runs_the_kernel", 4, 32, 6, 16, True, True, np.float16),
]


@pytest.mark.parametrize("case", MATMUL_NBITS, ids=[c[0] for c in MATMUL_NBITS])
def test_prepared_matmul_nbits_is_exactly_the_kernel(case):
    _, bits, k, n, block, zero_points, bias, dtype = case
    blocks = -(-k // block)
    consts = {"b": ints(np.uint8, (n, blocks, block * bits // 8)),
              "s": (RNG.random(n * blocks) * 0.05 + 0.01).astype(dtype)}
    inputs = ["a", "b", "s"]
    if zero_points:
        consts["z"] = ints(np.uint8, (n * (-(-blocks * bits // 8)),))
        inputs.append("z")
    if bias:
        consts["bias"] = RNG.standard_normal(n).astype(dtype)
        inputs += [""] * (5 - len(inputs)) + ["bias"]
    node = helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block)
    a = RNG.standard_normal((2, 3, k)).astype(dtype)
    model = graph_model([node], {"a": a}, [("y", 1 if dtype == np.float32 else 10)], consts, opset=17,
                        extra_opsets={"com.microsoft": 1})
    optimized = Evaluator(model)
    assert "DequantizedMatMul" in step_classes(optimized)
    got = optimized.run(None, {"a": a})[0]
    assert got.dtype == dtype and got.tobytes() == Evaluator(model, optimize=0).run(None, {"a": a})[0].tobytes()
    np.testing.assert_allclose(got.astype(np.float32), run_onnxruntime(model, {"a": a})[0].astype(np.float32),
                               rtol=1e-5 if dtype == np.float32 else 1e-2, atol=1e-5 if dtype == np.float32 else 1e-2)


def test_dynamic_uint8_scale_zero_point_equal_float32_arithmetic():
    """The Python-float scale and zero point of the dynamic uint8 quantization (``dynamic_uint8_codes``,
    struct-rounded) against the same formula in numpy float32 scalar arithmetic (onnxruntime's), over
    random ranges of every magnitude; a scale that underflows to 0 is refused (the callers' rules)."""
    from onnxtext.evaluator.kernels.quantize import dynamic_uint8_codes

    rng = np.random.default_rng(5)
    lows = -(2.0 ** rng.uniform(-140, 127, 20000)).astype(np.float32) * rng.random(20000).astype(np.float32)
    highs = (2.0 ** rng.uniform(-140, 127, 20000)).astype(np.float32) * rng.random(20000).astype(np.float32)
    lows[:200], highs[200:400] = 0, 0  # one-sided ranges
    tiny = np.finfo(np.float32).smallest_subnormal
    lows[400:420], highs[400:420] = -tiny * np.arange(20), tiny * np.arange(20) * 3  # widths to 80 subnormals
    refused = 0
    with np.errstate(all="ignore"):
        for low, high in zip(lows.tolist(), highs.tolist()):
            scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
            got = dynamic_uint8_codes(np.array([low, high], np.float32))
            if not scale:
                assert got is None, (low, high)
                refused += 1
                continue
            assert np.float32(got[1]).tobytes() == scale.tobytes(), (low, high)
            if np.isfinite(scale):
                want = min(255.0, max(0.0, round(float(np.float32(0) - np.float32(low) / scale))))
                assert got[2] == want, (low, high)
    assert refused == 20  # (widths of 0 to 76 subnormals: the scale underflows to 0)


# (id, operator between the two pairs, its attributes, its extra constant inputs, the second pair's scale,
#  whether the second pair is removed)
REDUNDANT_FAKE_QUANTIZE = [
    ("max_pool", "MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2]), {}, 0.02, True),
    ("max_pool_padded", "MaxPool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), {}, 0.02, True),
    ("reshape", "Reshape", {}, {"shape": np.array([0, -1], np.int64)}, 0.02, True),
    ("slice", "Slice", {}, {"starts": np.array([1], np.int64), "ends": np.array([3], np.int64),
                            "axes": np.array([2], np.int64)}, 0.02, True),
    ("other_scale_kept", "MaxPool", dict(kernel_shape=[2, 2]), {}, 0.03, False),
    ("ceil_mode_kept", "MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), {}, 0.02, False),
    ("average_pool_kept", "AveragePool", dict(kernel_shape=[2, 2]), {}, 0.02, False),  # averages leave the grid
]


@pytest.mark.parametrize("zero_point", [np.uint8(131), np.int8(-3), np.uint16(40000)], ids=["u8", "s8", "u16"])
@pytest.mark.parametrize("case", REDUNDANT_FAKE_QUANTIZE, ids=[c[0] for c in REDUNDANT_FAKE_QUANTIZE])
def test_redundant_fake_quantize_is_exactly_the_nodes(case, zero_point):
    _, op, attrs, extra, second_scale, removed = case
    consts = {"s": np.array(0.02, np.float32), "s2": np.array(second_scale, np.float32), "z": np.array(zero_point)}
    consts.update(extra)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s", "z"], ["d1"]),
             helper.make_node(op, ["d1"] + list(extra), ["m"], **attrs),
             helper.make_node("QuantizeLinear", ["m", "s2", "z"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z"], ["d2"]),
             helper.make_node("Neg", ["d2"], ["y"])]
    model = graph_model(nodes, {"x": (None, 3, None, None)}, ["y"], consts, opset=19)
    x = (RNG.standard_normal((2, 3, 5, 6)) * 400).astype(np.float32)  # saturates both ends
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, -0.004]
    # (rule max_pool_before_fake_quantize would then take the first pair and a MaxPool into one step)
    optimized = Evaluator(model, disable=("max_pool_before_fake_quantize",))
    assert step_classes(optimized).count("FakeQuantize") == (1 if removed else 2)
    with np.errstate(all="ignore"):
        want = Evaluator(model, optimize=0).run(None, {"x": x})[0]
        for ev in (optimized, Evaluator(model)):
            got = ev.run(None, {"x": x})[0]
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _qdq_conv_chain(extra_readers: bool):
    """Q/DQ -> Conv (int8 weights) -> Q/DQ -> Conv -> Q/DQ; with ``extra_readers`` the first conv's result
    and the middle pair's result are outputs too (so neither scale may move)."""
    consts = {"s1": np.array(0.02, np.float32), "z1": np.array(128, np.uint8), "s2": np.array(0.01, np.float32),
              "z2": np.array(3, np.uint8), "s3": np.array(0.015, np.float32), "z3": np.array(120, np.uint8),
              "w1": (ints(np.int8, (8, 3, 3, 3), -127, 127) * np.float32(0.004)).astype(np.float32),
              "w2": (ints(np.int8, (5, 8, 3, 3), -127, 127) * np.float32(0.004)).astype(np.float32),
              "b1": (ints(np.int32, (8,), -300, 300) * np.float32(8e-5)).astype(np.float32)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node("Conv", ["d1", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c1", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["d2"]),
             helper.make_node("Conv", ["d2", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["c2", "s3", "z3"], ["q3"]),
             helper.make_node("DequantizeLinear", ["q3", "s3", "z3"], ["y"])]
    return graph_model(nodes, {"x": (None, 3, None, None)}, ["y"] + (["c1", "d2"] if extra_readers else []),
                       consts, opset=13)


def test_fake_quantize_into_conv_rounds_within_one_step():
    """Level 2: the convs' products are reassociated, so a code whose ratio lies within float rounding of a
    half-integer may round the other way: at most one step, on a small fraction of the values."""
    model = _qdq_conv_chain(extra_readers=False)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["ConvFakeQuantize", "PreparedConv"] * 2 + ["ConvFakeQuantize"]
    x = RNG.standard_normal((2, 3, 40, 40)).astype(np.float32)
    got, want = optimized.run(None, {"x": x})[0], Evaluator(model, optimize=0).run(None, {"x": x})[0]
    diff = np.abs(got - want)
    assert diff.max() <= np.float32(0.015) * 1.001 and np.count_nonzero(diff) <= diff.size // 1000


def test_fake_quantize_into_conv_keeps_scales_of_values_read_elsewhere():
    """The first conv's result and the middle pair's result are outputs: the middle pair keeps both its
    division and its multiplication (a plain FakeQuantize) and the first conv's result is the conv's own
    (up to the input scale moved into its weights)."""
    model = _qdq_conv_chain(extra_readers=True)
    optimized = Evaluator(model)
    assert step_classes(optimized) == ["ConvFakeQuantize", "PreparedConv", "FakeQuantize", "PreparedConv",
                                       "ConvFakeQuantize"]
    x = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
    y, c1, d2 = optimized.run(None, {"x": x})
    y0, c10, d20 = Evaluator(model, optimize=0).run(None, {"x": x})
    np.testing.assert_allclose(c1, c10, rtol=1e-5, atol=1e-6)
    for got, want, step in ((d2, d20, 0.01), (y, y0, 0.015)):
        diff = np.abs(got - want)
        assert diff.max() <= np.float32(step) * 1.001 and np.count_nonzero(diff) <= max(1, diff.size // 100)


def test_filled_bound_arrays_stay_within_their_memory_limit(monkeypatch):
    """The saturation bounds kept as arrays (kernels/quantize.filled) drop the oldest beyond the limit, and
    saturation gives fmax/minimum's values (NaN to the lower bound) with or without them."""
    from onnxtext.evaluator.kernels import quantize

    monkeypatch.setattr(quantize, "_FILLED", type(quantize._FILLED)())
    monkeypatch.setattr(quantize, "_FILLED_BYTES", [0])
    monkeypatch.setattr(quantize, "_FILLED_LIMIT", 100_000)
    for value in range(20):
        a = quantize.filled(np.float32(value), 4096)  # 16 KB each: at most 6 kept
        assert a.dtype == np.float32 and a.shape == (4096,) and not a.flags.writeable and a[0] == value
        assert quantize._FILLED_BYTES[0] == sum(v.nbytes for v in quantize._FILLED.values()) <= 100_000
    for size in (10, 5000, quantize.FILLED_MAX_SIZE + 1):
        x = RNG.standard_normal(size).astype(np.float32) * 300
        x[0] = np.nan
        want = np.minimum(np.fmax(x, np.float32(-128)), np.float32(127))
        assert quantize.saturate_float32(x.copy(), np.float32(-128), np.float32(127)).tobytes() == want.tobytes()


# inputs of a head's single product (QuantizedInputMatMul) beyond the fast path: NaN, infinities, all zeros
_HEAD_INPUTS = [
    ("nan", [[0.5, np.nan, -1.25, 3.0]]),
    ("inf", [[0.5, np.inf, -1.25, 3.0]]),
    ("minus_inf", [[-np.inf, 0.25, 2.0, -1.0]]),
    ("zeros", [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]),
    ("clipped_extremes", [[-29.461267471313477, 78.63402557373047, 3.25, 0.0]]),
]


@pytest.mark.parametrize("values", [v for _, v in _HEAD_INPUTS], ids=[n for n, _ in _HEAD_INPUTS])
@pytest.mark.parametrize("weight_scale", [True, False], ids=["scale_product", "activation_scale"])
def test_quantized_input_matmul_equals_the_nodes_on_special_values(values, weight_scale):
    """One QuantizedInputMatMul step, its product scaled by x's scale times W's or by x's scale alone."""
    x = np.array(values, np.float32)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["a", "xs", "az"]),
             *([helper.make_node("Mul", ["xs", "ws"], ["s"])] if weight_scale else []),
             helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["p"]),
             helper.make_node("Cast", ["p"], ["c"], to=1),
             helper.make_node("Mul", ["c", "s" if weight_scale else "xs"], ["m"]),
             helper.make_node("Add", ["b", "m"], ["y"])]
    consts = {"w": ints(np.int8, (4, 3), -127, 127), "wz": np.array(0, np.int8), "ws": np.array(0.0125, np.float32),
              "b": np.array([0.5, -1.0, 0.25], np.float32)}
    model = graph_model(nodes, {"x": x}, ["y"], consts, opset=13)
    optimized = Evaluator(model)
    assert "QuantizedInputMatMul" in step_classes(optimized)
    with np.errstate(all="ignore"):
        got = optimized.run(None, {"x": x})[0]
        want = Evaluator(model, optimize=0).run(None, {"x": x})[0]
        assert got.tobytes() == want.tobytes()
        np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])


# (id, MaxPool attributes, whether rule max_pool_before_fake_quantize pools first)
POOLED_FAKE_QUANTIZE = [
    ("tiles", dict(kernel_shape=[2, 2], strides=[2, 2]), True),
    ("overlapping_padded", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), True),
    ("same_upper", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"), True),
    ("dilated_kept", dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1]), False),
    ("ceil_mode_kept", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), False),
]
# (id, what to put in the image): NaN (the pair's lowest code, where the orders differ), infinities
_POOL_IMAGES = [("finite", None), ("nan", np.nan), ("infinities", np.inf), ("all_nan", "all")]


@pytest.mark.parametrize("image", [v for _, v in _POOL_IMAGES], ids=[n for n, _ in _POOL_IMAGES])
@pytest.mark.parametrize("case", POOLED_FAKE_QUANTIZE, ids=[c[0] for c in POOLED_FAKE_QUANTIZE])
def test_max_pool_before_fake_quantize_is_exactly_the_nodes(case, image):
    _, attrs, pooled_first = case
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("MaxPool", ["d"], ["y"], **attrs)]
    model = graph_model(nodes, {"x": (None, 2, None, None)}, ["y"],
                        {"s": np.array(0.05, np.float32), "z": np.array(-3, np.int8)}, opset=13)
    x = (RNG.standard_normal((2, 2, 7, 6)) * 4).astype(np.float32)
    if image == "all":
        x[0, 0, :2, :2] = np.nan  # (a whole window of NaN)
    elif image is not None:
        x[0, 0, 1, 1], x[1, 1, 4, 2], x[0, 1, 6, 5] = image, -image, image
    optimized = Evaluator(model)
    assert ("PooledFakeQuantize" in step_classes(optimized)) == pooled_first
    with np.errstate(all="ignore"):
        got = optimized.run(None, {"x": x})[0]
        want = Evaluator(model, optimize=0).run(None, {"x": x})[0]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if image is None:
        np.testing.assert_array_equal(got, run_onnxruntime(model, {"x": x})[0])


def test_max_pool_before_fake_quantize_keeps_a_pair_read_elsewhere():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("MaxPool", ["d"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Relu", ["d"], ["r"])]
    model = graph_model(nodes, {"x": (None, 2, None, None)}, ["y", "r"],
                        {"s": np.array(0.05, np.float32), "z": np.array(-3, np.int8)}, opset=13)
    optimized = Evaluator(model)
    assert "PooledFakeQuantize" not in step_classes(optimized)
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    for g, w in zip(optimized.run(None, {"x": x}), run_onnxruntime(model, {"x": x})):
        np.testing.assert_array_equal(g, w)


_RESIDUAL_MODEL = """<ir_version: 8, opset_import: ["": 13]>
residual (float[B, S, 4] x, R_TYPE r) => (float[B, S, 4] y) {
  w = Constant <value = int8[4, 4] {113, 32, -47, 101, 20, -70, 85, -70, -113, -51, 55, 95, 105, -126, 0, 82}> ()
  z = Constant <value = int8 {0}> ()
  s1 = Constant <value = float {0.0125}> ()
  b = Constant <value = float[4] {-1.5, 0.25, -0.125, 2.0}> ()
  xq, xs, xz = DynamicQuantizeLinear(x)
  s = Mul(xs, s1)
  p = MatMulInteger(xq, w, xz, z)
  c = Cast <to = 1> (p)
  m = Mul(c, s)
  d = Add(m, b)
  y = Add(r, d)
}"""
# (x's shape, r's shape: the product's shape takes the fused addition; a broadcast residual the original steps)
RESIDUALS = [((2, 3, 4), (2, 3, 4)), ((1, 5, 4), (1, 5, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (1, 3, 4)),
             ((1, 1, 4), (2, 3, 4)), ((2, 3, 4), ())]


@pytest.mark.parametrize("x_shape, r_shape", RESIDUALS, ids=str)
def test_quantized_residual_add_is_exactly_the_nodes(x_shape, r_shape):
    """Rule quantized_residual_add: one QuantizedMatMulResidual step, bit for bit the nodes' values,
    whether the residual has the product's shape (added in place) or broadcasts (the original steps)."""
    import onnxtext

    r_type = f"float[{', '.join(f'R{i}' for i in range(len(r_shape)))}]" if r_shape else "float"
    model = onnxtext.parse_model(_RESIDUAL_MODEL.replace("R_TYPE", r_type))
    optimized = Evaluator(model)
    assert "QuantizedMatMulResidual" in step_classes(optimized)
    assert "QuantizedMatMulResidual" not in step_classes(Evaluator(model, disable=("quantized_residual_add",)))
    x = RNG.standard_normal(x_shape).astype(np.float32)
    r = RNG.standard_normal(r_shape).astype(np.float32)
    got = optimized.run(None, {"x": x, "r": r})[0]
    want = Evaluator(model, optimize=0).run(None, {"x": x, "r": r})[0]
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    np.testing.assert_allclose(got, run_onnxruntime(model, {"x": x, "r": r})[0], rtol=1e-6, atol=1e-6)
