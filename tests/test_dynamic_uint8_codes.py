"""Dynamic uint8 quantization in one home (kernels/quantize.py ``dynamic_uint8_codes``): every path that
uses it against a plain transcription of onnxruntime's formulas in numpy float32 scalars, on a table of
ranges, NaN and infinities, all-zero, one-value and subnormal inputs.

The two rules differ only where the range is degenerate: DynamicQuantizeLinear (``dynamic_quantize_codes``,
the ``DynamicQuantizeCodes`` step) gives scale 1 whenever the float32 scale is 0 (all zeros, or a
subnormal width that underflows); the quantizer of DynamicQuantizeMatMul / DynamicQuantizeLSTM
(``dynamic_quantize_uint8``, ``quant_lstm.quantized_input``) only when min == max. Both ignore NaN in the
range (the code of NaN is the lowest, -zero point). Codes are compared as numbers (the sign of a zero
code is not kept by every path and no product can see it: a sum starting from +0 drops it); scales and
zero points bit for bit. To add a case: one line in ``_CASES``.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.fused.quantization import DynamicQuantizeCodes
from onnxtext.evaluator.kernels.contrib.quant_lstm import quantized_input
from onnxtext.evaluator.kernels.quantize import dynamic_quantize_codes, dynamic_quantize_uint8, dynamic_uint8_codes

_TINY = float(np.finfo(np.float32).smallest_subnormal)
_CASES = {
    "normal": ("normal", 1.0),
    "normal small": ("normal", 1e-3),
    "normal large": ("normal", 1e4),
    "normal 1e30": ("normal", 1e30),
    "positive": ("positive", 1.0),  # zero point 0
    "negative": ("negative", 1.0),  # zero point 255
    "shifted": ("shifted", 1.0),
    "uniform 300": ("uniform", 300.0),
    "all zero": [0.0, 0.0, 0.0],
    "signed zeros": [-0.0, 0.0],
    "one value": [5.0],
    "one negative value": [-5.0],
    "repeated value": [2.5, 2.5, 2.5],
    "one subnormal": [_TINY],
    "subnormal pair": [_TINY, -_TINY],
    "subnormal width underflows": [1e-42, -3e-43],
    "subnormal width kept": [1e-40, 3e-39],
    "smallest normals": [2.0 ** -126, -(2.0 ** -126)],
    "clip needed 1": [-29.461267471313477, 78.63402557373047, 3.25],
    "clip needed 2": [-160.92767333984375, 31.281023025512695],
    "width overflows": [3.0e38, -3.0e38],
    "largest value": [3.4e38],
    "largest negative": [-3.4e38, 1.0],
    "NaN among values": [1.0, np.nan, -2.0],
    "NaN alone": [np.nan],
    "inf": [np.inf, 1.0],
    "minus inf": [-np.inf, 1.0],
    "both infinities": [np.inf, -np.inf],
}


def _values(case) -> np.ndarray:
    if not isinstance(case, tuple):
        return np.array(case, np.float32)
    kind, size = case
    rng = np.random.default_rng(len(kind))
    x = rng.standard_normal(257)
    x = {"normal": x, "positive": np.abs(x) + 0.5, "negative": -np.abs(x) * 3, "shifted": x + 2.25,
         "uniform": rng.uniform(-1, 1, 257)}[kind]
    return (x * size).astype(np.float32)


def _reference(x: np.ndarray, zero_scale_rule: bool):
    """onnxruntime's formulas, one float32 operation at a time: range with 0 and without NaN,
    ``scale = (max - min) / 255``, ``zero point = round(clamp(0 - min / scale, 0, 255))`` (a NaN
    initial zero point: 255, std::min keeping its first operand), codes ``clip(rint(x / scale) + zp,
    0, 255)`` with NaN the lowest; scale 1 and zeros where ``scale == 0`` (``zero_scale_rule``,
    DynamicQuantizeLinear) or where ``min == max`` (the others)."""
    f = np.float32
    finite = x[~np.isnan(x)]
    low = f(min(0.0, float(finite.min()))) if finite.size else f(0)
    high = f(max(0.0, float(finite.max()))) if finite.size else f(0)
    with np.errstate(all="ignore"):
        scale = (high - low) / f(255)
        if (zero_scale_rule and scale == 0) or (not zero_scale_rule and low == high):
            return np.zeros(x.shape, np.float32), f(1), 0.0
        initial = f(0) - low / scale
        zero_point = 255.0 if np.isnan(initial) else float(np.rint(min(f(255), max(f(0), initial))))
        q = np.rint(x / scale) + f(zero_point)
        q = np.where(np.isnan(q), f(0), np.clip(q, 0, 255)).astype(np.float32)
    return q - f(zero_point), scale, zero_point


def _same_codes(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _same_scale(got, want):
    assert np.asarray(got).dtype == np.float32
    assert np.asarray(got).tobytes() == np.asarray(want, np.float32).tobytes(), (got, want)


@pytest.mark.parametrize("name", list(_CASES))
def test_dynamic_quantize_linear_paths_equal_the_reference(name):
    x = _values(_CASES[name])
    want, want_scale, want_zp = _reference(x, zero_scale_rule=True)
    with np.errstate(all="ignore"):
        fast = dynamic_quantize_codes(x)
        codes, scale = DynamicQuantizeCodes()(x)
    _same_codes(codes, want)
    _same_scale(scale, want_scale)
    if fast is not None:  # (None: NaN or infinities, the kernel's general path, run by DynamicQuantizeCodes)
        _same_codes(fast[0], want)
        _same_scale(fast[1], want_scale)
        assert fast[2] == want_zp


@pytest.mark.parametrize("name", list(_CASES))
def test_dynamic_uint8_paths_equal_the_reference(name):
    x = _values(_CASES[name])
    want, want_scale, _ = _reference(x, zero_scale_rule=False)
    wide = np.zeros((2,) + x.shape, np.float32)
    strided = wide[:, :][0]  # (a view into a larger array)
    strided[...] = x
    with np.errstate(all="ignore"):
        results = [dynamic_quantize_uint8(x), quantized_input(x), quantized_input(x, np.empty_like(x)),
                   quantized_input(x[::-1].copy()[::-1])]
    for codes, scale in results:
        _same_codes(codes, want)
        _same_scale(scale, want_scale)


@pytest.mark.parametrize("name", list(_CASES))
def test_the_one_home_refuses_only_the_degenerate_ranges(name):
    """``dynamic_uint8_codes`` answers every finite range whose float32 scale is not 0 (infinity for a
    width beyond float32) and equals the reference there; the rest is the callers' (their rules differ)."""
    x = _values(_CASES[name])
    fast = dynamic_uint8_codes(x)
    low = min([0.0, *x.tolist()])
    high = max([0.0, *x.tolist()])
    with np.errstate(all="ignore"):
        width = np.float32(high) - np.float32(low)
    # (an infinite width is not degenerate: scale inf)
    degenerate = not np.isfinite(x).all() or low == high or width / np.float32(255) == 0
    assert (fast is None) == degenerate
    if fast is not None:
        want, want_scale, want_zp = _reference(x, zero_scale_rule=False)
        _same_codes(fast[0], want)
        _same_scale(np.float32(fast[1]), want_scale)
        assert fast[2] == want_zp and isinstance(fast[1], float)
