"""The row kernels the transformer steps share: last-axis layer/RMS norms (``normalize_rows``, ``RowNorm``
in onnxtext/evaluator/kernels/normalization.py) and the softmax-times-values product without per-row
maxima (``softmax_product`` in onnxtext/evaluator/kernels/attention.py), against float64 numpy written
here from the definitions. Each table row is one case; add a line to cover a new shape.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.kernels.attention import SAFE_TOP, softmax_product
from onnxtext.evaluator.kernels.normalization import TILED_MAX_SIZE, RowNorm, normalize_rows


def _reference_norm(x, eps, scale, bias, simplified):
    x = x.astype(np.float64)
    if simplified:
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    else:
        y = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


# (id, shape, dtype, simplified, with scale, with bias)
NORM_CASES = [
    ("bert_rows", (2, 16, 64), np.float32, False, True, True),
    ("vit_rows", (2, 17, 64), np.float32, False, True, True),
    ("rms_llama", (2, 16, 64), np.float32, True, True, False),
    ("rms_no_scale", (3, 5, 8), np.float32, True, False, False),
    ("no_affine", (4, 32), np.float32, False, False, False),
    ("scale_only", (4, 32), np.float32, False, True, False),
    ("one_column", (6, 1), np.float32, False, True, True),
    ("float64", (2, 7, 48), np.float64, False, True, True),
    ("above_tiling_limit", (2, TILED_MAX_SIZE // 256 + 4, 256), np.float32, False, True, True),
    ("rank_4", (2, 3, 4, 40), np.float32, False, True, True),
]


def _norm_inputs(shape, dtype, scale, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
    s = rng.uniform(0.5, 2, shape[-1]).astype(dtype) if scale else None
    b = rng.standard_normal(shape[-1]).astype(dtype) if bias else None
    return x, s, b


def _tolerance(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", NORM_CASES, ids=[c[0] for c in NORM_CASES])
def test_normalize_rows_and_row_norm_match_the_definition(case):
    _, shape, dtype, simplified, scale, bias = case
    x, s, b = _norm_inputs(shape, dtype, scale, bias)
    eps = 1e-5
    expected = _reference_norm(x, eps, s, b, simplified)
    kept = x.copy()
    np.testing.assert_allclose(normalize_rows(x, eps, s, b, simplified), expected, **_tolerance(dtype))
    np.testing.assert_array_equal(x, kept)  # (not in place unless asked)
    norm = RowNorm(eps, s, b, simplified)
    for _ in range(2):  # the second call takes the prepared shape
        y = norm(x)
        assert y.dtype == dtype and y.shape == shape
        np.testing.assert_allclose(y, expected, **_tolerance(dtype))
    np.testing.assert_array_equal(x, kept)
    assert norm.prepared(x) and not norm.prepared(x.astype(np.float64 if dtype == np.float32 else np.float32))
    y = norm(x, in_place=True)
    np.testing.assert_allclose(y, expected, **_tolerance(dtype))
    assert np.shares_memory(y, x)


def test_row_norm_takes_each_shape_and_type_on_its_own():
    """One RowNorm without scale called with alternating shapes and types (each prepared separately,
    the cache cleared past 16 shapes), every result checked."""
    norm = RowNorm(1e-6)
    rng = np.random.default_rng(1)
    for rows in list(range(1, 20)) + [3, 1]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal((rows, 24)).astype(dtype)
            np.testing.assert_allclose(norm(x), _reference_norm(x, 1e-6, None, None, False), **_tolerance(dtype))


def test_row_norm_scale_that_does_not_fit_raises_value_error():
    norm = RowNorm(1e-5, np.ones(5, np.float32))
    with pytest.raises(ValueError):
        norm(np.ones((2, 4), np.float32))


def _reference_softmax_product(s, v):
    s = s.astype(np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


def _scores(shape, seed=0, spread=3.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * spread).astype(np.float32)


# (id, scores shape, values' last size, how the scores are changed, result expected: True or None)
SOFTMAX_CASES = [
    ("plain", (2, 4, 16, 16), 16, None, True),
    ("one_row", (1, 7), 5, None, True),
    ("long_rows", (3, 200), 8, None, True),
    ("padding_mask", (2, 2, 5, 6), 4, "mask_last_keys", True),
    ("causal_frontier", (2, 2, 6, 6), 4, "causal", True),
    ("score_above_safe_top", (2, 3, 4), 4, "large", None),
    ("row_fully_masked", (2, 3, 4), 4, "row_minus_inf", None),
    ("row_of_mask_value", (2, 3, 4), 4, "row_minus_1e4", None),
    ("nan_score", (2, 3, 4), 4, "nan", None),
]


def _changed(s, how):
    s = s.copy()
    if how == "mask_last_keys":
        s[..., -2:] += np.float32(-10000.0)
    elif how == "causal":
        s[..., np.triu_indices(s.shape[-1], 1)[0], np.triu_indices(s.shape[-1], 1)[1]] = -np.inf
    elif how == "large":
        s[0, 1, 2] = SAFE_TOP + 1
    elif how == "row_minus_inf":
        s[1, 2, :] = -np.inf
    elif how == "row_minus_1e4":
        s[1, 2, :] = -10000.0
    elif how == "nan":
        s[0, 0, 0] = np.nan
    return s


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=[c[0] for c in SOFTMAX_CASES])
def test_softmax_product(case):
    _, shape, width, how, expected = case
    s = _changed(_scores(shape), how)
    v = np.random.default_rng(2).standard_normal(shape[:-2] + (shape[-1], width)).astype(np.float32)
    y = softmax_product(s.copy(), v)
    if expected is None:
        assert y is None
        return
    want = _reference_softmax_product(s, v)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_softmax_product_with_another_product():
    s = _scores((2, 3, 5, 5))
    v = np.random.default_rng(3).standard_normal((2, 3, 5, 4)).astype(np.float32)
    doubled = softmax_product(s.copy(), v, product=lambda p, w: np.matmul(p, 2 * w))
    np.testing.assert_allclose(doubled, 2 * _reference_softmax_product(s, v), rtol=1e-5, atol=1e-6)
