"""``UnchangedCast`` (rule ``norm_casts``, onnxtext/evaluator/fused/normalization.py): a Cast to float
whose result is read again passes a value already of that type on as the same array (values are never
changed in place, as Identity passes them on) and runs the Cast for anything else. The rule's fixture:
tests/fixtures/optimizer/norm_casts.residual.onnxtext.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.fused.normalization import UnchangedCast


def _cast_to_float32(x):
    return np.asarray(x).astype(np.float32)


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float64).reshape(2, 3) / 7, np.arange(4, dtype=np.int64),
                                   np.float16([1.5, -2.25])], ids=["float64", "int64", "float16"])
def test_other_types_are_cast(value):
    got = UnchangedCast(np.float32, _cast_to_float32)(value)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, value.astype(np.float32))


def test_own_type_is_passed_on():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    assert UnchangedCast(np.float32, _cast_to_float32)(x) is x
