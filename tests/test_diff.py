"""Semantic diff: tables of (edit of a base model, expected changes), equivalences that must not be
differences (renamed temporaries, another topological order), weight statistics computed with numpy, and
the ``onnxtext diff`` command (exit status, text, --text, json, colour, mixed .onnx/.onnxtext inputs)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import zlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxtext
from onnxtext import dtypes as onnxtext_dtypes
from onnxtext.cli import main as cli_main
from onnxtext.tensors import from_array
from onnxtext.differ import compare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

BASE = """<
  ir_version: 10,
  opset_import: ["": 21, "local": 1],
  doc_string: "base model",
  metadata_props: ["author": "ann"]
>

/// main graph
main (float[N, 4] x, float[N, 4] y, bool c) => (float[N, 4] z, float[N, 4] w)
<float[4] bias = {1.0, 2.0, 3.0, 4.0}>
{
  s = Add(x, y)
  m = Mul(x, bias)
  /// leaky
  [act] r = LeakyRelu <alpha = 0.1> (m)
  k = If (c) <
    then_branch = yes () => (float[N, 4] o) {
      o = Relu(s)
    },
    else_branch = no () => (float[N, 4] o) {
      o = Neg(s)
    }
  >
  z = local.twice (k)
  w = Sigmoid(r)
}

<domain: "local", opset_import: ["": 21]>
twice (a) => (b) {
  b = Add(a, a)
}
"""

# The same model with every temporary renamed and the independent nodes in another order.
EQUIVALENT = """<
  ir_version: 10,
  opset_import: ["": 21, "local": 1],
  doc_string: "base model",
  metadata_props: ["author": "ann"]
>

/// main graph
main (float[N, 4] x, float[N, 4] y, bool c) => (float[N, 4] z, float[N, 4] w)
<float[4] bias = {1.0, 2.0, 3.0, 4.0}>
{
  t1 = Mul(x, bias)
  /// leaky
  [act] t2 = LeakyRelu <alpha = 0.1> (t1)
  w = Sigmoid(t2)
  t3 = Add(x, y)
  t4 = If (c) <
    then_branch = yes () => (float[N, 4] p) {
      p = Relu(t3)
    },
    else_branch = no () => (float[N, 4] q) {
      q = Neg(t3)
    }
  >
  z = local.twice (t4)
}

<domain: "local", opset_import: ["": 21]>
twice (first) => (second) {
  second = Add(first, first)
}
"""


def sub(old, new, count=1):
    """An edit of the base text: replace the first ``count`` occurrences (the edit must apply)."""
    def edit(text):
        assert old in text, old
        return text.replace(old, new, count)
    return edit


def chain(*edits):
    def edit(text):
        for e in edits:
            text = e(text)
        return text
    return edit


def rename_value(old, new):
    return lambda text: re.sub(rf"\b{old}\b", new, text)


# (id, edit of BASE giving model b, expected [(kind, fragments that the change's message contains)])
CASES = [
    ("attribute", sub("alpha = 0.1", "alpha = 0.25"),
     [("node.attribute", ["LeakyRelu", '"act"', "alpha", "0.1 -> 0.25"])]),
    ("attribute-removed", sub("LeakyRelu <alpha = 0.1> (m)", "LeakyRelu (m)"),
     [("node.attribute", ["LeakyRelu", "alpha", "removed", "0.1"])]),
    ("node-added", chain(sub("  w = Sigmoid(r)", "  r2 = Relu(r)\n  w = Sigmoid(r2)")),
     [("node.added", ["Relu -> r2"]), ("node.input", ["Sigmoid -> w", "input 0", "r -> r2"])]),
    ("node-removed", chain(sub("  /// leaky\n  [act] r = LeakyRelu <alpha = 0.1> (m)\n", ""), sub("Sigmoid(r)", "Sigmoid(m)")),
     [("node.removed", ["LeakyRelu", '"act"', "-> r"]), ("node.input", ["Sigmoid", "input 0", "r -> m"])]),
    ("node-rewired", sub("Sigmoid(r)", "Sigmoid(m)"), [("node.input", ["Sigmoid -> w", "input 0", "r -> m"])]),
    ("input-type", sub("float[N, 4] y", "double[N, 4] y"), [("input.type", ["input y", "float[N, 4] -> double[N, 4]"])]),
    ("input-added", sub("bool c)", "bool c, int64 extra)"), [("input.added", ["input extra", "int64"])]),
    ("input-renamed", rename_value("y", "why"), [("input.renamed", ["input y", "y -> why"])]),
    ("output-type", sub("=> (float[N, 4] z", "=> (float[M, 4] z"), [("output.type", ["output z", "float[M, 4]"])]),
    ("outputs-swapped", chain(sub("  z = local.twice (k)", "  w = local.twice (k)"), sub("  w = Sigmoid(r)", "  z = Sigmoid(r)")),
     [("output.source", ["output z", "twice", "Sigmoid"]), ("output.source", ["output w", "Sigmoid", "twice"])]),
    ("opset", sub('"": 21, "local": 1', '"": 22, "local": 1'), [("model.opset", ["21 -> 22"])]),
    ("opset-added", sub('"local": 1]', '"local": 1, "com.microsoft": 1]'),
     [("model.opset", ["com.microsoft", "added 1"])]),
    ("ir-version", sub("ir_version: 10", "ir_version: 11"), [("model.ir_version", ["10 -> 11"])]),
    ("model-doc", sub('"base model"', '"new model"'), [("model.doc_string", ["base model", "new model"])]),
    ("model-metadata", sub('"author": "ann"', '"author": "bob"'), [("model.metadata", ["author", "ann", "bob"])]),
    ("graph-doc", sub("/// main graph", "/// the main graph"), [("graph.doc_string", ["main graph"])]),
    ("node-doc", sub("/// leaky", "/// leakier"), [("node.doc_string", ["LeakyRelu", "leaky", "leakier"])]),
    ("node-metadata", sub("  [act] r", '  @metadata_props ["source": "x"]\n  [act] r'),
     [("node.metadata", ["LeakyRelu", "source", "added"])]),
    ("function-body", sub("b = Add(a, a)", "b = Mul(a, a)"),
     [("node.removed", ["Add -> b"]), ("node.added", ["Mul -> b"])]),
    ("function-opset", sub('<domain: "local", opset_import: ["": 21]>', '<domain: "local", opset_import: ["": 22]>'),
     [("function.opset", ["21 -> 22"])]),
    ("function-attribute-default", chain(sub("twice (a)", "twice <scale: float = 2.0> (a)")),
     [("function.attribute_default", ["scale", "added 2.0"])]),
    ("function-attribute", chain(sub("twice (a)", "twice <scale> (a)")),
     [("function.attributes", ["[] -> [scale]"])]),
    ("function-added", lambda t: t + '\n<domain: "local", opset_import: ["": 21]>\nthrice (a) => (b) {\n  b = Add(a, a)\n}\n',
     [("function.added", ["function local.thrice"])]),
    ("function-removed", lambda t: t[:t.index('<domain: "local"')], [("function.removed", ["function local.twice"])]),
    ("subgraph", sub("o = Neg(s)", "o = Neg(x)"), [("node.input", ["Neg -> o", "input 0", "s -> x"])]),
    ("subgraph-node", sub("o = Relu(s)", "o = Relu <alpha = 1.0> (s)"), [("node.attribute", ["Relu", "alpha", "added"])]),
    ("weight-values", sub("{1.0, 2.0, 3.0, 4.0}", "{1.0, 2.5, 3.0, 4.0}"),
     [("initializer.values", ["initializer bias", "1 of 4 elements differ", "max abs diff 0.5", ": [1] 2.0 -> 2.5"])]),
    ("weight-all-values", sub("{1.0, 2.0, 3.0, 4.0}", "{1.5, 2.5, 3.5, 4.5}"),
     [("initializer.values", ["4 of 4 elements differ", "[0] 1.0 -> 1.5, [1] 2.0 -> 2.5, [2] 3.0 -> 3.5, [3] 4.0 -> 4.5"])]),
    ("weight-dtype", sub("<float[4] bias", "<double[4] bias"), [("initializer.dtype", ["bias", "float -> double"])]),
    ("weight-shape", sub("<float[4] bias", "<float[1, 4] bias"), [("initializer.shape", ["bias", "[4] -> [1, 4]"])]),
    ("weight-renamed", rename_value("bias", "offset"), [("initializer.renamed", ["initializer bias", "bias -> offset"])]),
    ("weight-renamed-and-changed", chain(rename_value("bias", "offset"), sub("4.0}", "5.0}")),
     [("initializer.renamed", ["bias -> offset"]), ("initializer.values", ["1 of 4 elements differ", "max abs diff 1"])]),
    ("weight-also-an-input-renamed", chain(sub("bool c)", "bool c, float[4] bias)"), rename_value("bias", "offset")),
     [("input.added", ["input offset"]), ("initializer.renamed", ["bias -> offset"])]),
    ("value-info", sub("<float[4] bias", "<float[N, 4] s, float[4] bias"), []),  # annotated on one side: ignored
]


@pytest.mark.parametrize("case_id,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_changes(case_id, edit, expected):
    result = compare(BASE, edit(BASE))
    got = sorted((c.kind, c.message()) for c in result.changes)
    assert sorted(c.kind for c in result.changes) == sorted(k for k, _ in expected), got
    for kind, fragments in expected:
        assert any(k == kind and all(f in message for f in fragments) for k, message in got), (kind, fragments, got)
    assert result.changed == bool(expected)
    # the reverse diff reports the same number of changes
    assert len(compare(edit(BASE), BASE).changes) == len(expected)


def graph(body: str, inputs="float[4] x", outputs="float[4] y") -> str:
    return f'<ir_version: 10, opset_import: ["": 21]>\ng ({inputs}) => ({outputs}) {{\n{body}\n}}\n'


# an initializer of the main graph that only a branch reads
SUBGRAPH_WEIGHT = """<ir_version: 10, opset_import: ["": 21]>
g (bool c, float[2] x) => (float[2] y)
<float[2] w = {1.0, 2.0}>
{
  y = If (c) <
    then_branch = t () => (float[2] o) { o = Add(x, w) },
    else_branch = e () => (float[2] o) { o = Neg(x) }
  >
}
"""
# ... and one read two levels down (a Loop body inside a branch)
NESTED_WEIGHT = """<ir_version: 10, opset_import: ["": 21]>
g (bool c, int64 n, float[2] x) => (float[2] y)
<float[2] w = {1.0, 2.0}>
{
  y = If (c) <
    then_branch = t () => (float[2] r) {
      r = Loop (n, "", x) <
        body = b (int64 i, bool k, float[2] o) => (bool k2, float[2] o2) {
          k2 = Identity(k)
          o2 = Add(o, w)
        }
      >
    },
    else_branch = e () => (float[2] r) { r = Neg(x) }
  >
}
"""

# (id, model a, model b, expected [(kind, fragments)]): how structure decides what pairs with what
STRUCTURE = [
    ("identical-branches-paired-by-consumers",
     graph("p = Neg(x)\nq = Neg(x)\nr = Relu(p)\nt = Sigmoid(q)\ny = Sum(r, t)"),
     graph("q2 = Neg(x)\np2 = Neg(x)\nt = Sigmoid(q2)\nr = Relu(p2)\ny = Sum(r, t)"), []),
    ("insertion-does-not-cascade",
     graph("a1 = Neg(x)\na2 = Relu(a1)\na3 = Sigmoid(a2)\na4 = Tanh(a3)\ny = Abs(a4)"),
     graph("a1 = Neg(x)\nn = Exp(a1)\na2 = Relu(n)\na3 = Sigmoid(a2)\na4 = Tanh(a3)\ny = Abs(a4)"),
     [("node.added", ["Exp -> n"]), ("node.input", ["Relu -> a2", "input 0: a1 -> n"])]),
    ("replaced-operator",
     graph("a1 = Neg(x)\na2 = Relu(a1)\ny = Abs(a2)"), graph("a1 = Neg(x)\na2 = Elu(a1)\ny = Abs(a2)"),
     [("node.removed", ["Relu -> a2"]), ("node.added", ["Elu -> a2"]), ("node.input", ["Abs", "input 0: a2 (from Relu -> a2) -> a2 (from Elu -> a2)"])]),
    ("changed-attribute-then-renamed-downstream",
     graph("a = LeakyRelu <alpha = 0.1> (x)\nb = Neg(a)\ny = Abs(b)"),
     graph("t0 = LeakyRelu <alpha = 0.3> (x)\nt1 = Neg(t0)\ny = Abs(t1)"),
     [("node.attribute", ["LeakyRelu -> a (in b: -> t0)", "alpha: 0.1 -> 0.3"])]),
    ("optional-input-omitted-vs-trailing-empty",
     graph("y = Clip(x, lo)", "float[4] x, float lo"), graph('y = Clip(x, lo, "")', "float[4] x, float lo"), []),
    ("optional-input-added",
     graph("y = Clip(x, lo)", "float[4] x, float lo, float hi"), graph("y = Clip(x, lo, hi)", "float[4] x, float lo, float hi"),
     [("node.input", ["Clip -> y", "input 2: added hi"])]),
    ("old-ir-weight-input-renamed",
     '<ir_version: 3, opset_import: ["": 9]>\ng (float[4] x, float[4] w) => (float[4] y)\n'
     '<float[4] w = {1.0, 2.0, 3.0, 4.0}> {\n  y = Add(x, w)\n}\n',
     '<ir_version: 3, opset_import: ["": 9]>\ng (float[4] x, float[4] v) => (float[4] y)\n'
     '<float[4] v = {1.0, 2.0, 3.0, 5.0}> {\n  y = Add(x, v)\n}\n',
     [("input.renamed", ["w -> v"]), ("initializer.renamed", ["w -> v"]),
      ("initializer.values", ["initializer w", "1 of 4 elements differ", "max abs diff 1"])]),
    ("weight-renamed-read-only-by-a-subgraph", SUBGRAPH_WEIGHT, SUBGRAPH_WEIGHT.replace(" w ", " weight ").replace("x, w)", "x, weight)"),
     [("initializer.renamed", ["initializer w", "w -> weight"])]),
    ("weight-renamed-read-only-by-a-nested-subgraph", NESTED_WEIGHT, NESTED_WEIGHT.replace(" w ", " v ").replace("(o, w)", "(o, v)"),
     [("initializer.renamed", ["initializer w", "w -> v"])]),
    ("weight-renamed-in-a-subgraph-and-changed", SUBGRAPH_WEIGHT,
     SUBGRAPH_WEIGHT.replace(" w ", " weight ").replace("x, w)", "x, weight)").replace("2.0}", "3.0}"),
     [("initializer.renamed", ["w -> weight"]), ("initializer.values", ["initializer w", "[1] 2.0 -> 3.0"])]),
    ("undefined-input-same-on-both-sides", graph("t = Neg(xx)\ny = Abs(t)"), graph("t = Neg(xx)\ny = Abs(t)"), []),
    ("undefined-input-renamed", graph("t = Neg(xx)\ny = Abs(t)"), graph("t = Neg(xz)\ny = Abs(t)"),
     [("node.input", ["Neg -> t", "input 0: xx -> xz"])]),
    ("commuted-inputs",
     graph("s = Sub(x, z)\ny = Neg(s)", "float[4] x, float[4] z"), graph("s = Sub(z, x)\ny = Neg(s)", "float[4] x, float[4] z"),
     [("node.input", ["Sub", "input 0: x -> z"]), ("node.input", ["Sub", "input 1: z -> x"])]),
]


@pytest.mark.parametrize("case_id,a,b,expected", STRUCTURE, ids=[c[0] for c in STRUCTURE])
def test_structure(case_id, a, b, expected):
    got = sorted((c.kind, c.message()) for c in compare(a, b).changes)
    assert sorted(k for k, _ in got) == sorted(k for k, _ in expected), got
    for kind, fragments in expected:
        assert any(k == kind and all(f in message for f in fragments) for k, message in got), (kind, fragments, got)


def test_subgraph_changes_are_reported_under_the_branch():
    result = compare(BASE, sub("o = Neg(s)", "o = Neg(x)")(BASE))
    (change,) = result.changes
    assert "If" in change.path and "else_branch" in change.path and change.path.startswith("graph main")


def test_value_info_type_change():
    a = sub("<float[4] bias", "<float[N, 4] s, float[4] bias")(BASE)
    b = sub("<float[4] bias", "<float[M, 4] s, float[4] bias")(EQUIVALENT.replace("t3", "s"))
    (change,) = compare(a, b).changes
    assert change.kind == "value_info.type" and change.old == "float[N, 4]" and change.new == "float[M, 4]"


def test_renamed_temporaries_and_reordered_nodes_are_not_differences():
    assert compare(BASE, EQUIVALENT).equal
    assert onnxtext.diff(BASE, EQUIVALENT) == ""
    # the unified text diff does see them: it is the line diff of the canonical texts
    assert onnxtext.diff(BASE, EQUIVALENT, format="unified") != ""


def _rand_weights(seed, n=10_000):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _weights_model(w: np.ndarray) -> onnx.ModelProto:
    m = onnxtext.parse_model(f"<ir_version: 10, opset_import: [\"\": 21]>\ng (float[{w.size}] x) => (float[{w.size}] y)"
                             " {\n  y = Mul(x, w)\n}\n")
    m.graph.initializer.append(numpy_helper.from_array(w, "w"))
    return m


@pytest.mark.parametrize("changes", [
    {3: 0.5},
    {0: -2.0, 17: 1e-3, 9_999: 7.25},
    {5: float("nan")},  # NaN against a number: counted, excluded from the max
])
def test_weight_statistics_match_numpy(changes):
    a = _rand_weights(1)
    b = a.copy()
    for i, v in changes.items():
        b[i] = v if np.isnan(v) else b[i] + v
    a[100] = b[100] = np.nan  # NaN on both sides is no difference
    (change,) = compare(_weights_model(a), _weights_model(b)).changes
    differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    numeric = differ & ~np.isnan(a) & ~np.isnan(b)
    assert change.kind == "initializer.values" and change.subject == "initializer w"
    assert change.detail["differing"] == int(differ.sum()) and change.detail["total"] == a.size
    expect_max = float(np.abs(a[numeric].astype(np.float64) - b[numeric]).max()) if numeric.any() else None
    assert change.detail["max_abs_diff"] == expect_max
    assert change.detail["nan_mismatch"] == int((np.isnan(a) ^ np.isnan(b)).sum())


def _typed_pair(dt):
    """Two arrays of element type ``dt`` that differ in elements 1 and 3 (by 1 and by 0.5 where representable)."""
    if dt.kind == "string":
        return np.array(["a", "b", "c", "d"], dtype=object), np.array(["a", "x", "c", "y"], dtype=object)
    if dt.name == "bool":
        return np.array([True, False, True, False]), np.array([True, True, True, True])
    a = np.array([0.0, 1.0, 2.0, 1.0])
    b = np.array([0.0, 2.0, 2.0, 0.5 if dt.kind in ("float", "complex") else 0.0])
    return a.astype(dt.np), b.astype(dt.np)


@pytest.mark.parametrize("dt", list(onnxtext_dtypes.BY_NAME.values()), ids=lambda d: d.name)
@pytest.mark.parametrize("raw", [True, False], ids=["raw", "typed"])
def test_weight_statistics_for_every_element_type(dt, raw):
    a, b = _typed_pair(dt)
    ma, mb = _weights_model(np.zeros(4, np.float32)), _weights_model(np.zeros(4, np.float32))
    ma.graph.initializer[0].CopyFrom(from_array(a, "w", raw=raw, dtype=dt))
    mb.graph.initializer[0].CopyFrom(from_array(b, "w", raw=raw, dtype=dt))
    (change,) = compare(ma, mb).changes
    differ = a != b
    if dt.kind == "float":  # float8e8m0 has no zero: 0.0 is NaN in both arrays, and NaN equals NaN here
        differ &= ~(np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64)))
    assert change.kind == "initializer.values" and change.detail["differing"] == int(differ.sum()) == 2
    if dt.kind == "string":
        assert change.detail["max_abs_diff"] is None
    else:
        wide = np.complex128 if dt.kind == "complex" else np.float64
        expect = np.abs(a[differ].astype(wide) - b[differ].astype(wide)).max()
        assert change.detail["max_abs_diff"] == pytest.approx(float(expect))
    assert compare(ma, ma).equal


def test_raw_and_typed_encodings_of_the_same_values_are_equal():
    w = _rand_weights(2, 16)
    typed = _weights_model(w)
    typed.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, "w"))
    raw_t = typed.graph.initializer[0]
    floats = onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, [16], w.tolist())
    other = onnx.ModelProto.FromString(typed.SerializeToString())
    other.graph.initializer[0].CopyFrom(floats)
    assert raw_t.HasField("raw_data") and not floats.HasField("raw_data")
    assert compare(typed, other).equal


def _scrambled(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """Rename every intermediate value of the main graph and emit its nodes in another valid order."""
    rng = random.Random(seed)
    m = onnx.ModelProto.FromString(model.SerializeToString())
    g = m.graph
    keep = {v.name for v in g.output}
    fresh = {o: f"tmp_{rng.randrange(10**9)}_{i}" for i, n in enumerate(g.node) for o in n.output
             if o and o not in keep}

    def refs(graph):  # every value a node (or a nested subgraph) reads
        for n in graph.node:
            yield n, list(n.input)
            for a in n.attribute:
                for sg in list(a.graphs) + ([a.g] if a.HasField("g") else []):
                    for _, inner in refs(sg):
                        yield n, inner

    def rename(graph):
        for n in graph.node:
            n.input[:] = [fresh.get(x, x) for x in n.input]
            n.output[:] = [fresh.get(x, x) for x in n.output]
            for a in n.attribute:
                for sg in list(a.graphs) + ([a.g] if a.HasField("g") else []):
                    rename(sg)

    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    deps = {i: set() for i in range(len(g.node))}
    for n, inputs in refs(g):
        i = next(k for k, x in enumerate(g.node) if x is n)
        deps[i] |= {producer[x] for x in inputs if x in producer and producer[x] != i}
    order, done = [], set()
    while len(order) < len(g.node):
        ready = [i for i in deps if i not in done and deps[i] <= done]
        pick = rng.choice(ready)
        order.append(pick)
        done.add(pick)
    nodes = [g.node[i] for i in order]
    for v in g.value_info:
        v.name = fresh.get(v.name, v.name)
    del g.node[:]
    g.node.extend(nodes)
    rename(g)
    return m


def _corpus():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from corpus import DATA, file_models

    return ([pytest.param(p, id=os.path.relpath(p, DATA)) for p in file_models()] +
            [pytest.param(os.path.join(EXAMPLES, f), id=f) for f in sorted(os.listdir(EXAMPLES))
             if f.endswith(".onnxtext")])


@pytest.mark.parametrize("path", _corpus())
def test_scrambled_model_is_equal_and_one_changed_attribute_is_found(path):
    model = onnx.load(path, load_external_data=False) if path.endswith(".onnx") else onnxtext.load(path)
    scrambled = _scrambled(model, seed=zlib.crc32(path.encode()))
    result = compare(model, scrambled)
    assert result.equal, result.to_text()
    target = next(((n, a) for n in scrambled.graph.node for a in n.attribute if a.type == onnx.AttributeProto.INT),
                  None)
    if target is None:
        return
    node, attr = target
    attr.i += 1
    (change,) = compare(model, scrambled).changes
    assert (change.kind, change.name, change.old, change.new) == ("node.attribute", attr.name, str(attr.i - 1),
                                                                 str(attr.i))
    assert change.subject.startswith(node.op_type)


def test_scrambled_expanded_node_models_are_equal():
    """The node suite's bigger models (function expansions with If/Loop/Scan bodies and many duplicated
    Constant nodes): renamed and reordered, each compares equal. One test, all failures listed."""
    from corpus import node_models

    failures = []
    for name, model in node_models():
        if len(model.graph.node) >= 25:
            result = compare(model, _scrambled(model, seed=zlib.crc32(name.encode())))
            if not result.equal:
                failures.append(f"{name}: {result.to_text()[:300]}")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------------- command
def run_cli(capsys, *args):
    code = cli_main(["diff", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    """BASE as .onnx, its equivalent as .onnxtext, and an edited copy as .onnx."""
    a = tmp_path / "a.onnx"
    onnxtext.save(onnxtext.parse_model(BASE), str(a))
    same = tmp_path / "same.onnxtext"
    same.write_text(EQUIVALENT)
    changed = tmp_path / "changed.onnx"
    onnxtext.save(onnxtext.parse_model(BASE.replace("alpha = 0.1", "alpha = 0.25")), str(changed))
    return a, same, changed


def test_cli_same_models_mixing_binary_and_text(capsys, files):
    a, same, _ = files
    assert run_cli(capsys, a, same) == (0, "", "")


def test_cli_changed_attribute(capsys, files):
    a, _, changed = files
    code, out, _ = run_cli(capsys, a, changed)
    assert code == 1
    assert "LeakyRelu" in out and "alpha: 0.1 -> 0.25" in out and "\x1b[" not in out
    assert out.startswith(f"--- {a}\n+++ {changed}\n")


def test_cli_json(capsys, files):
    a, _, changed = files
    code, out, _ = run_cli(capsys, "--format", "json", a, changed)
    doc = json.loads(out)
    assert code == 1 and doc["equal"] is False
    assert [(c["kind"], c["name"], c["old"], c["new"]) for c in doc["changes"]] == \
        [("node.attribute", "alpha", "0.1", "0.25")]
    code, out, _ = run_cli(capsys, "--format", "json", a, files[1])
    assert code == 0 and json.loads(out) == {"a": str(a), "b": str(files[1]), "equal": True, "changes": []}


def test_cli_text_mode_is_a_unified_diff_of_canonical_texts(capsys, files):
    a, _, changed = files
    code, out, _ = run_cli(capsys, "--text", a, changed)
    assert code == 1
    assert "-  [act] r = LeakyRelu <alpha = 0.1> (m)\n+  [act] r = LeakyRelu <alpha = 0.25> (m)\n" in out
    assert run_cli(capsys, "--text", a, a)[:2] == (0, "")


@pytest.mark.parametrize("mode,colored", [((), "\x1b[33m"), (("--text",), "\x1b[31m-")])
@pytest.mark.parametrize("choice,ansi", [("always", True), ("never", False), ("auto", False)])
def test_cli_color(capsys, files, choice, ansi, mode, colored):
    a, _, changed = files
    _, out, _ = run_cli(capsys, *mode, "--color", choice, a, changed)
    # changes are yellow, removed lines red; auto is off when stdout is not a terminal
    assert (colored in out) == ansi and ("\x1b[" in out) == ansi


@pytest.mark.parametrize("make,needle", [
    (lambda d: d / "missing.onnx", "no such file"),
    (lambda d: (d / "bad.onnxtext").write_text("g (x) => (y) {\n  y = Relu(x\n}\n") and d / "bad.onnxtext", ":3:1"),
])
def test_cli_trouble_exits_2(tmp_path, files, make, needle):
    bad = make(tmp_path)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "onnxtext", "diff", str(files[0]), str(bad)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_cli_quiet_prints_nothing(capsys, files):
    a, same, changed = files
    assert run_cli(capsys, "-q", a, changed) == (1, "", "")
    assert run_cli(capsys, "-q", a, same) == (0, "", "")


def test_cli_text_and_json_are_exclusive(capsys, files):
    with pytest.raises(SystemExit) as e:
        cli_main(["diff", "--text", "--format", "json", str(files[0]), str(files[1])])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_cli_exit_status_end_to_end(files):
    a, same, changed = files
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    codes = [subprocess.run([sys.executable, "-m", "onnxtext", "diff", str(a), str(b)], capture_output=True,
                            env=env).returncode for b in (same, changed)]
    assert codes == [0, 1]


@pytest.mark.parametrize("shape,changed", [
    ((12,), [3]),
    ((3, 4), [(0, 1), (2, 3)]),
    ((3, 4), [(0, 0), (0, 1), (0, 2), (1, 0), (1, 3), (2, 2), (2, 3)]),  # more than are listed: a count
    ((2, 2, 2), [(1, 0, 1)]),
])
def test_changed_weight_elements_are_listed_then_counted(shape, changed):
    from onnxtext.differ import ELEMENTS_SHOWN, value_difference

    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 4
    y = x.copy()
    for k, where in enumerate(changed):
        y[where] = -1.5 - k
    detail = value_difference(x, y)
    where = [list(w) if isinstance(w, tuple) else [w] for w in changed]  # row-major order, like np.nonzero
    assert detail["elements"] == [[w, str(x[tuple(w)]), str(y[tuple(w)])] for w in where[:ELEMENTS_SHOWN]]
    assert detail["differing"] == len(changed)
    text = compare(_weights_text(x), _weights_text(y)).to_text()
    more = len(changed) - ELEMENTS_SHOWN
    assert (f"and {more} more" in text) == (more > 0), text
    assert f"[{', '.join(map(str, where[0]))}] {x[tuple(where[0])]} -> {y[tuple(where[0])]}" in text


def _weights_text(w: np.ndarray) -> str:
    dims = ", ".join(map(str, w.shape))
    values = ", ".join(repr(float(v)) for v in w.ravel())
    return (f'<ir_version: 10, opset_import: ["": 21]>\ng (float[{dims}] x) => (float[{dims}] y)\n'
            f"<float[{dims}] w = {{{values}}}>\n{{\n  y = Add(x, w)\n}}\n")


def test_worked_example_of_the_docs_is_current():
    """docs/reviewing.md shows `onnxtext diff` of examples/mlp.onnxtext against its edited version: same report."""
    doc = open(os.path.join(ROOT, "docs", "reviewing.md"), encoding="utf-8").read()
    v2 = re.search(r"```onnxtext\n(.*?)```", doc, re.S).group(1)
    shown = re.search(r"\$ onnxtext diff \S+ \S+\n(.*?)\$ echo", doc, re.S).group(1).splitlines()
    report = onnxtext.diff(os.path.join(EXAMPLES, "mlp.onnxtext"), v2).splitlines()
    assert report[2:] == shown[2:]  # the ---/+++ lines name the files


def _save_external(model, directory, data_name="weights.bin"):
    directory.mkdir()
    path = directory / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location=data_name, size_threshold=0)
    return path


def test_external_data_is_compared_from_each_models_directory(tmp_path):
    a = _rand_weights(3, 4096)
    b = a.copy()
    b[[10, 20]] += [0.5, -1.5]
    pa = _save_external(_weights_model(a), tmp_path / "a")
    pb = _save_external(_weights_model(b), tmp_path / "b")
    (change,) = compare(str(pa), str(pb)).changes
    assert change.kind == "initializer.values"
    assert change.detail["differing"] == int((a != b).sum())
    assert change.detail["max_abs_diff"] == float(np.abs(a.astype(np.float64) - b).max())
    assert compare(str(pa), str(_save_external(_weights_model(a), tmp_path / "a2"))).equal


def test_absent_external_data_compares_references(tmp_path):
    pa = _save_external(_weights_model(_rand_weights(4, 64)), tmp_path / "a")
    pb = _save_external(_weights_model(_rand_weights(5, 64)), tmp_path / "b", data_name="other.bin")
    os.remove(tmp_path / "a" / "weights.bin")
    os.remove(tmp_path / "b" / "other.bin")
    (change,) = compare(str(pa), str(pb)).changes
    assert change.kind == "initializer.external" and "weights.bin" in change.old and "other.bin" in change.new
