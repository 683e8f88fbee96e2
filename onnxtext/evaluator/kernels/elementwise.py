"""Element-wise arithmetic kernels: unary math, binary arithmetic, variadic Sum/Max/Min/Mean, Clip,
Pow, Mod, bitwise operators, Where, and the cumulative CumSum/CumProd.

Results keep the input element type: numpy's own ufuncs keep float32 as float32 (Python scalars are
"weak" under NEP 50), and ufuncs on 0-d arrays return numpy scalars, hence the ``np.asarray`` at
every exit. Floating-point warnings (log of 0, division by zero) are not errors: ONNX defines the
IEEE result. The evaluator silences them once per run (and while folding constants), so the hot
kernels here carry no ``np.errstate`` of their own (a context manager per call costs ~1 us, as
much as a small Add).
"""

from __future__ import annotations

import functools

import numpy as np

from ..registry import kernel
from .erf import erf, erf_values as _erf  # noqa: F401  (erf: contrib Gelu kernels import it from here)

_ignore = functools.partial(np.errstate, all="ignore")


def _is_int(a) -> bool:
    return a.dtype.kind in "iu"


def legacy_broadcast(a, b, broadcast=0, axis=None):
    """Align ``b`` to ``a`` like the opset < 7 binary ops: ``b``'s shape is a contiguous run of
    ``a``'s dims starting at ``axis`` (suffix matching when ``axis`` is unset)."""
    if not broadcast or axis is None or b.ndim == 0:
        return b
    axis = axis % a.ndim if a.ndim else 0
    return b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))


# ---------------------------------------------------------------------------------------- unary


# op -> (numpy function, first opset). np.rint rounds half to even, as Round requires.
_UNARY = {
    "Abs": (np.abs, 1), "Neg": (np.negative, 1), "Ceil": (np.ceil, 1), "Floor": (np.floor, 1),
    "Exp": (np.exp, 1), "Log": (np.log, 1), "Sqrt": (np.sqrt, 1), "Reciprocal": (np.reciprocal, 1),
    "Tanh": (np.tanh, 1), "Sin": (np.sin, 7), "Cos": (np.cos, 7), "Tan": (np.tan, 7),
    "Asin": (np.arcsin, 7), "Acos": (np.arccos, 7), "Atan": (np.arctan, 7), "Sinh": (np.sinh, 9),
    "Cosh": (np.cosh, 9), "Asinh": (np.arcsinh, 9), "Acosh": (np.arccosh, 9), "Atanh": (np.arctanh, 9),
    "Sign": (np.sign, 9), "Erf": (_erf, 9), "Round": (np.rint, 11), "IsNaN": (np.isnan, 9),
    "BitwiseNot": (np.invert, 18),
}


def _make_unary(fn):
    def unary(x, **_legacy):  # opset 1 attributes such as consumed_inputs carry no meaning
        return np.asarray(fn(x))

    unary.__name__ = fn.__name__
    return unary


for _op, (_fn, _since) in _UNARY.items():
    kernel(_op, since=_since)(_make_unary(_fn))


@kernel("IsInf", since=10)
def is_inf(x, detect_negative=1, detect_positive=1):
    if detect_negative and detect_positive:
        return np.asarray(np.isinf(x))
    if detect_positive:
        return np.asarray(np.isposinf(x))
    if detect_negative:
        return np.asarray(np.isneginf(x))
    return np.zeros(x.shape, np.bool_)


_ZEROS: dict = {}  # dtype -> a read-only 0-d zero (making one per call costs more than a small Relu)


@kernel("Relu", since=1)
def relu(x, **_legacy):
    zero = _ZEROS.get(x.dtype)
    if zero is None:
        zero = _ZEROS[x.dtype] = np.zeros((), x.dtype)
        zero.flags.writeable = False
    return np.asarray(np.maximum(x, zero))


# --------------------------------------------------------------------------------------- binary


def _div(a, b):
    if _is_int(a) and _is_int(b):
        # C semantics: truncate toward zero (numpy floors); division by zero yields 0 here.
        q = np.floor_divide(a, b)
        if a.dtype.kind == "i":
            r = a - q * b
            q = q + ((r != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
        return q
    return np.divide(a, b)


_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _div,
}


def _make_binary(fn):
    def binary(a, b, broadcast=0, axis=None, **_legacy):
        if broadcast:
            b = legacy_broadcast(a, b, broadcast, axis)
        return np.asarray(fn(a, b))

    binary.__name__ = fn.__name__
    return binary


for _op, _fn in _BINARY.items():
    kernel(_op, since=1)(_make_binary(_fn))

_BITWISE = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
for _op, _fn in _BITWISE.items():
    kernel(_op, since=18)(_make_binary(_fn))


@kernel("Pow", since=1)
def pow_(x, y, broadcast=0, axis=None):
    """The result has the base's type; exponent type may differ (opset 12+).

    A float base with a one-element exponent of 2 or 3 (LayerNorm's variance, tanh-Gelu's cube, as
    exporters write them) is computed by multiplication: float ``pow`` per element is 10-20x slower
    than a multiply, ``x * x`` is the correctly rounded square, and ``x * x * x`` differs from
    ``pow(x, 3)`` by at most one rounding."""
    if y.size == 1 and x.dtype.kind == "f" and y.ndim <= x.ndim and not broadcast:
        e = y.reshape(-1)[0]
        if e == 2:
            return np.asarray(np.multiply(x, x))
        if e == 3:
            return np.asarray(np.multiply(np.multiply(x, x), x))
    y = legacy_broadcast(x, y, broadcast, axis)
    with _ignore():
        if x.dtype.kind == "f" or x.dtype.isbuiltin == 2:  # numpy or ml_dtypes floats
            if y.dtype == x.dtype or _is_int(y):
                return np.asarray(np.power(x, y.astype(x.dtype)))
            return np.asarray(np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype))
        if _is_int(y) and not (y < 0).any():
            return np.asarray(np.power(x, y.astype(x.dtype)))
        # Integer base with a float or negative exponent: C's pow, truncated back to the base type.
        return np.asarray(np.trunc(np.power(x.astype(np.float64), y.astype(np.float64))).astype(x.dtype))


@kernel("Mod", since=10)
def mod(a, b, fmod=0):
    with _ignore():
        if fmod:
            return np.asarray(np.fmod(a, b))
        return np.asarray(np.mod(a, b))


@kernel("BitShift", since=11)
def bit_shift(x, y, direction):
    bits = x.dtype.itemsize * 8
    y = np.asarray(y)
    out_of_range = (y < 0) | (y >= bits) if y.dtype.kind == "i" else (y >= bits)
    safe_y = np.where(out_of_range, 0, y).astype(x.dtype)
    if direction == "LEFT":
        shifted = np.left_shift(x, safe_y)
        fill = np.zeros((), x.dtype)
    else:
        shifted = np.right_shift(x, safe_y)
        # Shifting by the whole width leaves only the sign extension: -1 for negatives, else 0.
        fill = np.where(x < 0, x.dtype.type(-1), x.dtype.type(0)) if x.dtype.kind == "i" else np.zeros((), x.dtype)
    if out_of_range.any():
        shifted = np.where(out_of_range, fill, shifted)
    return np.asarray(shifted, dtype=x.dtype)


# ------------------------------------------------------------------------------------- variadic


def _variadic(fn):
    def reduce_all(*xs, **_legacy):
        return np.asarray(functools.reduce(fn, xs))

    return reduce_all


kernel("Sum", since=1)(_variadic(np.add))
kernel("Max", since=1)(_variadic(np.maximum))
kernel("Min", since=1)(_variadic(np.minimum))


@kernel("Mean", since=1)
def mean(*xs, **_legacy):
    total = functools.reduce(np.add, xs)
    return np.asarray(np.divide(total, len(xs)).astype(total.dtype))


# --------------------------------------------------------------------------------- clip, where


@kernel("Clip", since=1)
def clip_attr(x, min=None, max=None, **_legacy):  # noqa: A002  (ONNX attribute names)
    """Opset 1-10: bounds are float attributes (schema defaults are the float limits)."""
    return clip(x, None if min is None else np.asarray(min, x.dtype), None if max is None else np.asarray(max, x.dtype))


@kernel("Clip", since=11)
def clip(x, min=None, max=None):  # noqa: A002
    """Equivalent to Min(max, Max(x, min)): when min > max everything becomes max."""
    out = x
    if min is not None:
        out = np.maximum(out, min.astype(x.dtype, copy=False))
    if max is not None:
        out = np.minimum(out, max.astype(x.dtype, copy=False))
    return np.asarray(out if out is not x else x.copy())


@kernel("Where", since=9)
def where(condition, x, y):
    return np.asarray(np.where(condition, x, y))


# ----------------------------------------------------------------------------------- cumulative


def _cumulative(ufunc, identity, x, axis, exclusive, reverse):
    axis = int(np.asarray(axis).reshape(-1)[0])
    axis = axis % x.ndim
    data = np.flip(x, axis) if reverse else x
    out = ufunc.accumulate(data, axis=axis, dtype=x.dtype)
    if exclusive:
        # Shift by one along the axis, the first slot becomes the identity element.
        pad_shape = list(out.shape)
        pad_shape[axis] = 1
        head = np.full(pad_shape, identity, dtype=x.dtype)
        out = np.concatenate([head, np.delete(out, -1, axis=axis)], axis=axis)
    if reverse:
        out = np.flip(out, axis)
    return np.ascontiguousarray(out)


@kernel("CumSum", since=11)
def cum_sum(x, axis, exclusive=0, reverse=0):
    return _cumulative(np.add, 0, x, axis, exclusive, reverse)


@kernel("CumProd", since=26)
def cum_prod(x, axis, exclusive=0, reverse=0):
    return _cumulative(np.multiply, 1, x, axis, exclusive, reverse)
