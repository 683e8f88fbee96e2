"""Math kernels beyond the ONNX backend suite: pre-13 Softmax/LogSoftmax/Hardmax (onnxruntime as the
oracle, since onnx.reference gets them wrong), old opset forms, integer and bit semantics, string
casts, float8e8m0 rounding, reductions over empty axes, Erf accuracy and dtype preservation.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnxtext import dtypes
from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.kernels.erf import TABLE_MAX_VALUES


def single_node_model(op, inputs, attrs=None, opset=13, num_outputs=1):
    """A model with one ``op`` node; ``inputs`` is a list of (name, array or None for absent)."""
    node = helper.make_node(op, [n if v is not None else "" for n, v in inputs],
                            [f"out{i}" for i in range(num_outputs)], **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, dtypes.from_numpy(v.dtype).enum, v.shape)
                    for n, v in inputs if v is not None]
    outputs = [onnx.ValueInfoProto(name=f"out{i}") for i in range(num_outputs)]
    graph = helper.make_graph([node], op.lower(), graph_inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ours(op, inputs, attrs=None, opset=13, num_outputs=1):
    model = single_node_model(op, inputs, attrs, opset, num_outputs)
    out = Evaluator(model).run(None, {n: v for n, v in inputs if v is not None})
    return out if num_outputs > 1 else out[0]


# ------------------------------------------------------------ Softmax family before opset 13


def _ort_run(op, x, attrs, opset):
    ort = pytest.importorskip("onnxruntime")
    model = single_node_model(op, [("x", x)], attrs, opset)
    # onnxruntime needs output types; the single output has the input's type.
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("out0", TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


_RNG = np.random.default_rng(0)
_SOFTMAX_CASES = [  # negative axes are valid from opset 11
    (opset, shape, axis)
    for opset in [1, 11]
    for shape in [(2, 3, 4), (2, 3, 4, 5)]
    for axis in [None, 0, 1, 2, -1, -2]
    if opset == 11 or axis is None or axis >= 0
]


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset,shape,axis", _SOFTMAX_CASES)
def test_softmax_family_coerced_to_2d_before_opset_13(op, opset, shape, axis):
    x = _RNG.standard_normal(shape).astype(np.float32)
    if op == "Hardmax":  # distinct values, so the first-maximum rule is all that matters
        x = _RNG.permutation(np.arange(x.size, dtype=np.float32)).reshape(shape)
    attrs = {} if axis is None else {"axis": axis}
    expected = _ort_run(op, x, attrs, opset)
    got = run_ours(op, [("x", x)], attrs, opset)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_softmax_13_is_per_axis():
    x = _RNG.standard_normal((2, 3, 4)).astype(np.float32)
    got = run_ours("Softmax", [("x", x)], {"axis": 1}, 13)
    np.testing.assert_allclose(got.sum(axis=1), np.ones((2, 4)), rtol=1e-6)
    old = run_ours("Softmax", [("x", x)], {"axis": 1}, 11)
    np.testing.assert_allclose(old.sum(axis=(1, 2)), np.ones(2), rtol=1e-6)


def test_hardmax_first_maximum_wins():
    x = np.array([[1, 3, 3, 2]], np.float32)
    np.testing.assert_array_equal(run_ours("Hardmax", [("x", x)], {}, 13), [[0, 1, 0, 0]])


# -------------------------------------------------------------------- element-wise semantics


_F32 = np.linspace(-0.9, 0.9, 7, dtype=np.float32)


@pytest.mark.parametrize("op", ["Abs", "Acos", "Asin", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf", "Exp",
                                "Floor", "Neg", "Reciprocal", "Round", "Sign", "Sin", "Sinh", "Tan", "Tanh",
                                "Sigmoid", "Softplus", "Softsign", "Elu", "Selu", "Mish", "HardSwish",
                                "HardSigmoid", "LeakyRelu", "Relu", "Celu", "ThresholdedRelu", "Gelu"])
def test_unary_keeps_float32(op):
    opset = {"Gelu": 20, "Mish": 18}.get(op, 18)
    assert run_ours(op, [("x", _F32)], opset=opset).dtype == np.float32


def test_unary_returns_arrays_for_scalars():
    out = run_ours("Exp", [("x", np.array(1.0, np.float32))])
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float32


def test_erf_matches_math_erf():
    x = np.concatenate([np.linspace(-6, 6, 2001), [0.0, 1e-300, -1e-10, 40.0, -np.inf, np.inf]])
    got = run_ours("Erf", [("x", x)])
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(got, expected, rtol=5e-15, atol=1e-300)
    assert np.isnan(run_ours("Erf", [("x", np.array([np.nan]))])[0])


# Dense float32 sweeps: float32 values in [lo, hi) at a stride of their bit patterns giving about
# 20,000 values, both signs, against math.erf rounded to float32; the error allowed in float32 ulps
# (units in the last place). A row per region where erf approximations go wrong: subnormal inputs,
# tiny and small x (relative error), the shoulder, the saturation near 4 where erf rounds to 1.
# The bounds are what a sweep of 3 million values per region measured (python kernels/erf.py's
# method; 8 of 3,049,901 values in [1e-4, 0.5) are 3 ulps off, every other value at most 2).
_ERF_ULP_TABLE = [
    # lo, hi, max ulps
    (1e-45, 1.2e-38, 1),
    (1.2e-38, 1e-4, 1),
    (1e-4, 0.5, 3),
    (0.5, 2.0, 2),
    (2.0, 3.5, 1),
    (3.5, 6.0, 1),
    (6.0, 3e38, 0),
]


def _float32_ordinal(a):
    """float32 values as integers in order, so that the difference of two counts ulps."""
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


@pytest.mark.parametrize("lo, hi, max_ulps", _ERF_ULP_TABLE)
def test_erf_float32_ulps_against_math_erf(lo, hi, max_ulps):
    first, last = np.float32([lo, hi]).view(np.uint32)
    bits = np.arange(first, last, max(1, (last - first) // 20000), dtype=np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x, -x])
    expected = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    got = run_ours("Erf", [("x", x)])
    assert got.dtype == np.float32
    ulps = np.abs(_float32_ordinal(got) - _float32_ordinal(expected))
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= max_ulps, f"erf({x[worst]!r}) = {got[worst]!r}, math.erf gives {expected[worst]!r}"


@pytest.mark.parametrize("x, expected", [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0),
                                         (4.2, 1.0), (-4.5, -1.0), (1e30, 1.0), (-1e-45, -1e-45)])
def test_erf_float32_exact_values(x, expected):
    got = run_ours("Erf", [("x", np.float32([x]))])[0]
    assert got == np.float32(expected) and np.signbit(got) == np.signbit(expected)


def test_erf_float32_nan():
    assert np.isnan(run_ours("Erf", [("x", np.float32([np.nan, -np.nan]))])).all()


@pytest.mark.parametrize("size", [1, 7, (1 << 14) + 3])  # one element, one block, two blocks
def test_erf_float32_blocks_agree_with_elementwise_calls(size):
    """The kernel runs in blocks: each value's result must not depend on where it falls."""
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32) * 2
    whole = run_ours("Erf", [("x", x)])
    one_by_one = np.array([run_ours("Erf", [("x", x[i:i + 1])])[0] for i in range(0, size, max(1, size // 50))])
    np.testing.assert_array_equal(whole[::max(1, size // 50)], one_by_one)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_erf_half_precisions_round_the_float32_result(dtype):
    x = np.linspace(-4, 4, 801).astype(dtype)
    got = run_ours("Erf", [("x", x)])
    assert got.dtype == dtype
    expected = np.array([math.erf(float(v)) for v in x]).astype(dtype)
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))


# Gelu (opset 20, approximate="none") in float32 against the formula in float64 with math.erfc: per
# region, the largest error allowed in float32 ulps, or (negative x, where the float32 formula's
# 1 + erf cancels) in absolute terms. Two paths: arrays of at most TABLE_MAX_VALUES values take a table
# of Phi (kernels/erf.py's _PhiTable), larger ones the erf series; each row runs through both.
# Measured (series / table): 2 / 2 ulps, 5.4e-8 / 2.6e-8, 2.6e-8 / 7e-10, 2.2e-8 / 6.1e-9; near 0
# 2 / 2 ulps; around |x| = 6, where the table's last cells hold exactly 1 and 0, 0 / 0 ulps, 2.2e-8 / 6.1e-9.
_GELU_TABLE = [
    # lo, hi, max ulps, max absolute error
    (0.0, 12.0, 2, None),
    (0.0, 0.05, 2, None),
    (5.9, 6.1, 1, None),
    (-3.0, 0.0, None, 6e-8),
    (-5.6, -3.0, None, 6e-8),
    (-12.0, -5.6, None, 6e-8),
    (-6.1, -5.9, None, 6e-8),
]
_GELU_PATHS = {"table": TABLE_MAX_VALUES, "series": None}  # path -> values per call (None: all at once)


def _gelu_model_run(x, values_per_call):
    """Gelu of ``x`` through one Evaluator, ``values_per_call`` values (or all of them) per run."""
    model = single_node_model("Gelu", [("x", x[:1])], opset=20)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
    ev = Evaluator(model)
    if values_per_call is None:
        assert x.size > TABLE_MAX_VALUES
        return ev.run(None, {"x": x})[0]
    return np.concatenate([ev.run(None, {"x": x[i:i + values_per_call]})[0]
                           for i in range(0, x.size, values_per_call)])


@pytest.mark.parametrize("path", list(_GELU_PATHS))
@pytest.mark.parametrize("lo, hi, max_ulps, max_abs", _GELU_TABLE)
def test_gelu_float32_against_the_float64_formula(lo, hi, max_ulps, max_abs, path):
    x = np.linspace(lo, hi, 20001).astype(np.float32)
    got = _gelu_model_run(x, _GELU_PATHS[path])
    expected = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.tolist()])
    if max_ulps is not None:
        ulps = np.abs(_float32_ordinal(got) - _float32_ordinal(expected.astype(np.float32)))
        assert ulps.max() <= max_ulps, x[np.argmax(ulps)]
    else:
        assert np.abs(got - expected).max() <= max_abs, x[np.argmax(np.abs(got - expected))]


@pytest.mark.parametrize("path", list(_GELU_PATHS))
@pytest.mark.parametrize("x, expected", [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-100.0, -0.0), (30.0, 30.0),
                                         (1e30, 1e30), (-1e30, -0.0), (1e-40, 5e-41)])
def test_gelu_float32_exact_values(x, expected, path):
    values = np.full(1 if _GELU_PATHS[path] else TABLE_MAX_VALUES + 1, x, np.float32)
    got = _gelu_model_run(values, _GELU_PATHS[path])[0]
    assert got == np.float32(expected) and np.signbit(got) == np.signbit(expected)


@pytest.mark.parametrize("size", [3, TABLE_MAX_VALUES + 1])
def test_gelu_float32_nan_leaves_the_other_values(size):
    """NaN cannot index the table: such an array takes the series (the same values elsewhere)."""
    x = np.linspace(-4, 4, size).astype(np.float32)
    clean = _gelu_model_run(x, None if size > TABLE_MAX_VALUES else size)
    x[1] = np.nan
    got = _gelu_model_run(x, None if size > TABLE_MAX_VALUES else size)
    assert np.isnan(got[1]) and not np.isnan(np.delete(got, 1)).any()
    np.testing.assert_allclose(np.delete(got, 1), np.delete(clean, 1), rtol=3e-7, atol=6e-8)


def test_integer_division_truncates_toward_zero():
    a = np.array([-7, 7, -7, 7, 6], np.int64)
    b = np.array([2, -2, -2, 2, 3], np.int64)
    np.testing.assert_array_equal(run_ours("Div", [("a", a), ("b", b)]), [-3, -3, 3, 3, 2])


@pytest.mark.parametrize("fmod,expected", [(0, [1, -1, -1, 1]), (1, [-1, 1, -1, 1])])
def test_integer_mod(fmod, expected):
    a = np.array([-7, 7, -7, 7], np.int32)
    b = np.array([2, -2, -2, 2], np.int32)
    np.testing.assert_array_equal(run_ours("Mod", [("a", a), ("b", b)], {"fmod": fmod}), expected)


def test_bitshift_out_of_range_amounts():
    x = np.array([-8, -8, 8, 8], np.int32)
    y = np.array([40, -1, 40, 1], np.int32)
    np.testing.assert_array_equal(run_ours("BitShift", [("x", x), ("y", y)], {"direction": "RIGHT"}, 28),
                                  [-1, -1, 0, 4])
    np.testing.assert_array_equal(run_ours("BitShift", [("x", x), ("y", y)], {"direction": "LEFT"}, 28),
                                  [0, 0, 0, 16])


def test_pow_integer_base_float_exponent():
    x = np.array([2, 3, 4], np.int32)
    y = np.array([0.5, 2.0, -1.0], np.float32)
    out = run_ours("Pow", [("x", x), ("y", y)], opset=15)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, 9, 0])


def test_legacy_broadcast_with_axis():
    a = np.zeros((2, 3, 4), np.float32)
    b = np.arange(3, dtype=np.float32)
    out = run_ours("Add", [("a", a), ("b", b)], {"broadcast": 1, "axis": 1}, opset=6)
    np.testing.assert_array_equal(out[1, :, 2], b)


def test_clip_attribute_form_and_min_above_max():
    x = np.array([-2.0, 0.5, 2.0], np.float32)
    np.testing.assert_array_equal(run_ours("Clip", [("x", x)], {"min": -1.0, "max": 1.0}, 6), [-1, 0.5, 1])
    low, high = np.array(1.0, np.float32), np.array(0.0, np.float32)
    np.testing.assert_array_equal(run_ours("Clip", [("x", x), ("lo", low), ("hi", high)], opset=13), [0, 0, 0])


def test_gemm_without_c_and_legacy():
    a = _RNG.standard_normal((3, 4)).astype(np.float32)
    b = _RNG.standard_normal((5, 4)).astype(np.float32)
    out = run_ours("Gemm", [("a", a), ("b", b)], {"transB": 1, "alpha": 2.0}, 13)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2 * a @ b.T, rtol=1e-5)
    c = np.ones((3, 5), np.float32)
    out6 = run_ours("Gemm", [("a", a), ("b", b.T.copy()), ("c", c)], {"beta": 0.5}, 6)
    np.testing.assert_allclose(out6, a @ b.T + 0.5, rtol=1e-5)


def test_matmul_integer_per_row_zero_point():
    a = np.array([[10, 20], [30, 40]], np.uint8)
    b = np.array([[1, 2], [3, 4]], np.uint8)
    a_zero = np.array([10, 30], np.uint8)
    out = run_ours("MatMulInteger", [("a", a), ("b", b), ("az", a_zero)], opset=10)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, (a.astype(np.int32) - a_zero[:, None]) @ b.astype(np.int32))


# ---------------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("op,expected", [("ReduceSumSquare", [1, 4, 9]), ("ReduceL1", [1, 2, 3]),
                                         ("ReduceSum", [-1, 2, -3])])
def test_noop_with_empty_axes_reduces_each_element_alone(op, expected):
    x = np.array([-1, 2, -3], np.float32)
    axes = np.array([], np.int64)
    out = run_ours(op, [("x", x), ("axes", axes)], {"noop_with_empty_axes": 1}, 18)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("op,dtype,identity", [
    ("ReduceMax", np.int32, np.iinfo(np.int32).min), ("ReduceMin", np.int32, np.iinfo(np.int32).max),
    ("ReduceMax", np.float32, -np.inf), ("ReduceMin", np.float32, np.inf), ("ReduceProd", np.float32, 1),
    ("ReduceLogSumExp", np.float32, -np.inf), ("ReduceSum", np.int64, 0),
])
def test_empty_set_reduction_gives_identity(op, dtype, identity):
    x = np.zeros((2, 0, 3), dtype)
    out = run_ours(op, [("x", x), ("axes", np.array([1], np.int64))], {"keepdims": 0}, 18)
    assert out.shape == (2, 3) and out.dtype == dtype
    assert (out == identity).all()


def test_integer_reduce_sum_keeps_type():
    x = np.full((4,), 2**30, np.int32)
    assert run_ours("ReduceSum", [("x", x)], {"keepdims": 0}, 13).dtype == np.int32


def test_argmax_select_last_index():
    x = np.array([[1, 3, 3], [2, 2, 0]], np.float32)
    out = run_ours("ArgMax", [("x", x)], {"axis": 1, "select_last_index": 1, "keepdims": 0}, 13)
    np.testing.assert_array_equal(out, [2, 1])


# ----------------------------------------------------------------------------------------- casts


def test_cast_strings_to_numbers():
    x = np.array(["1.5", "-INF", "+inf", "NaN", "1e-5", "1000"], dtype=object)
    out = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT}, 19)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[[0, 1, 2, 4, 5]], np.float32([1.5, -np.inf, np.inf, 1e-5, 1000]))
    assert np.isnan(out[3])
    ints = run_ours("Cast", [("x", np.array(["12", "-3"], dtype=object))], {"to": TensorProto.INT64}, 19)
    np.testing.assert_array_equal(ints, [12, -3])


def test_cast_numbers_to_strings():
    x = np.array([0.1, 3.0, np.inf, -np.inf, np.nan], np.float32)
    out = run_ours("Cast", [("x", x)], {"to": TensorProto.STRING}, 19)
    assert out.tolist() == ["0.1", "3.0", "INF", "-INF", "NaN"]
    ints = run_ours("Cast", [("x", np.array([7, -2], np.int8))], {"to": TensorProto.STRING}, 19)
    assert ints.tolist() == ["7", "-2"]


@pytest.mark.parametrize("round_mode,expected", [
    ("up", [2.0, 2.0, 4.0, 4.0]), ("down", [1.0, 1.0, 2.0, 4.0]), ("nearest", [1.0, 2.0, 4.0, 4.0]),
])
def test_cast_to_e8m0_round_modes(round_mode, expected):
    x = np.array([1.1, 1.5, 3.5, 4.0], np.float32)
    out = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT8E8M0, "round_mode": round_mode}, 25)
    np.testing.assert_array_equal(out.astype(np.float32), expected)


def test_cast_to_e8m0_saturation():
    x = np.array([np.inf, 3e38, np.nan], np.float32)
    sat = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT8E8M0}, 25).astype(np.float32)
    assert sat[0] == sat[1] == 2.0 ** 127 and np.isnan(sat[2])
    raw = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT8E8M0, "saturate": 0}, 25).astype(np.float32)
    assert np.isnan(raw).all()


def test_cast_float8_saturate_and_not():
    x = np.array([1e6, -np.inf], np.float32)
    sat = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT8E4M3FN}, 19).astype(np.float32)
    np.testing.assert_array_equal(sat, [448.0, -448.0])
    raw = run_ours("Cast", [("x", x)], {"to": TensorProto.FLOAT8E5M2, "saturate": 0}, 19).astype(np.float32)
    np.testing.assert_array_equal(raw, [np.inf, -np.inf])


def test_cast_integer_wraps_and_opset1_string_to():
    x = np.array([200, -129], np.int16)
    np.testing.assert_array_equal(run_ours("Cast", [("x", x)], {"to": TensorProto.INT8}, 13), [-56, 127])
    out = run_ours("Cast", [("x", x)], {"to": "FLOAT"}, 1)
    assert out.dtype == np.float32


@pytest.mark.parametrize("source", [d.name for d in dtypes.DTYPES if d.kind != "complex"])
def test_cast_every_pair_keeps_one(source):
    """1 is representable in every non-complex type: it must survive any A -> B -> double chain."""
    from onnxtext.evaluator.kernels.cast import cast_array

    ones = cast_array(np.ones(2, np.int64), dtypes.from_name(source))
    for target in dtypes.DTYPES:
        if target.kind == "complex":
            continue
        out = cast_array(ones, target)
        assert out.dtype == target.np, (source, target.name)
        assert (cast_array(out, dtypes.from_name("double")) == 1).all(), (source, target.name)


def test_bitcast_reinterprets_bits():
    x = np.array([1.0, -2.0], np.float32)
    out = run_ours("BitCast", [("x", x)], {"to": TensorProto.UINT32}, 26)
    np.testing.assert_array_equal(out, x.view(np.uint32))


# ------------------------------------------------------------------------------------ quantize


def test_quantize_int4_per_axis_saturates():
    x = np.array([[-100.0, 3.0], [0.5, 100.0]], np.float32)
    scale = np.array([1.0, 0.5], np.float32)
    zero = np.array([0, 0], ml_dtypes.int4)
    out = run_ours("QuantizeLinear", [("x", x), ("s", scale), ("z", zero)], {"axis": 0}, 21)
    assert out.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(out.astype(np.int8), [[-8, 3], [1, 7]])


def test_dynamic_quantize_linear_uint8():
    x = np.array([-1.0, 0.0, 2.0, 0.5], np.float32)
    y, scale, zero = run_ours("DynamicQuantizeLinear", [("x", x)], opset=11, num_outputs=3)
    assert scale.dtype == np.float32 and zero.dtype == np.uint8 and y.dtype == np.uint8
    np.testing.assert_allclose(scale, 3.0 / 255, rtol=1e-6)
    assert int(zero) == 85
