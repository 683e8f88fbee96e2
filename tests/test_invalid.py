"""Bad inputs: every tests/fixtures/invalid/NAME.onnxtext starts with ``# error: LINE:COL: MESSAGE PART``.

``onnxtext.parse`` must raise ParseError on that line, and the error a user is shown (``parse_hints.explain``:
the parser's error refined by the hints the parser is meant to call) must be at LINE:COL and contain the message
part (in its message or hint). Cases the parser cannot meet yet are listed with a reason in
tests/data/invalid_known_poor.txt (strict xfail, so fixing them is noticed).
"""

from __future__ import annotations

import glob
import os
import re

import pytest

import onnxtext
from onnxtext.syntax.hints import collect_parse_errors, explain, nearest_dtype, nearest_op

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "fixtures", "invalid", "*.onnxtext")))


def _known_poor():
    out = {}
    for line in open(os.path.join(HERE, "data", "invalid_known_poor.txt"), encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.strip().partition(" ")
            out[name] = reason
    return out


POOR = _known_poor()


def _params():
    for path in FIXTURES:
        name = os.path.basename(path)[:-len(".onnxtext")]
        marks = [pytest.mark.xfail(reason=POOR[name], strict=True)] if name in POOR else []
        yield pytest.param(path, id=name, marks=marks)


def test_enough_fixtures():
    assert len(FIXTURES) >= 30


@pytest.mark.parametrize("path", list(_params()))
def test_invalid_fixture(path):
    text = open(path, encoding="utf-8").read()
    m = re.match(r"# error: (\d+):(\d+): (.+)", text)
    assert m, "first line must be '# error: LINE:COL: message part'"
    line, col, part = int(m.group(1)), int(m.group(2)), m.group(3).strip()
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse(text)
    assert info.value.line == line
    shown = explain(text)
    assert (shown.line, shown.column) == (line, col), shown.format()
    assert part in shown.message + " " + (shown.hint or ""), shown.format()
    assert "Traceback" not in shown.format() and "__ANON" not in shown.format()


MULTI = [
    # (text, lines of the errors, in order)
    ("g (floot[N] x) => (float[N] y) {\n  t = Relu(x\n  y = Neg(t)\n  z = Add(x, x y)\n}\n", [1, 3, 4]),
    ("g (float[N] x) => (float[N] y) {\n  y = Relu(x) $\n  z = Neg(x) %\n}\n", [2, 3]),
    ("g (float[N] x) => (float[N] y) {\n  y = Relu(x)\n}\n", []),
]


@pytest.mark.parametrize("text,lines", MULTI)
def test_collects_several_errors(text, lines):
    assert [e.line for e in collect_parse_errors(text)] == lines


def test_error_cap():
    body = "".join(f"  y{i} = Relu(x) $\n" for i in range(40))
    errors = collect_parse_errors("g (float[N] x) => (float[N] y) {\n" + body + "}\n")
    assert len(errors) == 20


@pytest.mark.parametrize("word,expected", [("floot", "float"), ("flaot16", "float16"), ("in64", "int64"),
                                           ("unit8", "uint8"), ("float", None), ("banana", None)])
def test_nearest_dtype(word, expected):
    assert nearest_dtype(word) == expected


@pytest.mark.parametrize("name,opsets,expected", [("Reluu", {"": 18}, "Relu"), ("conv", {"": 18}, "Conv"),
                                                   ("MatMull", {"": 18}, "MatMul"),
                                                   ("LabelEncodr", {"ai.onnx.ml": 3}, "LabelEncoder")])
def test_nearest_op(name, opsets, expected):
    assert nearest_op(name, opsets) == expected


# A misspelled element type in every position where a type appears: the error is at the typo (its line and
# column found in the text) and the hint names the nearest type.
_H = '<ir_version: 10, opset_import: ["": 18, "l": 1]>\n'
_CALL = 'g (float[N] x) => (float[N] y) {\n  y = l.F(x)\n}\n<domain: "l", opset_import: ["": 18]>\n'
TYPOS = [
    ("graph_input", "g (floot[N] x) => (float[N] y) {\n  y = Relu(x)\n}\n", "floot", "float"),
    ("graph_output", "g (float[N] x) => (floot[N] y) {\n  y = Relu(x)\n}\n", "floot", "float"),
    ("scalar_input", "g (floot x) => (float y) {\n  y = Relu(x)\n}\n", "floot", "float"),
    ("value_info", "g (float[N] x) => (float[N] y) <floot[N] t> {\n  t = Relu(x)\n  y = Relu(t)\n}\n", "floot", "float"),
    ("initializer", "g (float[N] x) => (float[N] y) <floot[2] w = {1.0, 2.0}> {\n  y = Add(x, w)\n}\n", "floot",
     "float"),
    ("tensor_attribute", "g (float[N] x) => (float[N] y) {\n  c = Constant <value = flaot16[2] {1.0, 2.0}> ()\n"
     "  y = Add(x, c)\n}\n", "flaot16", "float16"),
    ("scalar_tensor_attribute", "g (float[N] x) => (float[N] y) {\n  c = Constant <value = in64 {1}> ()\n"
     "  y = Add(x, c)\n}\n", "in64", "int64"),
    ("type_attribute", "g (float[N] x) => (float[N] y) {\n  y = Foo <t = unit8[2]> (x)\n}\n", "unit8", "uint8"),
    ("seq_element", "g (seq(floot[N]) x) => (float[N] y) {\n  y = SequenceAt(x, 0)\n}\n", "floot", "float"),
    ("optional_element", "g (optional(floot[N]) x) => (float[N] y) {\n  y = OptionalGetElement(x)\n}\n", "floot",
     "float"),
    ("map_key", "g (map(int46, float) x) => (float[N] y) {\n  y = Foo(x)\n}\n", "int46", "int4"),
    ("map_value", "g (map(int64, floot) x) => (float[N] y) {\n  y = Foo(x)\n}\n", "floot", "float"),
    ("sparse_type", "g (sparse_tensor(floot[2]) x) => (float[N] y) {\n  y = Foo(x)\n}\n", "floot", "float"),
    ("sparse_values", "g (float[N] x) => (float[N] y) <sparse_tensor(float[2]) s = sparse(doubel[1] s = {1.0}, "
     "int64[1] i = {0})> {\n  y = Add(x, s)\n}\n", "doubel", "double"),
    ("function_io", _H + _CALL + "F (floot[N] a) => (b) {\n  b = Relu(a)\n}\n", "floot", "float"),
    ("function_value_info", _H + _CALL + "F (a) => (b) <bfloat61[N] t> {\n  t = Relu(a)\n  b = Relu(t)\n}\n",
     "bfloat61", "bfloat16"),
    ("bare_node", "c = Constant <value = floot[2] {1.0, 2.0}> ()", "floot", "float"),
]


@pytest.mark.parametrize("text,typo,near", [t[1:] for t in TYPOS], ids=[t[0] for t in TYPOS])
def test_type_typo_everywhere(text, typo, near):
    assert text.count(typo) == 1
    off = text.index(typo)
    line, col = text.count("\n", 0, off) + 1, off - (text.rfind("\n", 0, off) + 1) + 1
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse(text)
    e = info.value
    assert (e.line, e.column) == (line, col), e.format()
    assert e.message == f"unknown data type {typo!r}" and e.hint == f"did you mean {near!r}?"
