"""GlobalAveragePool and whole-image AveragePool (computed as a product with a vector of ``1 / size``)
against a float64 reference summing every element one by one. To add a case, add a line to a table."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from onnx import TensorProto

from helpers import node_model

from onnxtext.evaluator import Evaluator

RNG = np.random.default_rng(11)
TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}
# relative tolerance of each dtype's result against the float64 reference
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-3}

SHAPES = [
    (1, 1000, 13, 13),  # SqueezeNet's final pool
    (2, 64, 7, 7),
    (2, 32, 8, 8),  # the small CNN's final pool (torch_cnn_ts, ort_cnn_*)
    (0, 4, 3, 3),  # no image
    (1, 3, 1, 1),
    (3, 5, 4, 9),
    (1, 4, 10),  # 1-D
    (2, 3, 2, 3, 4),  # 3-D
    (1, 2, 224, 224),  # a long spatial axis
]


def _reference(x):
    """float64 mean over the spatial axes, element by element."""
    n, c = x.shape[:2]
    y = np.zeros((n, c) + (1,) * (x.ndim - 2))
    size = math.prod(x.shape[2:])
    for i, j in itertools.product(range(n), range(c)):
        total = 0.0
        for v in x[i, j].reshape(-1).tolist():
            total += v
        y[(i, j) + (0,) * (x.ndim - 2)] = total / size
    return y


def _run(op, x, **attrs):
    model = node_model(op, {"X": x}, attrs, outputs=("Y",), opset=19)
    return Evaluator(model).run(None, {"X": x})[0]


@pytest.mark.parametrize("dtype", list(TYPES))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", ["GlobalAveragePool", "AveragePool"])
def test_spatial_mean(op, shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype) + 3  # (an offset: the mean is not near zero)
    attrs = {"kernel_shape": list(shape[2:])} if op == "AveragePool" else {}
    y = _run(op, x, **attrs)
    assert y.dtype == x.dtype and y.shape == shape[:2] + (1,) * (len(shape) - 2)
    np.testing.assert_allclose(y.astype(np.float64), _reference(x.astype(np.float64)), rtol=TOLERANCE[dtype])


def test_non_finite_values_propagate():
    x = RNG.standard_normal((1, 5, 4, 4)).astype(np.float32)
    x[0, 0, 1, 2] = np.nan
    x[0, 1, 0, 0] = np.inf
    x[0, 2, 3, 3] = -np.inf
    x[0, 3, 0, 1], x[0, 3, 2, 2] = np.inf, -np.inf
    y = _run("GlobalAveragePool", x).reshape(-1)
    assert np.isnan(y[0]) and y[1] == np.inf and y[2] == -np.inf and np.isnan(y[3]) and np.isfinite(y[4])
