"""GatherND against onnxruntime: a table of index layouts (the kernel's flat path without batch dimensions,
the general path with them), negative indices, and indices outside the data, which are an error."""

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
