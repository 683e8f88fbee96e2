"""Nearest Resize against onnxruntime, through a one-node model run twice (the second run reuses the
per-geometry index tables). Integer upsamplings (every input repeated f times in order) are repeats
instead of gathers: ``REPEATS`` must take that path, ``GATHERS`` must not. To add a case, add a line.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_matches_onnxruntime, node_model
from onnxtext.evaluator.kernels import resize as resize_module

RNG = np.random.default_rng(23)

# (input shape, scales, coordinate_transformation_mode, nearest_mode)
REPEATS = [
    ((2, 8, 10, 10), [1, 1, 2, 2], "asymmetric", "floor"),  # YOLO's upsampling
    ((1, 4, 13, 13), [1, 1, 2, 2], "half_pixel", "round_prefer_floor"),  # the defaults
    ((1, 3, 5, 7), [1, 1, 3, 1], "asymmetric", "floor"),  # one axis, by three
    ((1, 3, 5, 7), [1, 1, 1, 4], "half_pixel", "round_prefer_floor"),
    ((2, 3, 6), [1, 1, 2], "asymmetric", "floor"),  # 1-D
    ((1, 2, 3, 4, 5), [1, 1, 2, 2, 2], "asymmetric", "floor"),  # 3-D
    ((2, 3, 4, 4), [2, 1, 2, 2], "asymmetric", "floor"),  # the batch axis too
    ((1, 3, 4, 4), [1, 1, 2, 2], "align_corners", "round_prefer_floor"),  # doubling picks pairs here too
    ((1, 3, 4, 4), [1, 1, 2, 2], "pytorch_half_pixel", "round_prefer_ceil"),
]

GATHERS = [
    ((1, 3, 4, 4), [1, 1, 3, 3], "align_corners", "round_prefer_floor"),  # 0 0 1 1 1 1 2 2 2 2 3 3
    ((1, 3, 4, 6), [1, 1, 1.5, 1.5], "asymmetric", "floor"),  # not an integer factor
    ((1, 3, 8, 8), [1, 1, 0.5, 0.5], "asymmetric", "floor"),  # downsampling
    ((1, 3, 4, 4), [1, 1, 2, 2], "half_pixel", "ceil"),  # shifted by one: not in order
]


def _model(shape, scales, coordinate_mode, nearest_mode, dtype):
    x = (RNG.standard_normal(shape) * 100).astype(dtype)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coordinate_mode, "nearest_mode": nearest_mode}
    constants = {"roi": np.zeros(0, np.float32), "scales": np.array(scales, np.float32)}
    return node_model("Resize", {"x": x}, attrs, constants=constants, opset=19), x


def _factors(shape, scales, coordinate_mode, nearest_mode):
    return [resize_module._nearest_indices(coordinate_mode, nearest_mode, int(np.floor(np.float32(n) * np.float32(s))),
                                           n, float(np.float32(s)), 0.0, 1.0)[1]
            for n, s in zip(shape, scales) if s != 1]


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize("case", REPEATS + GATHERS, ids=str)
def test_nearest_resize_matches_onnxruntime(case, dtype):
    model, x = _model(*case, dtype)
    for _ in range(2):
        assert_matches_onnxruntime(model, {"x": x}, rtol=0, atol=0)
        x = (RNG.standard_normal(x.shape) * 100).astype(dtype)


@pytest.mark.parametrize("case", REPEATS, ids=str)
def test_integer_upsamplings_are_repeats(case):
    assert all(f > 1 for f in _factors(*case))


@pytest.mark.parametrize("case", GATHERS, ids=str)
def test_other_picks_are_gathers(case):
    assert not any(_factors(*case))


def test_repeat_of_a_non_contiguous_input_is_a_gather():
    x = RNG.standard_normal((1, 3, 6, 8)).astype(np.float32)[:, :, :, ::2]
    index, factor = resize_module._nearest_indices("asymmetric", "floor", 8, 4, 2.0, 0.0, 1.0)
    assert factor == 2
    np.testing.assert_array_equal(resize_module._nearest_axis(x, 3, index, factor), np.repeat(x, 2, axis=3))
