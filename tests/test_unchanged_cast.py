"""A Cast to a value's own type (skl2onnx's pipelines, Llama's and T5's norm inputs) passes the value on
without a copy (kernels/cast.py; values are never changed in place, as Identity passes them on): the
results still equal onnxruntime's, and nothing downstream that writes in place into a fresh result may
reach the caller's feed or the other readers of the value.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxtext import Evaluator
from onnxtext.evaluator.kernels.cast import cast

from helpers import assert_matches_onnxruntime, text_model

# (numpy type of the value, ONNX type to cast to)
SAME_TYPE = [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE), (np.int64, TensorProto.INT64),
             (np.int32, TensorProto.INT32), (np.uint8, TensorProto.UINT8), (np.bool_, TensorProto.BOOL),
             (np.float16, TensorProto.FLOAT16)]


@pytest.mark.parametrize("dtype,to", SAME_TYPE, ids=[np.dtype(d).name for d, _ in SAME_TYPE])
def test_own_type_is_passed_on(dtype, to):
    x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    assert cast(x, to) is x


@pytest.mark.parametrize("dtype,to", [(np.float64, TensorProto.FLOAT), (np.int64, TensorProto.FLOAT),
                                      (np.float32, TensorProto.INT64), (np.float16, TensorProto.FLOAT)])
def test_other_types_are_converted(dtype, to):
    x = (np.arange(12) / 3).astype(dtype).reshape(3, 4)
    got = cast(x, to)
    assert got is not x and got.dtype == helper.tensor_dtype_to_np_dtype(to)
    np.testing.assert_array_equal(got, x.astype(got.dtype))


# the Cast's result read by in-place fused steps (a product with its bias, a Relu) and again by an Add
PIPELINE = """
<ir_version: 8, opset_import: ["": 17]>
g (float[2, 4] x) => (float[2, 3] y, float[2, 4] z) <float[4, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                                                    float[3] b = {-40, 0.5, 1}> {
  c = Cast <to = 1> (x)
  p = MatMul(c, w)
  q = Add(p, b)
  y = Relu(q)
  n = Neg(c)
  r = Relu(n)
  z = Add(r, c)
}
"""


def test_pipeline_matches_onnxruntime_and_leaves_the_feed():
    model = text_model(PIPELINE)
    x = np.array([[1.0, -2.0, 3.0, -4.0], [0.5, 0.25, -0.125, 2.0]], np.float32)
    kept = x.copy()
    assert_matches_onnxruntime(model, {"x": x})
    ev = Evaluator(model)
    for _ in range(5):  # the first runs and the compiled plan
        ev.run(None, {"x": x})
    np.testing.assert_array_equal(x, kept)
