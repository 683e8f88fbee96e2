"""``grouped_matmul`` (grouped-query attention's repeated heads read as a broadcast, rule
``repeated_heads``) against numpy's own ``repeat`` then ``matmul``.

Each line of ``CASES`` is (shape of a, shape of b, axis, groups); a None result is expected exactly
for the lines of ``MISFITS``. The whole-model checks (against ``optimize=0`` and onnxruntime) are the
fixtures tests/fixtures/optimizer/repeated_heads*.onnxtext.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.fused.attention import grouped_matmul

RNG = np.random.default_rng(18)

CASES = [
    ((2, 4, 5, 8), (2, 2, 8, 5), 1, 2),  # Llama-like scores: q heads folded into the rows
    ((1, 8, 3, 16), (1, 1, 16, 3), 1, 8),  # multi-query attention (one key head)
    ((2, 4, 5, 5), (2, 2, 5, 8), 1, 2),  # probabilities times repeated values
    ((6, 3, 4), (2, 4, 7), 0, 3),  # 3-D, heads first
    ((2, 6, 3, 5, 4), (2, 3, 3, 4, 5), 1, 2),  # heads not the last batch axis: broadcast path
    ((3, 2, 4, 6), (3, 2, 6, 2), 1, 1),  # one group: a plain product
]

MISFITS = [
    ((2, 4, 5, 8), (2, 3, 8, 5), 1, 2),  # 3 * 2 != 4 heads
    ((2, 4, 5, 8), (2, 2, 8, 5), 2, 2),  # axis is a matrix axis
    ((4, 5, 8), (2, 2, 8, 5), 0, 2),  # ranks differ
]


@pytest.mark.parametrize("a_shape, b_shape, axis, groups", CASES, ids=str)
@pytest.mark.parametrize("strided", [False, True])
def test_grouped_matmul_is_repeat_then_matmul(a_shape, b_shape, axis, groups, strided):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    if strided:  # a transposed view, as exporters' head layouts give it
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    expected = np.matmul(a, np.repeat(b, groups, axis=axis))
    got = grouped_matmul(a, b, axis, groups)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape, axis, groups", MISFITS, ids=str)
def test_misfits_give_none(a_shape, b_shape, axis, groups):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    assert grouped_matmul(a, b, axis, groups) is None
