"""The canonical layout: every line of every printed backend-corpus and real-corpus model fits the width
(unless one token alone is too long), indentation follows nesting, base64 blocks are wrapped into lines of
a fixed number of bytes, and the layout is idempotent at every width.
"""

import re

import numpy as np
import onnx
import pytest
from onnx import helper as oh

import onnxtext
import realmodels
from corpus import all_models

CASES = all_models()
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s,]+')
_BRACKETS = {"(": 1, "[": 1, "{": 1, "<": 1, ")": -1, "]": -1, "}": -1, ">": -1}


def layout_problems(text: str, width: int, indent: int = 2) -> list[str]:
    """Lines over the width (one long token excepted) and lines indented other than their nesting: a line
    is indented one level deeper than the line that opened the brackets it is in (a line that starts by
    closing brackets, as deep as the line that opened them); lines inside a multi-line string (a base64
    block) one level deeper than the line the string starts on."""
    problems = []
    stack: list[tuple[int, str, int]] = []  # (indentation inside, bracket, indentation of its line) per bracket
    string_indent = None  # inside a multi-line string: the indentation its lines must have
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" ")
        ind = len(line) - len(stripped)
        if len(line) > width:
            tokens = _TOKEN.findall(line)
            longest = max(tokens, key=len) if tokens else ""
            if len(line) - len(longest) > width:
                problems.append(f"line {number}: {len(line)} characters: {line[:80]}...")
        if string_indent is not None:
            if stripped and ind != string_indent:
                problems.append(f"line {number}: block line indented {ind}, expected {string_indent}")
            if '"' in stripped:
                string_indent = None
            continue
        if not stripped:
            continue
        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', stripped)
        if code.startswith("///"):
            code = ""
        closing = len(code) - len(code.lstrip(")]}>"))
        if closing:  # as deep as the line that opened the outermost bracket it closes
            expected = stack[-closing][2] if len(stack) >= closing else 0
        else:
            expected = stack[-1][0] if stack else 0
        if ind != expected or ind % indent:
            problems.append(f"line {number}: indented {ind}, expected {expected}: {line[:80]}")
        for i, ch in enumerate(code.replace("=>", "  ")):
            delta = _BRACKETS.get(ch, 0)
            if delta > 0:
                before = code[:i].rstrip()
                literal = ch == "{" and (before.endswith(("=", " raw")) or before == "raw")  # tensor data
                stack.append((ind + indent, "data" if literal else ch, ind))
            elif delta < 0 and stack:
                stack.pop()
        if code.count('"') % 2 == 1 or re.search(r'"[^"]*$', re.sub(r'"(?:[^"\\]|\\.)*"', "", stripped)):
            string_indent = ind + indent  # a string opened on this line continues on the next ones
    return problems


@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_backend_corpus_layout(name, load):
    text = onnxtext.to_text(load())
    assert layout_problems(text, 100)[:5] == []


@pytest.mark.parametrize("model", realmodels.params())
def test_real_model_layout(model):
    m = model.load()
    for width in (100, 60):
        text = onnxtext.to_text(m, width=width)
        assert layout_problems(text, width)[:5] == [], width
    # the wrapped text is the same model, and printing it again gives the same text
    assert onnxtext.parse_model(text).SerializeToString() == m.SerializeToString()
    assert onnxtext.to_text(onnxtext.parse_model(text), width=60) == text


def _weights(values: np.ndarray) -> onnx.ModelProto:
    t = onnx.numpy_helper.from_array(values, "w")
    g = oh.make_graph([oh.make_node("Add", ["x", "w"], ["y"])], "g",
                      [oh.make_tensor_value_info("x", 1, list(values.shape))],
                      [oh.make_tensor_value_info("y", 1, list(values.shape))], [t])
    return oh.make_model(g)


def _changed_lines(a: str, b: str) -> int:
    la, lb = a.split("\n"), b.split("\n")
    assert len(la) == len(lb)
    return sum(x != y for x, y in zip(la, lb))


@pytest.mark.parametrize("width", [100, 80, 40])
def test_one_changed_element_changes_one_line_of_a_block(width):
    w = np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64)
    before = onnxtext.to_text(_weights(w), width=width)
    w2 = w.copy()
    w2[17, 5] = 123.0
    after = onnxtext.to_text(_weights(w2), width=width)
    assert "base64" in before and _changed_lines(before, after) == 1
    assert not layout_problems(before, width)


def test_one_changed_element_changes_one_line_of_a_literal():
    w = np.arange(600, dtype=np.float32).reshape(20, 30) / 7
    m = _weights(w)
    m.graph.initializer[0].ClearField("raw_data")
    m.graph.initializer[0].float_data.extend(w.ravel().tolist())  # typed field: printed as decimals
    before = onnxtext.to_text(m)
    m.graph.initializer[0].float_data[45] = 1.5
    after = onnxtext.to_text(m)
    assert _changed_lines(before, after) == 1
    assert not layout_problems(before, 100)


def test_long_node_statement_breaks():
    n = oh.make_node("Concat", [f"input_number_{i}" for i in range(12)], ["a_rather_long_output_name"], axis=0,
                     name="concat_with_a_long_name")
    g = oh.make_graph([n], "g", [], [])
    text = onnxtext.to_text(g, width=60)
    assert not layout_problems(text, 60) and len(text.split("\n")) > 4
    assert onnxtext.parse_graph(text).SerializeToString() == g.SerializeToString()
