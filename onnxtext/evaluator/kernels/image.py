"""ImageDecoder: Pillow when it is installed, for every format; without it, onnxtext's own decoders for the
formats that need no codec library, BMP (uncompressed), PNM (PBM/PGM/PPM) and non-interlaced PNG (its deflate
stream is undone by the standard library's zlib). Decoded sizes are checked first (evaluator/limits.py).

JPEG, JPEG 2000, TIFF and WebP need real codecs (Huffman/arithmetic coding, DCT, wavelets...), so they are
decoded by Pillow when it is installed (the optional extra ``pip install "onnxtext[images]"``; imported lazily,
only when such an image is decoded), and raise :class:`UnsupportedImageError` saying so otherwise.
Pillow is also what the ONNX backend suite used to produce its expected outputs, so Pillow-decoded
images are converted with Pillow's own RGB and grayscale ("L") conversions.

Data that is not a recognizable image, or that its decoder rejects, decodes to an empty tensor, as the
spec asks for undecodable input. Alpha channels are dropped (no compositing), like OpenCV's IMREAD_COLOR.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
import zlib

import numpy as np

from ...errors import EvalError
from ..limits import check_image_pixels
from ..registry import kernel

_CODEC_SIGNATURES = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"),
    (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)

PILLOW_HINT = 'pip install "onnxtext[images]"'


class UnsupportedImageError(EvalError):
    """An image encoding this decoder does not handle (codecs outside the project's dependencies)."""


def _codec_name(data: bytes) -> str | None:
    """The name of a format that needs a codec library (Pillow), or None."""
    for signature, name in _CODEC_SIGNATURES:
        if data.startswith(signature):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WebP"
    return None


def _decode_with_pillow(data: bytes, name: str, pixel_format: str) -> np.ndarray:
    """(H, W, C) pixels decoded by Pillow; raises ValueError/OSError on data Pillow rejects."""
    try:
        from PIL import Image
    except ImportError:
        raise UnsupportedImageError(f"ImageDecoder: {name} decoding needs the Pillow image library, an optional "
                                    f"dependency: {PILLOW_HINT}") from None
    try:
        with warnings.catch_warnings():  # Pillow warns from Image.MAX_IMAGE_PIXELS on; our limit decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as e:  # Pillow's own limit (2 x Image.MAX_IMAGE_PIXELS) came first
        raise EvalError(f"ImageDecoder: the {name} image declares too many pixels for Pillow ({e}); onnxtext's "
                        f"own limit is onnxtext.evaluator.limits.MAX_IMAGE_PIXELS") from None
    with opened as image:
        check_image_pixels(*image.size, f"the {name} image")  # before decoding allocates the pixels
        image.load()  # decode now, inside the caller's error handling (open only reads the header)
        if image.mode.startswith("I;16"):  # 16-bit gray: keep the high byte, as 8-bit decoders do
            gray = (np.asarray(image, dtype=np.uint16) >> 8).astype(np.uint8)[:, :, None]
            return gray if pixel_format == "Grayscale" else np.repeat(gray, 3, axis=2)
        if pixel_format == "Grayscale":
            return np.array(image.convert("L"), dtype=np.uint8)[:, :, None]
        rgb = np.array(image.convert("RGB"), dtype=np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]) if pixel_format == "BGR" else rgb

def _decode_bmp(data: bytes) -> np.ndarray:
    """RGB pixels of an uncompressed (BI_RGB / BI_BITFIELDS with standard masks) 8/24/32-bit BMP."""
    offset = int.from_bytes(data[10:14], "little")
    header_size = int.from_bytes(data[14:18], "little")
    width = int.from_bytes(data[18:22], "little", signed=True)
    height = int.from_bytes(data[22:26], "little", signed=True)
    bits = int.from_bytes(data[28:30], "little")
    compression = int.from_bytes(data[30:34], "little")
    if compression not in (0, 3) or bits not in (8, 24, 32):
        raise UnsupportedImageError(f"ImageDecoder: BMP with {bits}-bit pixels and compression {compression} "
                                  "is not supported (only uncompressed 8/24/32-bit)")
    check_image_pixels(width, abs(height), "the BMP image")
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
    check_image_pixels(width, height, "the PNM image")
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


_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # color type -> samples per pixel


def _png_unfilter(raw: np.ndarray, height: int, stride: int, bpp: int) -> np.ndarray:
    """Undo PNG's per-row filters (None, Sub, Up, Average, Paeth) on the inflated scanlines.

    ``stride`` is always a multiple of ``bpp`` (bpp is 1 below 8 bits per pixel), so a row reshapes to
    (pixels, bpp) byte lanes. Without Average or Paeth rows, row by row (Sub is a running sum). Average and
    Paeth predict from the decoded left neighbour, so those images are decoded by anti-diagonals: pixel
    (y, x) needs (y, x-1), (y-1, x) and (y-1, x-1), all on earlier diagonals, so each of the H + W - 1
    diagonals is one vectorized step, whatever each row's filter.
    """
    width = stride // bpp
    rows = raw[:height * (stride + 1)].reshape(height, stride + 1)
    kinds, lines = rows[:, 0], rows[:, 1:].reshape(height, width, bpp)
    if kinds.size and kinds.max() > 4:
        raise ValueError(f"bad PNG filter {kinds.max()}")
    if not np.isin(kinds, (3, 4)).any():
        out = np.empty((height, width, bpp), dtype=np.uint8)
        prev = np.zeros((width, bpp), dtype=np.uint8)
        for y in range(height):
            kind, line = kinds[y], lines[y]
            if kind == 0:
                prev = line
            elif kind == 1:  # Sub: a running sum along each byte lane, modulo 256
                prev = np.cumsum(line, axis=0, dtype=np.uint8)
            else:  # Up
                prev = line + prev  # uint8 arithmetic wraps modulo 256
            out[y] = prev
        return out.reshape(height, stride)
    # skewed layout: diagonal k = y + x is row k + 2 of `skew`, pixel y at column y + 1, so a diagonal and its
    # neighbours are plain slices; entries never written are the zero border (y = -1 or x = -1)
    n_diag = height + width - 1
    skew = np.zeros((n_diag + 2, height + 1, bpp), dtype=np.uint8)
    filtered = np.zeros((n_diag, height, bpp), dtype=np.uint8)
    yy, xx = np.mgrid[0:height, 0:width]
    filtered[yy + xx, yy] = lines
    del yy, xx
    weights = [(kinds == k).astype(np.int16)[:, None] for k in (1, 2, 3, 4)]  # per row: is Sub, Up, Avg, Paeth
    for k in range(n_diag):
        y0, y1 = max(0, k - width + 1), min(height, k + 1)
        left = skew[k + 1, y0 + 1:y1 + 1].astype(np.int16)
        up = skew[k + 1, y0:y1].astype(np.int16)
        upleft = skew[k, y0:y1].astype(np.int16)
        p = left + up - upleft
        pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
        paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
        sub, upw, avg, pae = (w[y0:y1] for w in weights)
        predictor = sub * left + upw * up + avg * ((left + up) >> 1) + pae * paeth
        skew[k + 2, y0 + 1:y1 + 1] = (filtered[k, y0:y1] + predictor) & 255
    yy, xx = np.mgrid[0:height, 0:width]
    return skew[yy + xx + 2, yy + 1].reshape(height, stride)


def _decode_png(data: bytes) -> np.ndarray:
    """RGB or grayscale (H, W, 1) pixels of a non-interlaced PNG."""
    pos, chunks, idat = 8, {}, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IDAT":
            idat.append(body)
        else:
            chunks.setdefault(kind, body)
        pos += 12 + length
        if kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    if interlace:
        raise UnsupportedImageError("ImageDecoder: interlaced (Adam7) PNG is not supported")
    check_image_pixels(width, height, "the PNG image")
    channels = _PNG_CHANNELS[color]
    stride = (width * channels * depth + 7) // 8
    bpp = max(channels * depth // 8, 1)
    # inflate no more than the image needs: a tiny image whose stream inflates to gigabytes stops here
    needed = height * (stride + 1)
    raw = np.frombuffer(zlib.decompressobj().decompress(b"".join(idat), needed), dtype=np.uint8)
    if raw.size < needed:
        raise ValueError("PNG data shorter than its image")
    rows = _png_unfilter(raw, height, stride, bpp)
    if depth == 16:  # keep the high byte, as 8-bit decoders do
        samples = rows.reshape(height, -1, 2)[:, :, 0].reshape(height, width, channels)
    elif depth == 8:
        samples = rows.reshape(height, width, channels)
    else:  # 1, 2 or 4 bits: unpack, then (for gray) stretch to 0..255
        bits = np.unpackbits(rows, axis=1).reshape(height, -1, depth)[:, :width]
        values = (bits * (1 << np.arange(depth - 1, -1, -1))).sum(axis=2).astype(np.uint8)
        samples = values[:, :, None] if color == 3 else (values * (255 // ((1 << depth) - 1)))[:, :, None]
    if color == 3:
        palette = np.frombuffer(chunks[b"PLTE"], dtype=np.uint8).reshape(-1, 3)
        return palette[samples[:, :, 0]]
    if color in (0, 4):
        return np.ascontiguousarray(samples[:, :, :1])
    return np.ascontiguousarray(samples[:, :, :3])


#: Decode BMP, PNG and PNM with Pillow too when it is installed (its decoders cover more variants, in C);
#: False uses onnxtext's own decoders, which are always used without Pillow.
PREFER_PILLOW = True


def _pillow_installed() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def _builtin_format(data: bytes) -> str | None:
    if data[:2] == b"BM":
        return "BMP"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:1] == b"P" and data[1:2] in (b"1", b"2", b"3", b"4", b"5", b"6"):
        return "PNM"
    return None


def _to_gray(rgb: np.ndarray) -> np.ndarray:
    # ITU-R BT.601 luma, rounded, as common decoders do
    weights = np.array([299, 587, 114], dtype=np.int64)
    return ((rgb.astype(np.int64) @ weights + 500) // 1000).astype(np.uint8)[:, :, None]


@kernel("ImageDecoder", since=20)
def image_decoder(encoded, pixel_format="RGB"):
    data = np.asarray(encoded, dtype=np.uint8).tobytes()
    codec = _codec_name(data)
    if codec is None and PREFER_PILLOW and _builtin_format(data) is not None and _pillow_installed():
        codec = _builtin_format(data)
    try:
        if codec is not None:
            # Pillow applies the pixel format itself (its grayscale conversion is the suite's)
            return _decode_with_pillow(data, codec, pixel_format)
        if data[:2] == b"BM":
            pixels = _decode_bmp(data)
        elif data[:8] == b"\x89PNG\r\n\x1a\n":
            pixels = _decode_png(data)
        elif data[:1] == b"P" and data[1:2] in b"123456":
            pixels = _decode_pnm(data)
        else:
            raise ValueError("not an image")
    except EvalError:  # an unsupported encoding or a size limit: said, not turned into an empty image
        raise
    except Exception:  # corrupt or unknown data: the spec asks for an empty result
        return np.zeros((0, 0, 1 if pixel_format == "Grayscale" else 3), dtype=np.uint8)
    if pixels.shape[2] == 1:
        return pixels if pixel_format == "Grayscale" else np.repeat(pixels, 3, axis=2)
    if pixel_format == "Grayscale":
        return _to_gray(pixels)
    return np.ascontiguousarray(pixels[:, :, ::-1]) if pixel_format == "BGR" else pixels
