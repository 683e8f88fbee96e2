"""Cast, CastLike and BitCast between the 28 element types (numpy and ml_dtypes conversions).

Rules from the Cast specification, on top of plain ``astype``:

* float -> float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) with ``saturate`` (default): out-of-range values
  and infinities become +-FLT_MAX of the target; without it ml_dtypes' own behaviour is the spec's
  (NaN, or Inf for e5m2). float4e2m1 and the float6 types always saturate in ml_dtypes.
* -> float8e8m0: the float32 exponent field *is* the e8m0 code (same bias 127), so the cast is bit
  arithmetic: ``round_mode`` up/down/nearest on the mantissa, then saturation at the largest code
  (254) or NaN (255) without ``saturate``.
* fixed point -> narrower fixed point discards the high bits (two's complement wrap); float -> integer
  truncates toward zero and, for 8/16-bit and sub-byte targets, wraps the same way (through int64).
* strings: parsed as decimal / scientific numbers, "INF"/"+INF"/"-INF"/"NaN" in any case; numbers are
  formatted in plain shortest round-trip form, special values as "INF", "-INF", "NaN".
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ... import dtypes
from ..registry import kernel

_FLOAT8 = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"}


def is_ml_dtype(dtype) -> bool:
    """True for the ml_dtypes extension types (bfloat16, float8..., int4...). Their numpy ``kind`` is
    not reliable ("V" for most, but "f" for float8_e5m2), while ``isbuiltin`` is 2 for all of them."""
    return np.dtype(dtype).isbuiltin == 2


def is_float_type(dtype) -> bool:
    """numpy or ml_dtypes floating-point element type."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (is_ml_dtype(dtype) and dtypes.from_numpy(dtype).kind == "float")


def _native_float(dtype) -> bool:
    return dtype.kind == "f" and not is_ml_dtype(dtype)


def _parse_strings(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Strings to numbers: integers parse exactly when they can, everything else via float64."""
    text = np.asarray([s.decode() if isinstance(s, bytes) else str(s) for s in x.reshape(-1)],
                      dtype=object).reshape(x.shape)
    if target.kind in "iu":
        try:
            return text.astype(np.int64)
        except (ValueError, OverflowError):
            pass
    # float() already accepts "inf", "+INF", "-Infinity", "nan" in any case and scientific notation.
    return text.astype(np.float64)


def _format_strings(x: np.ndarray) -> np.ndarray:
    """Numbers to strings: shortest round-trip decimal; INF/-INF/NaN spelled as the spec's literals."""
    if x.dtype == np.bool_:
        return x.astype(np.int64).astype(str).astype(object)
    if is_ml_dtype(x.dtype):  # ml_dtypes: format the float32 value
        x = x.astype(np.float32)
    out = x.astype(str).astype(object)
    if x.dtype.kind in "fc":
        out[np.isnan(x)] = "NaN"
        out[np.isposinf(x)] = "INF"
        out[np.isneginf(x)] = "-INF"
    return out


def _to_e8m0(x: np.ndarray, saturate: int, round_mode: str) -> np.ndarray:
    """float -> float8e8m0 (a bare power-of-two exponent) by float32 bit arithmetic."""
    # (np.ascontiguousarray would turn a 0-d array into 1-d, hence the reshape)
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).reshape(x.shape)
    exponent = ((bits >> 23) & 0xFF).astype(np.int32)
    mantissa = bits & 0x7FFFFF
    if round_mode == "up":
        exponent = exponent + (mantissa != 0)
    elif round_mode == "nearest":  # ties (mantissa exactly 1.5) go up
        exponent = exponent + (mantissa >= 0x400000)
    elif round_mode != "down":
        raise ValueError(f"Cast: unknown round_mode {round_mode!r}")
    special = ((bits >> 23) & 0xFF) == 0xFF  # input Inf or NaN
    nan_input = np.isnan(x.astype(np.float32))
    overflow = exponent >= 0xFF
    if saturate:
        exponent = np.where(overflow | (special & ~nan_input), 0xFE, exponent)
    else:
        exponent = np.where(overflow | special, 0xFF, exponent)
    exponent = np.where(nan_input, 0xFF, exponent)
    return exponent.astype(np.uint8).view(dtypes.from_name("float8e8m0").np)


def cast_array(x: np.ndarray, target, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """``x`` converted to element type ``target`` (a :class:`dtypes.DType`, enum or numpy dtype)."""
    if isinstance(target, int):
        target = dtypes.from_enum(target)
    elif not isinstance(target, dtypes.DType):
        target = dtypes.from_numpy(target)
    x = np.asarray(x)
    source = x.dtype
    out_dtype = target.np
    if target.kind == "string":
        return x.copy() if source == object else _format_strings(x)
    if source == object:
        return cast_array(_parse_strings(x, out_dtype), target, saturate, round_mode)
    if source == out_dtype:
        return x.copy()
    with np.errstate(all="ignore"):
        if target.name == "float8e8m0":
            return _to_e8m0(x if _native_float(source) else x.astype(np.float32), saturate, round_mode)
        if target.name in _FLOAT8:
            work = x if _native_float(source) else x.astype(np.float32)
            if saturate:
                limit = float(ml_dtypes.finfo(out_dtype).max)
                work = np.clip(work, -limit, limit)  # NaN passes through clip unchanged
            return work.astype(out_dtype)
        if target.kind in ("int", "bool") and is_float_type(source):
            if target.kind == "bool":
                return x.astype(np.float32).astype(np.bool_) if is_ml_dtype(source) else x.astype(np.bool_)
            work = x.astype(np.float64) if is_ml_dtype(source) else x
            truncated = np.trunc(work)
            if out_dtype.itemsize >= 4 and not is_ml_dtype(out_dtype):
                return truncated.astype(out_dtype)
            return truncated.astype(np.int64).astype(out_dtype)  # narrow targets wrap like integers
        if is_ml_dtype(source) and is_ml_dtype(out_dtype):
            # Between two ml_dtypes types: go through float32 (exact for every such source).
            return x.astype(np.float32).astype(out_dtype)
        return x.astype(out_dtype)


def _target_of(to):
    """The ``to`` attribute: an enum, or (opset 1) a type name string such as "FLOAT"."""
    if isinstance(to, (str, bytes)):
        to = TensorProto.DataType.Value(to.decode() if isinstance(to, bytes) else to.upper())
    return dtypes.from_enum(int(to))


# numpy's own types, between which astype is the ONNX conversion whenever the source is an integer or
# bool, or both are floats (float -> integer truncates and saturates specially: cast_array)
_PLAIN = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                          np.uint32, np.uint64, np.float16, np.float32, np.float64))


_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_HALF_BITS_MIN = 8192  # from this size on the bit path below is faster than numpy's loop (measured)
_HALF_TO_SINGLE = np.float32(2.0 ** 112)  # 2 ** (127 - 15): the exponent biases' difference
_SIGN_AND_MAGNITUDE = np.int32(-0x70000001)  # 0x8FFFFFFF: bit 31 and bits 0..27
_min_all, _max_all = np.minimum.reduce, np.maximum.reduce


def float16_to_float32(x: np.ndarray) -> np.ndarray:
    """``x.astype(float32)`` for a float16 array, bit for bit. numpy's own loop converts one value at a
    time (1.1-2.2 ns a value on this project's machine); for large arrays the bits are moved instead, in
    four passes: the half's bits sign-extended to int32 and shifted left by 13 put the magnitude in
    float32's places (bits 13..27) and the sign in bit 31, the extension's other copies of the sign
    (bits 28..30) are cleared, and the result times 2**112 is the value (exact for normal and subnormal
    halves alike; the sign rides along). An infinity or NaN half comes out at 65536 or more in
    magnitude (the largest finite half is 65504): found by the minimum and maximum, it takes numpy's
    loop. Checked on all 65,536 half values by tests/test_float16_region.py. Measured (other processes
    running) on 24k values 18-24 us against 27-34 us for the earlier eight-pass form, 54 us for numpy's."""
    if x.size < _HALF_BITS_MIN or not x.flags.c_contiguous:
        return x.astype(_F32)
    bits = x.view(np.int16).astype(np.int32)
    bits <<= 13
    bits &= _SIGN_AND_MAGNITUDE
    f = bits.view(_F32)
    f *= _HALF_TO_SINGLE
    if not (-65536.0 < _min_all(f, axis=None) and _max_all(f, axis=None) < 65536.0):  # (NaN compares false)
        return x.astype(_F32)
    return f


@kernel("Cast", since=1)
def cast(x, to, saturate=1, round_mode="up"):
    target = _target_of(to)
    if type(x) is np.ndarray:
        source, out = x.dtype, target.np
        if source in _PLAIN and out in _PLAIN and (source.kind in "iub" or out.kind == "f" == source.kind):
            if source == out:  # values are never mutated in place (see Identity): no copy
                return x
            if source == _F16 and out == _F32:
                return float16_to_float32(x)
            return x.astype(out)  # (a run silences float warnings)
    return np.asarray(cast_array(x, target, saturate, round_mode))


@kernel("CastLike", since=15)
def cast_like(x, target_type, saturate=1, round_mode="up"):
    return np.asarray(cast_array(x, dtypes.from_numpy(target_type.dtype), saturate, round_mode))


@kernel("BitCast", since=26)
def bit_cast(x, to):
    """Reinterpret the bits as another type of the same width (shape unchanged)."""
    target = dtypes.from_enum(int(to)).np
    if target.itemsize != x.dtype.itemsize:
        raise ValueError(f"BitCast: {x.dtype} and {target} have different widths")
    return np.asarray(np.ascontiguousarray(x).view(target).reshape(x.shape))
