"""ImageDecoder's built-in PNG decoder against Pillow (the peer) on ordinary images, in one run.

    python benchmarks/image_decoder.py [--size 2000] [--runs 5]

Prints a table: image, median seconds of onnxtext's own PNG decoder (kernels/image.py, used when Pillow is
not installed), of Pillow's, and the ratio. The images are random-ish photos-like gradients encoded with every
row Paeth-filtered (the worst case for a decoder written with numpy: each pixel predicts from its decoded
left neighbour), every row Sub-filtered, and Pillow's own choice of filters.
"""

from __future__ import annotations

import argparse
import io
import statistics
import struct
import time
import zlib

import numpy as np
from PIL import Image

from onnxtext.evaluator.kernels import image as kernel


def picture(size: int) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size]
    rng = np.random.default_rng(0)
    base = np.stack([(x * 255 // size), (y * 255 // size), ((x + y) * 127 // size)], axis=2)
    return (base + rng.integers(0, 16, base.shape)).clip(0, 255).astype(np.uint8)


def png_with_filter(rgb: np.ndarray, kind: int) -> bytes:
    """A PNG whose every row uses filter ``kind`` (1 Sub, 4 Paeth)."""
    h, w, _ = rgb.shape
    cur = rgb.reshape(h, -1).astype(np.int64)
    prev = np.vstack([np.zeros((1, cur.shape[1]), np.int64), cur[:-1]])
    left = np.hstack([np.zeros((h, 3), np.int64), cur[:, :-3]])
    upleft = np.hstack([np.zeros((h, 3), np.int64), prev[:, :-3]])
    if kind == 1:
        filtered = cur - left
    else:
        p = left + prev - upleft
        pa, pb, pc = abs(p - left), abs(p - prev), abs(p - upleft)
        filtered = cur - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
    body = np.hstack([np.full((h, 1), kind, np.int64), filtered % 256]).astype(np.uint8).tobytes()

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(body, 6)) + chunk(b"IEND", b"")


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def pillow_decode(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rgb = picture(args.size)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    cases = [("all rows Paeth", png_with_filter(rgb, 4)), ("all rows Sub", png_with_filter(rgb, 1)),
             ("Pillow's filters", buf.getvalue())]
    print(f"{args.size}x{args.size} RGB PNG, median of {args.runs} runs")
    print(f"{'image':<18} {'onnxtext s':>11} {'Pillow s':>9} {'ratio':>7}")
    for name, data in cases:
        ours = kernel._decode_png(data)
        assert np.array_equal(ours, rgb) and np.array_equal(pillow_decode(data), rgb), name
        t_ours = median_time(lambda: kernel._decode_png(data), args.runs)
        t_pil = median_time(lambda: pillow_decode(data), args.runs)
        print(f"{name:<18} {t_ours:>11.3f} {t_pil:>9.3f} {t_ours / t_pil:>6.1f}x")


if __name__ == "__main__":
    main()
