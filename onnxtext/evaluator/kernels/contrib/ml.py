"""com.microsoft operators skl2onnx emits for scikit-learn models: CDist (the pairwise distances of its
nearest-neighbour and kernel converters with ``optim="cdist"``) and MurmurHash3 (FeatureHasher).

CDist computes all (A row, B row) distances with one matrix product: ``|a|^2 + |b|^2 - 2 a.b``,
clipped at 0 (rounding can make it slightly negative), square-rooted for ``euclidean``. MurmurHash3 is
the 32-bit x86 MurmurHash3 of each element (the little-endian bytes of an int32/uint32, or the UTF-8
bytes of a string) with ``seed``; ``positive=1`` gives uint32, else int32.
"""

from __future__ import annotations

import numpy as np

from ....errors import EvalError
from ...registry import kernel
from . import MS


@kernel("CDist", since=1, domain=MS)
def cdist(A, B, *, metric="sqeuclidean"):
    if metric not in ("sqeuclidean", "euclidean"):
        raise EvalError(f"CDist: metric {metric!r} is not supported (sqeuclidean or euclidean)")
    work = np.float64 if A.dtype == np.float64 else np.float32
    a, b = A.astype(work), B.astype(work)
    d = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2 * (a @ b.T)
    np.maximum(d, 0, out=d)
    if metric == "euclidean":
        np.sqrt(d, out=d)
    return d.astype(A.dtype)


_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _fmix(h):
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _mix_key(k):
    k = k * _C1
    return _rotl(k, 15) * _C2


def _hash_words(words: np.ndarray, seed: int, length: int, tail: np.ndarray | None = None) -> np.ndarray:
    """MurmurHash3_x86_32 of keys of ``length`` bytes given as uint32 words [n, length // 4] and, for a
    length not a multiple of 4, the last 1-3 bytes as one little-endian uint32 per key; vectorized."""
    h = np.full(words.shape[0], np.uint32(seed & 0xFFFFFFFF), np.uint32)
    for i in range(words.shape[1]):
        h ^= _mix_key(words[:, i])
        h = _rotl(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
    if tail is not None:
        h ^= _mix_key(tail)
    h ^= np.uint32(length)
    return _fmix(h)


def _hash_bytes(data: bytes, seed: int) -> int:
    n = len(data)
    words = np.frombuffer(data[: n - n % 4], dtype="<u4").astype(np.uint32).reshape(1, -1)
    tail = np.array([int.from_bytes(data[n - n % 4:], "little")], np.uint32) if n % 4 else None
    return int(_hash_words(words, seed, n, tail)[0])


@kernel("MurmurHash3", since=1, domain=MS)
def murmur_hash3(X, *, positive=1, seed=0):
    if X.dtype in (np.int32, np.uint32):
        with np.errstate(over="ignore"):
            h = _hash_words(X.reshape(-1, 1).view(np.uint32).astype(np.uint32), seed, 4).reshape(X.shape)
    elif X.dtype == object or X.dtype.kind in "US":
        with np.errstate(over="ignore"):  # (one key per string: their lengths differ)
            h = np.array([_hash_bytes(str(s).encode("utf-8"), seed) for s in X.reshape(-1)],
                         np.uint32).reshape(X.shape)
    else:
        raise EvalError(f"MurmurHash3 takes int32, uint32 or string tensors, not {X.dtype}")
    return h if positive else h.view(np.int32)
