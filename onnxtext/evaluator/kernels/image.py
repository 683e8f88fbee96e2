"""ImageDecoder for the formats that need no codec library: BMP (uncompressed) and PNM (PBM/PGM/PPM).

JPEG, JPEG 2000, PNG, TIFF and WebP need real codecs (entropy coding, wavelets, deflate + filters...);
no image library is a project dependency, so those formats raise a clear error instead of guessing.
Data that is not a recognizable image decodes to an empty tensor, as the spec asks for undecodable input.
"""

from __future__ import annotations

import re

import numpy as np

from ..registry import kernel

_CODEC_SIGNATURES = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"),
    (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def _decode_bmp(data: bytes) -> np.ndarray:
    """RGB pixels of an uncompressed (BI_RGB / BI_BITFIELDS with standard masks) 8/24/32-bit BMP."""
    offset = int.from_bytes(data[10:14], "little")
    header_size = int.from_bytes(data[14:18], "little")
    width = int.from_bytes(data[18:22], "little", signed=True)
    height = int.from_bytes(data[22:26], "little", signed=True)
    bits = int.from_bytes(data[28:30], "little")
    compression = int.from_bytes(data[30:34], "little")
    if compression not in (0, 3) or bits not in (8, 24, 32):
        raise NotImplementedError(f"ImageDecoder: BMP with {bits}-bit pixels and compression {compression} "
                                  "is not supported (only uncompressed 8/24/32-bit)")
    rows, bottom_up = abs(height), height > 0
    stride = (width * bits + 31) // 32 * 4  # rows are padded to 4 bytes
    raw = np.frombuffer(data, np.uint8, count=stride * rows, offset=offset).reshape(rows, stride)
    if bits == 8:
        colors = int.from_bytes(data[46:50], "little") or 256
        palette = np.frombuffer(data, np.uint8, count=4 * colors, offset=14 + header_size).reshape(colors, 4)
        bgr = palette[raw[:, :width], :3]
    else:
        bgr = raw[:, :width * bits // 8].reshape(rows, width, bits // 8)[:, :, :3]
    if bottom_up:
        bgr = bgr[::-1]
    return np.ascontiguousarray(bgr[:, :, ::-1])


_PNM_TOKEN = re.compile(rb"(?:\s|#[^\n]*\n?)*([^\s#]+)")


def _decode_pnm(data: bytes) -> np.ndarray:
    """RGB or grayscale (H, W, 1) pixels of a binary or ASCII PBM/PGM/PPM image."""
    kind = data[1:2]
    fields, pos = [], 2
    needed = 2 if kind in (b"1", b"4") else 3
    while len(fields) < needed:
        m = _PNM_TOKEN.match(data, pos)
        fields.append(int(m.group(1)))
        pos = m.end()
    width, height = fields[0], fields[1]
    maxval = fields[2] if needed == 3 else 1
    channels = 3 if kind in (b"3", b"6") else 1
    if kind in (b"4",):  # packed bitmap: 1 is black
        stride = (width + 7) // 8
        bits = np.unpackbits(np.frombuffer(data, np.uint8, count=stride * height, offset=pos + 1)
                             .reshape(height, stride), axis=1)[:, :width]
        return ((1 - bits) * 255).astype(np.uint8)[:, :, None]
    if kind in (b"1", b"2", b"3"):  # ASCII: whitespace separated values (P1 digits may touch)
        body = data[pos:]
        values = np.array([int(c) for c in (re.findall(rb"[01]", body) if kind == b"1" else body.split())],
                          dtype=np.int64)[:width * height * channels]
        if kind == b"1":
            return ((1 - values.reshape(height, width)) * 255).astype(np.uint8)[:, :, None]
    else:
        dtype = np.dtype(">u2") if maxval > 255 else np.uint8
        values = np.frombuffer(data, dtype, count=width * height * channels, offset=pos + 1).astype(np.int64)
    if maxval != 255:
        values = (values * 255 + maxval // 2) // maxval
    return values.reshape(height, width, channels).astype(np.uint8)


def _to_gray(rgb: np.ndarray) -> np.ndarray:
    # ITU-R BT.601 luma, rounded, as common decoders do
    weights = np.array([299, 587, 114], dtype=np.int64)
    return ((rgb.astype(np.int64) @ weights + 500) // 1000).astype(np.uint8)[:, :, None]


@kernel("ImageDecoder", since=20)
def image_decoder(encoded, pixel_format="RGB"):
    data = np.asarray(encoded, dtype=np.uint8).tobytes()
    for signature, name in _CODEC_SIGNATURES:
        if data.startswith(signature):
            raise NotImplementedError(f"ImageDecoder: {name} decoding needs an image codec library, "
                                      "which is not a project dependency")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        raise NotImplementedError("ImageDecoder: WebP decoding needs an image codec library, "
                                  "which is not a project dependency")
    try:
        if data[:2] == b"BM":
            pixels = _decode_bmp(data)
        elif data[:1] == b"P" and data[1:2] in b"123456":
            pixels = _decode_pnm(data)
        else:
            raise ValueError("not an image")
    except NotImplementedError:
        raise
    except Exception:  # corrupt or unknown data: the spec asks for an empty result
        return np.zeros((0, 0, 1 if pixel_format == "Grayscale" else 3), dtype=np.uint8)
    if pixels.shape[2] == 1:
        return pixels if pixel_format == "Grayscale" else np.repeat(pixels, 3, axis=2)
    if pixel_format == "Grayscale":
        return _to_gray(pixels)
    return np.ascontiguousarray(pixels[:, :, ::-1]) if pixel_format == "BGR" else pixels
