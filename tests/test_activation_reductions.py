"""Row maxima (``row_max``, the shift of Softmax, LogSoftmax and attention) and the Softmax family on
shapes either side of the transposed-copy threshold, against numpy's own ``max`` and onnxruntime.

To add a case: one line in ``_ROW_MAX_CASES`` (shape, axis, dtype, what to plant) or ``_SOFTMAX_SHAPES``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from helpers import assert_matches_onnxruntime, node_model
from onnxtext.evaluator.kernels.activation import row_max

# (shape, axis, dtype, planted): "nan" puts a NaN in some rows, "-inf" fills some rows with -inf,
# "strided" reduces a non-contiguous view
_ROW_MAX_CASES = [
    ((1000, 10), -1, np.float32, None),  # many short rows: the transposed copy
    ((1000, 10), 1, np.float64, None),  # the last axis given as a positive number
    ((1, 12, 31, 31), -1, np.float32, None),  # attention scores of 31 tokens
    ((1, 12, 32, 32), -1, np.float32, None),  # 32 values: the plain reduction
    ((40, 1), -1, np.float32, None),  # rows of one value
    ((8, 10), -1, np.float32, None),  # too few rows for the copy
    ((100, 3), -1, np.float32, "nan"),
    ((100, 3), -1, np.float64, "-inf"),
    ((200, 5), -1, np.int64, None),  # integers: no -inf identity
    ((100, 7), -1, np.float16, "nan"),
    ((100, 7), -1, ml_dtypes.bfloat16, None),  # (not numpy kind "f": no identity given)
    ((64, 6), -1, np.int8, None),
    ((50, 40), -1, np.float32, "strided"),  # every other value of rows of 40: a view of 20
    ((4, 50, 7), 1, np.float32, None),  # not the last axis
    ((7,), -1, np.float32, None),
    ((0, 5), -1, np.float32, None),
]


def _values(shape, dtype, planted, rng):
    if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16:
        x = rng.standard_normal(shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if planted == "nan":
        x[::7, 1] = np.nan
    elif planted == "-inf":
        x[::5] = -np.inf
    elif planted == "strided":
        x = x[:, ::2]
    return x


@pytest.mark.parametrize("shape, axis, dtype, planted", _ROW_MAX_CASES)
def test_row_max_equals_numpy_max(shape, axis, dtype, planted):
    x = _values(shape, dtype, planted, np.random.default_rng(0))
    got = row_max(x, axis)
    want = np.max(x, axis=axis, keepdims=True)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


_SOFTMAX_SHAPES = [(1000, 10), (128, 16), (1, 12, 31, 31), (1, 12, 32, 32), (8, 10), (300, 2), (2, 40, 3)]


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", _SOFTMAX_SHAPES)
def test_softmax_family_on_short_rows_matches_onnxruntime(op, shape):
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(np.float32)
    assert_matches_onnxruntime(node_model(op, {"x": x}, {"axis": -1}, opset=13), {"x": x}, rtol=1e-5, atol=1e-6)


# Softmax and LogSoftmax with and without the per-row shift (kernels/activation.py, _UNSHIFTED_*): values
# either side of the bounds, NaN and infinities, float64, the legacy 2-D form, a 1-D row, sizes either side
# of LogSoftmax's size limit. (shape, scale of the normal values, planted, dtype, opset, axis)
_NORMALIZER_CASES = [
    ((3, 12, 5), 4.0, None, np.float32, 13, -1),  # an LSTM tagger's scores: the shift-free form
    ((3, 12, 5), 4.0, None, np.float64, 13, 2),
    ((8, 10), 12.0, None, np.float32, 13, -1),  # some |x| > 40: LogSoftmax shifts, Softmax does not
    ((8, 10), 30.0, None, np.float32, 13, -1),  # some |x| > 80: both shift
    ((8, 10), 1.0, "big", np.float32, 13, -1),  # one row far from 0 (all values ~ -100 or +100)
    ((8, 10), 1.0, "nan", np.float32, 13, -1),
    ((8, 10), 1.0, "inf", np.float32, 13, -1),
    ((8, 10), 1.0, "-inf", np.float32, 13, -1),
    ((6, 7), 3.0, None, np.float32, 11, 1),  # the legacy 2-D form
    ((2, 3, 4), 3.0, None, np.float32, 11, 1),  # legacy, coerced to 2 x 12
    ((9,), 3.0, None, np.float32, 13, -1),  # one row
    ((10, 1000), 3.0, None, np.float32, 13, -1),  # beyond LogSoftmax's size limit (8k values)
    ((4, 2000), 3.0, None, np.float32, 13, -1),  # rows longer than 1024: both shift
    ((4, 6, 5), 3.0, None, np.float32, 13, 1),  # not the last axis
    ((2, 4, 9, 9), 3.0, "causal-inf", np.float32, 13, -1),  # attention scores with a -inf causal mask
    ((2, 4, 9, 9), 3.0, "causal-1e4", np.float32, 13, -1),  # ... an additive mask of -10000
    ((2, 4, 9, 9), 3.0, "causal-lowest", np.float64, 13, -1),  # ... the lowest float
    ((2, 4, 9, 9), 3.0, "masked-row", np.float32, 13, -1),  # one row all -inf (NaN, as the shift gives)
    ((8, 10), 1.0, "negative", np.float32, 13, -1),  # rows near -20: sums below 2^-10, Softmax shifts
    ((8, 10), 1.0, "-90", np.float32, 13, -1),  # exps that underflow beside normal ones
    ((8, 10), 1.0, "overflow", np.float32, 13, -1),  # one exp overflows: the shift
]


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape, scale, planted, dtype, opset, axis", _NORMALIZER_CASES)
def test_normalizers_with_and_without_the_shift_match_onnxruntime(op, shape, scale, planted, dtype, opset, axis):
    x = np.random.default_rng(2).standard_normal(shape) * scale
    if planted == "big":
        x[3] -= 100.0
        x[5] += 100.0
    elif planted in ("nan", "inf", "-inf"):
        x[2, 4] = float(planted)
    elif planted and planted.startswith("causal"):
        mask = {"causal-inf": -np.inf, "causal-1e4": -1e4, "causal-lowest": np.finfo(dtype).min}[planted]
        above = np.triu(np.ones(shape[-2:], bool), 1)
        x = np.where(above, mask, x) if mask != -1e4 else x + np.where(above, mask, 0.0)
    elif planted == "masked-row":
        x[1, 2, 3] = -np.inf
    elif planted == "negative":
        x -= 20.0
    elif planted == "-90":
        x[::2, ::3] = -90.0
    elif planted == "overflow":
        x[4, 2] = 95.0
    x = x.astype(dtype)
    with np.errstate(all="ignore"):
        assert_matches_onnxruntime(node_model(op, {"x": x}, {"axis": axis}, opset=opset), {"x": x},
                                   rtol=1e-5, atol=1e-6)


# An array's dtype can be an object equal to float32's but not the same one (a view with
# dtype.newbyteorder("="), arrays some kernels build): the kernels must take the same path for it, which
# bitwise-identical results show (the paths round differently: Softmax's shift, Gelu's table and series).
_SAME_DTYPE_CASES = [("Softmax", (8, 10), {"axis": -1}, 13), ("LogSoftmax", (3, 12, 5), {"axis": -1}, 13),
                     ("Gelu", (8, 64), {}, 20), ("ReduceMean", (4, 16), {"keepdims": 1}, 18)]


@pytest.mark.parametrize("op, shape, attrs, opset", _SAME_DTYPE_CASES)
def test_an_equal_float32_dtype_object_takes_the_same_path(op, shape, attrs, opset):
    from onnxtext.evaluator import Evaluator

    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)
    other = x.view(np.dtype(np.float32).newbyteorder("="))
    assert other.dtype == x.dtype and other.dtype is not x.dtype
    ev = Evaluator(node_model(op, {"x": x}, attrs, opset=opset))
    for _ in range(4):  # the fourth run is the compiled plan's
        np.testing.assert_array_equal(ev.run(None, {"x": other})[0], ev.run(None, {"x": x})[0])
