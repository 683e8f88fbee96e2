"""The in-place activations of ``ActivatedConv`` (rule ``conv_activation``) against the operators' own
kernels: the rule is level 1, so the values must be identical (signed zeros included) for every dtype and for
NaN, infinities, signed zeros and values around the activations' corners. To add a case, add a line to
``CASES`` (the in-place object, the kernel it must equal)."""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.fused import conv_activation as fused
from onnxtext.evaluator.kernels.activation import hard_sigmoid, hard_swish, sigmoid

CASES = [
    ("hard_swish", fused.InPlaceHardSwish(), hard_swish),
    ("hard_sigmoid", fused.InPlaceHardSigmoid(0.2, 0.5), lambda x: hard_sigmoid(x, 0.2, 0.5)),
    ("hard_sigmoid_paddle", fused.InPlaceHardSigmoid(1 / 6, 0.5), lambda x: hard_sigmoid(x, 1 / 6, 0.5)),
    ("silu", fused.InPlaceSiLU(), lambda x: x * sigmoid(x)),
    ("clip", fused.InPlaceClip(np.float32(0), np.float32(6)), lambda x: np.minimum(np.maximum(x, 0), 6)),
]


def _values(dtype, size):
    x = (np.random.default_rng(size).standard_normal(size) * 4).astype(dtype)
    corners = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0, -3.0, 2.5, -2.5, 6.0, 1e-30, -1e-30]
    x[:len(corners)] = corners
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [20, fused.BLOCK + 7])  # one block, and a partial second block
@pytest.mark.parametrize("name, activation, kernel", CASES, ids=[c[0] for c in CASES])
def test_inplace_activation_is_the_kernel(name, activation, kernel, dtype, size):
    x = _values(dtype, size)
    y = x.copy()
    with np.errstate(all="ignore"):
        activation.inplace(y)
        expected = np.asarray(kernel(x), dtype=dtype)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, expected)  # (NaN equal to NaN: its sign bit carries nothing)
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(y[numbers]), np.signbit(expected[numbers]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [20, fused.BLOCK + 7])
def test_divided_silu_within_one_ulp(dtype, size):
    """Rule ``conv_silu_divided`` (level 2): ``y / (1 + exp(-y))`` against the nodes' ``y * sigmoid(y)``: at
    most one ulp apart where the result is a normal number, at most the smallest normal apart below; NaN,
    infinities and signed zeros as the nodes give them; the fallback call gives the in-place values bit for
    bit."""
    x = _values(dtype, size)
    x[12:16] = [-80.0, -87.0, -88.5, -104.0]  # exp(-y) near and past float32's overflow
    y = x.copy()
    with np.errstate(all="ignore"):
        fused.InPlaceSiLUDivided().inplace(y)
        called = fused.InPlaceSiLUDivided()(x.copy())
        nodes = np.asarray(x * sigmoid(x), dtype=dtype)
    np.testing.assert_array_equal(called, y)
    numbers = ~np.isnan(nodes)
    np.testing.assert_array_equal(np.isnan(y), ~numbers)
    np.testing.assert_array_equal(np.signbit(y[numbers]), np.signbit(nodes[numbers]))
    infinite = np.isinf(nodes)
    np.testing.assert_array_equal(y[infinite], nodes[infinite])
    normal = numbers & ~infinite & (np.abs(nodes) >= np.finfo(dtype).tiny)
    ulps = np.abs(y[normal] - nodes[normal]) / np.spacing(np.abs(nodes[normal]))
    assert ulps.max() <= 1, f"{ulps.max()} ulps from the nodes at {x[normal][ulps.argmax()]!r}"
    tiny = numbers & ~infinite & ~normal  # (subnormal results: the product rounds its factor there)
    assert np.all(np.abs(y[tiny] - nodes[tiny]) <= np.finfo(dtype).tiny)
