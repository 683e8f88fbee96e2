"""``LayoutViews`` (onnxtext/evaluator/fused/shape_cone.py) replays a chain of transposes and reshapes
recorded per (shape, strides, source shapes): the replay must give what the chain gives, for inputs of
one shape with different strides (a contiguous array and a transposed view), and calls whose reshape
target comes from a source's shape. Rule-level fixtures: tests/fixtures/optimizer/layout_views*.onnxtext.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.fused.shape_cone import LayoutViews


def _merge_heads(x, *sources):
    """A reshape op as the rule builds them: (B, S, N, H) -> (B, S, N*H), or to a source's shape."""
    return x.reshape(sources[0].shape) if sources else x.reshape(x.shape[0], x.shape[1], -1)


def _fallback(*_):
    raise AssertionError("the fallback runs only for data that is not an array")


def _reference(x, sources, perms_and_reshapes):
    for op in perms_and_reshapes:
        x = x.transpose(op) if isinstance(op, tuple) else _merge_heads(x, *sources)
    return x


CHAINS = [  # (id, ops: a perm tuple for a transpose, "r" for the reshape)
    ("transpose_then_merge", [(0, 2, 1, 3), "r"]),
    ("identity_reshape_transpose_merge", ["r4", (0, 2, 1, 3), "r"]),
]


@pytest.mark.parametrize("case", CHAINS, ids=[c[0] for c in CHAINS])
def test_replayed_chain_matches_the_views(case):
    _, chain = case
    ops = []
    for op in chain:
        if op == "r":
            ops.append((True, _merge_heads, ()))
        elif op == "r4":
            ops.append((True, lambda x: x.reshape(x.shape), ()))
        else:
            ops.append((False, op, ()))
    step = LayoutViews(ops, _fallback)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((2, 4, 5, 3)).astype(np.float32)
    strided = np.ascontiguousarray(base.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # same shape, other strides
    for x in (base, strided, base, strided, rng.standard_normal((1, 4, 2, 3)).astype(np.float32)):
        want = _reference(x, (), [op if op != "r4" else (0, 1, 2, 3) for op in chain])
        got = step(x)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert len(step.recipes) == 3  # (two stride patterns of one shape, and the second shape)


def test_reshape_target_from_a_source_shape():
    step = LayoutViews([(False, (0, 2, 1, 3), ()), (True, _merge_heads, (0,))], _fallback)
    rng = np.random.default_rng(1)
    for b, s in ((2, 5), (3, 2), (2, 5)):
        x = rng.standard_normal((b, 4, s, 3)).astype(np.float32)
        target = np.empty((b, s, 12), np.float32)
        np.testing.assert_array_equal(step(x, target), x.transpose(0, 2, 1, 3).reshape(b, s, 12))
