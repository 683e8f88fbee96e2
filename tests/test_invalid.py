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
from onnxtext.checker.parse_hints import collect_parse_errors, explain, nearest_dtype, nearest_op

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
