"""Activation kernels: the ReLU family, sigmoids, Gelu, Mish, Shrink, SwiGLU, and the normalizers
Softmax, LogSoftmax and Hardmax in both of their semantics.

Softmax-like ops changed meaning at opset 13: before, the input is coerced to 2-D at ``axis``
(default 1) and normalized over all the flattened trailing dimensions together; from 13 the default
axis is -1 and normalization is over that single axis. (Relu lives in elementwise.py.)

Attributes are Python floats, which numpy treats as "weak" scalars: float32 stays float32. Constants
are Python floats too (``math.sqrt``): a numpy float64 scalar would silently upcast float32 arrays.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import kernel
from .erf import erf, gelu_float32
from .linalg import matrix_product
from .quantize import clip_ufunc

_ignore = np.errstate(all="ignore")
_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)  # (dtype == dtype: cheaper than == np.float32)


def _sigmoid(x):
    # exp overflow for large |x| gives the right limit 0 or 1 (the run silences the warning)
    out = np.negative(x)  # in place from here on: one temporary instead of four
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


@kernel("Sigmoid", since=1)
def sigmoid(x, **_legacy):
    return np.asarray(_sigmoid(x), dtype=x.dtype)


@kernel("LeakyRelu", since=1)
def leaky_relu(x, alpha=0.01, **_legacy):
    if 0 <= alpha <= 1:  # then max(x, alpha*x) is the same function, and cheaper than where()
        return np.asarray(np.maximum(x, x * alpha), dtype=x.dtype)
    return np.asarray(np.where(x < 0, x * alpha, x), dtype=x.dtype)


@kernel("PRelu", since=1)
def prelu_per_channel(x, slope, **_legacy):
    """Opset 1-6: a slope with more than one value holds one value per channel (axis 1)."""
    if slope.size > 1 and x.ndim >= 2:
        slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
    return prelu(x, slope)


@kernel("PRelu", since=7)
def prelu(x, slope):
    """The slope broadcasts unidirectionally (numpy-style) to x."""
    return np.asarray(np.where(x < 0, x * slope, x), dtype=x.dtype)


@kernel("ThresholdedRelu", since=10)
def thresholded_relu(x, alpha=1.0):
    return np.asarray(np.where(x > alpha, x, 0), dtype=x.dtype)


@kernel("Elu", since=1)
def elu(x, alpha=1.0, **_legacy):
    with np.errstate(all="ignore"):
        return np.asarray(np.where(x > 0, x, alpha * np.expm1(x)), dtype=x.dtype)


@kernel("Selu", since=1)
def selu(x, alpha=1.67326, gamma=1.0507, **_legacy):
    with np.errstate(all="ignore"):
        return np.asarray(gamma * np.where(x > 0, x, alpha * np.expm1(x)), dtype=x.dtype)


@kernel("Celu", since=12)
def celu(x, alpha=1.0):
    with np.errstate(all="ignore"):
        return np.asarray(np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha)), dtype=x.dtype)


_UNIT_BOUNDS: dict = {}


def _unit_bounds(dtype):
    """0 and 1 as 0-d arrays of ``dtype`` (the cheapest bounds for the clip ufunc)."""
    bounds = _UNIT_BOUNDS.get(dtype)
    if bounds is None:
        bounds = _UNIT_BOUNDS[dtype] = (np.zeros((), dtype), np.ones((), dtype))
    return bounds


@kernel("HardSigmoid", since=1)
def hard_sigmoid(x, alpha=0.2, beta=0.5, **_legacy):
    if x.dtype.kind == "f" and x.ndim:  # in place on one temporary, the clip ufunc without np.clip's wrapper
        y = np.multiply(x, alpha)
        np.add(y, beta, y)
        return clip_ufunc(y, *_unit_bounds(x.dtype), out=y)
    return np.asarray(np.clip(x * alpha + beta, 0, 1), dtype=x.dtype)


@kernel("HardSwish", since=14)
def hard_swish(x):
    if x.dtype.kind == "f" and x.ndim:
        u = np.multiply(x, 1 / 6)
        np.add(u, 0.5, u)
        clip_ufunc(u, *_unit_bounds(x.dtype), out=u)
        return np.multiply(x, u, u)
    return np.asarray(x * np.clip(x * (1 / 6) + 0.5, 0, 1), dtype=x.dtype)


def _softplus(x):
    with np.errstate(all="ignore"):
        return np.logaddexp(x, 0)  # log(1 + exp(x)) without overflow


@kernel("Softplus", since=1)
def softplus(x):
    return np.asarray(_softplus(x), dtype=x.dtype)


@kernel("Softsign", since=1)
def softsign(x):
    return np.asarray(x / (1 + np.abs(x)), dtype=x.dtype)


@kernel("Mish", since=18)
def mish(x):
    return np.asarray(x * np.tanh(_softplus(x)), dtype=x.dtype)


@kernel("Shrink", since=9)
def shrink(x, bias=0.0, lambd=0.5):
    out = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))
    return np.asarray(out, dtype=x.dtype)


_SQRT_HALF = 1 / math.sqrt(2)
_TANH_SCALE = math.sqrt(2 / math.pi)


def gelu_values(x, tanh: bool):
    """``0.5 x (1 + erf(x / sqrt 2))`` or, ``tanh=True``, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
    of a float array, computed in place on one temporary (shared with the rule ``gelu``'s step)."""
    if x.dtype == _FLOAT32 and not tanh:  # (a dtype: comparing with the type np.float32 costs more)
        return gelu_float32(x)
    t = x.dtype.type
    if tanh:
        inner = np.multiply(x, x)
        inner *= x
        inner *= t(0.044715)
        inner += x
        inner *= t(_TANH_SCALE)
        np.tanh(inner, out=inner)
    else:
        inner = np.asarray(erf(np.multiply(x, t(_SQRT_HALF))))
    inner += t(1)
    inner *= x
    inner *= t(0.5)
    return inner


@kernel("Gelu", since=20)
def gelu(x, approximate="none"):
    if x.dtype == _FLOAT32 and approximate == "none" and x.ndim:
        return gelu_float32(x)
    if x.dtype.kind == "f" and x.ndim:
        return gelu_values(x, approximate == "tanh")
    if approximate == "tanh":
        inner = _TANH_SCALE * (x + 0.044715 * x * x * x)
        return np.asarray(0.5 * x * (1 + np.tanh(inner)), dtype=x.dtype)
    return np.asarray(0.5 * x * (1 + erf(x * _SQRT_HALF)), dtype=x.dtype)


@kernel("Swish", since=24)
def swish(x, alpha=1.0):
    return np.asarray(x * _sigmoid(alpha * x), dtype=x.dtype)


@kernel("SwiGLU", since=28)
def swiglu(a, b, alpha=1.0):
    return np.asarray(a * _sigmoid(alpha * a) * b, dtype=a.dtype)


# ------------------------------------------------------------------------------ softmax family


_sum = np.add.reduce  # (the ufunc's own reduce: np.sum adds ~2 us of argument handling per call)


# A short last axis is reduced through a transposed copy when there are enough rows: numpy starts
# each row of a last-axis reduction separately (about 0.05-0.1 us a row below 32 values), while a
# first-axis reduction of the (values, rows) copy is one elementwise maximum per value over all rows.
# Measured (numpy 2.4, float32, other processes running): 1000x10 6.3 against 119 us, 12x31x31 10
# against 60 us, 128x16 3.2 against 4.4 us, 100x3 2.2 against 4.4 us; at 32 values (12x32x32) even,
# at 16 rows of 10 1.13x slower, at 8 rows 1.6x slower (the copy's fixed cost).
_TRANSPOSED_MAX_VALUES = 32  # rows shorter than this ...
_TRANSPOSED_MIN_ROWS = 32  # ... and at least this many of them


def row_max(x, axis=-1):
    """``np.max(x, axis, keepdims=True)``, NaN propagating as there. Given an identity
    (``initial=-inf``, floats), numpy reduces all rows in one vectorized loop; without one it starts
    each row separately: measured 7 us against 58 us for 128 rows of 16 (numpy 2.4). Many short rows
    along the last axis go through a transposed copy (see ``_TRANSPOSED_MAX_VALUES``)."""
    n = x.shape[-1] if x.ndim > 1 else 0
    if 0 < n < _TRANSPOSED_MAX_VALUES and x.size >= _TRANSPOSED_MIN_ROWS * n and (axis == -1 or axis == x.ndim - 1):
        values_by_row = np.ascontiguousarray(x.reshape(-1, n).T)
        return _max_reduce(values_by_row, 0, False).reshape(x.shape[:-1] + (1,))
    return _max_reduce(x, axis, True)


def _max_reduce(x, axis, keepdims):
    if x.dtype.kind == "f":
        return np.maximum.reduce(x, axis=axis, keepdims=keepdims, initial=-np.inf)
    return np.maximum.reduce(x, axis=axis, keepdims=keepdims)


_ONES: dict = {}  # (n, dtype) -> an (n, 1) column of ones, for row sums as products


def row_sums(e, axis):
    """``np.sum(e, axis, keepdims=True)``. Along the last axis of at most 1024 float32/float64
    values, one product with a column of ones (BLAS; 1.0 us against 3.2 us for 128 rows of 16,
    0.8 against 0.9 for 8 rows of 10, numpy 2.4); otherwise the ufunc's own reduce."""
    n = e.shape[-1] if e.ndim else 0
    if 1 < n <= 1024 and (axis == -1 or axis == e.ndim - 1) and e.dtype in _BLAS_FLOATS:
        return matrix_product(e, _ones_column(n, e.dtype))
    return _sum(e, axis=axis, keepdims=True)


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# Softmax and LogSoftmax of float32/float64 rows of 2-1024 values along the last axis skip the shift by
# each row's maximum when that changes nothing but the rounding (softmax is invariant under a per-row
# shift). The shift (a per-row maximum and its broadcast subtraction) costs more than the rest on short
# rows: Softmax of 3x12x5 in 5 numpy calls instead of 9.
# Softmax checks the row sums of exp(x): all finite (no overflow, no NaN) and at least 2^-10 (the row's
# largest exp is then a normal number; an exp that underflowed, x < -87.3, is off by at most 1.4e-45,
# 1.5e-42 after the division: probabilities below 1.2e-35, which the shifted form keeps to float32's
# relative precision). Masked scores (-inf, or additive masks such as -1e4 or the lowest float) pass:
# their exp is 0, as in the shifted form.
# LogSoftmax computes log(softmax(x)) and needs every probability a normal float32 (a subnormal one has
# lost bits): |x| <= 40 gives p >= exp(-80) / 1024 > 1.18e-38 (6 calls instead of 11); up to 8k values,
# beyond which the logarithm of every value costs as much as the shift or more (2x128x384: 164 against
# 126 us).
_UNSHIFTED_SUM_MIN = 2.0 ** -10
_UNSHIFTED_LOG_BOUND = 40.0
_UNSHIFTED_LOG_MAX_SIZE = 1 << 13
_max_all, _min_all = np.maximum.reduce, np.minimum.reduce
_FINITE_MAX32, _FINITE_MAX64 = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)


def _unshifted_row(x, axis) -> int:
    """The row length when the shift-free form may apply to ``x`` (see ``_UNSHIFTED_SUM_MIN``), else 0."""
    n = x.shape[-1] if x.ndim else 0
    if 1 < n <= 1024 and (x.dtype == _FLOAT32 or x.dtype == _FLOAT64) and (axis == -1 or axis == x.ndim - 1):
        return n
    return 0


def _ones_column(n, dtype):
    ones = _ONES.get((n, dtype))
    if ones is None:
        ones = _ONES[(n, dtype)] = np.ones((n, 1), dtype)
    return ones


def _softmax(x, axis):
    """Softmax over ``axis`` in one buffer (inf/nan warnings are silenced by the run, not here)."""
    if x.size == 0:
        return x.copy()
    n = _unshifted_row(x, axis)
    if n:
        e = np.exp(x)
        sums = matrix_product(e, _ones_column(n, e.dtype))
        high = _FINITE_MAX32 if e.dtype == _FLOAT32 else _FINITE_MAX64
        if _min_all(sums, axis=None) >= _UNSHIFTED_SUM_MIN and _max_all(sums, axis=None) <= high:
            np.divide(e, sums, out=e)  # (NaN compares false above)
            return e
    e = np.subtract(x, row_max(x, axis))
    np.exp(e, e)
    np.divide(e, row_sums(e, axis), e)
    return e


def _log_softmax(x, axis):
    """LogSoftmax over ``axis``: ``log(softmax(x))`` without the shift when it applies (see
    ``_UNSHIFTED_LOG_BOUND``; as precise as the shifted form: a few ulps of the result's magnitude or
    of 1), else ``x - max - log(sum(exp(x - max)))``."""
    if x.size == 0:
        return x.copy()
    n = _unshifted_row(x, axis) if x.size <= _UNSHIFTED_LOG_MAX_SIZE else 0
    if n:
        # (contiguous x as a matrix of rows: the reduction, the row sums' product and the broadcast
        # division each cost less on 2-D operands than on a 3-D stack, 0.5-1 us each on 3x12x5)
        rows = x.reshape(-1, n) if x.flags.c_contiguous else x
        p = np.abs(rows)
        if _max_all(p, axis=None) <= _UNSHIFTED_LOG_BOUND:  # (NaN compares false)
            np.exp(rows, out=p)
            np.divide(p, matrix_product(p, _ones_column(n, p.dtype)), out=p)
            np.log(p, out=p)
            return p.reshape(x.shape) if p.ndim != x.ndim else p
    shifted = np.subtract(x, row_max(x, axis))
    total = row_sums(np.exp(shifted), axis)
    np.log(total, total)
    np.subtract(shifted, total, shifted)
    return shifted


def _hardmax(x, axis):
    """One-hot of the first maximum along ``axis``."""
    first_max = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, first_max, 1, axis=axis)
    return out


def _coerced_2d(fn, x, axis):
    """Pre-13 semantics: view x as (prod(shape[:axis]), prod(shape[axis:])) and normalize rows."""
    if x.ndim == 0:
        return fn(x.reshape(1, 1), 1).reshape(())
    axis = axis % x.ndim
    if axis == x.ndim - 1 and x.ndim == 2:  # already (rows, values): no reshapes
        return fn(x, 1)
    rows = math.prod(x.shape[:axis])  # (Python ints: np.prod of a tuple costs ~3 us)
    flat = x.reshape(rows, -1) if x.size else x.reshape(rows, math.prod(x.shape[axis:]))
    return fn(flat, 1).reshape(x.shape)


def _register_normalizer(op, fn):
    def legacy(x, axis=1):
        return np.asarray(_coerced_2d(fn, x, axis), dtype=x.dtype)

    def per_axis(x, axis=-1):
        y = fn(x, axis)
        return y if type(y) is np.ndarray and y.dtype == x.dtype else np.asarray(y, dtype=x.dtype)

    legacy.__name__ = f"{fn.__name__.strip('_')}_coerced_2d"
    per_axis.__name__ = fn.__name__.strip("_")
    kernel(op, since=1)(legacy)
    kernel(op, since=13)(per_axis)


_register_normalizer("Softmax", _softmax)
_register_normalizer("LogSoftmax", _log_softmax)
_register_normalizer("Hardmax", _hardmax)
