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
                 "reshape_chain"):
        assert rule in covered, rule
