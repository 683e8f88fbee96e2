"""Linear layers as exporters write them, MatMul + Add and Gemm (with a Relu or not), through the fused
step (fused/linear.MatMulAdd: ``np.dot`` for matrices, the bias repeated to small products' shapes,
fused/affine.InPlaceRelu: zeros of the result's shape for small results) against onnxruntime and
``optimize=0``. Each model runs several times, with several batch sizes, so that the compiled plan and
the per-shape caches are exercised, including a cache that starts again after too many shapes.
A case is a line of the table below."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnxtext import Evaluator
from onnxtext.evaluator.fused.affine import SMALL_RELU_MAX_VALUES
from onnxtext.evaluator.fused.linear import TILED_BIAS_MAX_VALUES
from onnxtext.evaluator.kernels.linalg import matrix_product

from helpers import assert_close, graph_model, run_onnxruntime

_RNG = np.random.default_rng(18)
_LARGE_ROWS = TILED_BIAS_MAX_VALUES // 64 + 1  # a 64-wide product of more values than the tiled bias's limit

# form, input shape with None for the batch, weight shape (K, N), bias values, relu, batch sizes run
_CASES = [
    ("gemm", (None, 32), (32, 64), 64, True, [8, 1, 3]),  # torch's Linear + ReLU (torch_mlp)
    ("gemm", (None, 64), (64, 10), 10, False, [8, 2]),
    ("gemm", (None, 16), (16, 16), 1, False, [4]),  # a bias of one value broadcast
    ("gemm", (None, 16), (16, 64), 64, True, [SMALL_RELU_MAX_VALUES // 64 + 1, 2]),  # Relu above the small limit
    ("matmul", (None, 32), (32, 64), 64, True, [8, 1]),
    ("matmul", (None, 5, 16), (16, 8), 8, False, [2, 1]),  # 3-D: matmul, the bias repeated to (B, 5, 8)
    ("matmul", (None, 64), (64, 64), 64, False, [_LARGE_ROWS, 4]),  # above the tiled bias's limit
    ("matmul", (None, 24), (24, 12), 12, True, list(range(1, 12))),  # more batch sizes than the cache keeps
    ("matmul", (16,), (16, 8), 8, False, [None]),  # 1-D input: a 1-D product
]


def _model(form, in_shape, w_shape, bias_size, relu):
    w = _RNG.standard_normal(w_shape).astype(np.float32)
    b = _RNG.standard_normal(bias_size).astype(np.float32)
    if form == "gemm":
        nodes = [helper.make_node("Gemm", ["x", "wt", "b"], ["z"], transB=1)]
        constants = {"wt": np.ascontiguousarray(w.T), "b": b}
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["z"])]
        constants = {"w": w, "b": b}
    nodes.append(helper.make_node("Relu", ["z"], ["y"]) if relu else helper.make_node("Identity", ["z"], ["y"]))
    model = graph_model(nodes, {"x": [d if d is not None else "batch" for d in in_shape]}, ["y"], constants)
    return model


@pytest.mark.parametrize("form, in_shape, w_shape, bias_size, relu, batches", _CASES)
def test_linear_layer_matches_onnxruntime_and_unoptimized(form, in_shape, w_shape, bias_size, relu, batches):
    model = _model(form, in_shape, w_shape, bias_size, relu)
    fused, plain = Evaluator(model), Evaluator(model, optimize=0)
    for batch in batches:
        shape = tuple(batch if d is None else d for d in in_shape)
        x = _RNG.standard_normal(shape).astype(np.float32)
        want = run_onnxruntime(model, {"x": x})
        for run in range(4):  # the fourth run is the compiled plan's
            got = fused.run(None, {"x": x})
            assert_close(got, want, 1e-5, 1e-5, f"{form} batch {batch} run {run}:")
            assert not np.shares_memory(got[0], x)
        assert_close(got, plain.run(None, {"x": x}), 1e-5, 1e-5, f"{form} batch {batch} vs optimize=0:")


def test_results_are_fresh_arrays():
    """The bias repeated to a shape and the zeros are shared, read-only: results never alias them."""
    model = _model("gemm", (None, 32), (32, 64), 64, True)
    ev = Evaluator(model)
    x = _RNG.standard_normal((8, 32)).astype(np.float32)
    first = ev.run(None, {"x": x})[0]
    kept = first.copy()
    first += 100.0  # a caller writing into a result
    for _ in range(4):
        np.testing.assert_array_equal(ev.run(None, {"x": x})[0], kept)


# a shape, b shape, dtype: matrix_product is the MatMul kernel's product (np.dot for two matrices)
_PRODUCTS = [((8, 64), (64, 64), np.float32), ((1, 7), (7, 3), np.float64), ((5, 1), (1, 4), np.float32),
             ((2, 3, 4), (4, 5), np.float32), ((4,), (4, 6), np.float32), ((3, 4), (4,), np.float32),
             ((6, 5), (5, 2), np.int64), ((0, 3), (3, 2), np.float32),
             ((16, 2, 64), (64, 192), np.float32), ((2, 3, 4, 5), (5, 6), np.float64),  # stacks: one product
             ((3, 0, 4), (4, 2), np.float32), ((2, 3, 0), (0, 4), np.float32),  # empty stacks and inner axis
             ((2, 3, 4), (2, 4, 5), np.float32),  # a batched b: matmul
             ((2, 3, 4), (5, 6), np.float32)]  # mismatched: matmul's own error


@pytest.mark.parametrize("a_shape, b_shape, dtype", _PRODUCTS)
def test_matrix_product_is_matmul(a_shape, b_shape, dtype):
    a = (_RNG.standard_normal(a_shape) * 4).astype(dtype)
    b = (_RNG.standard_normal(b_shape) * 4).astype(dtype)
    try:
        want = np.matmul(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            matrix_product(a, b)
        return
    got = matrix_product(a, b)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # the same BLAS products


def test_matrix_product_of_a_strided_stack_is_matmul():
    """A stack that is a view (transposed, every other row) cannot be one product of its rows: matmul's."""
    a = _RNG.standard_normal((4, 6, 5)).astype(np.float32)
    b = _RNG.standard_normal((5, 3)).astype(np.float32)
    for view in (a.transpose(1, 0, 2), a[:, ::2]):
        assert not view.flags.c_contiguous
        np.testing.assert_array_equal(matrix_product(view, b), np.matmul(view, b))
