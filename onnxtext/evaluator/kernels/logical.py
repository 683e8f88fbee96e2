"""Logical and comparison kernels: And Or Xor Not, Equal Greater GreaterOrEqual Less LessOrEqual.

Comparisons accept strings (object arrays) where the spec allows them (Equal from opset 19);
numpy compares object arrays element by element and may answer with an object array, so results
are always converted to bool. Opset < 7 versions use the legacy ``broadcast``/``axis`` alignment.
"""

from __future__ import annotations

import numpy as np

from ..registry import kernel
from .elementwise import legacy_broadcast


def _make_compare(fn):
    def compare(a, b, broadcast=0, axis=None, **_legacy):
        out = fn(a, legacy_broadcast(a, b, broadcast, axis))
        return np.asarray(out, dtype=np.bool_)

    compare.__name__ = fn.__name__
    return compare


_BINARY = {
    "And": (np.logical_and, 1), "Or": (np.logical_or, 1), "Xor": (np.logical_xor, 1),
    "Equal": (np.equal, 1), "Greater": (np.greater, 1), "Less": (np.less, 1),
    "GreaterOrEqual": (np.greater_equal, 12), "LessOrEqual": (np.less_equal, 12),
}

for _op, (_fn, _since) in _BINARY.items():
    kernel(_op, since=_since)(_make_compare(_fn))


@kernel("Not", since=1)
def not_(x):
    return np.asarray(np.logical_not(x))
