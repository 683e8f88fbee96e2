"""Tensor-manipulation kernels beyond the ONNX backend suite: old opset forms, Resize/GridSample variants,
random distributions and image decoding.

onnxruntime is the oracle where it supports the operator version; elsewhere expected values are
written out from the operator specification.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import png_cycling_filters
from onnxtext.evaluator import Evaluator

ort = pytest.importorskip("onnxruntime")

_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
               np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
               np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.uint64): TensorProto.UINT64, np.dtype(np.bool_): TensorProto.BOOL}


def single_node_model(op, inputs, attrs=None, opset=13, num_outputs=1):
    """A model with one ``op`` node; ``inputs`` is a list of (name, array or None for an absent input)."""
    node = helper.make_node(op, [n if v is not None else "" for n, v in inputs],
                            [f"out{i}" for i in range(num_outputs)], **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, _NP_TO_ONNX[v.dtype], v.shape) for n, v in inputs
                    if v is not None]
    outputs = [onnx.ValueInfoProto(name=f"out{i}") for i in range(num_outputs)]
    graph = helper.make_graph([node], op.lower(), graph_inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ours(model, inputs):
    return Evaluator(model).run(None, {n: v for n, v in inputs if v is not None})


def run_ort(model, inputs):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {n: v for n, v in inputs if v is not None})


def check_against_ort(op, inputs, attrs=None, opset=13, num_outputs=1, rtol=1e-5, atol=1e-6):
    model = single_node_model(op, inputs, attrs, opset, num_outputs)
    ours, theirs = run_ours(model, inputs), run_ort(model, inputs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return ours


rng = np.random.default_rng(0)
X4 = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
I64 = np.int64


# --- old opset forms and variants, onnxruntime as the oracle -----------------------------------

ORT_CASES = [
    ("Pad", [("x", X4)], {"pads": [0, 0, 1, 2, 0, 0, 2, 1], "mode": "constant", "value": 1.5}, 2),
    ("Pad", [("x", X4)], {"pads": [0, 0, 2, 1, 0, 0, 1, 2], "mode": "reflect"}, 2),
    ("Pad", [("x", X4)], {"pads": [0, 0, 2, 1, 0, 0, 1, 2], "mode": "edge"}, 2),
    ("Pad", [("x", X4), ("pads", np.array([0, 0, -1, 2, 0, 0, 1, -2], I64))], {"mode": "constant"}, 11),
    ("Pad", [("x", X4), ("pads", np.array([1, -1, 2, 1], I64)), ("value", None),
             ("axes", np.array([-1, 2], I64))], {"mode": "wrap"}, 19),
    ("Slice", [("x", X4)], {"starts": [1, -3], "ends": [100, -1], "axes": [1, 3]}, 1),
    ("Slice", [("x", X4)], {"starts": [0, 1], "ends": [1, 1000]}, 1),
    ("Slice", [("x", X4), ("starts", np.array([-1, 6], I64)), ("ends", np.array([-100, -9], I64)),
               ("axes", np.array([2, 3], I64)), ("steps", np.array([-2, -3], I64))], {}, 13),
    ("Squeeze", [("x", X4[:1, :, :1])], {"axes": [0, 2]}, 11),
    ("Squeeze", [("x", X4[:1, :, :1])], {}, 11),
    ("Unsqueeze", [("x", X4)], {"axes": [0, 5]}, 11),
    ("Unsqueeze", [("x", X4), ("axes", np.array([-1, 1], I64))], {}, 13),
    ("Reshape", [("x", X4), ("shape", np.array([0, -1, 7], I64))], {}, 5),
    ("Tile", [("x", X4), ("repeats", np.array([1, 2, 1, 3], I64))], {}, 6),
    ("TopK", [("x", X4)], {"k": 3, "axis": 2}, 1),
    ("TopK", [("x", X4), ("k", np.array([2], I64))], {"axis": -1, "largest": 0}, 11),
    ("DepthToSpace", [("x", rng.standard_normal((1, 8, 2, 3)).astype(np.float32))], {"blocksize": 2}, 1),
    ("DepthToSpace", [("x", rng.standard_normal((1, 8, 2, 3)).astype(np.float32))],
     {"blocksize": 2, "mode": "CRD"}, 11),
    ("SpaceToDepth", [("x", rng.standard_normal((1, 2, 4, 6)).astype(np.float32))], {"blocksize": 2}, 1),
    ("Concat", [("a", X4), ("b", X4[:, :1])], {"axis": 1}, 4),
    ("Flatten", [("x", X4)], {"axis": 0}, 9),
    ("Gather", [("x", X4), ("i", np.array([[0, -1], [2, 1]], I64))], {"axis": 1}, 11),
    ("GatherND", [("x", X4), ("i", np.array([[[1, 2], [0, 0]], [[2, 4], [1, 3]]], I64))], {"batch_dims": 1}, 12),
    ("Scatter", [("x", np.zeros((3, 3), np.float32)), ("i", np.array([[1, 0, 2], [0, 2, 1]], I64)),
                 ("u", np.arange(6, dtype=np.float32).reshape(2, 3))], {"axis": 0}, 9),
    ("ScatterElements", [("x", np.ones((3, 4), np.float32)), ("i", np.array([[1, 1], [0, 1], [2, 1]], I64)),
                         ("u", np.full((3, 2), 2.0, np.float32))], {"axis": 1, "reduction": "mul"}, 16),
    ("ScatterND", [("x", np.ones((4, 3), np.float32)), ("i", np.array([[1], [3], [1]], I64)),
                   ("u", np.arange(9, dtype=np.float32).reshape(3, 3))], {"reduction": "add"}, 16),
    ("OneHot", [("i", np.array([[0, 3], [-1, 7]], I64)), ("d", np.array(4, I64)),
                ("v", np.array([-1.0, 2.0], np.float32))], {"axis": 1}, 11),
    ("Unique", [("x", np.array([[3, 1], [3, 1], [0, 2]], I64))], {"axis": 0, "sorted": 1}, 11),
    ("Compress", [("x", X4), ("c", np.array([True, False, True]))], {"axis": 1}, 11),
    ("ReverseSequence", [("x", X4[0]), ("l", np.array([1, 5, 3], I64))], {"batch_axis": 0, "time_axis": 1}, 10),
    ("EyeLike", [("x", X4[0, 0])], {"k": -2, "dtype": TensorProto.INT32}, 9),
    ("Range", [("s", np.array(10, I64)), ("l", np.array(-3, I64)), ("d", np.array(-4, I64))], {}, 11),
    ("Range", [("s", np.array(0.5, np.float32)), ("l", np.array(2.0, np.float32)),
               ("d", np.array(0.3, np.float32))], {}, 11),
    ("NonZero", [("x", np.array([[1, 0, 2], [0, 0, 3]], np.float32))], {}, 13),
    ("Trilu", [("x", X4), ("k", np.array(-1, I64))], {"upper": 0}, 14),
    ("Expand", [("x", X4[:, :1]), ("s", np.array([3, 1, 1], I64))], {}, 13),
]


@pytest.mark.parametrize("op, inputs, attrs, opset", ORT_CASES,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(ORT_CASES)])
def test_against_onnxruntime(op, inputs, attrs, opset):
    outputs = {"TopK": 2, "Unique": 4}.get(op, 1)
    check_against_ort(op, inputs, attrs, opset, outputs)


def test_split_forms():
    x = np.arange(14, dtype=np.float32).reshape(2, 7)
    check_against_ort("Split", [("x", x)], {"axis": 1, "split": [2, 5]}, opset=2, num_outputs=2)
    check_against_ort("Split", [("x", x), ("split", np.array([3, 4], I64))], {"axis": -1}, 13, 2)
    # Split-18 num_outputs with a smaller last chunk
    model = single_node_model("Split", [("x", x)], {"axis": 1, "num_outputs": 3}, 18, 3)
    assert [o.shape for o in run_ours(model, [("x", x)])] == [(2, 3), (2, 3), (2, 1)]
    # Split-1 took the sizes as an optional second input
    model = single_node_model("Split", [("x", x), ("split", np.array([6, 1], I64))], {"axis": 1}, 1, 2)
    assert [o.shape for o in run_ours(model, [("x", x), ("split", np.array([6, 1], I64))])] == [(2, 6), (2, 1)]


def test_pad_1_paddings_attribute():
    # onnxruntime has no Pad-1; the expected value follows the spec (same layout as Pad-2's pads)
    (out,) = run_ours(single_node_model("Pad", [("x", X4)], {"paddings": [0, 0, 1, 2, 0, 0, 2, 1],
                                                            "value": -2.0}, 1), [("x", X4)])
    np.testing.assert_array_equal(out, np.pad(X4, [(0, 0), (0, 0), (1, 2), (2, 1)], constant_values=-2.0))


def test_tile_1_repeats_along_one_axis():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    inputs = [("x", x), ("tiles", np.array(3, I64)), ("axis", np.array(1, I64))]
    (out,) = run_ours(single_node_model("Tile", inputs, {}, 1), inputs)
    np.testing.assert_array_equal(out, np.tile(x, (1, 3)))


def test_top_k_ties_lower_index_first():
    x = np.array([[3, 1, 3, 2, 3]], np.uint64)
    model = single_node_model("TopK", [("x", x), ("k", np.array([4], I64))], {}, 11, 2)
    values, indices = run_ours(model, [("x", x), ("k", np.array([4], I64))])
    assert values.tolist() == [[3, 3, 3, 2]] and indices.tolist() == [[0, 2, 4, 3]]


# --- Resize and Upsample -----------------------------------------------------------------------

RESIZE_CASES = [
    ({"mode": "nearest"}, [1, 1, 2.5, 1.5], 10),
    ({"mode": "nearest"}, [1, 1, 0.6, 0.5], 10),
    ({"mode": "linear"}, [1, 1, 2.0, 0.5], 10),
    ({"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"}, [1, 1, 1.7, 0.6], 11),
    ({"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}, [1, 1, 2.3, 0.8], 13),
    ({"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "half_pixel"},
     [1, 1, 3.0, 0.7], 13),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 1.5, 2.0], 13),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.45, 0.7], 18),
    ({"mode": "cubic", "antialias": 1}, [1, 1, 0.3, 0.6], 18),
    ({"mode": "linear", "axes": [3, 2]}, [0.6, 1.8], 18),
]


@pytest.mark.parametrize("attrs, scales, opset", RESIZE_CASES, ids=[str(i) for i in range(len(RESIZE_CASES))])
def test_resize_against_onnxruntime(attrs, scales, opset):
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    s = np.array(scales, np.float32)
    # Resize-11 requires the roi input (an empty tensor when unused)
    roi = np.array([], np.float32) if opset == 11 else None
    inputs = [("x", x), ("scales", s)] if opset == 10 else [("x", x), ("roi", roi), ("scales", s)]
    check_against_ort("Resize", inputs, attrs, opset, rtol=1e-4, atol=1e-5)


def test_resize_sizes_tf_crop_and_resize():
    x = rng.standard_normal((1, 2, 8, 8)).astype(np.float32)
    inputs = [("x", x), ("roi", np.array([0, 0, -0.1, 0.2, 1, 1, 0.7, 1.3], np.float32)), ("scales", None),
              ("sizes", np.array([1, 2, 5, 6], I64))]
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 7.0}
    check_against_ort("Resize", inputs, attrs, 13, rtol=1e-4, atol=1e-5)


def test_upsample_7_attribute_scales():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    for mode in ("nearest", "linear"):
        check_against_ort("Upsample", [("x", x)], {"mode": mode, "scales": [1.0, 1.0, 2.0, 3.0]}, 7)
    check_against_ort("Upsample", [("x", x), ("s", np.array([1, 1, 3, 2], np.float32))], {"mode": "linear"}, 9)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_keeps_integer_dtype(mode):
    x = rng.integers(0, 256, (1, 1, 5, 7)).astype(np.uint8)
    inputs = [("x", x), ("roi", None), ("scales", np.array([1, 1, 1.6, 0.7], np.float32))]
    (out,) = check_against_ort("Resize", inputs, {"mode": mode}, 13)
    assert out.dtype == np.uint8


# --- spatial ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_16_against_onnxruntime(mode, padding_mode, align_corners):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    check_against_ort("GridSample", [("x", x), ("grid", grid)], attrs, 16, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_volumetric_against_onnxruntime(mode, padding_mode, align_corners):
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (2, 3, 4, 2, 3)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    check_against_ort("GridSample", [("x", x), ("grid", grid)], attrs, 20, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode, starts", [("linear", [1, 3]), ("circular", [4, 5])])
def test_tensor_scatter_against_onnxruntime(mode, starts):
    past = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    update = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)
    inputs = [("past", past), ("update", update), ("write", np.array(starts, I64))]
    check_against_ort("TensorScatter", inputs, {"mode": mode}, 24)


@pytest.mark.parametrize("opset, attrs", [(10, {}), (16, {"coordinate_transformation_mode": "output_half_pixel"}),
                                          (16, {"mode": "avg", "sampling_ratio": 2, "spatial_scale": 0.5})])
def test_roi_align_against_onnxruntime(opset, attrs):
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [1.5, 2.2, 7.1, 8.9], [-2, 3, 14, 11]], np.float32)
    inputs = [("x", x), ("rois", rois), ("b", np.array([0, 1, 1], I64))]
    check_against_ort("RoiAlign", inputs, {"output_height": 3, "output_width": 4, **attrs}, opset,
                      rtol=1e-4, atol=1e-5)


# --- random -------------------------------------------------------------------------------------

def _random_model(op, attrs, inputs=(), opset=22):
    return single_node_model(op, list(inputs), attrs, opset)


def test_random_normal_and_uniform_distributions():
    (normal,) = run_ours(_random_model("RandomNormal", {"shape": [200, 500], "mean": 2.0, "scale": 3.0}), [])
    assert normal.dtype == np.float32 and normal.shape == (200, 500)
    assert abs(normal.mean() - 2.0) < 0.05 and abs(normal.std() - 3.0) < 0.05
    attrs = {"shape": [100, 1000], "low": -1.0, "high": 5.0, "dtype": TensorProto.DOUBLE}
    (uniform,) = run_ours(_random_model("RandomUniform", attrs), [])
    assert uniform.dtype == np.float64 and uniform.min() >= -1.0 and uniform.max() < 5.0
    assert abs(uniform.mean() - 2.0) < 0.05


def test_random_like_keeps_shape_and_dtype_and_seed_repeats():
    x = np.zeros((30, 40), np.float64)
    model = _random_model("RandomUniformLike", {"seed": 3.0}, [("x", x)])
    first, second = run_ours(model, [("x", x)])[0], run_ours(model, [("x", x)])[0]
    assert first.dtype == np.float64 and first.shape == (30, 40)
    np.testing.assert_array_equal(first, second)
    model = _random_model("RandomNormalLike", {"dtype": TensorProto.FLOAT}, [("x", x)])
    assert run_ours(model, [("x", x)])[0].dtype == np.float32


def test_bernoulli_frequencies():
    p = np.tile(np.array([0.0, 0.2, 0.9, 1.0], np.float32), (20000, 1))
    (draws,) = run_ours(_random_model("Bernoulli", {}, [("p", p)]), [("p", p)])
    assert draws.dtype == np.float32 and draws.shape == p.shape
    np.testing.assert_allclose(draws.mean(axis=0), [0.0, 0.2, 0.9, 1.0], atol=0.015)


def test_multinomial_frequencies():
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    logits = np.log(np.maximum(probs, 1e-30)).astype(np.float32)
    model = _random_model("Multinomial", {"sample_size": 20000, "seed": 1.0}, [("x", logits)])
    (samples,) = run_ours(model, [("x", logits)])
    assert samples.dtype == np.int32 and samples.shape == (2, 20000)
    freq = np.stack([(samples == k).mean(axis=1) for k in range(3)], axis=1)
    np.testing.assert_allclose(freq, probs, atol=0.015)


# --- strings and images -------------------------------------------------------------------------

def test_regex_full_match_posix_class():
    x = np.array(["abc", "ab1", ""], dtype=object)
    model = single_node_model("RegexFullMatch", [], {"pattern": "[[:alpha:]]+"}, 20)
    model.graph.input.append(helper.make_tensor_value_info("x", TensorProto.STRING, [3]))
    model.graph.node[0].input.append("x")
    assert Evaluator(model).run(None, {"x": x})[0].tolist() == [True, False, False]


def _decode(data: bytes, pixel_format="RGB"):
    model = single_node_model("ImageDecoder", [], {"pixel_format": pixel_format}, 20)
    model.graph.input.append(helper.make_tensor_value_info("data", TensorProto.UINT8, [len(data)]))
    model.graph.node[0].input.append("data")
    return Evaluator(model).run(None, {"data": np.frombuffer(data, np.uint8)})[0]


IMAGE = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)


def _bmp(rgb, bits=24, top_down=False):
    h, w, _ = rgb.shape
    pixels = np.concatenate([rgb[:, :, ::-1], np.full((h, w, 1), 255, np.uint8)], axis=2)[:, :, :bits // 8]
    stride = (w * bits + 31) // 32 * 4
    rows = np.zeros((h, stride), np.uint8)
    rows[:, :w * bits // 8] = pixels.reshape(h, -1)
    body = (rows if top_down else rows[::-1]).tobytes()
    info = (40).to_bytes(4, "little") + w.to_bytes(4, "little") + (-h if top_down else h).to_bytes(
        4, "little", signed=True) + (1).to_bytes(2, "little") + bits.to_bytes(2, "little") + bytes(24)
    return b"BM" + (54 + len(body)).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little") + info + body


@pytest.mark.parametrize("bits, top_down", [(24, False), (32, True)])
def test_image_decoder_bmp(bits, top_down):
    data = _bmp(IMAGE, bits, top_down)
    np.testing.assert_array_equal(_decode(data), IMAGE)
    np.testing.assert_array_equal(_decode(data, "BGR"), IMAGE[:, :, ::-1])
    gray = _decode(data, "Grayscale")
    expected = (IMAGE.astype(np.int64) @ np.array([299, 587, 114]) + 500) // 1000
    assert gray.shape == (5, 6, 1) and (gray[:, :, 0] == expected).all()


def test_image_decoder_pnm_variants():
    np.testing.assert_array_equal(_decode(b"P6\n# comment\n6 5\n255\n" + IMAGE.tobytes()), IMAGE)
    gray = IMAGE[:, :, 0]
    np.testing.assert_array_equal(_decode(b"P5 6 5 255\n" + gray.tobytes(), "Grayscale")[:, :, 0], gray)
    ascii_pgm = b"P2\n6 5\n255\n" + " ".join(str(v) for v in gray.reshape(-1)).encode()
    np.testing.assert_array_equal(_decode(ascii_pgm, "Grayscale")[:, :, 0], gray)
    bitmap = _decode(b"P1\n3 2\n1 0 1\n0 0 1\n", "Grayscale")[:, :, 0]
    assert bitmap.tolist() == [[0, 255, 0], [255, 255, 0]]
    assert _decode(b"P4\n3 2\n" + bytes([0b10100000, 0b00100000]), "Grayscale")[:, :, 0].tolist() == \
        [[0, 255, 0], [255, 255, 0]]


def test_image_decoder_png_all_filters_and_color_types():
    big = rng.integers(0, 256, (11, 9, 4), dtype=np.uint8)
    np.testing.assert_array_equal(_decode(png_cycling_filters(big[:, :, :3], 2)), big[:, :, :3])
    np.testing.assert_array_equal(_decode(png_cycling_filters(big, 6), "BGR"), big[:, :, 2::-1])  # alpha dropped
    gray = big[:, :, 0]
    np.testing.assert_array_equal(_decode(png_cycling_filters(gray, 0), "Grayscale")[:, :, 0], gray)
    np.testing.assert_array_equal(_decode(png_cycling_filters(gray.astype(np.uint16) * 256 + 77, 0, 16), "Grayscale")[:, :, 0], gray)
    levels = gray % 4
    np.testing.assert_array_equal(_decode(png_cycling_filters(levels, 0, 2), "Grayscale")[:, :, 0], levels * 85)
    palette = rng.integers(0, 256, (16, 3), dtype=np.uint8)
    index = gray % 16
    np.testing.assert_array_equal(_decode(png_cycling_filters(index, 3, 4, palette.tobytes())), palette[index])


def test_image_decoder_garbage_gives_empty():
    """Undecodable data gives an empty image (the spec); the no-Pillow message: tests/test_image_decoder.py."""
    assert _decode(b"not an image").shape == (0, 0, 3)
    assert _decode(b"\xff\xd8\xff\xe0" + bytes(20)).shape == (0, 0, 3)
