"""Linear quantization kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul.

Granularity is read off the scale's shape: a scalar (per tensor), a 1-D tensor along ``axis`` (per
axis), or a tensor of the input's rank whose ``axis`` dimension is ``ceil(D / block_size)`` (blocked;
each scale is repeated ``block_size`` times). Integer targets round half to even and saturate to the
type's range (int2 ... uint16); float8/float4 targets go through the Cast rules (``saturate``).
Per-tensor float32 scales with 8/16-bit zero points (what quantizers write) take a float32 fast path
(:func:`quantize_float32`) whose every step is exact, so it equals the general float64 path.
(QLinearConv and ConvInteger live with the convolutions.)
"""

from __future__ import annotations

import struct
from collections import OrderedDict

import ml_dtypes
import numpy as np

from ... import dtypes
from ..registry import kernel
from .cast import cast_array, is_ml_dtype
from .linalg import integer_product, shifted_operand

try:  # the clip ufunc itself: np.clip's Python wrapper costs ~2 us a call, more than clipping 8k values
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # pragma: no cover (numpy < 2)
    clip_ufunc = np.clip


def _expand(param, shape, axis, block_size):
    """Broadcast a scale or zero point to the input ``shape`` (per tensor, per axis or blocked)."""
    param = np.asarray(param)
    if param.ndim == 0 or (param.size == 1 and not block_size):
        return param.reshape(())
    rank = len(shape)
    axis = axis % rank
    if block_size:
        return np.repeat(param, block_size, axis=axis).take(np.arange(shape[axis]), axis=axis)
    return param.reshape([-1 if d == axis else 1 for d in range(rank)])


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """numpy float type in which to do the arithmetic of a (possibly ml_dtypes) float type."""
    return np.dtype(np.float32) if is_ml_dtype(dtype) else np.dtype(dtype)


def _saturate_integer(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """rint(values) saturated to ``target``'s range; NaN becomes the minimum (as onnxruntime: fmax drops it)."""
    info = ml_dtypes.iinfo(target)
    return np.minimum(np.fmax(np.rint(values), info.min), info.max).astype(target)


_FILLED: OrderedDict = OrderedDict()  # (value, size) -> read-only float32 array, oldest first
_FILLED_BYTES = [0]
_FILLED_LIMIT = 64 << 20
FILLED_MIN_SIZE = 1024  # below, the scalar form costs no more
FILLED_MAX_SIZE = 1 << 17  # above, memory traffic makes the two forms even (slower at 1M values)


def filled(value, size: int) -> np.ndarray:
    """A read-only float32 array of ``size`` copies of ``value``, kept between calls (the oldest dropped
    beyond 64 MiB): numpy's fmax/minimum run about twice as fast against an array as against a scalar
    (numpy 2.4 on this project's machine: 3.7 against 6.6 us for 32k values; the scalar operand takes a
    loop without SIMD)."""
    key = (float(value), size)
    out = _FILLED.get(key)
    if out is None:
        out = np.full(size, value, np.float32)
        out.flags.writeable = False
        while _FILLED and _FILLED_BYTES[0] + out.nbytes > _FILLED_LIMIT:
            try:
                _FILLED_BYTES[0] -= _FILLED.popitem(last=False)[1].nbytes
            except KeyError:  # (emptied by another thread meanwhile)
                break
        _FILLED[key] = out
        _FILLED_BYTES[0] += out.nbytes
    return out


def saturate_float32(q: np.ndarray, low, high) -> np.ndarray:
    """``q`` clipped in place to ``[low, high]``, NaN becoming ``low`` (fmax), as QuantizeLinear saturates;
    against filled arrays for mid-sized ``q`` (see :func:`filled`)."""
    if FILLED_MIN_SIZE <= q.size <= FILLED_MAX_SIZE and q.flags.c_contiguous:
        flat = q.reshape(-1)
        np.fmax(flat, filled(low, q.size), out=flat)
        np.minimum(flat, filled(high, q.size), out=flat)
    else:
        np.fmax(q, low, out=q)
        np.minimum(q, high, out=q)
    return q


def shifted_codes(x: np.ndarray, scale, low, high) -> np.ndarray:
    """``clip(rint(x / scale), low, high)`` for float32 ``x`` in a new float32 array: a QuantizeLinear's
    codes minus the zero point (``low``/``high``: the type's range minus it), NaN becoming ``low``."""
    q = np.divide(x, scale)
    np.rint(q, out=q)
    return saturate_float32(q, low, high)


_RANGES: dict = {}


def integer_range(dtype) -> tuple[int, int]:
    """(min, max) of an integer numpy type (np.iinfo costs ~2 us a call)."""
    r = _RANGES.get(dtype)
    if r is None:
        info = np.iinfo(dtype)
        r = _RANGES[np.dtype(dtype)] = (int(info.min), int(info.max))
    return r


_SHIFTED_BOUNDS: dict = {}  # (zero point, target) -> (min - zp, max - zp, zp or None) as float32 scalars


def _shifted_bounds(zero_point: float, target: np.dtype) -> tuple:
    """``(min - zp, max - zp, zp or None)`` of an integer ``target`` as float32 scalars, kept: making
    them costs ~0.4 us each (np.iinfo ~2 us), more than a pass over a small tensor."""
    key = (float(zero_point), target)
    bounds = _SHIFTED_BOUNDS.get(key)
    if bounds is None:
        if len(_SHIFTED_BOUNDS) >= 4096:
            _SHIFTED_BOUNDS.clear()
        low, high = integer_range(target)
        bounds = _SHIFTED_BOUNDS[key] = (np.float32(low - zero_point), np.float32(high - zero_point),
                                         np.float32(zero_point) if zero_point else None)
    return bounds


def requantize_finite(values: np.ndarray, zero_point: float, target: np.dtype) -> np.ndarray:
    """float32 ``values`` already in units of the output scale and never NaN (integer sums times a
    multiplier) -> ``target``: rounded half to even, saturated, zero point added (in place on
    ``values``; every step after the rounding exact). What QLinearConv, QGemm, QLinearAdd and the
    integer pools end with, in three passes and a conversion. The float32 bounds are kept per zero
    point and type: making three numpy scalars cost more than the passes on a pooled head's 64 values
    (and the clip ufunc runs slower with Python floats than with float32 scalars)."""
    low, high, shift = _shifted_bounds(zero_point, target)
    np.rint(values, out=values)
    clip_ufunc(values, low, high, out=values)
    if shift is not None:
        values += shift
    return values.astype(target)


def _quantize(x, scale, zero_point, target, axis, block_size, saturate, precision=None):
    work = _compute_dtype(precision if precision is not None else scale.dtype)
    scale = _expand(scale, x.shape, axis, block_size).astype(work)
    with np.errstate(all="ignore"):
        ratio = x.astype(work) / scale
    if zero_point is not None:
        zero_point = _expand(zero_point, x.shape, axis, block_size)
    if target.kind in "iu" or dtypes.from_numpy(target).kind == "int":
        # Round the ratio first (half to even), then add the integer zero point, then saturate.
        rounded = np.rint(ratio).astype(np.float64)
        if zero_point is not None:
            rounded = rounded + zero_point.astype(np.float64)
        return _saturate_integer(rounded, target)
    if zero_point is not None:
        ratio = ratio + zero_point.astype(np.float32).astype(work)
    return cast_array(ratio, target, saturate)


_FAST_INTEGERS = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16))
_F32 = np.dtype(np.float32)
_INF = float("inf")


def per_tensor_float32(scale, zero_point) -> bool:
    """True for a float32 one-element scale with no zero point or a one-element 8/16-bit one: the
    parameters of the float32 fast paths below (every value and zero point exact in float32)."""
    return (type(scale) is np.ndarray and scale.dtype == _F32 and scale.size == 1 and
            (zero_point is None or (type(zero_point) is np.ndarray and zero_point.size == 1 and
                                    zero_point.dtype in _FAST_INTEGERS)))


def quantize_float32(x: np.ndarray, scale: np.float32, zero_point: float, target: np.dtype) -> np.ndarray:
    """``saturate(rint(x / scale) + zero_point)`` for float32 ``x`` and an 8/16-bit ``target``, in
    float32: the rounded ratio is clipped to ``[min - zp, max - zp]`` before the zero point is added,
    so every step is exact and the result equals the float64 path's (NaN: the minimum)."""
    low, high, shift = _shifted_bounds(zero_point, target)
    q = shifted_codes(x, scale, low, high)
    if shift is not None:
        q += shift
    return q.astype(target)


@kernel("QuantizeLinear", since=10)
def quantize_linear(x, y_scale, y_zero_point=None, axis=1, saturate=1, output_dtype=0, block_size=0,
                    precision=0):
    if (type(x) is np.ndarray and x.dtype == _F32 and not block_size and precision in (0, 1)
            and per_tensor_float32(y_scale, y_zero_point)):
        target = y_zero_point.dtype if y_zero_point is not None else np.dtype(np.uint8)
        if not output_dtype or dtypes.from_enum(output_dtype).np == target:
            zp = 0.0 if y_zero_point is None else float(y_zero_point.reshape(-1)[0])
            return quantize_float32(x, y_scale.reshape(-1)[0], zp, target)
    if output_dtype:
        target = dtypes.from_enum(output_dtype).np
    elif y_zero_point is not None:
        target = y_zero_point.dtype
    else:
        target = np.dtype(np.uint8)
    precision_dtype = dtypes.from_enum(precision).np if precision else None
    return np.asarray(_quantize(x, y_scale, y_zero_point, target, axis, block_size, saturate, precision_dtype))


@kernel("DequantizeLinear", since=10)
def dequantize_linear(x, x_scale, x_zero_point=None, axis=1, block_size=0, output_dtype=0):
    if (type(x) is np.ndarray and x.dtype in _FAST_INTEGERS and not block_size and output_dtype in (0, 1)
            and per_tensor_float32(x_scale, x_zero_point)):
        # (x - zp) is exact in float32 for 8/16-bit values: one rounding, in the multiply, as below
        y = x.astype(np.float32)
        if x_zero_point is not None:
            y -= np.float32(x_zero_point.reshape(-1)[0])
        y *= x_scale.reshape(-1)[0]
        return y
    out_dtype = dtypes.from_enum(output_dtype).np if output_dtype else x_scale.dtype
    work = _compute_dtype(out_dtype)
    if x.dtype.kind in "iu" or dtypes.from_numpy(x.dtype).kind == "int":
        # Integer difference first (exact), then one conversion to the float type.
        shifted = x.astype(np.int64)
        if x_zero_point is not None:
            shifted = shifted - _expand(x_zero_point, x.shape, axis, block_size).astype(np.int64)
        shifted = shifted.astype(work)
    else:  # float8 / float4 inputs
        shifted = x.astype(np.float32)
        if x_zero_point is not None:
            shifted = shifted - _expand(x_zero_point, x.shape, axis, block_size).astype(np.float32)
        shifted = shifted.astype(work)
    scale = _expand(x_scale, x.shape, axis, block_size).astype(work)
    return np.asarray((shifted * scale).astype(out_dtype))


@kernel("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(x):
    """uint8 quantization with scale and zero point computed from the data range (which includes 0)."""
    fast = dynamic_quantize_codes(x)
    if fast is not None:
        q, scale, zero_point = fast
        if zero_point:
            q += np.float32(zero_point)
        return q.astype(np.uint8), np.asarray(scale), np.asarray(np.uint8(zero_point))
    low, high = _range(x)
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
    if not scale:  # (an all-zero or empty tensor: scale 1, as onnxruntime, where the formula gives 0)
        return np.zeros(x.shape, np.uint8), np.asarray(np.float32(1)), np.asarray(np.uint8(0))
    zero_point = _zero_point(low, scale)
    return (_quantized_codes(x, scale, zero_point).astype(np.uint8), np.asarray(scale),
            np.asarray(np.uint8(zero_point)))


def dynamic_quantize_codes(x):
    """DynamicQuantizeLinear of a NaN-free float32 ``x`` as ``(codes - zero point as float32, scale,
    zero point)``: ``clip(rint(x / scale), -zp, 255 - zp)``, every step exact; None for other inputs
    (NaN or infinities, other types: the general path). :func:`dynamic_uint8_codes` where it applies;
    an all-zero range or a scale that underflows to 0 gives zeros and scale 1 (DynamicQuantizeLinear's
    rule)."""
    if type(x) is not np.ndarray or x.dtype != _F32 or not x.size:
        return None
    fast = dynamic_uint8_codes(x)
    if fast is not None:
        return fast[0], np.float32(fast[1]), fast[2]
    if not (-_INF < float(_min_all(x, axis=None)) and float(_max_all(x, axis=None)) < _INF):  # (NaN compares false)
        return None
    return np.zeros(x.shape, np.float32), np.float32(1), 0.0  # (all zeros, or the scale underflowed)


def dynamic_uint8_codes(x: np.ndarray, out: np.ndarray | None = None):
    """THE dynamic uint8 quantization of onnxruntime (DynamicQuantizeLinear, and the activations of
    DynamicQuantizeMatMul, MatMulIntegerToFloat's quantizer, DynamicQuantizeLSTM): for a float32 array,
    ``(codes - zero point as float32, scale, zero point)`` with scale and zero point as Python floats
    (``scale`` a float32 value), or None where the callers' rules differ: NaN or infinities, an all-zero
    (or empty) range, a scale that underflows to 0. A width beyond float32 gives scale infinity and zero
    codes, as both rules do (``struct``'s native "f" converts as a C cast: no OverflowError).

    The range (0 included) by two reductions; ``scale = (high - low) / 255`` and ``low / scale`` as Python
    floats rounded to float32 through ``struct`` (a float32 difference or quotient of float32 values
    computed in double and rounded once is the float32 result); the zero point ``round(-low / scale)``
    (ties to even, as np.rint) clamped to [0, 255]; the codes by a division and a rounding, and a clamp
    only where a range end's code leaves ``[-zp, 255 - zp]`` (``x / scale`` and rint never decrease, so
    the codes lie between the ends'). 4 array calls. ``out``: an array of x's shape for the codes."""
    low = float(_min_all(x, None, None, None, False, 0.0))
    high = float(_max_all(x, None, None, None, False, 0.0))
    if not (low - low == 0 and high - high == 0) or low == high:
        return None
    try:
        width = _F32_PAIR.unpack(_F32_PAIR.pack(high - low, 0.0))[0]
        scale = _F32_PAIR.unpack(_F32_PAIR.pack(width / 255.0, 0.0))[0]
        below, above = _F32_PAIR.unpack(_F32_PAIR.pack(low / scale, high / scale))
    except ZeroDivisionError:  # (the scale underflowed)
        return None
    zero_point = min(255, max(0, round(-below)))
    codes = np.divide(x, scale, out)
    np.rint(codes, out=codes)
    if round(below) < -zero_point:
        np.maximum(codes, float(-zero_point), out=codes)
    if round(above) > 255 - zero_point:
        np.minimum(codes, float(255 - zero_point), out=codes)
    return codes, scale, float(zero_point)


_min_all, _max_all = np.minimum.reduce, np.maximum.reduce
_FLOAT32_STRUCT = struct.Struct("f")
_F32_PAIR = struct.Struct("2f")  # float32 rounding of two Python floats: unpack(pack(x, y))


def round_float32(value: float) -> float:
    """A Python float rounded to the nearest float32 (half to even), as a Python float: about 5x cheaper
    than ``float(np.float32(value))``; beyond float32's range, infinity (as numpy's conversion)."""
    try:
        return _FLOAT32_STRUCT.unpack(_FLOAT32_STRUCT.pack(value))[0]
    except OverflowError:
        return float(np.float32(value))


def _range(x: np.ndarray) -> tuple[float, float]:
    """(min, max) of ``x`` widened to include 0 (0, 0 for an empty tensor), NaN ignored."""
    if not x.size:
        return 0.0, 0.0
    if type(x) is np.ndarray and x.dtype.kind == "f":  # NaN ignored, as onnxruntime (its code is then 0)
        return min(0.0, float(np.fmin.reduce(x, axis=None))), max(0.0, float(np.fmax.reduce(x, axis=None)))
    return min(0.0, float(x.min())), max(0.0, float(x.max()))


def _zero_point(low: float, scale: np.float32) -> float:
    """round(0 - low / scale) (half to even, in float32 as onnxruntime) clamped to [0, 255]."""
    return _clamped_zero_point(float(np.float32(0) - np.float32(low) / scale))


def _clamped_zero_point(initial: float) -> float:
    """``initial`` rounded half to even and clamped to [0, 255]. NaN (a range from -inf: -inf / inf)
    gives 255, as onnxruntime's ``std::max(0, std::min(255, initial))``, where ``std::min`` keeps its
    first operand when the comparison with NaN is false (onnxruntime 1.32 run on [-inf, 1]: zero
    point 255, scale inf; see tests/test_quantize_special_values.py)."""
    if initial != initial:
        return 255.0
    return float(round(min(255.0, max(0.0, initial))))  # (clamped first: a scale that underflowed gives inf)


def _quantized_codes(x, scale, zero_point, shift=0.0):
    """clip(rint(x / scale) + zero_point, 0, 255) - shift, as float32, in four in-place passes (no
    errstate: a run silences float warnings once, and the scale is never 0 here)."""
    q = np.divide(x, scale, dtype=np.float32)
    np.rint(q, out=q)
    offset = zero_point - shift
    if offset:
        q += np.float32(offset)
    np.fmax(q, np.float32(-shift), out=q)  # (fmax: NaN becomes the lowest code, as QuantizeLinear's)
    np.minimum(q, np.float32(255.0 - shift), out=q)
    return q


def _per_row(param, operand):
    """QLinearMatMul's A-side parameters: a 1-D vector of length M applies per row."""
    param = np.asarray(param)
    if param.ndim == 1 and param.size > 1 and operand.ndim >= 2:
        return param.reshape(-1, 1)
    return param


def _shifted(operand, zero_point):
    """operand - zero_point for float8 operands, in float32."""
    return operand.astype(np.float32) - zero_point.astype(np.float32)


@kernel("QLinearMatMul", since=10)
def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        # exact float32 integers; B, a constant, converted once (linalg.shifted_operand)
        a_shifted, a_bound = shifted_operand(a, a_zero_point, row_zero_point=True)
        b_shifted, b_bound = shifted_operand(b, b_zero_point)
        acc = integer_product(a_shifted, b_shifted, a_bound, b_bound).astype(np.float64)
    else:
        a_shifted = _shifted(a, _per_row(a_zero_point, a))
        b_shifted = _shifted(b, np.asarray(b_zero_point))
        acc = np.matmul(a_shifted.astype(np.float32), b_shifted.astype(np.float32)).astype(np.float64)
    multiplier = (_per_row(a_scale, a).astype(np.float32) * np.asarray(b_scale).astype(np.float32)
                  / np.asarray(y_scale).astype(np.float32))
    target = y_zero_point.dtype
    if target.kind in "iu":
        # requantized in float32 as onnxruntime does (accumulator -> float32, times the float32 multiplier)
        scaled = acc.astype(np.float32) * multiplier.astype(np.float32)
        return np.asarray(_saturate_integer(np.rint(scaled).astype(np.float64) + y_zero_point.astype(np.float64),
                                            target))
    real = acc * multiplier.astype(np.float64)
    return np.asarray(cast_array(real.astype(np.float32) + y_zero_point.astype(np.float32), target))


# ------------------------------------------------------------------------- shared by quantized kernels
def dynamic_uint8_parameters(x: np.ndarray) -> tuple[np.float32, float]:
    """(scale, zero point) onnxruntime's kernels pick to quantize ``x`` to uint8 on the fly.

    The range always includes 0; an all-zero (or empty) tensor gets scale 1 (as DynamicQuantizeLinear
    in onnxruntime); the zero point is ``round(-min / scale)`` clamped to [0, 255]."""
    low, high = _range(x)
    if low == high:
        return np.float32(1.0), 0.0
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(255))
    return scale, _zero_point(low, scale)


def dynamic_quantize_uint8(x: np.ndarray):
    """(x quantized to uint8 as float32 values minus the zero point, scale): ready for integer_product.
    :func:`dynamic_uint8_codes` where it applies; else (NaN ignored, infinities, an all-zero range,
    float32 overflow or underflow) in numpy float32 scalars."""
    if type(x) is np.ndarray and x.dtype == _F32:
        fast = dynamic_uint8_codes(x)
        if fast is not None:
            return fast[0], np.float32(fast[1])
    scale, zero_point = dynamic_uint8_parameters(x)
    return _quantized_codes(x, scale, zero_point, shift=zero_point), scale
