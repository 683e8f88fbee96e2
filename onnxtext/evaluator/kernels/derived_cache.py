"""Data a kernel derives from a node's attributes or constant inputs, computed once and kept.

Kernels are plain functions, called again on every run with the same attribute values and the same
initializer arrays (the plan prepares both once). What they derive from those (a tree ensemble's flat
forest, MatMulNBits' dequantized weights) is worth keeping between runs. :func:`derived` keys an entry
by the identities of the source objects and keeps the objects themselves alive inside the entry, so no
other object can take one of their ids while the entry exists. Input arrays are only trusted when they
cannot change: with ``readonly_inputs=True`` a writeable source array (a feed the caller might modify
in place between runs) is never cached, while initializers, which the evaluator decodes read-only, are.
The cache is bounded (entries and bytes), oldest out first.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

MAX_ENTRIES = 256
MAX_BYTES = 256 << 20

_entries: OrderedDict = OrderedDict()  # key -> (value, sources, nbytes)
_total = [0]


def derived(kind: str, sources: tuple, build: Callable[[], object], nbytes: Callable[[object], int] | None = None,
            *, readonly_inputs: bool = False):
    """``build()`` once per (``kind``, identities of ``sources``); later calls return the kept value."""
    if readonly_inputs and any(getattr(getattr(s, "flags", None), "writeable", False) for s in sources):
        return build()
    key = (kind,) + tuple(id(s) for s in sources)
    entry = _entries.get(key)
    if entry is not None:
        _entries.move_to_end(key)
        return entry[0]
    value = build()
    size = nbytes(value) if nbytes is not None else 0
    if size > MAX_BYTES:
        return value
    while _entries and (len(_entries) >= MAX_ENTRIES or _total[0] + size > MAX_BYTES):
        _, (_, _, old) = _entries.popitem(last=False)
        _total[0] -= old
    _entries[key] = (value, sources, size)
    _total[0] += size
    return value


def clear() -> None:
    _entries.clear()
    _total[0] = 0
