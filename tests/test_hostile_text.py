"""Hostile and careless text (issue 23 family 5): line terminators, comments, encodings, huge tokens.

Each table line is a case a newcomer can extend (inputs that could hang, e.g. a 10 MB identifier before an
error, are probes of tests/test_hostile.py, which runs each in a subprocess with limits). Positions are checked against what an editor shows: lines
end at LF, CRLF or a lone CR (nothing else), columns count characters, and the source line shown under the
message is the line the caret points into.
"""

from __future__ import annotations

import pytest

import onnxtext
from onnxtext.errors import text_lines

GOOD = "g (float x) => (float y) {{{nl}  t = Relu(x)  # note{nl}  y = Neg(t){nl}}}{nl}"


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "lark"])
def test_every_line_ending_parses_and_a_comment_ends_at_it(nl, fast):
    g = onnxtext.parse_graph(GOOD.format(nl=nl), fast=fast)
    assert [n.op_type for n in g.node] == ["Relu", "Neg"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "lark"])
def test_a_lone_cr_ends_a_comment_mixed_with_lf(fast):
    """Issue 23: `t = Relu(x)  # note\\r  y = Neg(t)` lost the Neg node (editors and Python show two lines)."""
    g = onnxtext.parse_graph("g (float x) => (float y) {\n  t = Relu(x)  # note\r  y = Neg(t)\n}", fast=fast)
    assert [n.op_type for n in g.node] == ["Relu", "Neg"]


# (text with one error, marked by the caret character '§' that is removed, the expected line) - the column is
# where '§' stood; the same error is tried with every line terminator in place of '\n'
POSITION_CASES = [
    ("g (float x) => (float y) {\n  t = Relu(x)\n  y = Neg(t\n§}\n", 4),
    ("g (float x) => (float y) {\n\t t = Relu(x)\n\t\ty = §= Neg(t)\n}\n", 3),
    ("g (float x) => (float y) {\n  t = Relu(x)\f z = Neg(t)\n  y = Neg(t §y)\n}\n", 3),
    ("g (float x) => (float y) {\n  t = Relu(x)  # a comment\n  y = §(t)\n}\n", 3),
    ("g (float x) => (float y) {\n  t = Relu(x) /// doc\n  y = Neg(t) §)\n}\n", 3),
]
STRAY = [("\u2028", "U+2028"), ("\x85", "NEL"), ("\x0b", "VT")]  # not line breaks: an error where they stand


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("case,line", POSITION_CASES)
def test_error_position_and_shown_line_agree(case, line, nl):
    marked = case.replace("\n", nl)
    offset = marked.index("§")
    text = marked.replace("§", "")
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse_graph(text)
    e = info.value
    want_line = len(text_lines(text[:offset]))
    want_col = offset - max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset))
    assert (e.line, e.column) == (want_line, want_col) == (line, want_col)
    shown = e.format_one().split("\n")
    assert shown[1].strip() == text_lines(text)[line - 1].strip().replace("\f", " ").strip()
    assert shown[2].index("^") - 2 == want_col - 1  # the caret under the column (tabs shown as one space)


@pytest.mark.parametrize("char,name", STRAY)
def test_other_unicode_breaks_are_not_lines(char, name):
    text = f"g (float x) => (float y) {{\n  t = Relu(x){char} y = Neg(t)\n}}\n"
    with pytest.raises(onnxtext.ParseError) as info:
        onnxtext.parse_graph(text)
    e = info.value
    assert (e.line, e.column) == (2, 14), name
    shown = e.format_one().split("\n")
    assert shown[1] == "    t = Relu(x)  y = Neg(t)"  # shown as a space, so the caret stays in place
    assert shown[2] == "  " + " " * 13 + "^"


def test_invalid_utf8_file_has_line_and_column(tmp_path):
    path = tmp_path / "bad.onnxtext"
    path.write_bytes(b'g (float x) => (float y) {\n  y = Foo<s = "\xff\xfe">(x)\n}\n')
    with pytest.raises(onnxtext.OnnxTextError) as info:
        onnxtext.load(path)
    assert f"{path}:2:16:" in str(info.value) and "UTF-8" in str(info.value)
