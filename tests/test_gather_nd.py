"""GatherND and ScatterND against onnxruntime: tables of index layouts (GatherND's flat path without
batch dimensions and its general path with them; a few index tuples, whose positions both kernels
compute in Python, and more), negative indices, and indices outside the data, which are an error."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_matches_onnxruntime, node_model

from onnxtext import Evaluator
from onnxtext.errors import EvalError

DATA = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
# (what the case exercises, indices, batch_dims)
CASES = [
    ("whole elements (k = rank)", np.array([[0, 1, 2], [1, 2, 3]], np.int64), 0),
    ("rows (k < rank)", np.array([[1, 0], [0, 2], [1, 2]], np.int64), 0),
    ("slices of the first axis (k = 1)", np.array([[1], [0]], np.int64), 0),
    ("negative indices", np.array([[-1, -3], [0, -1]], np.int64), 0),
    ("extra leading axes", np.array([[[[0, 1]], [[1, -2]]]], np.int64), 0),
    ("a mask lookup (GPT-2 dynamo's: 16 pairs)", np.stack([np.zeros(16, np.int64), np.arange(16) % 3], -1)[None, None], 0),
    ("batch_dims 1 (the general path)", np.array([[[1, 2]], [[0, 3]]], np.int64), 1),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gather_nd_matches_onnxruntime(case):
    _, indices, batch_dims = case
    model = node_model("GatherND", {"data": DATA, "indices": indices}, {"batch_dims": batch_dims})
    assert_matches_onnxruntime(model, {"data": DATA, "indices": indices})


@pytest.mark.parametrize("indices", [np.array([[2, 0]], np.int64), np.array([[0, 3]], np.int64),
                                     np.array([[-3, 0]], np.int64)], ids=["first axis", "second axis", "below -n"])
def test_gather_nd_refuses_indices_outside_the_data(indices):
    model = node_model("GatherND", {"data": DATA, "indices": indices})
    with pytest.raises(EvalError, match="GatherND"):
        Evaluator(model).run(None, {"data": DATA, "indices": indices})


# ScatterND (reduction none) of a few index tuples takes the same positions-in-Python path:
# (what the case exercises, data, indices, updates)
SCATTER_CASES = [
    ("elements, BART's shift of the first token", np.zeros((2, 16), np.int64), np.array([[[0, 0]], [[1, 0]]], np.int64),
     np.array([[2], [2]], np.int64)),
    ("rows (k < rank)", np.zeros((3, 4), np.float32), np.array([[2], [0]], np.int64),
     np.arange(8, dtype=np.float32).reshape(2, 4)),
    ("negative indices", DATA, np.array([[-1, -3]], np.int64), np.full((1, 4), 7, np.float32)),
    ("more tuples than the Python path takes", np.zeros((2, 16), np.int64),
     np.stack(np.meshgrid(np.arange(2), np.arange(1, 16), indexing="ij"), -1).astype(np.int64),
     np.arange(30, dtype=np.int64).reshape(2, 15)),
]


@pytest.mark.parametrize("case", SCATTER_CASES, ids=[c[0] for c in SCATTER_CASES])
def test_scatter_nd_matches_onnxruntime(case):
    _, data, indices, updates = case
    feeds = {"data": data, "indices": indices, "updates": updates}
    assert_matches_onnxruntime(node_model("ScatterND", feeds), feeds)


def test_scatter_nd_refuses_indices_outside_the_data():
    feeds = {"data": DATA, "indices": np.array([[2, 0]], np.int64), "updates": np.ones((1, 4), np.float32)}
    with pytest.raises(EvalError, match="ScatterND|index"):
        Evaluator(node_model("ScatterND", feeds)).run(None, feeds)
