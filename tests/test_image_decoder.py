"""ImageDecoder: JPEG, JPEG 2000, TIFF and WebP through the optional Pillow extra, and the error without it.

onnxtext's own BMP/PNG/PNM decoders are tested in test_kernels_tensor.py; here the oracle is the frozen
data of the ONNX backend suite (encoded bytes and the pixels Pillow decoded from them when onnx was
built), Pillow itself on lossless round trips, and the no-Pillow error path (Pillow hidden from import).
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.backend.test.case.node import _image_decoder_data as frozen

from helpers import png_cycling_filters
from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.kernels.image import UnsupportedImageError

rng = np.random.default_rng(7)


def decode(data: bytes, pixel_format: str = "RGB") -> np.ndarray:
    node = helper.make_node("ImageDecoder", ["data"], ["image"], pixel_format=pixel_format)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("data", TensorProto.UINT8, [None])],
                              [helper.make_tensor_value_info("image", TensorProto.UINT8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    return Evaluator(model).run(None, {"data": np.frombuffer(data, np.uint8)})[0]


# (frozen case of onnx's _image_decoder_data, pixel format): every format of the suite
FROZEN_CASES = [
    ("image_decoder_decode_jpeg_rgb", "RGB"),
    ("image_decoder_decode_jpeg_bgr", "BGR"),
    ("image_decoder_decode_jpeg_grayscale", "Grayscale"),
    ("image_decoder_decode_jpeg2k_rgb", "RGB"),
    ("image_decoder_decode_tiff_rgb", "RGB"),
    ("image_decoder_decode_webp_rgb", "RGB"),
    ("image_decoder_decode_bmp_rgb", "RGB"),
    ("image_decoder_decode_png_rgb", "RGB"),
    ("image_decoder_decode_pnm_rgb", "RGB"),
]
NEEDS_PILLOW = ("jpeg", "tiff", "webp")  # jpeg covers jpeg2k


@pytest.mark.parametrize("case, pixel_format", FROZEN_CASES)
def test_frozen_suite_data(case, pixel_format):
    if any(k in case for k in NEEDS_PILLOW):
        pytest.importorskip("PIL", reason="this format needs the optional Pillow extra")
    sample = getattr(frozen, case)
    out = decode(np.asarray(sample.data, np.uint8).tobytes(), pixel_format)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, sample.output)


def _encode(rgb: np.ndarray, fmt: str, **options) -> bytes:
    from PIL import Image

    with io.BytesIO() as f:
        Image.fromarray(rgb).save(f, format=fmt, **options)
        return f.getvalue()


# lossless encodings: decoding must give back exactly the pixels that were encoded
LOSSLESS = [("TIFF", {}), ("TIFF", {"compression": "tiff_lzw"}), ("WEBP", {"lossless": True}),
            ("JPEG2000", {"irreversible": False})]


@pytest.mark.parametrize("fmt, options", LOSSLESS, ids=lambda v: str(v))
def test_lossless_round_trip(fmt, options):
    pytest.importorskip("PIL", reason="these formats need the optional Pillow extra")
    from PIL import Image

    rgb = rng.integers(0, 256, (7, 9, 3), dtype=np.uint8)
    data = _encode(rgb, fmt, **options)
    np.testing.assert_array_equal(decode(data, "RGB"), rgb)
    np.testing.assert_array_equal(decode(data, "BGR"), rgb[:, :, ::-1])
    gray = decode(data, "Grayscale")
    assert gray.shape == (7, 9, 1)
    np.testing.assert_array_equal(gray[:, :, 0], np.asarray(Image.fromarray(rgb).convert("L")))


def test_alpha_is_dropped():
    pytest.importorskip("PIL", reason="WebP needs the optional Pillow extra")
    rgba = rng.integers(0, 256, (4, 5, 4), dtype=np.uint8)
    rgba[:, :, 3] = 255  # opaque, so lossless WebP keeps the colors exactly
    np.testing.assert_array_equal(decode(_encode(rgba, "WEBP", lossless=True)), rgba[:, :, :3])


@pytest.mark.parametrize("corrupt", [b"\xff\xd8\xff\xe0" + bytes(20), b"II*\x00" + bytes(10),
                                     b"RIFF\x00\x00\x00\x00WEBPjunk"], ids=["jpeg", "tiff", "webp"])
@pytest.mark.parametrize("pixel_format, channels", [("RGB", 3), ("Grayscale", 1)])
def test_corrupt_data_decodes_to_empty(corrupt, pixel_format, channels):
    pytest.importorskip("PIL", reason="only a real codec can tell these are corrupt")
    assert decode(corrupt, pixel_format).shape == (0, 0, channels)


@pytest.fixture
def without_pillow(monkeypatch):
    """Make ``import PIL`` fail as if Pillow were not installed (None in sys.modules blocks the import)."""
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")] + ["PIL", "PIL.Image"]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("case, name", [("image_decoder_decode_jpeg_rgb", "JPEG"),
                                        ("image_decoder_decode_jpeg2k_rgb", "JPEG 2000"),
                                        ("image_decoder_decode_tiff_rgb", "TIFF"),
                                        ("image_decoder_decode_webp_rgb", "WebP")])
def test_without_pillow_the_error_says_how_to_install(without_pillow, case, name):
    data = np.asarray(getattr(frozen, case).data, np.uint8).tobytes()
    with pytest.raises(Exception, match=f'{name} decoding needs the Pillow.*pip install "onnxtext\\[images\\]"') \
            as info:
        decode(data)
    # the evaluator wraps kernel errors with the node; the kernel's own error type is the cause
    assert isinstance(info.value.__cause__ or info.value, UnsupportedImageError)


def test_without_pillow_own_decoders_still_work(without_pillow):
    sample = frozen.image_decoder_decode_png_rgb
    np.testing.assert_array_equal(decode(np.asarray(sample.data, np.uint8).tobytes()), sample.output)


# --- onnxtext's own BMP/PNG/PNM decoders (used without Pillow) against Pillow as the oracle --------------
def _pillow_encoded(mode: str, fmt: str, shape) -> bytes:
    from PIL import Image

    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    image = Image.fromarray(pixels).convert(mode) if mode != "I;16" else Image.fromarray(
        pixels.astype(np.uint16) * 257 + 3)  # 16-bit gray: the high byte is the pixel
    with io.BytesIO() as f:
        image.save(f, format=fmt)
        return f.getvalue()


# (id, encoded image): a line per variant
BUILTIN_CASES = [
    ("png-rgb-all-filters", lambda: png_cycling_filters(rng.integers(0, 256, (23, 17, 3), dtype=np.uint8), 2)),
    ("png-rgba-all-filters", lambda: png_cycling_filters(rng.integers(0, 256, (11, 13, 4), dtype=np.uint8), 6)),
    ("png-gray-all-filters", lambda: png_cycling_filters(rng.integers(0, 256, (19, 7), dtype=np.uint8), 0)),
    ("png-wide", lambda: png_cycling_filters(rng.integers(0, 256, (3, 300, 3), dtype=np.uint8), 2)),
    ("png-tall", lambda: png_cycling_filters(rng.integers(0, 256, (300, 2, 3), dtype=np.uint8), 2)),
    ("png-pillow-rgb", lambda: _pillow_encoded("RGB", "PNG", (40, 30, 3))),
    ("png-pillow-palette", lambda: _pillow_encoded("P", "PNG", (20, 30, 3))),
    ("png-pillow-gray", lambda: _pillow_encoded("L", "PNG", (20, 30))),
    ("png-pillow-gray16", lambda: _pillow_encoded("I;16", "PNG", (9, 8))),
    ("bmp-pillow-rgb", lambda: _pillow_encoded("RGB", "BMP", (9, 7, 3))),
    ("bmp-pillow-palette", lambda: _pillow_encoded("P", "BMP", (9, 7, 3))),
    ("ppm-pillow", lambda: _pillow_encoded("RGB", "PPM", (9, 7, 3))),
    ("pgm-pillow", lambda: _pillow_encoded("L", "PPM", (9, 7))),
]


@pytest.mark.parametrize("make", [c[1] for c in BUILTIN_CASES], ids=[c[0] for c in BUILTIN_CASES])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR"])
def test_builtin_decoders_match_pillow(make, pixel_format, monkeypatch):
    pytest.importorskip("PIL", reason="Pillow is the oracle")
    from onnxtext.evaluator.kernels import image

    data = make()
    expected = decode(data, pixel_format)  # Pillow (installed, preferred)
    monkeypatch.setattr(image, "PREFER_PILLOW", False)
    np.testing.assert_array_equal(decode(data, pixel_format), expected)
    assert expected.size > 0
