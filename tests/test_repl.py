"""Tests of the REPL (onnxtext/repl/): statements and commands typed through prompt_toolkit's pipe input,
completion and toolbar, statement completeness, script mode and the ``onnxtext repl`` command.

Expected values come from numpy (computed here, independently of the evaluator) and shown values are
read back with the parser: a value is shown as a tensor constant in the text syntax, so it must parse.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import onnxtext
from onnxtext.repl import Session
from onnxtext.repl.app import interact, make_prompt, split_statements
from onnxtext.repl.completion import ReplCompleter
from onnxtext.repl.statements import is_complete

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.array([1.5, -2.0, 3.0], np.float32)
CONST_X = "x = Constant<value = float[3] {1.5, -2.0, 3.0}>()"
A = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
INPUT_A = ":input float[2, 3] a = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}"


@pytest.fixture(autouse=True)
def _history(tmp_path, monkeypatch):
    monkeypatch.setenv("ONNXTEXT_HISTORY", str(tmp_path / "history"))


def drive(keys: str, session: Session | None = None):
    """Type ``keys`` into a REPL (\\r is Enter) until the input ends; returns (session, replies, status)."""
    session = session or Session()
    replies = []
    with create_pipe_input() as inp:
        inp.send_text(keys)
        inp.close()
        status = interact(session, make_prompt(session, input=inp, output=DummyOutput()), replies.append)
    return session, replies, status


def shown_value(text: str) -> np.ndarray:
    """The array of a shown tensor ``float[3] y = {...}``, read back with the parser and evaluator."""
    head, data = text.split(" = ", 1)
    node = onnxtext.parse_node(f"v = Constant<value = {head.rsplit(' ', 1)[0]} {data}>()")
    m = onnx.ModelProto(ir_version=10, opset_import=[onnx.OperatorSetIdProto(version=21)])
    m.graph.node.append(node)
    m.graph.output.add(name="v")
    return onnxtext.Evaluator(m).run(None, {})[0]


# ----------------------------------------------------------------------------------------- eager values
EAGER = [  # (setup statements, statement, expected value computed with numpy)
    ([], CONST_X, X),
    ([CONST_X], "y = Relu(x)", np.maximum(X, 0)),
    ([CONST_X], "y = Mul(x, x)", X * X),
    ([CONST_X], "y = Neg(x)", -X),
    ([CONST_X], "y = ReduceSum<keepdims = 0>(x)", np.array(X.sum(), np.float32)),
    ([INPUT_A], "t = Transpose<perm = [1, 0]>(a)", A.T),
    ([INPUT_A], "c = Cast<to = 7>(a)", A.astype(np.int64)),
    ([INPUT_A, CONST_X], "s = Add(a, x)", A + X),
    ([INPUT_A], "s = Shape(a)", np.array([2, 3], np.int64)),
    (["f (p) => (q) {\n  q = Neg(p)\n}", CONST_X], "y = local.f(x)", -X),
]


@pytest.mark.parametrize("setup,statement,expected", EAGER, ids=[e[1] for e in EAGER])
def test_node_runs_eagerly_and_shows_its_value(setup, statement, expected):
    keys = "".join(s.replace("\n", "\r") + "\r" for s in setup + [statement])
    session, replies, status = drive(keys)
    assert status == 0 and all(r.ok for r in replies), [r.text for r in replies]
    out_name = statement.split("=")[0].strip()
    np.testing.assert_array_equal(shown_value(replies[-1].text), expected)
    np.testing.assert_array_equal(session.env[out_name], expected)
    assert session.model.graph.node[-1].output[0] == out_name


# ----------------------------------------------------------------------------------------- errors
ERRORS = [  # (setup, bad statement, text the message must contain: the culprit)
    ([CONST_X], "y = Relux(x)", "'Relux'"),
    ([CONST_X], "y = Relux(x)", "did you mean 'Relu'"),
    ([CONST_X], "y = Add(x, k)", "unknown value 'k'"),
    ([CONST_X], "y = Relu(x))", "<repl>:1:12"),
    ([CONST_X], "x = Neg(x)", "'x' is already defined"),
    ([CONST_X], "y = LeakyRelu<alpah = 0.2>(x)", "did you mean 'alpha'"),
    ([CONST_X], "y = Cast(x)", "attribute 'to'"),
    ([CONST_X, ":input int64[3] k"], "y = Add(x, k)", "'x' and 'k'"),
    ([":input string[2] s"], "y = Relu(s)", "tensor(string)"),
    ([CONST_X, INPUT_A], "y = MatMul(x, a)", "MatMul: inner dimensions differ: x is float[3], a is float[2, 3]"),
    ([INPUT_A, ":input float[N, 4] n"], "y = MatMul(n, a)", "MatMul: inner dimensions differ: n is float[N, 4], a is float[2, 3]"),
    ([CONST_X, ":opset ai.onnx 13"], "y = Gelu(x)", "opset 20"),
    ([CONST_X], "y = nodomain.Op(x)", "'nodomain'"),
    ([CONST_X, ":input bool c"], "y = If(c) <then_branch = g1 () => (o) { o = Neg(q) }, "
     "else_branch = g2 () => (o) { o = Neg(x) }>", "unknown value 'q'"),
    ([CONST_X], ":frobnicate", ":frobnicate"),
    ([], ":input x", "give the input a type"),
    ([], ":input flot[2] x", "<repl>:1:8: unknown data type 'flot'"),
    ([], ":input float[2] x = {1, 2, 3}", "needs 2 elements"),
    ([], ":load /nonexistent/m.onnx", "/nonexistent/m.onnx"),
    # an attribute of the wrong type is the user's mistake, never a Python TypeError from a kernel
    ([CONST_X], "y = Cast<to = tensor>(x)", "attribute 'to' of Cast must be int, not type_proto"),
    ([CONST_X], "y = Cast<to = 1.5>(x)", "must be int, not float"),
    ([CONST_X], "y = Cast<to = [1, 2]>(x)", "must be int, not ints"),
    ([CONST_X], "y = LeakyRelu<alpha = \"big\">(x)", "attribute 'alpha' of LeakyRelu must be float, not string"),
]


@pytest.mark.parametrize("setup,bad,culprit", ERRORS, ids=[f"{e[1]}|{e[2]}" for e in ERRORS])
def test_error_is_shown_inline_and_model_unchanged(setup, bad, culprit):
    session, replies, _ = drive("".join(s + "\r" for s in setup))
    assert all(r.ok for r in replies), [r.text for r in replies]
    before, env_before = session.model.SerializeToString(), dict(session.env)
    _, replies, status = drive(bad + "\r" + "after = Identity(x)\r" * ("x" in session.env), session)
    assert status == 0
    assert not replies[0].ok and culprit in replies[0].text, replies[0].text
    if "x" in env_before:  # the session goes on: the next statement works
        assert replies[1].ok, replies[1].text
        session.undo()
    assert session.model.SerializeToString() == before
    assert session.env.keys() == env_before.keys()


def test_syntax_error_shows_the_line_and_a_caret():
    _, replies, _ = drive("y = Relu(x))\r")
    lines = replies[0].text.splitlines()
    assert lines[1].strip() == "y = Relu(x))"
    assert lines[2].index("^") == lines[1].index("y = Relu(x))") + len("y = Relu(x)")


# ----------------------------------------------------------------------------------------- multi-line input
MULTILINE = [  # statement typed with newlines (the REPL must wait for its end), expected value of `y`
    ("y = Add(x,\n  x)", X + X),
    ("y = Constant<value = float[3] {\n  1.5, -2.0,\n  3.0\n}>()", X),
    ("y = If(c) <\n  then_branch = g1 () => (float[3] o) {\n    o = Neg(x)\n  },\n"
     "  else_branch = g2 () => (float[3] o) {\n    o = Identity(x)\n  }\n>", -X),
]


@pytest.mark.parametrize("statement,expected", MULTILINE, ids=range(len(MULTILINE)))
def test_multiline_statement_continues_until_complete(statement, expected):
    keys = CONST_X + "\r:input bool c = {true}\r" + statement.replace("\n", "\r") + "\r"
    session, replies, _ = drive(keys)
    assert len(replies) == 3 and replies[-1].ok, [r.text for r in replies]
    np.testing.assert_array_equal(session.env["y"], expected)


def test_blank_line_forces_an_unfinished_statement_to_run():
    _, replies, _ = drive(CONST_X + "\ry = Relu(x\r\r")
    assert not replies[-1].ok and "<repl>:" in replies[-1].text


COMPLETE = [  # text, complete?
    ("y = Relu(x)", True), ("y = Relu(", False), ("y = Relu(x", False), ("y = Relu(x))", True),
    ('y = Constant<value = string[1] {"a', False), ("f (x) => (y) {", False), ("f (x) => (y) { y = Neg(x) }", True),
    ("y = Constant<value = float[2] {1,\n", False), (":save out.onnx", True), ("x", True), ("", True),
    ("# only a comment", True), ("y = If(c) <then_branch = g () => (o) {", False), ("y = = Relu(x)", True),
]


@pytest.mark.parametrize("text,complete", COMPLETE, ids=[c[0] for c in COMPLETE])
def test_statement_completeness(text, complete):
    assert is_complete(text) is complete


def test_script_is_split_into_statements():
    script = f"{CONST_X}\n\ny = Add(x,\n  x)\n# note\n:show\n"
    assert split_statements(script) == [CONST_X, "y = Add(x,\n  x)", "# note", ":show"]


# ----------------------------------------------------------------------------------------- keys
def test_ctrl_c_cancels_the_input_and_ctrl_d_exits():
    session, replies, status = drive(CONST_X + "\ry = Relu(x\r  more\x03z = Neg(x)\r\x04w = Neg(x)\r")
    assert status == 0
    assert [r.text.split(" = ")[0] for r in replies] == ["float[3] x", "float[3] z"]
    assert [n.output[0] for n in session.model.graph.node] == ["x", "z"]


def test_history_is_persisted(tmp_path):
    drive(CONST_X + "\r:values\r")
    text = (tmp_path / "history").read_text()
    assert CONST_X in text and ":values" in text


# ----------------------------------------------------------------------------------------- commands
def test_show_prints_the_model_as_text_that_parses_back():
    session, replies, _ = drive(f"{INPUT_A}\r{CONST_X}\rs = Add(a, x)\rr = Relu(s)\r:show\r")
    model = onnxtext.parse_model(replies[-1].text)
    assert model == session.finished_model()
    assert [o.name for o in model.graph.output] == ["r"]  # the value no node consumes
    assert [i.name for i in model.graph.input] == ["a"]


@pytest.mark.parametrize("ext", [".onnxtext", ".onnx"])
def test_save_then_load_and_run(tmp_path, ext):
    path = tmp_path / f"out{ext}"
    session, replies, _ = drive(f"{INPUT_A}\r{CONST_X}\rs = Add(a, x)\rr = Relu(s)\r:output s, r\r:save {path}\r")
    assert replies[-1].ok, replies[-1].text
    model = onnxtext.load(str(path)) if ext == ".onnxtext" else onnx.load(str(path))
    s, r = onnxtext.Evaluator(model).run(None, {"a": A})
    np.testing.assert_array_equal(s, A + X)
    np.testing.assert_array_equal(r, np.maximum(A + X, 0))


def test_load_continues_from_a_model_with_sample_inputs(tmp_path):
    path = tmp_path / "m.onnxtext"
    path.write_text('<ir_version: 10, opset_import: ["": 21]>\n'
                    "g (float[2, 3] a) => (float[2, 3] b) {\n  b = Abs(a)\n}\n")
    session, replies, _ = drive(f":load {path}\rc = Neg(b)\r:input a = {{1, -2, 3, -4, 5, -6}}\rc\r")
    assert all(r.ok for r in replies), [r.text for r in replies]
    given = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    np.testing.assert_array_equal(session.env["b"], np.abs(given))  # recomputed from the new sample
    np.testing.assert_array_equal(shown_value(replies[-1].text), -np.abs(given))
    assert [n.op_type for n in session.model.graph.node] == ["Abs", "Neg"]


def test_undo_and_reset():
    session, replies, _ = drive(f"{CONST_X}\ry = Relu(x)\r:undo\r:reset\r:undo\r:values\r")
    assert [n.output[0] for n in session.model.graph.node] == ["x"]
    assert replies[-1].text.split() == ["x", "float[3]"]


def test_opset_and_auto_import_of_other_domains():
    session, replies, _ = drive(":opset ai.onnx 18\r:input float[2] v\rb = ai.onnx.ml.Binarizer<threshold = 0.0>(v)\r")
    assert replies[-1].ok, replies[-1].text
    opsets = {o.domain: o.version for o in session.model.opset_import}
    assert opsets[""] == 18 and opsets["ai.onnx.ml"] >= 1
    np.testing.assert_array_equal(session.env["b"], (session.env["v"] > 0).astype(np.float32))


def test_doc_shows_the_schema_documentation():
    _, replies, _ = drive(":doc LeakyRelu\r:doc NoSuchOp\r")
    schema = onnx.defs.get_schema("LeakyRelu")
    assert schema.doc.strip().splitlines()[0] in replies[0].text
    assert "alpha" in replies[0].text
    assert not replies[1].ok and "NoSuchOp" in replies[1].text


def test_check_lists_the_checker_diagnostics():
    session, replies, _ = drive(f"{CONST_X}\ry = Relu(x)\r:check\r")
    reply = replies[-1]
    diagnostics = onnxtext.check(session.finished_model())
    if not diagnostics:
        assert reply.ok and reply.text == "no problems found"
        return
    errors = [d for d in diagnostics if d.severity == "error"]
    assert reply.ok is not bool(errors)
    lines = reply.text.splitlines()[:-1]
    assert len(lines) == len(diagnostics)
    for line, d in zip(lines, diagnostics):
        assert line.endswith(f"{d.severity}[{d.rule}]: {d.message}")


def test_quit_ends_the_session():
    _, replies, status = drive(":quit\r" + CONST_X + "\r")
    assert status == 0 and len(replies) == 1 and replies[0].quit


def test_bare_name_shows_a_value_and_inputs_get_random_samples():
    session, replies, _ = drive(":input int64[4] k\rk\r")
    shown = shown_value(replies[-1].text)
    assert shown.dtype == np.int64 and shown.shape == (4,)
    np.testing.assert_array_equal(shown, session.env["k"])


def test_large_values_are_elided():
    _, replies, _ = drive(":input float[50, 40] big\r")
    assert "elided" in replies[0].text and len(replies[0].text) < 400


# ----------------------------------------------------------------------------------------- completion
COMPLETION = [  # text before the cursor, a completion that must be offered
    ("y = Rel", "Relu"), ("y = relu", "Relu"), ("y = LeakyRelu<al", "alpha"), ("y = Cast<", "to"),
    ("y = Add(", "x"), ("y = Add(x, ", "x"), ("y = LeakyRelu<alpha = 0.1>(", "x"), ("y = Cast<to = fl", "float16"),
    (":sa", "save"), (":doc Gel", "Gelu"), (":input bfl", "bfloat16"), (":opset ai.onnx.m", "ai.onnx.ml"),
    ("y = loc", "local.f"), ("y = ai.onnx.ml.Bin", "ai.onnx.ml.Binarizer"), (":output ", "x"),
    ("y = If(c) <then_branch = g () => (o) { o = Ne", "Neg"),
]


@pytest.fixture(scope="module")
def completer():
    session = Session()
    session.execute(CONST_X)
    session.execute("f (p) => (q) { q = Neg(p) }")
    return ReplCompleter(session)


@pytest.mark.parametrize("text,expected", COMPLETION, ids=[c[0] for c in COMPLETION])
def test_completion(completer, text, expected):
    offered = [c.text for c in completer.get_completions(Document(text), None)]
    assert expected in offered, offered[:10]


def test_file_paths_complete_after_save(completer, tmp_path):
    (tmp_path / "model_one.onnxtext").write_text("")
    text = f":save {tmp_path}/model_"
    offered = [c.text for c in completer.get_completions(Document(text), None)]
    assert "one.onnxtext" in offered


def test_attribute_completion_shows_type_and_default(completer):
    meta = {c.text: c.display_meta_text for c in completer.get_completions(Document("y = LeakyRelu<"), None)}
    default = onnx.helper.get_attribute_value(onnx.defs.get_schema("LeakyRelu").attributes["alpha"].default_value)
    assert "float" in meta["alpha"] and f"{default:.2f}" in meta["alpha"]


SIGNATURES = [("y = LeakyRelu<alpha = 0.1>(", "LeakyRelu(X: T) -> (Y: T)"), ("y = Add(x, ", "Add(A: T, B: T)"),
              ("y = local.f(", "local.f(p) -> (q)"), ("y = Relu", None)]


@pytest.mark.parametrize("text,expected", SIGNATURES, ids=[s[0] for s in SIGNATURES])
def test_signature_toolbar(completer, text, expected):
    sig = completer.signature_at(text)
    assert (sig is None) if expected is None else sig.startswith(expected)


# ----------------------------------------------------------------------------------------- command line
def _cli(*args, stdin=""):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "onnxtext", "repl", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)


def test_cli_script_mode(tmp_path):
    out = tmp_path / "s.onnxtext"
    p = _cli(stdin=f"{CONST_X}\ny = Relu(x)\nz = Nope(y)\n:save {out}\n")
    assert p.returncode == 1  # one statement failed
    assert "'Nope'" in p.stderr and "Traceback" not in p.stderr
    np.testing.assert_array_equal(onnxtext.Evaluator(onnxtext.load(str(out))).run(None, {})[0], np.maximum(X, 0))


def test_cli_script_errors_name_the_script_line():
    p = _cli(stdin=f"{CONST_X}\n\ny = Relu(x)\nz = Nope(y)\nw = Add(y,\n  q)\nv = Add(y, y) $\n")
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert lines[0] == "<stdin>:4: error: unknown operator 'Nope'"
    assert lines[1] == "<stdin>:5: error: unknown value 'q'"
    assert lines[2].startswith("<stdin>:7:15: ")  # a syntax error: the script's line and column


@pytest.mark.parametrize("statement,expected", [
    ("c = Cast<to = float16>(x)", "float16[3] c = {1.5, -2.0, 3.0}"),
    ("c = Cast<to = int64>(x)", "int64[3] c = {1, -2, 3}"),
    ("c = Cast<to = 7>(x)", "int64[3] c = {1, -2, 3}"),
])
def test_cast_with_a_type_name(statement, expected):
    _, replies, _ = drive(f"{CONST_X}\r{statement}\r")
    assert replies[-1].ok and replies[-1].text == expected, replies[-1].text


def test_new_values_show_their_inferred_symbolic_type():
    session, replies, _ = drive(":input float[B, 3] a\rb = Relu(a)\rax = Constant<value = int64[1] {1}>()\r"
                                "s = ReduceSum<keepdims = 0>(b, ax)\r:show\r")
    assert replies[1].text.splitlines()[-1] == "  type: float[B, 3] (inferred; this sample is [2, 3])"
    assert replies[3].text.splitlines()[-1] == "  type: float[B] (inferred; this sample is [2])"
    model = onnxtext.parse_model(replies[4].text)
    assert [onnxtext.to_text(o.type).strip() for o in model.graph.output] == ["float[B]"]
    assert "?" not in replies[3].text


def test_new_sample_for_an_input_with_symbolic_sizes(tmp_path):
    """docs/repl.md: after :load, ``:input x = {...}`` gives x a new sample; symbols take sizes that fit."""
    path = tmp_path / "m.onnxtext"
    path.write_text('<ir_version: 10, opset_import: ["": 21]>\ng (float[N, 3] x, float[A, B] z) => (float[N, 3] y) '
                    "{\n  y = Neg(x)\n}\n")
    session = Session()
    assert session.execute(f":load {path}").ok
    reply = session.execute(":input x = {1, 2, 3, 4, 5, 6, 7, 8, 9}")
    assert reply.ok and reply.text.startswith("float[3, 3] x = "), reply.text
    np.testing.assert_array_equal(session.env["y"], -np.arange(1, 10, dtype=np.float32).reshape(3, 3))
    assert session.execute(":input x = {1, 2, 3}").text.startswith("float[1, 3] x = ")
    reply = session.execute(":input x = {1, 2}")
    assert not reply.ok and "give the sample's sizes" in reply.text
    assert session.execute(":input z = {1, 2, 3, 4}").text.startswith("float[2, 2] z = ")  # the sample's sizes
    reply = session.execute(":input z = {1, 2, 3}")
    assert not reply.ok and "'z' is float[A, B]" in reply.text
    assert session.execute(":input float[1, 3] z = {1, 2, 3}").ok


def test_cli_starts_from_a_file_and_reports_a_missing_one(tmp_path):
    path = tmp_path / "m.onnxtext"
    path.write_text('<ir_version: 10, opset_import: ["": 21]>\ng (float[3] a) => (b) {\n  b = Neg(a)\n}\n')
    p = _cli(str(path), stdin=":input a = {1, 2, 3}\nb\n")
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(shown_value(p.stdout.strip().splitlines()[-1]), -np.array([1, 2, 3], np.float32))
    p = _cli(str(tmp_path / "missing.onnx"))
    assert p.returncode == 1 and "missing.onnx" in p.stderr and "Traceback" not in p.stderr


# ----------------------------------------------------------------------------------------- documentation
def test_docs_transcript_is_what_the_repl_prints(tmp_path, monkeypatch):
    """The session at the top of docs/repl.md, replayed: each reply must match the documented text."""
    text = open(os.path.join(ROOT, "docs", "repl.md"), encoding="utf-8").read()
    block = text.split("```\n", 2)[1]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("onnx> "):
            steps.append((line[len("onnx> "):], []))
        elif steps:
            steps[-1][1].append(line)
    assert len(steps) >= 5
    monkeypatch.chdir(tmp_path)
    session = Session(seed=0)
    for statement, expected in steps:
        assert session.execute(statement).text == "\n".join(expected), statement
