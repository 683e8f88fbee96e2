"""``ConvFakeQuantize`` between two convolutions (rule ``fake_quantize_into_conv``, neither ``divide`` nor
``multiply``): the codes ``clip(rint(x), low, high)`` of an input already divided by the scale, rounded in
place into the conv's fresh result, a copy made of a read-only one. Checked against onnxruntime's
QuantizeLinear with scale 1 (its codes minus the zero point). To add a case, add a line to CASES."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import node_model, run_onnxruntime

from onnxtext.evaluator.fused.quantization import ConvFakeQuantize, FakeQuantize

RNG = np.random.default_rng(21)
# (shape, zero point, its type, special values written at the first positions)
CASES = [
    ((2, 16, 16, 16), 128, np.uint8, ()),
    ((2, 32, 8, 8), 0, np.int8, ()),
    ((1, 3, 5, 7), 3, np.uint8, (np.nan, np.inf, -np.inf, 2.5, -2.5, 0.5, -0.5, -0.2)),
    ((1, 1, 1, 1), -7, np.int8, (np.nan,)),
    ((0, 4, 3, 3), 0, np.uint8, ()),
]


def _input(shape, specials):
    x = (RNG.standard_normal(shape) * 150).astype(np.float32)
    x.reshape(-1)[:len(specials)] = specials
    return x


def _codes(x, zero_point, dtype):
    model = node_model("QuantizeLinear", {"x": x}, constants={"s": np.array(1.0, np.float32),
                                                            "z": np.array(zero_point, dtype)}, opset=13)
    return run_onnxruntime(model, {"x": x})[0].astype(np.float32) - np.float32(zero_point)


@pytest.mark.parametrize("writeable", [True, False])
@pytest.mark.parametrize("shape,zero_point,dtype,specials", CASES)
def test_codes_match_onnxruntime(shape, zero_point, dtype, specials, writeable):
    x = _input(shape, specials)
    want = _codes(x, zero_point, dtype)
    fq = ConvFakeQuantize(FakeQuantize(np.float32(0.5), zero_point, np.dtype(dtype), None), divide=False,
                          multiply=False)
    given = x.copy()
    given.flags.writeable = writeable
    got = fq(given)
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_array_equal(got, want)  # (a code may be -0.0 here: the reading conv sums it as 0)
    if not writeable:
        assert given.tobytes() == x.tobytes()
