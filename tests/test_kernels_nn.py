"""Convolution, pooling and normalization kernels beyond the ONNX backend suite, with random data.

onnxruntime is the oracle where it implements the configuration; closed-form numpy formulas check
what it does not (BatchNormalization training outputs, old versions, Dropout masks). Every table
row is one single-node model run by both.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from onnxtext import dtypes
from onnxtext.evaluator import Evaluator

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def single_node_model(op, inputs, attrs, opset, out_types):
    """One ``op`` node; inputs are (name, array or None); outputs typed with ``out_types`` (enum or None)."""
    node = helper.make_node(op, [n if v is not None else "" for n, v in inputs],
                            [f"out{i}" for i in range(len(out_types))], **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, dtypes.from_numpy(v.dtype).enum, v.shape)
                    for n, v in inputs if v is not None]
    outputs = [helper.make_tensor_value_info(f"out{i}", t, None) if t else onnx.ValueInfoProto(name=f"out{i}")
               for i, t in enumerate(out_types)]
    graph = helper.make_graph([node], op.lower(), graph_inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run_ours(op, inputs, attrs=None, opset=22, num_outputs=1):
    model = single_node_model(op, inputs, attrs, opset, [None] * num_outputs)
    return Evaluator(model).run(None, {n: v for n, v in inputs if v is not None})


def run_ort(op, inputs, attrs, opset, like):
    """onnxruntime's outputs; ``like`` (our outputs) gives the declared output types."""
    model = single_node_model(op, inputs, attrs, opset, [dtypes.from_numpy(v.dtype).enum for v in like])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {n: v for n, v in inputs if v is not None})


def check_against_ort(op, inputs, attrs, opset=22, num_outputs=1, rtol=1e-4, atol=1e-5):
    ours = run_ours(op, inputs, attrs, opset, num_outputs)
    theirs = run_ort(op, inputs, attrs, opset, ours)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.dtype == b.dtype, f"output {i}: {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"output {i}: {a.shape} != {b.shape}"
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=f"output {i}")
    return ours


# ------------------------------------------------------------------------------------------- Conv

CONV_CASES = [
    # (x shape, w shape, attrs)
    ((2, 3, 9, 11), (4, 3, 3, 3), {}),
    ((1, 3, 9, 11), (4, 3, 3, 3), {"pads": [1, 2, 0, 1], "strides": [2, 1]}),
    ((1, 4, 10, 10), (6, 2, 3, 3), {"group": 2, "dilations": [2, 1], "pads": [2, 1, 2, 1]}),
    ((2, 6, 12, 12), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 6, 13, 12), (6, 1, 3, 3), {"group": 6, "pads": [1, 0, 1, 0], "strides": [2, 2]}),
    ((1, 3, 8, 8), (6, 1, 3, 3), {"group": 3, "dilations": [2, 2]}),  # depth multiplier 2
    ((2, 3, 9, 8), (6, 1, 3, 3), {"group": 3, "strides": [2, 2], "pads": [1, 1, 0, 0]}),
    ((2, 4, 7, 9), (4, 1, 3, 2), {"group": 4, "dilations": [1, 2], "pads": [0, 1, 2, 1]}),
    ((1, 5, 7, 7), (8, 5, 1, 1), {}),  # 1x1
    ((1, 5, 7, 7), (8, 5, 1, 1), {"strides": [2, 2]}),
    ((1, 6, 7, 7), (9, 2, 1, 1), {"group": 3}),
    ((2, 3, 17), (4, 3, 4), {"strides": [3], "pads": [1, 2], "dilations": [2]}),  # 1-D
    ((1, 2, 6, 7, 5), (3, 2, 3, 3, 2), {"pads": [1, 1, 0, 1, 1, 1]}),  # 3-D
    ((1, 3, 10, 9), (4, 3, 3, 4), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    ((1, 3, 10, 9), (4, 3, 4, 3), {"auto_pad": "SAME_LOWER", "strides": [3, 2]}),
    ((1, 3, 10, 9), (4, 3, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 3, 10, 9), (4, 3, 3, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((1, 8, 70, 70), (16, 8, 3, 3), {"pads": [1, 1, 1, 1]}),  # large enough for the banded im2col
    ((1, 4, 40, 40), (8, 2, 5, 5), {"group": 2, "pads": [2, 2, 2, 2], "strides": [1, 2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv(x_shape, w_shape, attrs, bias):
    inputs = [("x", rand(*x_shape)), ("w", rand(*w_shape))]
    if bias:
        inputs.append(("b", rand(w_shape[0])))
    check_against_ort("Conv", inputs, attrs, opset=11)


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("path", ["shifted", "im2col"])
def test_conv_paths(x_shape, w_shape, attrs, path, monkeypatch):
    """Each case through the shifted-matmul and the im2col paths, whatever the size heuristics pick."""
    from onnxtext.evaluator.kernels import conv as conv_module

    if path == "shifted":
        monkeypatch.setattr(conv_module, "_SHIFTED_MIN_LENGTH", 0)
        monkeypatch.setattr(conv_module, "_SHIFTED_MAX_OUTPUTS", 1 << 30)
        monkeypatch.setattr(conv_module, "_SHIFTED_MIN_RATIO", 0)
    else:
        monkeypatch.setattr(conv_module, "_SHIFTED_MIN_LENGTH", 1 << 60)
    check_against_ort("Conv", [("x", rand(*x_shape)), ("w", rand(*w_shape))], attrs, opset=11)


def test_conv_large_blocked_band_matches_whole(monkeypatch):
    from onnxtext.evaluator.kernels import conv as conv_module

    x, w = rand(1, 6, 33, 29), rand(4, 3, 3, 3)
    attrs = {"group": 2, "pads": [1, 1, 1, 1], "strides": [1, 2]}
    whole = run_ours("Conv", [("x", x), ("w", w)], attrs, 11)[0]
    monkeypatch.setattr(conv_module, "_IM2COL_WHOLE", 0)
    monkeypatch.setattr(conv_module, "_IM2COL_BAND", 100)
    banded = run_ours("Conv", [("x", x), ("w", w)], attrs, 11)[0]
    np.testing.assert_allclose(banded, whole, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_conv_keeps_dtype(dtype):
    x, w = rand(1, 3, 8, 8, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype)
    attrs = {"pads": [1, 1, 1, 1]}
    ours = run_ours("Conv", [("x", x), ("w", w)], attrs, 11)[0]
    assert ours.dtype == dtype
    # onnxruntime's CPU Conv is float32 only: compare with it on the float32 inputs
    reference = check_against_ort("Conv", [("x", x.astype(np.float32)), ("w", w.astype(np.float32))], attrs, 11)[0]
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(ours.astype(np.float32), reference, rtol=tol, atol=tol)


CONV_TRANSPOSE_CASES = [
    ((1, 3, 5, 4), (3, 2, 3, 3), {}),
    ((2, 3, 5, 4), (3, 2, 3, 3), {"strides": [2, 3], "pads": [1, 0, 0, 1]}),
    ((1, 3, 5, 4), (3, 2, 3, 3), {"strides": [2, 2], "output_padding": [1, 1]}),
    ((1, 4, 5, 4), (4, 3, 2, 3), {"group": 2, "dilations": [2, 1], "strides": [2, 1]}),
    ((2, 6, 4, 3), (6, 2, 3, 3), {"group": 3, "strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}),
    ((1, 3, 5, 4), (3, 2, 3, 3), {"strides": [2, 2], "output_shape": [10, 8]}),
    ((1, 3, 5, 4), (3, 2, 3, 3), {"strides": [2, 2], "output_shape": [11, 9]}),
    ((1, 3, 5, 4), (3, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 5, 4), (3, 2, 4, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 7), (2, 3, 3), {"strides": [3], "pads": [1, 2]}),
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"strides": [2, 1, 2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_TRANSPOSE_CASES)
def test_conv_transpose(x_shape, w_shape, attrs):
    group = attrs.get("group", 1)
    inputs = [("x", rand(*x_shape)), ("w", rand(*w_shape)), ("b", rand(w_shape[1] * group))]
    check_against_ort("ConvTranspose", inputs, attrs, opset=11)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 0, 2], "strides": [2, 1]}, {"group": 2}])
def test_conv_integer(signed, attrs):
    dtype = np.int8 if signed else np.uint8
    lo, hi = (-128, 127) if signed else (0, 255)
    x = RNG.integers(lo, hi, (1, 4, 6, 7)).astype(dtype)
    w = RNG.integers(0, 255, (4, 4 // attrs.get("group", 1), 3, 3)).astype(np.uint8)
    check_against_ort("ConvInteger", [("x", x), ("w", w), ("xz", np.array(3, dtype)), ("wz", np.array(7, np.uint8))],
                      attrs, opset=10)


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(per_channel):
    x = RNG.integers(0, 255, (1, 3, 7, 7)).astype(np.uint8)
    w = RNG.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)
    w_scale = (RNG.random(4) * 0.01 + 0.001).astype(np.float32) if per_channel else np.array(0.004, np.float32)
    w_zero = np.zeros(4, np.int8) if per_channel else np.array(0, np.int8)
    inputs = [("x", x), ("xs", np.array(0.02, np.float32)), ("xz", np.array(120, np.uint8)), ("w", w),
              ("ws", w_scale), ("wz", w_zero), ("ys", np.array(0.3, np.float32)), ("yz", np.array(100, np.uint8)),
              ("b", RNG.integers(-500, 500, 4).astype(np.int32))]
    check_against_ort("QLinearConv", inputs, {"pads": [1, 1, 1, 1]}, opset=10)


def test_col2im_matches_ort():
    x = rand(2, 3 * 2 * 3, 5 * 4)  # 5 x 4 blocks of the padded 7 x 9 image
    inputs = [("x", x), ("image", np.array([6, 7], np.int64)), ("block", np.array([2, 3], np.int64))]
    check_against_ort("Col2Im", inputs, {"strides": [1, 2], "pads": [0, 1, 1, 1], "dilations": [2, 1]}, opset=18)


def test_col2im_is_adjoint_of_unfold():
    """<unfold(img), cols> == <img, col2im(cols)> for any img and cols."""
    image, block, strides, pads, dil = (7, 6), (3, 2), [2, 1], [1, 0, 1, 1], [1, 2]
    c = 2
    img = rand(1, c, *image)
    blocks = [(i + p0 + p1 - ((k - 1) * d + 1)) // s + 1
              for i, k, s, d, p0, p1 in zip(image, block, strides, dil, pads[:2], pads[2:])]
    cols = rand(1, c * 6, blocks[0] * blocks[1])
    folded = run_ours("Col2Im", [("x", cols), ("image", np.array(image, np.int64)),
                                 ("block", np.array(block, np.int64))],
                      {"strides": strides, "pads": pads, "dilations": dil}, opset=18)[0]
    # unfold with the Conv machinery: an identity kernel per (channel, tap)
    eye = np.eye(c * 6, dtype=np.float32).reshape(c * 6, c, *block)
    unfolded = run_ours("Conv", [("x", img), ("w", eye)], {"strides": strides, "pads": pads, "dilations": dil},
                        opset=11)[0]
    lhs = float(np.sum(unfolded.reshape(1, c * 6, -1).astype(np.float64) * cols))
    rhs = float(np.sum(img.astype(np.float64) * folded))
    assert lhs == pytest.approx(rhs, rel=1e-5)


def test_deform_conv_with_zero_offsets_is_conv():
    x, w, b = rand(1, 4, 7, 8), rand(6, 2, 3, 3), rand(6)
    attrs = {"group": 2, "pads": [1, 1, 1, 1], "strides": [1, 2]}
    expected = run_ours("Conv", [("x", x), ("w", w), ("b", b)], attrs, opset=11)[0]
    offset = np.zeros((1, 2 * 9 * 2, *expected.shape[2:]), np.float32)
    got = run_ours("DeformConv", [("x", x), ("w", w), ("offset", offset), ("b", b)],
                   {**attrs, "offset_group": 2}, opset=19)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_deform_conv_integer_offset_shifts_the_sampling():
    x = rand(1, 1, 6, 6)
    w = np.ones((1, 1, 1, 1), np.float32)
    offset = np.zeros((1, 2, 6, 6), np.float32)
    offset[0, 0] = 1.0  # every sample one row down
    offset[0, 1] = -1.0  # and one column left
    got = run_ours("DeformConv", [("x", x), ("w", w), ("offset", offset)], {}, opset=19)[0]
    expected = np.zeros_like(x)
    expected[0, 0, :-1, 1:] = x[0, 0, 1:, :-1]
    np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("k,length,past", [(4, 6, True), (4, 2, False), (1, 3, False), (3, 5, False)])
def test_causal_conv_with_state_equals_concat_conv(k, length, past):
    b, c = 2, 3
    x, w, bias = rand(b, c, length), rand(c, 1, k), rand(c)
    state = rand(b, c, k - 1) if past else np.zeros((b, c, k - 1), np.float32)
    inputs = [("x", x), ("w", w), ("bias", bias)] + ([("state", state)] if past else [])
    y, present = run_ours("CausalConvWithState", inputs, {"activation": "silu"}, opset=27, num_outputs=2)
    seq = np.concatenate([state, x], axis=2)
    conv = run_ours("Conv", [("x", seq), ("w", w), ("b", bias)], {"group": c}, opset=11)[0]
    np.testing.assert_allclose(y, conv / (1 + np.exp(-conv)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(present, seq[:, :, seq.shape[2] - (k - 1):])


# ---------------------------------------------------------------------------------------- Pooling

POOL_CASES = [
    ((1, 2, 9, 10), {"kernel_shape": [3, 3]}),
    ((2, 3, 9, 10), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ((1, 2, 9, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 10, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ((1, 2, 11, 10), {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]}),
    ((1, 2, 9, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 9, 10), {"kernel_shape": [4, 3], "strides": [2, 3], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 9, 10), {"kernel_shape": [3, 3], "auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 2, 13), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 1, 0]}),
]


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
def test_max_pool_with_indices(shape, attrs):
    x = rand(*shape)
    check_against_ort("MaxPool", [("x", x)], attrs, opset=12, num_outputs=2)


@pytest.mark.parametrize("shape,attrs", POOL_CASES[:4])
def test_max_pool_column_major_indices(shape, attrs):
    x = rand(*shape)
    check_against_ort("MaxPool", [("x", x)], {**attrs, "storage_order": 1}, opset=12, num_outputs=2)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float16, np.float64])
def test_max_pool_dtypes(dtype):
    x = (RNG.standard_normal((1, 2, 7, 8)) * 50).astype(dtype)
    ours = check_against_ort("MaxPool", [("x", x)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=12)
    assert ours[0].dtype == dtype


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(shape, attrs, count_include_pad):
    check_against_ort("AveragePool", [("x", rand(*shape))], {**attrs, "count_include_pad": count_include_pad},
                      opset=19)


@pytest.mark.parametrize("shape,attrs", [c for c in POOL_CASES if "dilations" not in c[1] and "ceil_mode" not in c[1]])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(shape, attrs, p):
    check_against_ort("LpPool", [("x", rand(*shape))], {**attrs, "p": p}, opset=11)


@pytest.mark.parametrize("op,attrs", [("GlobalAveragePool", {}), ("GlobalMaxPool", {}), ("GlobalLpPool", {"p": 3})])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_global_pools(op, attrs, shape):
    check_against_ort(op, [("x", rand(*shape))], attrs, opset=2 if op == "GlobalLpPool" else 1)


def test_max_roi_pool():
    x = rand(2, 3, 12, 10)
    rois = np.array([[0, 0, 0, 9, 11], [1, 2.4, 1.6, 7.5, 8.2], [0, 3, 3, 3, 3], [1, -2, -1, 4, 20]], np.float32)
    check_against_ort("MaxRoiPool", [("x", x), ("rois", rois)], {"pooled_shape": [3, 2], "spatial_scale": 1.0},
                      opset=1)
    scaled = rois * np.array([1, 2, 2, 2, 2], np.float32)
    check_against_ort("MaxRoiPool", [("x", x), ("rois", scaled)], {"pooled_shape": [2, 4], "spatial_scale": 0.5},
                      opset=1)


def test_max_unpool_inverts_max_pool():
    x = rand(1, 2, 6, 8)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    pooled, indices = run_ours("MaxPool", [("x", x)], attrs, opset=12, num_outputs=2)
    unpooled = run_ours("MaxUnpool", [("y", pooled), ("i", indices)], attrs, opset=11)[0]
    assert unpooled.shape == x.shape
    np.testing.assert_array_equal(unpooled.reshape(-1)[indices.reshape(-1)], pooled.reshape(-1))
    assert np.count_nonzero(unpooled) == pooled.size
    check_against_ort("MaxUnpool", [("y", pooled), ("i", indices)], attrs, opset=11)
    # with an explicit larger output_shape the indices keep their coordinates (the backend suite's
    # test_maxunpool_export_with_output_shape; onnxruntime instead reads them as flat output indices)
    larger = run_ours("MaxUnpool", [("y", pooled), ("i", indices), ("shape", np.array([1, 2, 7, 9], np.int64))],
                      attrs, opset=11)[0]
    assert larger.shape == (1, 2, 7, 9)
    np.testing.assert_array_equal(larger[:, :, :6, :8], unpooled)
    assert not larger[:, :, 6:].any() and not larger[:, :, :, 8:].any()


# ---------------------------------------------------------------------------------- Normalization


def _bn_formula(x, scale, bias, mean, var, eps):
    shape = (-1,) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)


def _bn_inputs(shape):
    c = shape[1]
    return [("x", rand(*shape)), ("s", rand(c)), ("b", rand(c)), ("m", rand(c)),
            ("v", RNG.random(c).astype(np.float32) + 0.5)]


@pytest.mark.parametrize("opset", [7, 9, 14, 15])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5)])
def test_batch_normalization_inference(opset, shape):
    check_against_ort("BatchNormalization", _bn_inputs(shape), {"epsilon": 1e-3}, opset=opset)


@pytest.mark.parametrize("opset", [9, 14])
def test_batch_normalization_inference_ignores_batch_statistics(opset):
    """Opsets 9-14 inference uses the given statistics only, whatever the momentum."""
    inputs = _bn_inputs((4, 3, 5, 5))
    x, s, b, m, v = (a for _, a in inputs)
    y = run_ours("BatchNormalization", inputs, {"momentum": 0.5, "epsilon": 1e-5}, opset=opset)[0]
    np.testing.assert_allclose(y, _bn_formula(x, s, b, m, v, 1e-5), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_bias", [False, True])
def test_fold_batch_normalization_into_conv(with_bias):
    from onnxtext.evaluator.kernels.normalization import fold_batch_normalization

    x, w = rand(1, 4, 9, 9), rand(6, 2, 3, 3)
    b = rand(6) if with_bias else None
    attrs = {"group": 2, "pads": [1, 1, 1, 1]}
    conv_inputs = [("x", x), ("w", w)] + ([("b", b)] if with_bias else [])
    conv = run_ours("Conv", conv_inputs, attrs, 11)[0]
    bn_params = _bn_inputs((1, 6))[1:]
    expected = run_ours("BatchNormalization", [("x", conv)] + bn_params, {"epsilon": 1e-3}, 15)[0]
    folded_w, folded_b = fold_batch_normalization(w, b, *(a for _, a in bn_params), 1e-3)
    got = run_ours("Conv", [("x", x), ("w", folded_w), ("b", folded_b)], attrs, 11)[0]
    assert folded_w.dtype == folded_b.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("opset", [6])
def test_batch_normalization_v6_is_test(opset):
    inputs = _bn_inputs((2, 3, 4, 4))
    x, s, b, m, v = (a for _, a in inputs)
    y = run_ours("BatchNormalization", inputs, {"is_test": 1, "epsilon": 1e-5}, opset=opset)[0]
    np.testing.assert_allclose(y, _bn_formula(x, s, b, m, v, 1e-5), rtol=1e-5, atol=1e-5)


def test_batch_normalization_v7_not_spatial():
    x = rand(4, 3, 2, 2)
    s, b, m = rand(3, 2, 2), rand(3, 2, 2), rand(3, 2, 2)
    v = RNG.random((3, 2, 2)).astype(np.float32) + 0.5
    y = run_ours("BatchNormalization", [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], {"spatial": 0}, opset=7)[0]
    np.testing.assert_allclose(y, (x - m) / np.sqrt(v + 1e-5) * s + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset,attrs,num_outputs", [(15, {"training_mode": 1}, 3), (14, {"training_mode": 1}, 3),
                                                     (9, {}, 5), (7, {}, 5), (6, {"is_test": 0}, 5)])
def test_batch_normalization_training(opset, attrs, num_outputs):
    inputs = _bn_inputs((4, 3, 5, 6))
    x, s, b, m, v = (a for _, a in inputs)
    outs = run_ours("BatchNormalization", inputs, {**attrs, "momentum": 0.8, "epsilon": 1e-4}, opset=opset,
                    num_outputs=num_outputs)
    axes = (0, 2, 3)
    batch_mean, batch_var = x.mean(axis=axes), x.var(axis=axes)
    np.testing.assert_allclose(outs[0], _bn_formula(x, s, b, batch_mean, batch_var, 1e-4), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[1], m * 0.8 + batch_mean * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[2], v * 0.8 + batch_var * 0.2, rtol=1e-5, atol=1e-6)
    if num_outputs == 5:
        np.testing.assert_allclose(outs[3], batch_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs[4], batch_var, rtol=1e-5, atol=1e-6)
    assert all(o.dtype == np.float32 for o in outs)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 2)])
def test_instance_normalization(shape):
    check_against_ort("InstanceNormalization", [("x", rand(*shape)), ("s", rand(shape[1])), ("b", rand(shape[1]))],
                      {"epsilon": 1e-3}, opset=6)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("with_bias", [False, True])
def test_layer_normalization(axis, with_bias):
    x = rand(2, 3, 4, 5)
    norm_shape = x.shape[axis:]
    inputs = [("x", x), ("s", rand(*norm_shape))] + ([("b", rand(*norm_shape))] if with_bias else [])
    check_against_ort("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=17, num_outputs=3)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("num_groups", [1, 2, 4])
def test_group_normalization(opset, num_groups):
    x = rand(2, 4, 3, 5)
    param = 4 if opset == 21 else num_groups
    s, b = rand(param), rand(param)
    y = run_ours("GroupNormalization", [("x", x), ("s", s), ("b", b)], {"num_groups": num_groups, "epsilon": 1e-4},
                 opset=opset)[0]
    g = x.reshape(2, num_groups, -1)
    normalized = ((g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + 1e-4)).reshape(x.shape)
    per_channel = (s, b) if opset == 21 else (np.repeat(s, 4 // num_groups), np.repeat(b, 4 // num_groups))
    expected = normalized * per_channel[0].reshape(-1, 1, 1) + per_channel[1].reshape(-1, 1, 1)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_rms_normalization(axis):
    x = rand(2, 3, 4)
    s = rand(*x.shape[axis:])
    check_against_ort("RMSNormalization", [("x", x), ("s", s)], {"axis": axis, "epsilon": 1e-4}, opset=23)


@pytest.mark.parametrize("size", [1, 3, 5])
@pytest.mark.parametrize("beta", [0.75, 0.5])
def test_lrn(size, beta):
    check_against_ort("LRN", [("x", rand(2, 7, 3, 4))], {"size": size, "beta": beta, "alpha": 1e-2, "bias": 2.0},
                      opset=13)


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_size(size):
    """Even windows reach one channel further up than down (onnxruntime only takes odd sizes)."""
    x = rand(1, 6, 2, 3)
    y = run_ours("LRN", [("x", x)], {"size": size, "alpha": 0.1, "beta": 0.75, "bias": 1.0}, opset=13)[0]
    squares = np.square(x.astype(np.float64))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = np.stack([squares[:, max(0, c - lo):min(6, c + hi + 1)].sum(axis=1) for c in range(6)], axis=1)
    np.testing.assert_allclose(y, x / (1.0 + 0.1 / size * window) ** 0.75, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [2, 3]])
def test_mean_variance_normalization(axes):
    check_against_ort("MeanVarianceNormalization", [("x", rand(2, 3, 4, 5))], {} if axes is None else {"axes": axes},
                      opset=13)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(p, axis):
    x = rand(3, 4, 5)
    x[1, 2] = 0  # a zero row: its norm is zero and so is its output (the spec's rule)
    ours = run_ours("LpNormalization", [("x", x)], {"p": p, "axis": axis}, opset=1)[0]
    norm = np.linalg.norm(x.astype(np.float64), ord=p, axis=axis, keepdims=True)
    expected = np.divide(x, norm, out=np.zeros(x.shape), where=norm != 0)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(ours))


# ---------------------------------------------------------------------------------------- Dropout


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
def test_dropout_inference_is_identity(opset):
    x = rand(3, 4)
    inputs = [("x", x)] + ([("r", np.array(0.3, np.float32))] if opset >= 12 else [])
    y, mask = run_ours("Dropout", inputs, {} if opset >= 12 else {"ratio": 0.3}, opset=opset, num_outputs=2)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == (np.float32 if opset < 10 else np.bool_) and np.all(mask)


def test_dropout_v6_test_mode_and_training():
    x = rand(50, 40)
    y = run_ours("Dropout", [("x", x)], {"is_test": 1}, opset=6)[0]
    np.testing.assert_array_equal(y, x)
    y, mask = run_ours("Dropout", [("x", x)], {"is_test": 0, "ratio": 0.25}, opset=6, num_outputs=2)
    kept = mask.astype(bool)
    np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-6)
    assert np.all(y[~kept] == 0)
    assert 0.15 < 1 - kept.mean() < 0.35


@pytest.mark.parametrize("ratio", [0.0, 0.5, 0.9])
def test_dropout_training(ratio):
    x = rand(60, 50) + 10  # no zeros in the input, so zeros in the output are dropped elements
    inputs = [("x", x), ("r", np.array(ratio, np.float32)), ("t", np.array(True))]
    y, mask = run_ours("Dropout", inputs, {"seed": 7}, opset=13, num_outputs=2)
    assert mask.dtype == np.bool_ and y.dtype == np.float32
    np.testing.assert_array_equal(mask, y != 0)
    np.testing.assert_allclose(y[mask], x[mask] / (1 - ratio), rtol=1e-6)
    assert abs((1 - mask.mean()) - ratio) < 0.05
    again = run_ours("Dropout", inputs, {"seed": 7}, opset=13, num_outputs=2)
    np.testing.assert_array_equal(again[1], mask)  # a seed makes the mask reproducible
