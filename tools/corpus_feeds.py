"""Realistic inputs for the real-model corpus (see tools/build_corpus.py and docs/corpus.md).

Each maker returns a numpy array drawn from a seeded generator, shaped and ranged like what the model's
users feed it: audio in [-1, 1] with speech-like energy, images that are smooth pictures rather than white
noise (neural nets behave differently on noise: ReLU patterns, softmax saturation), token ids inside the
vocabulary, attention masks of ones followed by padding zeros, file bytes from real files.
"""

from __future__ import annotations

import hashlib

import numpy as np


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from a model's name: the same model always gets the same feeds."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def audio(rng: np.random.Generator, batch: int, samples: int) -> np.ndarray:
    """float32 [batch, samples] in [-1, 1]: a few harmonics with a syllable-like envelope, plus noise."""
    t = np.arange(samples) / 16000.0
    rows = []
    for _ in range(batch):
        f0 = rng.uniform(90, 250)
        wave = sum(rng.uniform(0.05, 0.3) / k * np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.3))
                   for k in range(1, 6))
        envelope = 0.5 + 0.5 * np.sin(2 * np.pi * rng.uniform(2, 6) * t)
        rows.append(wave * envelope + rng.normal(0, 0.01, samples))
    return np.clip(np.array(rows), -1, 1).astype(np.float32)


def image(rng: np.random.Generator, shape: tuple[int, ...], lo: float = 0.0, hi: float = 1.0,
          dtype=np.float32) -> np.ndarray:
    """An NCHW batch of smooth pictures in [lo, hi]: coarse random blocks upsampled and blurred, with edges.

    Made from an 8x8 grid of random colours (bilinear upsampling) plus a few hard-edged rectangles, so that
    the image has both flat regions and edges, like photographs and scanned text.
    """
    n, c, h, w = shape
    coarse = rng.uniform(0, 1, (n, c, 9, 9))
    ys, xs = np.linspace(0, 8, h), np.linspace(0, 8, w)
    y0, x0 = np.minimum(ys.astype(int), 7), np.minimum(xs.astype(int), 7)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    a = coarse[:, :, y0][:, :, :, x0]
    b = coarse[:, :, y0][:, :, :, x0 + 1]
    cc = coarse[:, :, y0 + 1][:, :, :, x0]
    d = coarse[:, :, y0 + 1][:, :, :, x0 + 1]
    img = a * (1 - fy) * (1 - fx) + b * (1 - fy) * fx + cc * fy * (1 - fx) + d * fy * fx
    for i in range(n):
        for _ in range(4):
            top, left = rng.integers(0, max(1, h - 2)), rng.integers(0, max(1, w - 2))
            img[i, :, top:top + rng.integers(2, max(3, h // 3)), left:left + rng.integers(2, max(3, w // 3))] = \
                rng.uniform(0, 1, (c, 1, 1))
    return (lo + (hi - lo) * img).astype(dtype)


def token_ids(rng: np.random.Generator, batch: int, seq: int, vocab: int, dtype=np.int64,
              first: int | None = None) -> np.ndarray:
    """[batch, seq] ids in [0, vocab), favouring small ids the way real text does (Zipf-like)."""
    ids = np.minimum(rng.zipf(1.3, (batch, seq)) - 1, vocab - 1)
    if first is not None:
        ids[:, 0] = first  # e.g. BERT's [CLS]
    return ids.astype(dtype)


def attention_mask(batch: int, seq: int, dtype=np.int64) -> np.ndarray:
    """[batch, seq] of ones then zeros: row i is padded by i tokens (at most half the sequence)."""
    mask = np.ones((batch, seq), dtype=dtype)
    for i in range(batch):
        pad = min(i, seq // 2)
        if pad:
            mask[i, seq - pad:] = 0
    return mask


def file_bytes(rng: np.random.Generator, batch: int, length: int, pad: int = 256) -> np.ndarray:
    """int32 [batch, length]: byte values of real files (numpy's own sources), padded with ``pad``."""
    import glob
    import os

    sources = sorted(glob.glob(os.path.join(os.path.dirname(np.__file__), "*.py")))
    rows = []
    for i in range(batch):
        data = open(sources[int(rng.integers(len(sources)))], "rb").read()[: length - 17 * i]
        row = np.full(length, pad, dtype=np.int32)
        row[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        rows.append(row)
    return np.stack(rows)


def features(rng: np.random.Generator, rows: int, cols: int, dtype=np.float32) -> np.ndarray:
    """[rows, cols] correlated Gaussian features (the distribution the corpus's sklearn models train on)."""
    mix = np.random.default_rng(0).normal(0, 1, (cols, cols)) / np.sqrt(cols)
    return (rng.normal(0, 1, (rows, cols)) @ mix + np.arange(cols) * 0.1).astype(dtype)
