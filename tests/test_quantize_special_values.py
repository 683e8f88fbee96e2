"""Dynamic uint8 quantization (DynamicQuantizeLinear, and com.microsoft DynamicQuantizeMatMul through
``quantize.dynamic_quantize_uint8``) of inputs with infinities, NaN and ranges that overflow float32,
against onnxruntime run on the same model.

A range from -inf has scale inf and zero point NaN before its clamp; onnxruntime's clamp turns that into
255. To add a case: one line in ``_SPECIAL_INPUTS``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from helpers import assert_close, node_model, run_onnxruntime
from onnxtext import Evaluator

_INF, _NAN = np.inf, np.nan

_SPECIAL_INPUTS = {
    "negative infinity": [1.0, -_INF, 2.0, 0.5],
    "positive infinity": [1.0, _INF, -2.0, 0.5],
    "both infinities": [_INF, -_INF, 1.0, 0.0],
    "negative infinity and zeros": [-_INF, 0.0, 0.0, 0.0],
    "negative infinity and NaN": [-_INF, _NAN, 3.0, -1.0],
    "NaN": [1.0, _NAN, -2.0, 0.5],
    "NaN and positive infinity": [_NAN, _INF, -2.0, 0.5],
    "all NaN": [_NAN, _NAN, _NAN, _NAN],
    "range overflowing float32": [3e38, -3e38, 1.0, 0.0],
    "finite": [-1.5, 0.25, 3.0, 0.0],
}


def _oracle(model, feeds):
    with warnings.catch_warnings():  # (onnxruntime is silent; numpy conversions in the helper may warn)
        warnings.simplefilter("ignore")
        return run_onnxruntime(model, feeds)


@pytest.mark.parametrize("values", list(_SPECIAL_INPUTS.values()), ids=list(_SPECIAL_INPUTS))
@pytest.mark.parametrize("optimize", [0, None])
def test_dynamic_quantize_linear_matches_onnxruntime(values, optimize):
    x = np.array(values, np.float32)
    model = node_model("DynamicQuantizeLinear", {"x": x}, outputs=("y", "scale", "zero_point"), opset=13)
    options = {} if optimize is None else {"optimize": optimize}
    got = Evaluator(model, **options).run(None, {"x": x})
    assert_close(got, _oracle(model, {"x": x}), 0, 0, "DynamicQuantizeLinear")


@pytest.mark.parametrize("values", list(_SPECIAL_INPUTS.values()), ids=list(_SPECIAL_INPUTS))
def test_dynamic_quantize_matmul_matches_onnxruntime(values):
    a = np.array(values, np.float32).reshape(2, 2)
    constants = {"b": np.array([[1, -2, 3], [4, 5, -6]], np.int8), "b_scale": np.array(0.5, np.float32),
                 "b_zero_point": np.array(0, np.int8)}
    model = node_model("DynamicQuantizeMatMul", {"a": a}, constants=constants, domain="com.microsoft", opset=13)
    with np.errstate(all="ignore"):
        got = Evaluator(model).run(None, {"a": a})
    np.testing.assert_allclose(got[0], _oracle(model, {"a": a})[0], rtol=1e-6, atol=0, equal_nan=True)
