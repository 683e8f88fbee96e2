"""DynamicQuantizeLinear's fast path (kernels/quantize.py ``dynamic_quantize_codes``), which skips the clip
when the codes of the minimum and the maximum are in range: bit for bit against onnxruntime on tensors
whose extreme codes do and do not fall outside ``[-zp, 255 - zp]``, and the codes against the clip-always
formula. To add a case: one line in ``_CASES`` (values, or a seeded generator's name and size).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, node_model, run_onnxruntime

from onnxtext import Evaluator
from onnxtext.evaluator.kernels.quantize import dynamic_quantize_codes

# extreme codes outside the range before the clip (the zero point rounded the other way): found by search
_CLIPPED = [
    [-29.461267471313477, 78.63402557373047, 3.25],
    [-160.92767333984375, 31.281023025512695],
    [-11.634521484375, 179.77212524414062, 0.0, -1.5],
    [-121.12342071533203, 128.969482421875],
]
_CASES = [
    *_CLIPPED,
    "normal 3456",  # an LSTM head's activations
    "positive 100",  # zero point 0
    "negative 100",  # zero point 255
    "shifted 500",
    [0.0, 0.0, 0.0],  # scale 1
    [1e-42, -3e-43],  # subnormal values
    [3.0e38, -3.0e38],  # the range overflows float32: scale infinity
]


def _values(case):
    if not isinstance(case, str):
        return np.array(case, np.float32)
    kind, size = case.split()
    rng = np.random.default_rng(int(size))
    x = rng.standard_normal(int(size))
    x = {"normal": x, "positive": np.abs(x) + 0.5, "negative": -np.abs(x) * 3, "shifted": x + 2.25}[kind]
    return x.astype(np.float32)


@pytest.mark.parametrize("case", _CASES, ids=str)
def test_dynamic_quantize_linear_equals_onnxruntime(case):
    x = _values(case)
    model = node_model("DynamicQuantizeLinear", {"x": x}, outputs=("y", "y_scale", "y_zero_point"), opset=11,
                       ir_version=7)
    with np.errstate(all="ignore"):
        got = Evaluator(model).run(None, {"x": x})
        want = run_onnxruntime(model, {"x": x})
    assert_close(got, want, 0, 0, "vs onnxruntime:")


@pytest.mark.parametrize("case", _CASES, ids=str)
def test_codes_equal_the_clipped_formula(case):
    x = _values(case)
    with np.errstate(all="ignore"):
        codes, scale, zero_point = dynamic_quantize_codes(x)
        want = np.clip(np.rint(x / scale), np.float32(-zero_point), np.float32(255 - zero_point))
    assert codes.tobytes() == want.tobytes()


def test_clipped_cases_do_need_the_clip():
    """The _CLIPPED inputs exercise the clip: without it, an extreme code is outside the range."""
    for values in _CLIPPED:
        x = np.array(values, np.float32)
        _, scale, zero_point = dynamic_quantize_codes(x)
        raw = np.rint(x / scale)
        assert raw.min() < -zero_point or raw.max() > 255 - zero_point
