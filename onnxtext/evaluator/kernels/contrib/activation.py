"""com.microsoft activations the transformer optimizer fuses: Gelu, BiasGelu, FastGelu, QuickGelu,
BiasAdd (and BiasSplitGelu).

Gelu is the erf form ``0.5 x (1 + erf(x / sqrt 2))``; FastGelu the tanh form
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``; QuickGelu ``x sigmoid(alpha x)`` (alpha 1.702).
The bias variants add a bias broadcast over the last axis first.
"""

from __future__ import annotations

import math

import numpy as np

from ...registry import kernel
from ..activation import _sigmoid
from ..elementwise import erf
from ..erf import gelu_float32
from . import MS


def _widened(x):
    """float16 computes in float32 (numpy's half-precision loops are slow; onnxruntime widens too)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _gelu_erf(x):
    w = _widened(x)
    if w.dtype == np.float32 and w.ndim:  # (the ONNX Gelu's own float32 form: 25 numpy calls, not 27)
        return gelu_float32(w).astype(x.dtype, copy=False)
    if w.dtype.kind != "f" or w.ndim == 0:
        return np.asarray(0.5 * w * (1 + erf(w * (1 / math.sqrt(2)))), dtype=x.dtype)
    t = w.dtype.type
    y = np.asarray(erf(np.multiply(w, t(1 / math.sqrt(2)))))  # a fresh array, finished in place
    y += t(1)
    y *= w
    y *= t(0.5)  # (exact: the same value as 0.5 * w first)
    return y.astype(x.dtype, copy=False)


_ALPHA = math.sqrt(2 / math.pi)
_GAMMA = 0.044715 * _ALPHA


def _gelu_tanh(x):
    w = _widened(x)
    if w.dtype.kind != "f" or w.ndim == 0:
        inner = _ALPHA * (w + 0.044715 * w * w * w)
        return np.asarray(0.5 * w * (1 + np.tanh(inner)), dtype=x.dtype)
    # x (alpha + gamma x^2), as onnxruntime's kernel writes it, in one buffer
    t = w.dtype.type
    y = np.multiply(w, w)
    y *= t(_GAMMA)
    y += t(_ALPHA)
    y *= w
    np.tanh(y, out=y)
    y += t(1)
    y *= w
    y *= t(0.5)
    return y.astype(x.dtype, copy=False)


@kernel("Gelu", since=1, domain=MS)
def gelu(X):
    return _gelu_erf(X)


@kernel("BiasGelu", since=1, domain=MS)
def bias_gelu(A, B):
    if A.dtype == np.float32 and B.dtype == np.float32 and A.ndim:
        return gelu_float32(np.add(A, B))
    return _gelu_erf(A + B)


@kernel("FastGelu", since=1, domain=MS)
def fast_gelu(X, bias=None):
    return _gelu_tanh(X if bias is None else X + bias)


@kernel("QuickGelu", since=1, domain=MS)
def quick_gelu(X, alpha=1.702):
    return np.asarray(X * _sigmoid(alpha * X), dtype=X.dtype)


@kernel("BiasAdd", since=1, domain=MS)
def bias_add(X, bias, skip):
    """X (N, S, C) + bias (C) + skip (N, S, C)."""
    return np.asarray(X + bias + skip, dtype=X.dtype)


@kernel("BiasSplitGelu", since=1, domain=MS)
def bias_split_gelu(X, bias):
    """(X + bias) split in two halves on the last axis: left * Gelu(right)."""
    y = X + bias
    half = y.shape[-1] // 2
    return np.asarray(y[..., :half] * _gelu_erf(y[..., half:]), dtype=X.dtype)
