"""Rule ``layout_views`` on Splits and one-index Gathers (``SplitViews``, ``IndexView`` in
onnxtext/evaluator/fused/shape_cone.py): their results, when they only reach BLAS products through
views, are views of their input. The positive cases are the fixtures
tests/fixtures/optimizer/layout_views.split.onnxtext and layout_views.gather.onnxtext; here, the ones
that must keep their copies (a part read by another operator, kept as an output, a Gather of a 1-D
index), and the views against the kernel's copies on several shapes and split sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, run_onnxruntime, text_model

from onnxtext import Evaluator
from onnxtext.evaluator.fused.shape_cone import SplitViews

ATTENTION_AFTER_SPLIT = """<ir_version: 8, opset_import: ["": 17]>
g (float[N, S, 24] x) => (float[N, S, 2, 4] y{extra_output}) {{
  sizes = Constant <value = int64[3] {{8, 8, 8}}> ()
  heads = Constant <value = int64[4] {{0, 0, 2, 4}}> ()
  scale = Constant <value = float {{0.5}}> ()
  q, k, v = Split <axis = 2> (x, sizes)
  qh = Reshape(q, heads)
  kh = Reshape(k, heads)
  vh = Reshape(v, heads)
  qt = Transpose <perm = [0, 2, 1, 3]> (qh)
  kt = Transpose <perm = [0, 2, 3, 1]> (kh)
  vt = Transpose <perm = [0, 2, 1, 3]> (vh)
  s = MatMul(qt, kt)
  sc = Mul(s, scale)
  p = Softmax <axis = -1> (sc)
  o = MatMul(p, vt)
  y = Transpose <perm = [0, 2, 1, 3]> (o){extra_node}
}}
"""

# (id, extra output declaration, extra node): each makes a part of the Split needed as its own array
KEEPS_COPIES = [
    ("part_read_by_relu", ", float[N, S, 8] r", "\n  r = Relu(v)"),
    ("part_is_an_output", ", float[N, S, 8] k", ""),
]


@pytest.mark.parametrize("case", KEEPS_COPIES, ids=[c[0] for c in KEEPS_COPIES])
def test_split_keeps_its_copies(case):
    _, extra_output, extra_node = case
    model = text_model(ATTENTION_AFTER_SPLIT.format(extra_output=extra_output, extra_node=extra_node))
    ev = Evaluator(model)
    assert not any(type(st.fn) is SplitViews for st in ev._plan_for(None, ()).steps)
    rng = np.random.default_rng(0)
    for shape in ((2, 5, 24), (1, 3, 24)):
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        assert_close(ev.run(None, feeds), run_onnxruntime(model, feeds), 1e-5, 1e-5)


def _kernel_split(data, sizes, axis):
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(data, bounds, axis=axis))


# (id, data shape, sizes, axis)
SPLITS = [
    ("last_axis", (2, 5, 24), (8, 8, 8), 2),
    ("negative_axis", (2, 5, 24), (4, 12, 8), -1),
    ("first_axis", (6, 3), (1, 5), 0),
    ("middle_axis", (2, 7, 3), (3, 0, 4), 1),
]


@pytest.mark.parametrize("case", SPLITS, ids=[c[0] for c in SPLITS])
def test_split_views_equal_the_parts(case):
    _, shape, sizes, axis = case
    calls = []

    def original(data):  # (the node's own step: copies)
        calls.append(data.shape)
        return tuple(p.copy() for p in _kernel_split(data, sizes, axis))

    step = SplitViews(original, axis)
    rng = np.random.default_rng(1)
    for _ in range(2):  # the second call takes the views
        data = rng.standard_normal(shape).astype(np.float32)
        parts = step(data)
        for got, want in zip(parts, _kernel_split(data, sizes, axis), strict=True):
            np.testing.assert_array_equal(got, want)
    assert calls == [shape]
    assert all(np.shares_memory(p, data) for p in parts if p.size)


GATHER_AFTER_STACK = """<ir_version: 8, opset_import: ["": 17]>
g (float[3, N, S, 8] x) => (float[N, S, 2, 4] y{extra_output}) {{
  i0 = Constant <value = int64 {{0}}> ()
  i1 = Constant <value = int64 {{1}}> ()
  i2 = Constant <value = {v_index}> ()
  axes = Constant <value = int64[1] {{0}}> ()
  heads = Constant <value = int64[4] {{0, 0, 2, 4}}> ()
  q = Gather <axis = 0> (x, i0)
  k = Gather <axis = 0> (x, i1)
  v = Gather <axis = 0> (x, i2){v_reshape}
  qh = Reshape(q, heads)
  kh = Reshape(k, heads)
  vh = Reshape({v_name}, heads)
  qt = Transpose <perm = [0, 2, 1, 3]> (qh)
  kt = Transpose <perm = [0, 2, 3, 1]> (kh)
  vt = Transpose <perm = [0, 2, 1, 3]> (vh)
  s = MatMul(qt, kt)
  p = Softmax <axis = -1> (s)
  o = MatMul(p, vt)
  y = Transpose <perm = [0, 2, 1, 3]> (o){extra_node}
}}
"""

# (id, v's index constant, a step between v and its reshape, the name reshaped, extra output, extra node,
#  Gathers expected as views)
GATHER_CASES = [
    ("all_three_views", "int64 {2}", "", "v", "", "", 3),
    ("v_read_by_relu", "int64 {2}", "", "v", ", float[N, S, 8] r", "\n  r = Relu(v)", 2),
    ("v_through_identity", "int64 {2}", "\n  v2 = Identity(v)", "v2", "", "", 2),
    ("v_index_one_element_1d", "int64[1] {2}", "\n  v2 = Squeeze(v, axes)", "v2", "", "", 2),
]


@pytest.mark.parametrize("case", GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
def test_gathers_of_one_index(case):
    _, v_index, v_reshape, v_name, extra_output, extra_node, views = case
    model = text_model(GATHER_AFTER_STACK.format(v_index=v_index, v_reshape=v_reshape, v_name=v_name,
                                                 extra_output=extra_output, extra_node=extra_node))
    ev = Evaluator(model)
    assert sum(type(st.fn).__name__ == "IndexView" for st in ev._plan_for(None, ()).steps) == views
    rng = np.random.default_rng(2)
    for shape in ((3, 2, 5, 8), (3, 1, 3, 8)):
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        assert_close(ev.run(None, feeds), run_onnxruntime(model, feeds), 1e-5, 1e-5)
