"""Every optimizer rule against its fixtures in tests/fixtures/optimizer/<rule>[.<variant>].onnxtext.

A fixture is the "before" model as onnxtext text, with header comments:

    # rule: gelu                       the rule the fixture is about
    # feeds: x float32[2, 3, 8]        one feed set per line (seeded random values), several allowed
    # after: Relu FusedGelu            the plan's steps at the default level: an op type for a step that
                                       runs its node's own kernel, else the class of the fused step
    # tolerance: 2e-3                  (optional) rtol and atol of the comparisons, 1e-5 by default

For each fixture: the plan is the "after" line; the outputs equal those of ``optimize=0`` (every node
its own step) and onnxruntime's, for every feed set in turn on the same Evaluator (so shape-keyed
caches are exercised); with the rule disabled, the plan differs (the rule is what made it).
Add a rewrite's fixture by adding a file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_close, run_onnxruntime, text_model

from onnxtext import Evaluator
from onnxtext.evaluator.optimizer import rule_names
from onnxtext.evaluator.registry import lookup

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "optimizer").glob("*.onnxtext"))


def header(text: str, key: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(rf"^# {key}:(.*)$", text, re.M)]


def feeds_from(spec: str, rng) -> dict:
    """``x float32[2, 3], m int64[2]`` -> seeded random arrays."""
    feeds = {}
    for name, dtype, dims in re.findall(r"(\w+) (\w+)\[([^\]]*)\]", spec):
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        if dtype.startswith("float"):
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == "bool":
            feeds[name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def plan_labels(ev) -> list[str]:
    labels = []
    for st in ev._plan_for(None, ()).steps:
        node = st.node
        k = lookup(node.op_type, st.info.domain, st.info.opset or 0)
        plain = k is not None and k.fn is st.fn and tuple(node.input) == st.inputs
        labels.append(node.op_type if plain else getattr(type(st.fn), "__name__", "?") if not
                      hasattr(st.fn, "__code__") else st.fn.__name__)
    return labels


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_rule_fixture(path):
    text = path.read_text()
    (rule,) = header(text, "rule")
    assert rule in rule_names(), f"{path.name}: unknown rule {rule!r}"
    (after,) = header(text, "after")
    model = text_model(text)
    optimized, reference = Evaluator(model), Evaluator(model, optimize=0)
    assert plan_labels(optimized) == after.split()
    assert plan_labels(Evaluator(model, disable=(rule,))) != after.split(), f"{rule} did not make the plan"
    tol = float(header(text, "tolerance")[0]) if header(text, "tolerance") else 1e-5
    rng = np.random.default_rng(0)
    feed_sets = header(text, "feeds")
    assert feed_sets, f"{path.name}: no feeds line"
    for spec in feed_sets:
        feeds = feeds_from(spec, rng)
        got = optimized.run(None, feeds)
        assert_close(got, reference.run(None, feeds), tol, tol, f"{path.name} [{spec}] vs optimize=0:")
        assert_close(got, run_onnxruntime(model, feeds), tol, tol, f"{path.name} [{spec}] vs onnxruntime:")


def test_every_new_style_rule_has_a_fixture():
    """The rules written as optimizer modules each have at least one fixture."""
    covered = {header(p.read_text(), "rule")[0] for p in FIXTURES}
    for rule in ("shape_arithmetic", "gelu", "layer_norm", "rms_norm", "attention", "matmul_add", "transpose_chain",
                 "reshape_chain", "shaped_views", "shared_input_products", "residual_add", "norm_casts",
                 "layout_views", "contrib_transformer"):
        assert rule in covered, rule


# --------------------------------------------------------------------- subgraphs and the enclosing constants
# An If branch or a Loop body computing from the model's weights (silero-vad's LSTM weights sliced and
# concatenated inside an If): the weights are constants of the main graph, so the body folds what it
# computes from them once, at preparation; values fed or computed at run time stay the body's inputs.
SUBGRAPH_READS_WEIGHTS = """<ir_version: 8, opset_import: ["": 17]>
g (bool flag, float[2, 3] x, float[3] fed) => (float[2, 3] y, float[2, 3] z) <float[6] w = {1, 2, 3, 4, 5, 6}> {
  one = Constant <value = int64[1] {1}> ()
  four = Constant <value = int64[1] {4}> ()
  axis = Constant <value = int64[1] {0}> ()
  y = If (flag) <
    then_branch = t () => (float[2, 3] ty) {
      part = Slice(w, one, four, axis)
      ty = Add(x, part)
    },
    else_branch = e () => (float[2, 3] ey) {
      back = Neg(w)
      cut = Slice(back, one, four, axis)
      ey = Mul(x, cut)
    }
  >
  trips = Constant <value = int64 {3}> ()
  z = Loop (trips, "", x) <
    body = b (int64 i, bool c, float[2, 3] acc) => (bool c2, float[2, 3] acc2) {
      c2 = Identity(c)
      part2 = Slice(w, one, four, axis)
      scaled = Mul(fed, part2)
      acc2 = Add(acc, scaled)
    }
  >
}"""


def _subgraph_steps(ev):
    """op types of the steps of every subgraph plan of the main plan, by graph name."""
    found = {}
    for st in ev._plan_for(None, ()).steps:
        for graph, plan in st.info.subplans.values():
            found[graph.name] = [s.node.op_type for s in plan.steps]
    return found


def test_subgraphs_fold_what_they_compute_from_the_enclosing_constants():
    model = text_model(SUBGRAPH_READS_WEIGHTS)
    optimized, reference = Evaluator(model), Evaluator(model, optimize=0)
    assert _subgraph_steps(optimized) == {"t": ["Add"], "e": ["Mul"], "b": ["Identity", "Mul", "Add"]}
    assert _subgraph_steps(reference) == {"t": ["Slice", "Add"], "e": ["Neg", "Slice", "Mul"],
                                          "b": ["Identity", "Slice", "Mul", "Add"]}
    rng = np.random.default_rng(0)
    for flag in (True, False):
        feeds = {"flag": np.array(flag), "x": rng.standard_normal((2, 3)).astype(np.float32),
                 "fed": rng.standard_normal(3).astype(np.float32)}
        got = optimized.run(None, feeds)
        assert_close(got, reference.run(None, feeds), 1e-6, 1e-6, f"flag={flag} vs optimize=0:")
        assert_close(got, run_onnxruntime(model, feeds), 1e-6, 1e-6, f"flag={flag} vs onnxruntime:")


def test_an_initializer_a_feed_may_replace_is_not_folded_into_subgraphs():
    # w listed as a graph input too: a default the caller may feed, so the branches read it at run time
    model = text_model(SUBGRAPH_READS_WEIGHTS.replace("float[3] fed)", "float[3] fed, float[6] w)"))
    ev = Evaluator(model)
    feeds = {"flag": np.array(True), "x": np.ones((2, 3), np.float32), "fed": np.ones(3, np.float32)}
    assert _subgraph_steps(ev)["t"] == ["Add"]  # the usual call, which does not feed w, folds it
    w = np.float32([10, 20, 30, 40, 50, 60])
    y, z = ev.run(None, {**feeds, "w": w})  # feeding it takes a plan that does not
    assert y.tolist() == [[21, 31, 41]] * 2
    assert z.tolist() == [[61, 91, 121]] * 2  # x + 3 trips of fed * w[1:4]


def test_heads_attention_falls_back_to_the_original_steps():
    """Operands of another type than the scale constants (float64 here, float32 constants) take the
    original steps, which compute what the nodes compute one by one."""
    from onnxtext.evaluator.fused.attention import HeadsAttention

    model = text_model((Path(__file__).parent / "fixtures" / "optimizer" / "attention_operands.onnxtext").read_text())
    (step,) = [st for st in Evaluator(model)._plan_for(None, ()).steps if type(st.fn) is HeadsAttention]
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 5, 2, 4)) for _ in range(3))  # the heads already split by the Reshapes
    mask = np.zeros((2, 1, 1, 5))
    got = step.fn(q, k, v, mask)
    scores = (q.transpose(0, 2, 1, 3) * np.float32(0.70710677)) @ (k.transpose(0, 2, 3, 1) * np.float32(0.70710677))
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, (p @ v.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3), rtol=1e-12)


# --------------------------------------------------------------------- attention's softmax without a row maximum
# The fused attention exponentiates the scores without subtracting each row's maximum when that is safe
# (no score above 60, every row sum at least 1e-25) and otherwise takes the per-row form: each case is
# (what it exercises, score multiplier, {(batch, query row): (mask value, masked keys)}, nan_to_zero).
NEG = float(np.finfo(np.float32).min)
SOFTMAX_CASES = [
    ("ordinary scores", 1.0, {}, False),
    ("scores above 60 (per-row form)", 40.0, {}, False),
    ("a row fully masked with float32's minimum (uniform, as the nodes give)", 1.0, {(0, 2): (NEG, 5)}, False),
    ("a row fully masked with -inf, NaN guard (zeros)", 1.0, {(1, 0): (-np.inf, 5)}, True),
    ("a row fully masked with -10000", 1.0, {(0, 1): (-10000.0, 5)}, False),
    ("some keys masked with -10000", 1.0, {(0, 1): (-10000.0, 2), (1, 4): (-10000.0, 4)}, False),
]


def _reference_attention(q, k, v, scale, mask, nan_to_zero):
    """The nodes' scores in float32 (a large mask value absorbs the scores' low bits there), softmax
    and product in float64."""
    with np.errstate(all="ignore"):
        s = ((q @ k) * np.float32(scale) + mask).astype(np.float64)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
    if nan_to_zero:
        p = np.nan_to_num(p, nan=0.0)
    return p @ v.astype(np.float64)


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=[c[0] for c in SOFTMAX_CASES])
def test_attention_softmax_forms(case):
    from onnxtext.evaluator.fused.attention import DotProductAttention

    _, multiplier, masked, nan_to_zero = case
    rng = np.random.default_rng(3)
    q = (rng.standard_normal((2, 3, 5, 4)) * multiplier).astype(np.float32)
    k = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    v = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    mask = np.zeros((2, 1, 5, 5), np.float32)
    for (batch, row), (value, keys) in masked.items():
        mask[batch, 0, row, :keys] = value
    with np.errstate(all="ignore"):
        got = DotProductAttention(0.5, nan_to_zero, True, None)(q, k, v, mask)
    expected = _reference_attention(q, k, v, 0.5, mask, nan_to_zero)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_shared_input_products_fall_back_to_the_original_steps():
    """An input of another type than the concatenated weights (float64 into float32 weights) takes the
    original steps, which compute each projection as its nodes do, with numpy's type promotion."""
    from onnxtext.evaluator.fused.linear import SharedInputProducts

    model = text_model((Path(__file__).parent / "fixtures" / "optimizer" / "shared_input_products.onnxtext").read_text())
    steps = [st for st in Evaluator(model)._plan_for(None, ()).steps if type(st.fn) is SharedInputProducts]
    assert len(steps) == 2
    x = np.random.default_rng(2).standard_normal((2, 3, 8))
    for step in steps:
        got = step.fn(x)
        expected = step.fn(x.astype(np.float32))  # the fused path on the same values in float32
        assert len(got) == len(expected) == len(step.outputs)
        for g, e in zip(got, expected):
            assert g.dtype == np.float64 and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_heads_attention_with_computed_factors_falls_back_for_other_types():
    """Factors a shape cone computes are checked per call: float64 operands with the cone's float32
    factor take the original steps (numpy's promotion, as the nodes); float32 ones the fused path."""
    from onnxtext.evaluator.fused.attention import HeadsAttention

    model = text_model((Path(__file__).parent / "fixtures" / "optimizer" /
                        "attention_operands.cone_scale.onnxtext").read_text())
    (step,) = [st for st in Evaluator(model)._plan_for(None, ()).steps if type(st.fn) is HeadsAttention]
    assert step.fn.divides == (False, False) and len(step.inputs) == 5
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    f = np.array([4 ** -0.25], np.float32)
    scores = (q * f) @ (k.transpose(0, 1, 3, 2) * f)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    expected = (p / p.sum(-1, keepdims=True)) @ v
    got = step.fn(q, k, v, f, f)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    got32 = step.fn(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), f, f)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, expected, rtol=1e-4, atol=1e-5)


def test_norm_casts_with_a_scale_that_broadcasts_takes_the_original_steps():
    """A scale that broadcasts the norm's result to a larger shape (last axis 1, scale of 4) cannot join
    the norm in place: the step takes the original steps, as the Mul broadcasts. (No onnxruntime
    here: its own SimplifiedLayerNormalization fusion refuses this model.)"""
    text = (Path(__file__).parent / "fixtures" / "optimizer" / "norm_casts.scale_only.onnxtext").read_text()
    model = text_model(text.replace("float[B, S, 4] x)", "float[B, S, 1] x)"))
    ev = Evaluator(model)
    assert plan_labels(ev) == ["CastNorm"]
    x = np.random.default_rng(5).standard_normal((2, 3, 1)).astype(np.float32)
    (got,) = ev.run(None, {"x": x})
    (want,) = Evaluator(model, optimize=0).run(None, {"x": x})
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(got, want, rtol=1e-6)
