"""The Evaluator's hooks for tools: optimization level and disabled rules, the per-step trace, timeouts
and Ctrl-C, missing kernels found at construction, and errors that carry the failing node's path."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import text_model

from onnxtext import EvalError, Evaluator
from onnxtext.evaluator.optimizer import rule_names

F = np.float32

CHAIN = """<ir_version: 9, opset_import: ["": 18]>
chain (float[N] x) => (float[N] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}"""

# an If whose branches hold nodes, inside a graph with a foldable constant
WITH_IF = """<ir_version: 9, opset_import: ["": 18]>
cond (bool c, float[N] x) => (float[N] y) {
  k = Constant <value = float {2.0}> ()
  y = If <
    then_branch = then_g () => (float[N] t) { t = Mul(x, k) },
    else_branch = else_g () => (float[N] e) {
      e0 = Neg(x)
      e = Abs(e0)
    }
  > (c)
}"""

# a Loop whose trip count is far beyond any test's patience
ENDLESS = """<ir_version: 9, opset_import: ["": 18]>
endless (float[N] x) => (float[N] y) {
  n = Constant <value = int64 {1000000000000}> ()
  t = Constant <value = bool {1}> ()
  y = Loop <body = body (int64 i, bool c, float[N] v) => (bool c2, float[N] w) {
    c2 = Identity(c)
    w = Add(v, v)
  }> (n, t, x)
}"""


def traced(model, feeds, **options):
    seen = []
    Evaluator(model, **options).run(None, feeds, trace=lambda step, outs: seen.append((step.path, step.node.op_type,
                                                                                       sorted(outs))))
    return seen


def test_optimize_zero_traces_every_node_with_its_path():
    seen = traced(text_model(CHAIN), {"x": np.array([1, -2], F)}, optimize=0)
    assert seen == [("graph.node[0]", "Relu", ["a"]), ("graph.node[1]", "Neg", ["b"]),
                    ("graph.node[2]", "Abs", ["y"])]


@pytest.mark.parametrize("cond, body", [(True, [("graph.node[1].attribute[then_branch].g.node[0]", "Mul", ["t"])]),
                                        (False, [("graph.node[1].attribute[else_branch].g.node[0]", "Neg", ["e0"]),
                                                 ("graph.node[1].attribute[else_branch].g.node[1]", "Abs", ["e"])])])
def test_trace_reports_subgraph_nodes_then_their_owner(cond, body):
    seen = traced(text_model(WITH_IF), {"c": np.array(cond), "x": np.array([1, -2], F)}, optimize=0)
    assert seen == [("graph.node[0]", "Constant", ["k"])] + body + [("graph.node[1]", "If", ["y"])]


def test_trace_values_are_the_step_outputs():
    values = {}
    Evaluator(text_model(CHAIN), optimize=0).run(None, {"x": np.array([1, -2], F)},
                                                 trace=lambda step, outs: values.update(outs))
    np.testing.assert_array_equal(values["a"], [1, 0])
    np.testing.assert_array_equal(values["b"], [-1, 0])


def test_default_level_folds_constants_and_optimize_zero_does_not():
    feeds = {"c": np.array(True), "x": np.array([1, -2], F)}
    folded = [op for _, op, _ in traced(text_model(WITH_IF), feeds)]
    assert folded == ["Mul", "If"]  # the Constant ran once, at preparation


def test_timeout_stops_an_endless_loop_naming_the_node():
    ev = Evaluator(text_model(ENDLESS))
    with pytest.raises(EvalError, match=r"timed out after 0\.2 s") as info:
        ev.run(None, {"x": np.ones(2, F)}, timeout=0.2)
    assert info.value.stopped
    assert info.value.path.startswith("graph.node[2].attribute[body].g.node[")


def test_ctrl_c_stops_a_run_between_steps_with_an_eval_error():
    def interrupt(step, outs):
        if step.node.op_type == "Neg":
            raise KeyboardInterrupt

    with pytest.raises(EvalError, match="interrupted") as info:
        Evaluator(text_model(CHAIN), optimize=0).run(None, {"x": np.ones(2, F)}, trace=interrupt)
    assert info.value.path == "graph.node[1]" and info.value.node.op_type == "Neg"


def test_missing_kernels_are_all_named_at_construction():
    text = """<ir_version: 9, opset_import: ["": 18, "custom.a": 1]>
    g (float[N] x, bool c) => (float[N] y) {
      a = NoSuchOp(x)
      b = custom.a.Thing(a)
      y = If <then_branch = t () => (float[N] u) { u = AlsoMissing(b) },
              else_branch = e () => (float[N] v) { v = Identity(b) }> (c)
    }"""
    with pytest.raises(EvalError) as info:
        Evaluator(text_model(text))
    msg = str(info.value)
    assert "3 operators" in msg
    for part in ("ai.onnx::NoSuchOp (opset 18)", "custom.a::Thing (opset 1)", "ai.onnx::AlsoMissing (opset 18)"):
        assert part in msg


def test_schema_function_operators_count_as_available():
    # MeanVarianceNormalization has no kernel of its own only if its schema body serves: either way it runs
    text = """<ir_version: 9, opset_import: ["": 18]>
    g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y) { y = MeanVarianceNormalization(x) }"""
    (y,) = Evaluator(text_model(text)).run(None, {"x": np.arange(18, dtype=F).reshape(1, 2, 3, 3)})
    assert abs(float(y.mean())) < 1e-5


def test_error_carries_the_path_of_the_innermost_node():
    text = """<ir_version: 9, opset_import: ["": 18]>
    g (bool c, float[N] x, float[M] z) => (float[N] y) {
      y = If <then_branch = t () => (float[N] u) { u = Add(x, z) },
              else_branch = e () => (float[N] v) { v = Identity(x) }> (c)
    }"""
    with pytest.raises(EvalError) as info:
        Evaluator(text_model(text)).run(None, {"c": np.array(True), "x": np.ones(2, F), "z": np.ones(3, F)})
    err = info.value
    assert err.path == "graph.node[0].attribute[then_branch].g.node[0]" and err.node.op_type == "Add"
    assert "x: float32[2]" in str(err) and "z: float32[3]" in str(err)


@pytest.mark.parametrize("options, message", [
    ({"optimize": 3}, "optimize must be an integer from 0 to"),
    ({"optimize": -1}, "optimize must be an integer from 0 to"),
    ({"disable": ("no_such_rule",)}, "unknown optimizer rule 'no_such_rule'"),
])
def test_bad_optimizer_options_are_refused(options, message):
    with pytest.raises(EvalError, match=message):
        Evaluator(text_model(CHAIN), **options)


def test_every_rule_can_be_disabled_by_name():
    for name in rule_names():
        (y,) = Evaluator(text_model(CHAIN), disable=(name,)).run(None, {"x": np.array([1, -2], F)})
        np.testing.assert_array_equal(y, [1, 0])


def test_a_fused_step_is_reported_as_the_last_node_it_covers():
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[N] x, float[N] y) => (float[N] z) {
      t = Add(x, y)
      z = Relu(t)
    }""")
    seen = traced(model, {"x": np.array([1, -2], F), "y": np.array([1, 1], F)})
    assert seen == [("graph.node[1]", "Relu", ["z"])]  # Add and its Relu are one step
    assert len(traced(model, {"x": np.array([1, -2], F), "y": np.array([1, 1], F)}, optimize=0)) == 2


def test_a_failing_fused_step_names_the_node_the_rewrite_started_from():
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[N] x, float[M] y) => (float[N] z) {
      t = Add(x, y)
      z = Relu(t)
    }""")
    with pytest.raises(EvalError, match=r"ai\.onnx::Add.*x: float32\[2\], y: float32\[3\]") as info:
        Evaluator(model).run(None, {"x": np.ones(2, F), "y": np.ones(3, F)})
    assert info.value.path == "graph.node[0]"


# ------------------------------------------------------------------ the compiled run (plan_code)
def _compiled_runs_match_the_loop(model, feeds: dict, optimize: int) -> Evaluator:
    """An Evaluator whose plan ran ``feeds`` by the loop, then compiled, giving the loop's values."""
    from onnxtext.evaluator.plan import COMPILE_AFTER

    ev = Evaluator(model, optimize=optimize)
    loop_results = ev.run(None, feeds)
    for _ in range(COMPILE_AFTER):
        ev.run(None, feeds)
    plan = ev._plan_for(None, ())  # (run by the usual call on the feeds themselves, or on a bound dict)
    assert plan._scoped or plan._compiled, "the plan was not compiled"
    for got, want in zip(ev.run(None, feeds), loop_results):
        np.testing.assert_array_equal(got, want)
    return ev


# After COMPILE_AFTER plain runs a plan runs as one generated function: the same values, the same
# errors (node, inputs, path), subgraph bodies (entered many times) compiled too.
def _runs_then(model, good: dict, bad: dict):
    from onnxtext.evaluator.plan import COMPILE_AFTER

    ev = Evaluator(model)
    for _ in range(COMPILE_AFTER + 1):
        ev.run(None, good)
    plan = ev._plan_for(None, ())  # (run by the usual call on the feeds themselves, or on a bound dict)
    assert plan._scoped or plan._compiled, "the plan was not compiled"
    with pytest.raises(EvalError) as info:
        ev.run(None, bad)
    return ev, info.value


@pytest.mark.parametrize("optimize", [0, 2])
def test_a_compiled_run_reports_the_failing_node_as_the_loop_does(optimize):
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[N] x, float[M] y) => (float[N] z, float[N] w) {
      a = Neg(x)
      t = Add(a, y)
      z = Relu(t)
      w = Abs(a)
    }""")
    good = {"x": np.array([1, -2], F), "y": np.array([3, 4], F)}
    ev = _compiled_runs_match_the_loop(model, good, optimize)
    with pytest.raises(EvalError, match=r"ai\.onnx::Add.*float32\[2\].*float32\[3\]") as info:
        ev.run(None, {"x": np.ones(2, F), "y": np.ones(3, F)})
    assert info.value.path == "graph.node[1]"


def test_a_compiled_subgraph_reports_the_path_of_the_innermost_node():
    text = """<ir_version: 9, opset_import: ["": 18]>
    g (bool c, float[N] x, float[M] z) => (float[N] y) {
      y = If <then_branch = t () => (float[N] u) { u = Add(x, z) },
              else_branch = e () => (float[N] v) { v = Identity(x) }> (c)
    }"""
    good = {"c": np.array(True), "x": np.ones(2, F), "z": np.ones(2, F)}
    _, err = _runs_then(text_model(text), good, {**good, "z": np.ones(3, F)})
    assert err.path == "graph.node[0].attribute[then_branch].g.node[0]" and err.node.op_type == "Add"


def test_a_compiled_loop_body_runs_every_iteration():
    model = text_model(ENDLESS.replace("1000000000000", "10"))  # (10 trips: compiled after the third)
    (y,) = Evaluator(model).run(None, {"x": np.array([1, -3], F)})
    np.testing.assert_array_equal(y, np.array([1024, -3072], F))


# Value names are the model's (untrusted) and reach plan_code's generated source only as reprs of exact
# strs: names that would be code if pasted unquoted must run as plain names, compiled or not.
@pytest.mark.parametrize("name", [
    "a'); import os; os._exit(3) #",
    'b"\n__import__("os")._exit(3)\n"',
    "c\\' + str(1/0) + \\'",
    "d}{e[0]}",
])
def test_hostile_value_names_run_compiled_as_in_the_loop(name):
    quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    model = text_model(f"""<ir_version: 9, opset_import: ["": 18]>
    g (float[N] x) => (float[N] y) {{
      {quoted} = Neg(x)
      y = Abs({quoted})
    }}""")
    assert model.graph.node[0].output[0] == name
    x = {"x": np.array([1, -2], F)}
    (y,) = _compiled_runs_match_the_loop(model, x, 0).run(None, x)
    np.testing.assert_array_equal(y, np.array([1, 2], F))


# Values one step produces and only later steps read live in the generated function's locals
# (plan_code._local_values): multi-output steps, values freed early, graph outputs also read by later
# steps, and a failure after them (its message lists the inputs, locals included).
LOCALS_MODELS = [
    """<ir_version: 9, opset_import: ["": 18]>
    g (float[4] x, int64[1] k) => (float[2] y, float[2] z) {
      a, b = Split <num_outputs = 2> (x)
      y = Add(a, b)
      v, i = TopK <axis = 0> (x, k)
      z = Mul(y, v)
    }""",
    """<ir_version: 9, opset_import: ["": 18]>
    g (float[4] x) => (float[4] y, float[4] z) {
      a = Neg(x)
      y = Abs(a)
      z = Add(y, a)
    }""",
    """<ir_version: 9, opset_import: ["": 18]>
    g (float[4] x, int64[1] k) => (float[2] y, float[2] z) {
      v = TopK <axis = 0> (x, k)
      y = Neg(v)
      z = Mul(y, v)
    }""",
]


@pytest.mark.parametrize("optimize", [0, 2])
@pytest.mark.parametrize("text", LOCALS_MODELS, ids=["multi_output", "output_read_later",
                                                                    "tuple_for_one_output"])
def test_compiled_locals_give_the_loops_values_and_errors(text, optimize):
    model = text_model(text)
    good = {"x": np.array([1, -2, 3, 5], F)}
    if "TopK" in text:
        good["k"] = np.array([2], np.int64)
    ev = _compiled_runs_match_the_loop(model, good, optimize)
    if "Split" in text:  # TopK's k of 3 gives z's Mul a [3] operand: the message lists y (a local's sum) too
        with pytest.raises(EvalError, match=r"Mul.*y: float32\[2\], v: float32\[3\]"):
            ev.run(None, {**good, "k": np.array([3], np.int64)})


def test_a_loop_bodys_hoisted_steps_feed_its_compiled_iterations():
    """The body's loop-invariant steps run once before the iterations (control_flow._invariant_split); their
    results must stay values the iterations read, also once both plans are compiled."""
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[N, 3] x) => (float[3] y) {
      n = Constant <value = int64 {3}> ()
      s0 = Constant <value = float[3] {0, 0, 0}> ()
      y = Loop <body = b (int64 i, bool c, float[3] acc) => (bool co, float[3] out) {
        two = Constant <value = float {2.0}> ()
        scaled = Mul(x, two)
        row = Gather <axis = 0> (scaled, i)
        out = Add(acc, row)
        co = Identity(c)
      }> (n, "", s0)
    }""")
    x = {"x": np.arange(12, dtype=F).reshape(4, 3)}
    (y,) = _compiled_runs_match_the_loop(model, x, 2).run(None, x)
    np.testing.assert_array_equal(y, 2 * x["x"][:3].sum(axis=0))


@pytest.mark.parametrize("body", [
    "y = Constant <value = float[2] {1, 2}> ()",  # folded: the plan has no step
    "y = Identity(x)",
])
def test_plans_without_steps_compile(body):
    model = text_model(f"""<ir_version: 9, opset_import: ["": 18]>
    g (float[2] x) => (float[2] y) {{
      {body}
    }}""")
    x = {"x": np.array([1, 2], F)}
    (y,) = _compiled_runs_match_the_loop(model, x, 2).run(None, x)
    np.testing.assert_array_equal(y, np.array([1, 2], F))


from onnxtext.evaluator.plan import COMPILE_AFTER  # noqa: E402

# An If branch runs from its COMPILE_AFTER-th run on as one generated function reading the enclosing
# values directly, its own values in locals (plan_code.compile_scoped, GraphPlan.run_in_scope). Each
# model runs with c true and false, COMPILE_AFTER + 2 times each, at optimize 0 and 2; the expected
# values are numpy's arithmetic on the feeds (x = [1, -2]), or an error (message, path) from a later run
# with the feeds ``bad``.
IF_BRANCHES = [
    # constants, outer values, a multi-output step, a value freed early
    ("""(float[2] a, float[2] b) <float[2] k = {1, 2}> { p, q = Split <num_outputs = 2> (w)  s = Add(x, k)
          a = Mul(s, p)  b = Neg(q) }""",
     "(float[2] a, float[2] b) { a = Identity(x)  b = Abs(x) }",
     {"x": [1, -2]}, ([[2, 0], [-3, -4]], [[1, -2], [1, 2]])),
    # outputs that are an outer value and a constant, no step at all
    ("(float[2] a, float[1] b) <float[1] k = {7}> { a = Identity(x)  b = Identity(k) }",
     "(float[2] a, float[1] b) <float[1] k = {8}> { a = Neg(x)  b = Identity(k) }",
     {"x": [1, -2]}, ([[1, -2], [7]], [[-1, 2], [8]])),
    # a nested If (a context step: that branch keeps the bound dict) beside a plain one
    ("""(float[2] a, float[2] b) { a = If <then_branch = tt () => (float[2] r) { r = Neg(x) },
          else_branch = te () => (float[2] r) { r = Abs(x) }> (c)  b = Identity(a) }""",
     "(float[2] a, float[2] b) { a = Abs(x)  b = Neg(x) }",
     {"x": [1, -2]}, ([[-1, 2], [-1, 2]], [[1, 2], [-1, 2]])),
    # a failing step after a local was computed: named with its path, the local among its inputs
    ("(float[2] a, float[2] b) { s = Neg(x)  a = Add(s, z)  b = Identity(s) }",
     "(float[2] a, float[2] b) { a = Identity(x)  b = Identity(x) }",
     {"x": [1, -2], "bad": {"z": [1, 2, 3]}},
     (r"Add.*s: float32\[2\], z: float32\[3\]", "graph.node[0].attribute[then_branch].g.node[1]")),
]


@pytest.mark.parametrize("optimize", [0, 2])
@pytest.mark.parametrize("case", range(len(IF_BRANCHES)))
def test_if_branches_compiled_on_the_enclosing_values_run_as_the_loop(case, optimize):
    then_text, else_text, feeds, expected = IF_BRANCHES[case]
    model = text_model(f"""<ir_version: 9, opset_import: ["": 18]>
    g (bool c, float[2] x, float[N] z, float[4] w) => (float[?] y1, float[?] y2) {{
      y1, y2 = If <then_branch = t () => {then_text}, else_branch = e () => {else_text}> (c)
    }}""")
    ev = Evaluator(model, optimize=optimize)
    base = {"x": np.array(feeds["x"], F), "z": np.array([1, 2], F), "w": np.array([1, 2, 3, 4], F)}
    for _ in range(COMPILE_AFTER + 2):
        for c in (True, False):
            got = ev.run(None, {**base, "c": np.array(c)})
            if not isinstance(expected[0], str):
                assert [v.tolist() for v in got] == expected[0 if c else 1]
    branches = [p for st in ev._main.steps for _, p in st.info.subplans.values()]
    assert all(p._scoped is not None for p in branches)  # (compiled, or found not to fit: the nested If's)
    assert any(p._scoped for p in branches)
    if isinstance(expected[0], str):
        bad = {**base, "c": np.array(True), **{k: np.array(v, F) for k, v in feeds["bad"].items()}}
        with pytest.raises(EvalError, match=expected[0]) as info:
            ev.run(None, bad)
        assert info.value.path == expected[1]


def test_a_compiled_if_branch_reading_a_missing_outer_value_says_so():
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (bool c, float[2] x) => (float[2] y) {
      y = If <then_branch = t () => (float[2] a) { a = Neg(x) }, else_branch = e () => (float[2] a) { a = Abs(x) }> (c)
    }""")
    ev = Evaluator(model)
    for _ in range(COMPILE_AFTER + 1):
        ev.run(None, {"c": np.array(True), "x": np.ones(2, F)})
    (plan,) = [p for st in ev._main.steps for g, p in st.info.subplans.values() if g.name == "t"]
    assert plan._scoped
    with pytest.raises(EvalError, match="graph 't' reads 'x', which no enclosing scope defines"):
        plan.run_in_scope({})  # (as bind_outer says it; a run cannot get here with x missing)


# Attributes reach a compiled step's call as keywords written out (name=value), or unpacked from their
# dict when a name could not be written so (a Python keyword, not an identifier): the kernel gets the
# same arguments either way. Attribute names are the schemas' after preparation; this builds a step
# with such names directly.
@pytest.mark.parametrize("attrs", [{"axis": 1, "perm": [1, 0]}, {"lambda": 2.0}, {"a-b": 1, "ok": 2}, {}])
def test_compiled_steps_pass_every_attribute_as_the_loop_does(attrs):
    from onnxtext.evaluator.plan_code import compile_scoped, compile_steps
    from onnxtext.evaluator.steps import Step

    def kernel(x, **kw):
        return (x, dict(kw))

    step = Step(kernel, ("x",), ("y", "kw"), attrs, (), None, False, None)
    run = compile_steps([step])
    env = {"x": 1}
    run(env)
    assert env["kw"] == attrs and env["y"] == 1

    class Plan:  # (what compile_scoped reads of a GraphPlan)
        steps, output_names, constants, input_names, bind_outer = [step], ["kw"], {}, [], None
    assert compile_scoped(Plan)({"x": 1}) == [attrs]
