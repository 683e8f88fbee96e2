"""Tests of onnxtext.check: data-driven rule cases, proto-only violations, the backend corpus, the CLI.

tests/checker_cases/*.onnxtext: each line carrying ``# <- RULE [RULE...]`` must get exactly those diagnostics
(rule id and line; a rule listed twice on a line means two diagnostics there), and the file no other diagnostic;
files without markers must check clean. A case may carry ``# fix: "OLD" -> "NEW"`` lines (JSON strings): with
every OLD replaced by NEW (each OLD must occur once) the model is the minimal clean counterpart of the case and
must check with no diagnostic at all. docs/checker.md's coverage table names these cases.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import re
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

import onnxtext
from onnxtext.checker import RULES, _load_rules, check

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realmodels  # noqa: E402 - tests/realmodels.py, the real-model corpus helpers

_load_rules()  # RULES is filled when the rule modules are imported (check() does it too)

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = sorted(glob.glob(os.path.join(HERE, "checker_cases", "*.onnxtext")))
_MARK = re.compile(r"#\s*<-\s*(.+)$")
_FIX = re.compile(r'^#\s*fix:\s*("(?:[^"\\]|\\.)*")\s*->\s*("(?:[^"\\]|\\.)*")\s*$', re.M)


def expected_marks(text):
    """Counter of (rule, line) pairs the markers ask for."""
    out = collections.Counter()
    for i, line in enumerate(text.split("\n"), 1):
        m = _MARK.search(line)
        if m and not _FIX.match(line):
            out.update((r, i) for r in m.group(1).split())
    return out


def fixes(text):
    return [(json.loads(a), json.loads(b)) for a, b in _FIX.findall(text)]


def _name(path):
    return os.path.basename(path)[:-len(".onnxtext")]


@pytest.mark.parametrize("path", CASES, ids=[_name(p) for p in CASES])
def test_case_file(path):
    text = open(path, encoding="utf-8").read()
    diags = check(text, lint=True)
    assert collections.Counter((d.rule, d.line) for d in diags) == expected_marks(text), "\n".join(map(str, diags))
    for d in diags:
        assert d.path and d.message and d.spec.startswith("IR spec") and d.severity in ("error", "warning")
        assert d.column is not None and d.column >= 1


FIXED = [p for p in CASES if fixes(open(p, encoding="utf-8").read())]


@pytest.mark.parametrize("path", FIXED, ids=[_name(p) for p in FIXED])
def test_case_file_fixed_is_clean(path):
    """The minimal clean counterpart of a violating case: the same model with the violations fixed."""
    text = open(path, encoding="utf-8").read()
    assert expected_marks(text), "a case with fixes must have violations"
    fixed = _FIX.sub("#", text)  # the fix lines themselves contain OLD
    for old, new in fixes(text):
        assert fixed.count(old) == 1, f"{old!r} must occur exactly once"
        fixed = fixed.replace(old, new)
    text = fixed
    assert [str(d) for d in check(text, lint=True)] == []


# (case file, rule, line, severity by default, severity with strict=True); lint rules run only with lint=True
SEVERITIES = [
    ("model_opset_import_same_version", "model.opset-import", 5, "warning", "error"),
    ("model_opset_import_same_version", "graph.unique-names", 8, "warning", "error"),
    ("model_opset_import", "model.opset-import", 3, "error", "error"),
    ("graph_unique_names", "graph.unique-names", 12, "warning", "error"),
    ("graph_unique_names", "graph.unique-names", 13, "error", "error"),
    ("graph_ssa", "graph.ssa", 7, "error", "error"),
    ("op_unknown_onnxruntime", "op.unknown", 6, "warning", "error"),
    ("op_unknown", "op.unknown", 6, "error", "error"),
    ("train_initialization", "train.initialization", 12, "warning", "error"),
    ("train_binding", "train.binding", 18, "warning", "error"),
    ("model_domain", "model.domain", 2, None, "warning"),
    ("model_identifier", "model.identifier", 5, None, "warning"),
]


@pytest.mark.parametrize("case,rule,line,default,strict", SEVERITIES, ids=[f"{s[0]}:{s[2]}" for s in SEVERITIES])
def test_severity_fits_real_models(case, rule, line, default, strict):
    """Spec rules runtimes tolerate are warnings (errors under strict); exporter-wide style advice is lint."""
    text = open(os.path.join(HERE, "checker_cases", case + ".onnxtext"), encoding="utf-8").read()

    def severity(**kw):
        found = {d.severity for d in check(text, **kw) if (d.rule, d.line) == (rule, line)}
        assert len(found) <= 1
        return found.pop() if found else None

    assert severity() == default
    assert severity(strict=True) == (strict if default else None)
    assert severity(lint=True) == (default or "warning")
    assert severity(lint=True, strict=True) == strict


@pytest.mark.parametrize("model", realmodels.params())
def test_real_models_check_without_errors(model):
    """The real-model corpus (docs/corpus.md): valid models that runtimes run get no error by default."""
    errors = [str(d) for d in check(model.load()) if d.severity == "error"]
    assert errors == []


def test_every_violating_case_has_a_clean_counterpart():
    missing = [_name(p) for p in CASES if expected_marks(open(p).read()) and p not in FIXED]
    assert missing == []


# (case file, rule, line, a part of the message): messages name the culprit and give the hints
MESSAGES = [
    ("op_unknown", "op.unknown", 6, "did you mean 'Relu'?"),
    ("op_unknown", "op.unknown", 7, "introduced in version 20"),
    ("op_attribute", "op.attribute", 7, "must be float, not string"),
    ("op_attribute", "op.attribute", 8, "did you mean 'alpha'?"),
    ("op_arity", "op.arity", 12, "takes at least 1"),
    ("graph_undefined", "graph.undefined", 8, "undefined value 'u'"),
    ("graph_undefined_near", "graph.undefined", 6, "undefined value 'xx'; did you mean 'x'?"),
    ("dev_node", "dev.node", 14, "outside [-1, 0]"),
    ("dev_node", "dev.node", 17, "num_shards 0"),
    ("tensor_external", "tensor.external", 12, "does not match shape [2]"),
    ("train_binding", "train.binding", 18, "bound twice"),
]


@pytest.mark.parametrize("case,rule,line,part", MESSAGES, ids=[f"{m[0]}:{m[2]}" for m in MESSAGES])
def test_message(case, rule, line, part):
    diags = check(open(os.path.join(HERE, "checker_cases", case + ".onnxtext"), encoding="utf-8").read())
    found = [d.message for d in diags if (d.rule, d.line) == (rule, line)]
    assert any(part in m for m in found), found


# (case file, rule, line, column): the column is the culprit's first character (a value, an op name, a literal)
COLUMNS = [
    ("graph_undefined", "graph.undefined", 8, 11),    # the undefined input 'u'
    ("op_unknown", "op.unknown", 6, 7),               # the op name 'Reluu'
    ("op_attribute", "op.attribute", 8, 12),          # the attribute 'alfa'
    ("graph_shadowing", "graph.shadowing", 13, 26),   # the subgraph input entry 'float[N] c'
    ("tensor_bitpattern_literal", "tensor.bitpattern-literal", 5, 19),  # the bare integer '1'
    ("graph_topological", "graph.topological", 6, 11),  # the input 't' used before it is produced
]


@pytest.mark.parametrize("case,rule,line,column", COLUMNS, ids=[f"{c[0]}:{c[2]}" for c in COLUMNS])
def test_column(case, rule, line, column):
    diags = check(open(os.path.join(HERE, "checker_cases", case + ".onnxtext"), encoding="utf-8").read())
    assert (line, column) in [(d.line, d.column) for d in diags if d.rule == rule]


# ------------------------------------------------------------------------------------------ proto-only cases
def base_model():
    """A clean model built with onnx.helper (so the tests do not depend on our parser)."""
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                          [helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    m.domain = "test"
    return m


def _raw_wrong_size(m):
    m.graph.initializer[0].ClearField("float_data")
    m.graph.initializer[0].raw_data = b"\0" * 4


def _two_fields(m):
    m.graph.initializer[0].raw_data = b"\0" * 8


def _wrong_field(m):
    t = m.graph.initializer[0]
    t.ClearField("float_data")
    t.int64_data.extend([1, 2])


def _no_dtype(m):
    m.graph.initializer[0].data_type = 0


def _empty_input_name(m):
    m.graph.input[0].name = ""


def _no_graph(m):
    m.ClearField("graph")


def _no_ir(m):
    m.ir_version = 0


def _no_opsets(m):
    m.ClearField("opset_import")


def _sparse_bad_shape(m):
    s = helper.make_sparse_tensor(helper.make_tensor("s", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                  helper.make_tensor("i", TensorProto.INT64, [3], [0, 1, 2]), [4])
    m.graph.sparse_initializer.append(s)


def _sparse_unsorted(m):
    s = helper.make_sparse_tensor(helper.make_tensor("s", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                  helper.make_tensor("i", TensorProto.INT64, [2], [3, 1]), [4])
    m.graph.sparse_initializer.append(s)


def _external_with_values(m):
    t = m.graph.initializer[0]
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="w.bin")
    t.external_data.add(key="length", value="3")


def _attribute_without_type(m):
    a = m.graph.node[0].attribute.add()
    a.name = "alpha"


def _optional_ir7(m):
    m.ir_version = 7
    tp = m.graph.input[0].type
    inner = onnx.TypeProto()
    inner.CopyFrom(tp)
    tp.optional_type.elem_type.CopyFrom(inner)


def _fn_duplicate_attr(m):
    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", 18)], attributes=["x", "x"])
    m.functions.append(f)
    m.opset_import.add(domain="local", version=1)


def _metadata_function(m):
    m.ir_version = 9
    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", 18)])
    f.metadata_props.add(key="k", value="v")
    m.functions.append(f)
    m.opset_import.add(domain="local", version=1)


PROTO_CASES = [
    (_raw_wrong_size, "tensor.size", "graph.initializer[w]"),
    (_two_fields, "tensor.value-field", "graph.initializer[w]"),
    (_wrong_field, "tensor.value-field", "graph.initializer[w]"),
    (_no_dtype, "tensor.data-type", "graph.initializer[w]"),
    (_empty_input_name, "graph.empty-name", "graph.input[]"),
    (_no_graph, "model.graph", "graph"),
    (_no_ir, "ir.range", "ir_version"),
    (_no_opsets, "model.opset-import", "opset_import"),
    (_sparse_bad_shape, "tensor.sparse", "graph.sparse_initializer[s]"),
    (_sparse_unsorted, "tensor.sparse", "graph.sparse_initializer[s]"),
    (_external_with_values, "tensor.external", "graph.initializer[w]"),
    (_attribute_without_type, "op.attribute", "graph.node[0].attribute[alpha]"),
    (_optional_ir7, "ir.type", "graph.input[x]"),
    (_fn_duplicate_attr, "fn.attribute-disjoint", "functions[0].attribute[x]"),
    (_metadata_function, "ir.feature", "functions[0]"),
]


@pytest.mark.parametrize("mutate,rule,path", PROTO_CASES, ids=[c[0].__name__.strip("_") for c in PROTO_CASES])
def test_proto_violation(mutate, rule, path):
    m = base_model()
    assert [d for d in check(m) if d.severity == "error"] == []
    mutate(m)
    found = [(d.rule, d.path) for d in check(m)]
    assert (rule, path) in found, found
    for d in check(m):
        assert d.line is None  # no text, no line: the path locates it


def test_every_rule_has_a_violating_case():
    covered = {rule for path in CASES for rule, _ in expected_marks(open(path).read())}
    covered |= {c[1] for c in PROTO_CASES}
    for path in glob.glob(os.path.join(HERE, "shape_cases", "*.onnxtext")):  # tests/test_shapes.py
        covered |= set(re.findall(r"#\s*<-\s*([a-z][a-z.\-]+)\s+\"", open(path, encoding="utf-8").read()))
    assert set(RULES) - covered == set()


def test_collects_all_errors_not_just_the_first():
    text = open(os.path.join(HERE, "checker_cases", "op_unknown.onnxtext")).read()
    assert len([d for d in check(text) if d.rule == "op.unknown"]) == 2


# ------------------------------------------------------------------------------------------ inputs
def test_parse_errors_become_diagnostics():
    diags = check('<ir_version: 10, opset_import: ["": 18]>\ng (floot[N] x) => (float[N] y) {\n  y = Relu(x)\n}\n')
    assert [(d.rule, d.line, d.column) for d in diags] == [("parse.syntax", 2, 4)]
    assert "floot" in diags[0].message and "float" in diags[0].message


def test_path_input_text_and_binary(tmp_path):
    m = base_model()
    bin_path = tmp_path / "m.onnx"
    bin_path.write_bytes(m.SerializeToString())
    assert [d for d in check(str(bin_path)) if d.severity == "error"] == []
    txt = tmp_path / "m.onnxtext"
    txt.write_text(open(os.path.join(HERE, "checker_cases", "graph_ssa.onnxtext")).read())
    diags = check(txt)
    marks = expected_marks(txt.read_text())
    assert collections.Counter((d.rule, d.line) for d in diags) == marks and {d.file for d in diags} == {str(txt)}


def test_graph_proto_is_wrapped():
    g = base_model().graph
    g.node[0].input[1] = "nope"
    assert [d.rule for d in check(g)] == ["graph.undefined"]


def test_bitpattern_heuristic_table():
    from onnxtext import dtypes
    from onnxtext.checker.tensors import implausible_bits

    # (type, bare integer, meant as a value?) - 15360 is float16 1.0, 56 is float8e4m3fn 1.0
    table = [("float16", 1, True), ("float16", 1000, True), ("float16", 15360, False), ("bfloat16", 200, True),
             ("bfloat16", 16256, False), ("float8e4m3fn", 3, True), ("float8e4m3fn", 56, False),
             ("float8e8m0", 1, False), ("float16", 0, False)]
    for name, k, expected in table:
        assert implausible_bits(dtypes.BY_NAME[name], k) is expected, (name, k)


# ------------------------------------------------------------------------------------------ corpus
def _exceptions():
    path = os.path.join(HERE, "data", "checker_corpus_exceptions.txt")
    out = {}
    for line in open(path, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.strip().partition(" ")
            out[name] = reason.strip()
    return out


def test_backend_corpus_checks_clean():
    sys.path.insert(0, HERE)
    import corpus

    exceptions = _exceptions()
    failures = {}
    count = 0
    for name, load in corpus.all_models():
        count += 1
        errors = [d for d in check(load()) if d.severity == "error"]
        if errors and name not in exceptions:
            failures[name] = str(errors[0])
    assert count > 2000
    assert failures == {}


def test_backend_corpus_as_text_checks_clean():
    """Printed to text and checked from text: spans and the literal heuristic run on real models."""
    sys.path.insert(0, HERE)
    import corpus

    exceptions = _exceptions()
    failures = {}
    count = 0
    for name, load in corpus.all_models():
        count += 1
        diags = [d for d in check(onnxtext.to_text(load())) if d.severity == "error"
                 or d.rule == "tensor.bitpattern-literal"]
        if diags and name not in exceptions:
            failures[name] = str(diags[0])
    assert count > 2000
    assert failures == {}


# ------------------------------------------------------------------------------------------ CLI
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], capture_output=True, text=True,
                          cwd=os.path.dirname(HERE))


def test_cli_check_text_and_exit_status():
    bad = os.path.join(HERE, "checker_cases", "graph_undefined.onnxtext")
    clean = os.path.join(HERE, "checker_cases", "clean_minimal.onnxtext")
    r = _cli("check", bad, clean)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{bad}:8:11: error[graph.undefined]: node[1] (Add) uses undefined value 'u'",
        "            u)            # <- graph.undefined",
        "            ^",
        f"{bad}:9:61: error[graph.undefined]: node[0] (Neg) uses undefined value 'v'",
        "    z = If(c) <then_branch = a () => (float[N] ta) { ta = Neg(v) },   # <- graph.undefined",
        "                                                              ^"]
    assert "Traceback" not in r.stderr
    assert _cli("check", clean).returncode == 0


def test_cli_check_levels():
    lint = os.path.join(HERE, "checker_cases", "model_domain.onnxtext")
    r = _cli("check", lint)
    assert r.returncode == 0 and r.stdout == ""
    r = _cli("check", "--lint", lint)
    assert r.returncode == 0 and r.stdout.startswith(f"{lint}:2:2: warning[model.domain]: the model has no domain")
    tolerated = os.path.join(HERE, "checker_cases", "model_opset_import_same_version.onnxtext")
    r = _cli("check", tolerated)
    assert r.returncode == 0 and "warning[model.opset-import]" in r.stdout and "an error under --strict" in r.stdout
    r = _cli("check", "--strict", tolerated)
    assert r.returncode == 1 and "error[model.opset-import]" in r.stdout and "error[graph.unique-names]" in r.stdout


def test_cli_check_json():
    bad = os.path.join(HERE, "checker_cases", "op_unknown.onnxtext")
    r = _cli("check", "--format", "json", bad)
    items = json.loads(r.stdout)
    assert r.returncode == 1
    assert [(d["rule"], d["line"]) for d in items] == [("op.unknown", 6), ("op.unknown", 7)]


def test_cli_check_parse_error_is_a_diagnostic(tmp_path):
    p = tmp_path / "bad.onnxtext"
    p.write_text("g (float[N] x) => (float[N] y) {\n  y = Relu(x\n}\n")
    r = _cli("check", str(p))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.startswith(f"{p}:3:1: error[parse.syntax]")


# Versioning rules: the top two bytes are MAJOR, the next two MINOR, the low four PATCH; the top four bytes are
# non-zero exactly when SemVer is used, else model_version is a plain number.
MODEL_VERSIONS = [(0x0001000200000159, "1.2.345"), (7, "7"), (0xFFFFFFFF, str(0xFFFFFFFF)),
                  (0x0000000100000000, "0.1.0"), (0x0001000000000000, "1.0.0"), ((12 << 48) | (34 << 32) | 56, "12.34.56")]


@pytest.mark.parametrize("value,text", MODEL_VERSIONS)
def test_info_model_version_semver(value, text):
    from onnxtext.commands.info import decode_model_version

    assert decode_model_version(value) == text


def test_info_counts_per_dtype():
    """Parameters and bytes per element type: sub-byte types packed, strings by their length, sparse values."""
    from onnxtext.commands.info import summary

    loop_body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Neg", ["x"], ["o"])],
                                  "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                                  [helper.make_tensor_value_info("c2", TensorProto.BOOL, []),
                                   helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["n", "cond"], ["y"], body=loop_body)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [0.0] * 6),
         helper.make_tensor("h", TensorProto.FLOAT16, [5], [0.0] * 5),
         helper.make_tensor("q", TensorProto.INT4, [3], [1, 2, 3]),
         helper.make_tensor("s", TensorProto.STRING, [2], [b"abc", b"de"]),
         helper.make_tensor("n", TensorProto.INT64, [], [3]), helper.make_tensor("cond", TensorProto.BOOL, [], [True])],
        sparse_initializer=[helper.make_sparse_tensor(helper.make_tensor("sp", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                                      helper.make_tensor("spi", TensorProto.INT64, [2], [0, 3]), [4])])
    s = summary(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]))
    assert s["nodes"] == 3  # the Loop and the two nodes of its body
    assert s["parameters"] == {"float": 6 + 2, "float16": 5, "int4": 3, "string": 2, "int64": 1, "bool": 1}
    assert s["bytes"] == {"float": 8 * 4, "float16": 10, "int4": 2, "string": 5, "int64": 8, "bool": 1}


def test_cli_info(tmp_path):
    m = base_model()
    m.model_version = (3 << 48) | (1 << 32) | 4
    m.producer_name = "unit"
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    r = _cli("info", "--format", "json", str(p))
    s = json.loads(r.stdout)
    assert (s["ir_version"], s["model_version"], s["producer"], s["nodes"]) == (10, "3.1.4", "unit", 1)
    assert s["parameters"] == {"float": 2} and s["bytes"] == {"float": 8}
    assert s["opset_import"] == {"ai.onnx": 18}
    assert s["inputs"] == {"x": "float[2]"} and s["outputs"] == {"y": "float[2]"} and s["ops"] == {"ai.onnx.Add": 1}
    r = _cli("info", str(p))
    assert r.returncode == 0 and "model_version: 3.1.4" in r.stdout and "ir_version:    10" in r.stdout
    lines = r.stdout.splitlines()
    assert lines[lines.index("inputs:") + 1] == "  float[2] x" and lines[lines.index("outputs:") + 1] == "  float[2] y"
    assert lines[lines.index("nodes:         1 (1 distinct ops; subgraphs included)") + 1] == "  ai.onnx.Add       1"


def test_cli_info_symbolic_types_and_histogram():
    r = _cli("info", os.path.join(os.path.dirname(HERE), "examples", "mlp.onnxtext"))
    assert r.returncode == 0
    assert "inputs:\n  float[N, 4] x\noutputs:\n  float[N, 3] probs\n" in r.stdout
    assert "  ai.onnx.Gemm          2\n  ai.onnx.Relu          1\n  ai.onnx.Softmax       1\n" in r.stdout


def test_cli_info_bad_text_is_a_clean_error(tmp_path):
    p = tmp_path / "bad.onnxtext"
    p.write_text("g (float[N] x) => (float[N] y) {\n  y = Relu(x) $\n  z = Neg(x) %\n}\n")
    r = _cli("info", str(p))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{p}:2:15:" in r.stderr and f"{p}:3:14:" in r.stderr


# ------------------------------------------------------------------------------------------ oracle
def _reverse_nodes(g):
    nodes = list(g.node)[::-1]
    del g.node[:]
    g.node.extend(nodes)


def _undefined_input(g):
    g.node[0].input[0] = "__undefined__"


def _duplicate_output(g):
    g.node[1].output[0] = g.node[0].output[0]


@pytest.mark.parametrize("mutate", [_reverse_nodes, _undefined_input, _duplicate_output],
                         ids=lambda f: f.__name__.strip("_"))
def test_what_onnx_checker_rejects_is_an_error(mutate):
    """Oracle: corrupt a sample of the corpus; whatever onnx.checker rejects, we must report as an error."""
    sys.path.insert(0, HERE)
    import corpus

    missed, tried = [], 0
    for name, load in corpus.all_models()[::9]:
        m = onnx.ModelProto()
        m.CopyFrom(load())
        if len(m.graph.node) < 2 or not m.graph.node[0].input or not m.graph.node[0].output[0]:
            continue
        mutate(m.graph)
        try:
            onnx.checker.check_model(m)
            continue
        except Exception:  # noqa: BLE001 - any rejection counts
            tried += 1
        if not any(d.severity == "error" for d in check(m)):
            missed.append(name)
    assert tried > 20 and missed == []


# ------------------------------------------------------------------------------------------ docs
def test_coverage_table():
    """docs/checker.md's rule -> test table: every rule has a row; every case it names exists and proves it."""
    doc = open(os.path.join(os.path.dirname(HERE), "docs", "checker.md"), encoding="utf-8").read()
    rows = [line for line in doc[doc.index("## Coverage"):].splitlines() if line.startswith("| ") and "`" in line]
    proto = {c[0].__name__.strip("_"): c[1] for c in PROTO_CASES}
    seen = set()
    for row in rows:
        cells = row.split(" | ")
        rule = cells[1].strip("`")
        seen.add(rule)
        for ref in re.findall(r"`([^`]+)`", " | ".join(cells[3:])):
            if "::" in ref:
                path, func = ref.split("::")
                assert f"def {func}(" in open(os.path.join(HERE, path), encoding="utf-8").read(), ref
            elif ref.startswith("proto:"):
                assert proto.get(ref[6:]) == rule, ref
            elif re.fullmatch(r"[a-z0-9_]+:\d+", ref):
                name, line = ref.split(":")
                marks = expected_marks(open(os.path.join(HERE, "checker_cases", name + ".onnxtext")).read())
                assert marks[(rule, int(line))] >= 1, f"{ref} does not mark {rule}"
            elif ref.endswith("+fix"):
                assert os.path.join(HERE, "checker_cases", ref[:-4] + ".onnxtext") in FIXED, ref
            elif ref.startswith("clean_"):
                assert os.path.exists(os.path.join(HERE, "checker_cases", ref + ".onnxtext")), ref
            elif ref != "proto":
                assert os.path.exists(os.path.join(HERE, "fixtures", "invalid", ref + ".onnxtext")) or ref == "clean", ref
    assert set(RULES) | {"parse.syntax"} == seen
