"""Several parse errors in one text (onnxtext/checker/recovery.py): positions, no cascades, the cap, and where
they surface (ParseError.errors / format(), onnxtext.check, the CLI).

RECOVERY is the table: a text, and the (line, column) of every error a person would list by reading it. The
caret of each case is the offending token (for a misspelled type: the type).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import onnxtext
from onnxtext.checker import check

G = "g (float[N] x) => (float[N] y) {\n"

RECOVERY = [
    # id, text, [(line, column), ...]
    ("clean", G + "  y = Relu(x)\n}\n", []),
    ("two_stray_characters", G + "  y = Relu(x) $\n  z = Neg(x) %\n}\n", [(2, 15), (3, 14)]),
    ("missing_paren_then_more", "g (floot[N] x) => (float[N] y) {\n  t = Relu(x\n  y = Neg(t)\n"
     "  z = Add(x, x y)\n}\n", [(1, 4), (3, 3), (4, 16)]),
    ("three_type_typos_in_one_list", "g (floot[N] x, int46[2] k) => (flaot[N] y) {\n  y = Relu(x)\n}\n",
     [(1, 4), (1, 16), (1, 32)]),
    # an error inside a multi-line attribute list is one error, not one per following line
    ("multiline_attribute_list", G + "  y = Conv <\n    kernel_shape = [3, 3],\n    pads = [1 1, 1, 1]\n"
     "  > (x, w)\n  z = Relu(x) %\n}\n", [(4, 15), (6, 15)]),
    ("missing_comma_between_attributes", G + "  y = LeakyRelu <alpha = > (x)\n  z = Elu <alpha = 1.0 beta = 2> (x)\n}\n",
     [(2, 26), (3, 24)]),
    ("header_then_body", '<ir_version: 10 opset_import: ["": 18]>\n' + G + "  y = Relu(x) $\n}\n",
     [(1, 17), (3, 15)]),
    ("subgraph_then_outer", "g (bool c, float[N] x) => (float[N] y) {\n"
     "  y = If(c) <then_branch = t () => (float[N] a) {\n    a = Relu(x $)\n  }, else_branch = e () => (float[N] b) {\n"
     "    b = Neg(x)\n  }>\n  z = Add(x x)\n}\n", [(3, 16), (7, 13)]),
    ("graph_then_function", '<ir_version: 10, opset_import: ["": 18, "l": 1]>\ng (float[N] x) => (float[N] y) {\n'
     '  y = l.F(x\n}\n<domain: "l", opset_import: ["": 18]>\nF (a) => (b) {\n  b = Relu(a))\n}\n', [(4, 1), (7, 14)]),
    ("tensor_literals", "g (float[N] x) => (float[N] y) <float[3] w = {1.0, 2.0 3.0}, float[2] v = {1.0,, 2.0}> {\n"
     "  y = Add(x, w)\n}\n", [(1, 56), (1, 80)]),
    ("training_info", "g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {\n  y = Add(x, w)\n}\n"
     'training_info {\n  algorithm: alg () => (float[2] w2) {\n    w2 = Neg(w $)\n  }\n  update_binding: ["w" "w2"]\n}\n',
     [(6, 16), (8, 24)]),
    # a semantic error of the builder first, then a syntax error further on
    ("builder_error_then_syntax", "g (float[3] x) => (float[3] y) <float[3] w = {1.0, 2.0}> {\n  y = Add(x, w) $\n}\n",
     [(1, 42), (2, 17)]),
    # under-reporting on purpose: an unterminated string swallows the rest, so nothing after it is reported
    ("unterminated_string", G + '  y = Relu("x)\n  z = Neg(x) $\n}\n', [(2, 12)]),
    ("missing_brace_at_end", G + "  y = Relu(x)\n", [(3, 1)]),
]


@pytest.mark.parametrize("text,where", [c[1:] for c in RECOVERY], ids=[c[0] for c in RECOVERY])
def test_recovery_positions(text, where):
    try:
        onnxtext.parse(text)
    except onnxtext.ParseError as e:
        found = [(x.line, x.column) for x in e.errors]
    else:
        found = []
    assert found == where


def test_cap():
    body = "".join(f"  y{i} = Relu(x) $\n" for i in range(40))
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse(G + body + "}\n")
    assert [e.line for e in info.value.errors] == list(range(2, 22))  # the first 20, in order


def test_format_lists_every_error_with_its_caret():
    text = G + "  y = Relu(x) $\n  z = Neg(x) %\n}\n"
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse(text, filename="m.onnxtext")
    out = info.value.format()
    heads = [line for line in out.splitlines() if line.startswith("m.onnxtext:")]
    assert [h.split(": ")[0] for h in heads] == ["m.onnxtext:2:15", "m.onnxtext:3:14"]
    assert "'$'" in heads[0] and "'%'" in heads[1]
    assert "                ^" in out.splitlines()  # the caret under the '$' (two spaces of indent + 14)
    assert str(info.value) == out


def test_check_gives_one_diagnostic_per_error():
    text = "g (floot[N] x) => (float[N] y) {\n  t = Relu(x\n  y = Neg(t)\n  z = Add(x, x y)\n}\n"
    diags = check(text)
    assert [(d.rule, d.line, d.column) for d in diags] == [("parse.syntax", 1, 4), ("parse.syntax", 3, 3),
                                                           ("parse.syntax", 4, 16)]
    assert "did you mean 'float'" in diags[0].message and "missing ')'" in diags[1].message


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], capture_output=True, text=True)


@pytest.mark.parametrize("command", ["check", "compile"])
def test_cli_reports_every_error(tmp_path, command):
    src = tmp_path / "bad.onnxtext"
    src.write_text(G + "  y = Relu(x) $\n  z = Neg(x) %\n}\n")
    args = [command, str(src)] + (["-o", str(tmp_path / "out.onnx")] if command == "compile" else [])
    r = _cli(*args)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    out = r.stdout + r.stderr
    assert f"{src}:2:15:" in out and f"{src}:3:14:" in out
    assert not (tmp_path / "out.onnx").exists()


# ------------------------------------------------------------------------------------------ robustness
_SOURCES = sorted(__import__("glob").glob(__import__("os").path.join(__import__("os").path.dirname(__file__),
                                                                    "checker_cases", "*.onnxtext")))
_JUNK = list("(){}[]<>=,:;$%\"@#/\n ") + ["=>", "float", "floot", "x", "1.0", "seq(", "training_info"]


@pytest.mark.parametrize("path", _SOURCES[::4], ids=lambda p: p.rsplit("/", 1)[-1])
def test_recovery_survives_random_damage(path):
    """Damaged texts: recovery never raises, ends, stays within the cap, keeps text order, and keeps the first
    error the parser raised."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    base = open(path, encoding="utf-8").read()

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(st.integers(0, len(base)), st.integers(0, 3), st.sampled_from(_JUNK)), min_size=1,
                    max_size=4))
    def run(edits):
        text = base
        for pos, cut, junk in edits:
            pos = min(pos, len(text))
            text = text[:pos] + junk + text[pos + cut:]
        try:
            onnxtext.parse(text)
        except onnxtext.ParseError as e:
            errors = e.errors
            assert 1 <= len(errors) <= 20 and e in errors
            keys = [(x.line or 0, x.column or 0) for x in errors]
            assert keys == sorted(keys) and len(set(keys)) == len(keys)
            assert "Traceback" not in e.format()

    run()


# ------------------------------------------------------------------------------------------ skimming clean statements
# After resynchronising in a list of node statements, recovery lets the fast scanner pass over the clean statements
# that follow (syntax/fastparse.skim_statements) instead of feeding each token to the automaton. The errors found
# must be those found without it: every RECOVERY text, and texts with errors far apart among many clean statements.
def _far_apart(typos: dict, n: int = 60, subgraph: bool = False) -> str:
    lines = [f"  t{i} = Relu(x)\n" for i in range(n)]
    for i, bad in typos.items():
        lines[i] = bad
    body = "".join(lines)
    if subgraph:
        body = ("  y = If(c) <then_branch = t () => (float[N] a) {\n" + body.replace("  t", "    t")
                + "    a = Neg(x)\n  }, else_branch = e () => (float[N] b) {\n    b = Neg(x)\n  }>\n")
    return G.replace("(float[N] x)", "(float[N] x, bool c)") + body + "  z = Neg(x)\n}\n"


SKIM = [
    _far_apart({8: "  t8 = Relu(x x)\n", 30: "  t30 = Relu(x $)\n", 55: "  t55 = Relu(x,, x x)\n"}),
    _far_apart({1: "  t1 = Relu((x)\n", 40: "  t40 = Relu(x x)\n"}),
    _far_apart({8: "  t8 = Relu(x x)\n", 30: "  t30 = = Relu(x)\n"}, subgraph=True),
    _far_apart({59: "  t59 = Relu(x x)\n"}),
    *(c[1] for c in RECOVERY),
]


@pytest.mark.parametrize("text", SKIM)
def test_skimming_finds_the_same_errors(text, monkeypatch):
    def errors():
        try:
            onnxtext.parse(text)
        except onnxtext.ParseError as e:
            return [(x.line, x.column, x.message) for x in e.errors]
        return []

    skimmed = errors()
    from onnxtext.syntax import fastparse

    monkeypatch.setattr(fastparse, "skim_statements", lambda text, pos: pos)
    assert skimmed == errors()


def test_far_apart_errors_are_all_found():
    text = SKIM[0]
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse(text)
    lines = text.split("\n")
    # the offending token of each typo: the second name of 'x x' (',,' is an empty item, which is allowed), '$'
    where = [(9 + 1, lines[9].index("x x") + 3), (31 + 1, lines[31].index("$") + 1),
             (56 + 1, lines[56].index("x x") + 3)]
    assert [(e.line, e.column) for e in info.value.errors] == where
