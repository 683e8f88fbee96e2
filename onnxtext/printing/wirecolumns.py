"""Column-wise decoding of protobuf wire bytes with numpy: the building blocks of the printer's fast path.

A serialized GraphProto is a run of top-level records (tag, length, body). :func:`records` finds them (the
one sequential step); :func:`fields` walks the fields of many records in lock-step, field ``j`` of every
record in one vectorized step; :func:`column` picks one field per record; :class:`Pool` holds literal texts
placed after the wire bytes, and :func:`gather` concatenates segments (start, length) of wire bytes and
pool texts with one fancy index. :mod:`onnxtext.fastprint` decides what the segments are.
"""

from __future__ import annotations

import numpy as np

INDEX = np.int32  # positions, lengths and segments: callers keep buffers under 1 GiB


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``."""
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def records(data: bytes, tags):
    """For each tag of ``tags`` (one-byte tags of length-delimited fields), (body starts, body ends) of the
    top-level records with that tag; None when a top-level field is not length-delimited (in a message
    whose fields all are, such as GraphProto: unknown wire data)."""
    try:
        return _split(data, _positions_short(data), tags)
    except _Long:
        return _split(data, _positions(data), tags)


class _Long(Exception):
    """A record with a tag or length of more than one byte: the careful loop finds the records."""


def _positions_short(data: bytes):
    """Record positions when every tag and length takes one byte: the common case, and the only
    sequential step of the fast path, so kept to three bytecode lines per record."""
    at = []
    ap = at.append
    pos, total = 0, len(data)
    try:
        while pos < total:
            ap(pos)
            pos += data[pos + 1] + 2
    except IndexError:
        raise _Long from None
    if pos != total:
        raise _Long
    at = np.array(at, INDEX)
    d = np.frombuffer(data, np.uint8)
    if len(at) and (np.any(d[at] >= 0x80) or np.any(d[at + 1] >= 0x80)):
        raise _Long
    return at, None


def _positions(data: bytes):
    """Record positions and (tag, body start, body end) of those with multi-byte tags or lengths."""
    short, long_ = [], []
    pos, total = 0, len(data)
    while pos < total:
        length = data[pos + 1]
        if length < 0x80 and data[pos] < 0x80:
            short.append(pos)
            pos += length + 2
            continue
        tag, start = _varint(data, pos)
        length, start = _varint(data, start)
        long_.append((tag, start, start + length))
        pos = start + length
    return np.array(short, INDEX), long_


def _split(data: bytes, found, wanted):
    at, long_ = found
    d = np.frombuffer(data, np.uint8)
    tags, starts = d[at].astype(INDEX), at + 2
    ends = starts + d[at + 1]
    if long_:  # merge, in position order
        lt, ls, le = (np.array(c, INDEX) for c in zip(*long_))
        tags, starts, ends = np.concatenate([tags, lt]), np.concatenate([starts, ls]), np.concatenate([ends, le])
        order = np.argsort(starts, kind="stable")
        tags, starts, ends = tags[order], starts[order], ends[order]
    if np.any(tags & 7 != 2):
        return None
    return tuple((starts[tags == t], ends[tags == t]) for t in wanted)


def fields(d: np.ndarray, starts: np.ndarray, ends: np.ndarray, k: int):
    """The first ``k`` fields of each record [starts, ends), walked in lock-step: (tags [n, k] (0: none),
    content starts [n, k], lengths or varint values [n, k], ok [n]). A record is not ok when a tag, length
    or varint takes more than one byte, or when its fields do not end exactly at its end."""
    n = len(starts)
    tags = np.zeros((n, k), np.uint8)
    pos = np.zeros((n, k), INDEX)
    lens = np.zeros((n, k), INDEX)
    q = starts.copy()
    ok = np.ones(n, bool)
    last = len(d) - 2
    for j in range(k):
        act = q < ends
        if not act.any():
            break
        qa = np.minimum(q, last)
        t, length = d[qa], d[qa + 1].astype(INDEX)
        ok &= ~act | ((t < 0x80) & (length < 0x80))
        tags[:, j] = np.where(act, t, 0)
        pos[:, j] = qa + 2
        lens[:, j] = np.where(act, length, 0)
        q = np.where(act, q + 2 + np.where(t & 7 == 2, length, 0), q)  # varints: the value byte only
    return tags, pos, lens, ok & (q == ends)


def counts(code: np.ndarray, k: int) -> np.ndarray:
    """[n, k] matrix: how often each value 0..k-1 occurs in each row of ``code`` (small non-negative
    integers below ``k``), counted in one pass (a per-value ``(code == v).sum(1)`` walks the matrix once
    per value)."""
    n = len(code)
    keys = np.arange(0, n * k, k, dtype=np.intp)[:, None] + code
    return np.bincount(keys.ravel(), minlength=n * k).reshape(n, k)


def used_columns(tags: np.ndarray) -> int:
    """The number of leading columns of a :func:`fields` tag matrix in which some record has a field."""
    used = np.flatnonzero(tags.any(0))
    return int(used[-1]) + 1 if len(used) else 0


def ascending(code: np.ndarray) -> np.ndarray:
    """Per row of ``code``: whether its values never decrease."""
    return (code[:, 1:] >= code[:, :-1]).all(1)


def column(matrix: np.ndarray, col: np.ndarray) -> np.ndarray:
    """matrix[i, col[i]] for each row (col clipped into range: callers mask the rows where it is absent)."""
    n, k = matrix.shape
    return matrix.ravel()[np.arange(0, n * k, k) + np.clip(col, 0, k - 1)]


class Pool:
    """Literal texts appended after the wire bytes: the segments' second source."""

    def __init__(self, base: int):
        self.base, self.parts, self.size, self.index = base, [], 0, {}

    def add(self, text: str) -> tuple[int, int]:
        """(start, length) of ``text`` in the pool (each distinct text stored once)."""
        hit = self.index.get(text)
        if hit is None:
            b = text.encode("utf-8")
            hit = self.index[text] = (self.base + self.size, len(b))
            self.parts.append(b)
            self.size += len(b)
        return hit

    def table(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """(starts, lengths) arrays of ``texts``."""
        pairs = np.array([self.add(t) for t in texts], INDEX).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]


def gather(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> str:
    """The concatenation of source[start:start + length] over the segments, decoded."""
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    if not len(lengths):
        return ""
    ends = np.cumsum(lengths, dtype=INDEX)
    idx = np.repeat(starts - (ends - lengths), lengths)
    idx += np.arange(int(ends[-1]), dtype=INDEX)
    return source[idx].tobytes().decode("utf-8")
