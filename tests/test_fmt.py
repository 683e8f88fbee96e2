"""``onnxtext fmt``: canonical form, idempotent, same proto, every comment kept next to its element, the
author's number spellings, tensor literal lines and aligned comments kept.

Add a formatting case by dropping a pair ``NAME.in.onnxtext`` / ``NAME.out.onnxtext`` (the expected output,
checked by hand) in tests/fixtures/fmt/. Every text of examples/, docs/ and tests/fixtures/ is also checked
for idempotence and proto equality, plain and with comments sprinkled in at random places; so are printed
models of the backend corpus and the real-model corpus, with comments sprinkled in and numbers respelled.
Keyword-like names: every word the grammar spells, in every name position, is quoted by the printer exactly
when the bare word would not read back (known exceptions in tests/fixtures/fmt/quoted_names.known).
"""

import glob
import io
import os
import random
import re
import subprocess
import sys

import pytest

import onnxtext
from onnxtext.cli import main
from onnxtext.formatter import format_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FMT_CASES = sorted(glob.glob(os.path.join(FIXTURES, "fmt", "*.in.onnxtext")))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.onnxtext")))


def _texts():
    """(id, text) of every valid onnxtext text of the project."""
    out = []
    for folder in ("identity", "pretty", "fmt"):
        for p in sorted(glob.glob(os.path.join(FIXTURES, folder, "*.onnxtext"))):
            out.append((f"{folder}/{os.path.basename(p)}", open(p, encoding="utf-8").read()))
    for p in EXAMPLES:
        out.append((f"examples/{os.path.basename(p)}", open(p, encoding="utf-8").read()))
    for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        blocks = re.findall(r"```onnxtext\n(.*?)```", open(p, encoding="utf-8").read(), re.S)
        out.extend((f"docs/{os.path.basename(p)}#{i}", b) for i, b in enumerate(blocks))
    return out


TEXTS = _texts()

# An independent comment scanner (the formatter uses the lark lexer): strings and /// doc lines are skipped.
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|///[^\n]*|(#[^\n]*|//[^\n]*)', re.S)


def comments(text):
    """[(line number, comment text)] of the # and // comments of ``text``."""
    return [(text.count("\n", 0, m.start()), m.group(1).rstrip()) for m in _COMMENT.finditer(text) if m.group(1)]


def same_proto(a, b):
    # serialized bytes: NaN attributes compare equal, unlike protos
    return onnxtext.parse(a).SerializeToString(deterministic=True) == \
        onnxtext.parse(b).SerializeToString(deterministic=True)


# ------------------------------------------------------------------------------------------- fixtures

@pytest.mark.parametrize("path", FMT_CASES, ids=[os.path.basename(p)[:-len(".in.onnxtext")] for p in FMT_CASES])
def test_fixture(path):
    source = open(path, encoding="utf-8").read()
    expected = open(path.replace(".in.onnxtext", ".out.onnxtext"), encoding="utf-8").read()
    assert format_text(source) == expected
    assert format_text(expected) == expected  # the expected output is canonical
    assert same_proto(source, expected)
    assert [c for _, c in comments(source)] == [c for _, c in comments(expected)]  # all kept, in order


def test_fixture_folder_has_cases():
    assert len(FMT_CASES) >= 8
    for p in FMT_CASES:
        assert os.path.exists(p.replace(".in.onnxtext", ".out.onnxtext")), f"{p} has no .out.onnxtext"


@pytest.mark.parametrize("before,after", [("before", "after"), ("kept", "kept-after")])
def test_docs_example(before, after):
    doc = open(os.path.join(ROOT, "docs", "fmt.md"), encoding="utf-8").read()
    source, expected = (re.search(rf"<!-- fmt: {w} -->\n```onnxtext\n(.*?)```", doc, re.S).group(1)
                        for w in (before, after))
    assert format_text(source) == expected


# ------------------------------------------------------------------------------------------- every text

@pytest.mark.parametrize("name,text", TEXTS, ids=[t[0] for t in TEXTS])
def test_idempotent_and_same_proto(name, text):
    once = format_text(text)
    assert format_text(once) == once
    assert same_proto(text, once)
    assert sorted(c for _, c in comments(text)) == sorted(c for _, c in comments(once))


def _sprinkle(text, rng):
    """``text`` with a few comments added: on their own line, after a line, or splitting a line."""
    lines = text.split("\n")
    for k in range(rng.randint(1, 5)):
        i = rng.randrange(len(lines))
        line = lines[i]
        if line.lstrip().startswith("///"):
            continue  # a comment after a doc comment would be part of the doc
        r = rng.random()
        if r < 0.4:
            indent = line[:len(line) - len(line.lstrip())]
            lines.insert(i, f"{indent}{rng.choice(['#', '//'])} own {k}")
        elif r < 0.7:
            lines[i] = f"{line}  {rng.choice(['#', '//'])} trailing {k}"
        else:
            cuts = [j + 1 for j, ch in enumerate(line) if ch in " ,(<{"]
            if cuts:
                j = rng.choice(cuts)
                lines[i:i + 1] = [f"{line[:j]}  # split {k}", "    " + line[j:]]
    return "\n".join(lines)


@pytest.mark.parametrize("name,text", TEXTS, ids=[t[0] for t in TEXTS])
def test_sprinkled_comments_are_kept(name, text):
    rng = random.Random(name)
    checked = 0
    for _ in range(4):
        source = _sprinkle(text, rng)
        try:
            if not same_proto(source, text):
                continue  # the comment landed inside a multi-line string: not a comment there
        except onnxtext.ParseError:
            continue
        once = format_text(source)
        assert format_text(once) == once, source
        assert same_proto(source, once), source
        assert sorted(c for _, c in comments(source)) == sorted(c for _, c in comments(once)), source
        checked += 1
    assert checked or not text.strip()


# ------------------------------------------------------------------------------------------- examples

def _anchor(text, line_no, trailing):
    """The first three words of the code a comment belongs to: its own line (trailing) or the next code line."""
    lines = text.split("\n")
    if trailing:
        code = _COMMENT.sub(lambda m: "" if m.group(1) else m.group(0), lines[line_no])
        return code.split()[:3]
    for line in lines[line_no + 1:]:
        s = line.strip()
        if s and not s.startswith(("#", "//")) or s.startswith("///"):
            return s.split()[:3]
    return ["<end>"]


@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p) for p in EXAMPLES])
def test_example_comments_stay_with_their_element(path):
    source = open(path, encoding="utf-8").read()
    once = format_text(source)
    before, after = comments(source), comments(once)
    assert len(before) >= 3, "examples show off comments"
    assert [c for _, c in before] == [c for _, c in after]
    src_lines, out_lines = source.split("\n"), once.split("\n")
    for (ls, c), (lo, _) in zip(before, after):
        trailing = src_lines[ls].strip() != c
        assert (out_lines[lo].strip() != c) == trailing, f"{c!r} changed from trailing to own-line or back"
        assert _anchor(source, ls, trailing) == _anchor(once, lo, trailing), c


def test_crlf_source():
    text = "<ir_version: 10, opset_import: [\"\": 21]>\r\ng (float x) => (float y) {\r\n  # relu\r\n" \
           "  y = Relu(x)  # trailing\r\n}\r\n"
    out = format_text(text)
    assert "\r" not in out
    assert [c for _, c in comments(out)] == ["# relu", "# trailing"]


def test_parse_error_has_position():
    with pytest.raises(onnxtext.ParseError) as e:
        format_text("g (float x) => (float y) {\n  # c\n  y = Relu(x\n}\n", filename="m.onnxtext")
    assert (e.value.line, e.value.column) == (4, 1)
    assert str(e.value).startswith("m.onnxtext:4:1:")


# ------------------------------------------------------------------------------------------- CLI

UGLY = "<ir_version: 10, opset_import: [\"\": 21]>\ng(float x)=>(float y){y=Relu(x) # relu\n}\n"
BAD = "g (float x) => (float y) {\n  y = Relu(x\n}\n"


def test_cli_rewrites_several_files_in_place(tmp_path, capsys):
    a, b, c = tmp_path / "a.onnxtext", tmp_path / "b.onnxtxt", tmp_path / "c.onnxtext"
    a.write_text(UGLY)
    b.write_text(UGLY)
    c.write_text(format_text(UGLY))
    c_mtime = os.stat(c).st_mtime_ns
    assert main(["fmt", str(a), str(b), str(c)]) == 0
    err = capsys.readouterr().err
    assert f"reformatted {a}" in err and f"reformatted {b}" in err and str(c) not in err
    assert a.read_text() == b.read_text() == c.read_text() == format_text(UGLY)
    assert os.stat(c).st_mtime_ns == c_mtime  # an already canonical file is not rewritten
    assert "# relu" in a.read_text()


def test_cli_check_lists_files_and_writes_nothing(tmp_path, capsys):
    a, c = tmp_path / "a.onnxtext", tmp_path / "c.onnxtext"
    a.write_text(UGLY)
    c.write_text(format_text(UGLY))
    assert main(["fmt", "--check", str(a), str(c)]) == 1
    out = capsys.readouterr().out
    assert out == f"would reformat {a}\n"
    assert a.read_text() == UGLY
    assert main(["fmt", "--check", str(c)]) == 0
    assert capsys.readouterr().out == ""


def test_cli_parse_error_leaves_the_file_and_formats_the_others(tmp_path, capsys):
    bad, good = tmp_path / "bad.onnxtext", tmp_path / "good.onnxtext"
    bad.write_text(BAD)
    good.write_text(UGLY)
    assert main(["fmt", str(bad), str(good)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3:1:" in err and "^" in err and "Traceback" not in err
    assert bad.read_text() == BAD
    assert good.read_text() == format_text(UGLY)
    assert sorted(os.listdir(tmp_path)) == ["bad.onnxtext", "good.onnxtext"]  # no temporary file left
    assert main(["fmt", "--check", str(bad)]) == 1


@pytest.mark.parametrize("make,message", [
    (lambda d: str(d / "missing.onnxtext"), "no such file"),
    (lambda d: (d / "m.onnx").write_bytes(onnxtext.parse_model(UGLY).SerializeToString()) and str(d / "m.onnx"),
     "binary model"),
    (lambda d: (d / "empty_dir").mkdir() or str(d / "empty_dir"), "without .onnxtext"),
])
def test_cli_unreadable_input_exits_2(tmp_path, capsys, make, message):
    assert main(["fmt", make(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_directory_means_its_text_models(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.onnxtext").write_text(UGLY)
    (tmp_path / "notes.txt").write_text("not a model")
    assert main(["fmt", "--check", str(tmp_path)]) == 1
    assert capsys.readouterr().out == f"would reformat {tmp_path / 'sub' / 'x.onnxtext'}\n"


def _stdin(monkeypatch, text):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def test_cli_stdin_to_stdout(monkeypatch, capsys):
    _stdin(monkeypatch, UGLY)
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == format_text(UGLY)
    _stdin(monkeypatch, UGLY)
    assert main(["fmt", "--check", "-"]) == 1
    assert capsys.readouterr().out == "would reformat <stdin>\n"
    _stdin(monkeypatch, BAD)
    assert main(["fmt", "-"]) == 1
    r = capsys.readouterr()
    assert r.out == "" and "<stdin>:3:1:" in r.err


def test_cli_as_a_process_pipe():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "onnxtext", "fmt", "-"], input=UGLY, capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0 and r.stdout == format_text(UGLY), r.stderr


# ------------------------------------------------------------------------------------------- keyword-like names

_H = '<ir_version: 10, opset_import: ["": 21]>\n'
#: where a name can stand, as a template with {w} for the name (quoted or bare)
NAME_POSITIONS = {
    # only a name can stand here
    "node_output": "g (float[2] x) => (float[2] y) {{\n  {w} = Relu(x)\n  y = Neg({w})\n}}\n",
    "node_label": "g (float[2] x) => (float[2] y) {{\n  [{w}] y = Relu(x)\n}}\n",
    "dim_param": "g (float[{w}] x) => (float[{w}] y) {{\n  y = Relu(x)\n}}\n",
    "graph_name": "{w} (float[2] x) => (float[2] y) {{\n  y = Relu(x)\n}}\n",
    # after a type
    "graph_input": "g (float[2] {w}) => (float[2] y) {{\n  y = Relu({w})\n}}\n",
    "graph_output": "g (float[2] x) => (float[2] {w}) {{\n  {w} = Relu(x)\n}}\n",
    "value_info": "g (float[2] x) => (float[2] y)\n<float[2] {w}>\n{{\n  {w} = Relu(x)\n  y = Relu({w})\n}}\n",
    "initializer": "g (float[2] x) => (float[2] y)\n<float[2] {w} = {{1.0, 2.0}}>\n{{\n  y = Add(x, {w})\n}}\n",
    "attribute_tensor_name": "g (float[2] x) => (float[1] y) {{\n  y = Constant <value = float[1] {w} = {{1.0}}> ()\n}}\n",
    # where a type (or a number) could stand too
    "untyped_value_info": "g (float[2] x) => (float[2] y)\n<{w}>\n{{\n  {w} = Relu(x)\n  y = Relu({w})\n}}\n",
    "function_input": "g (float[2] x) => (float[2] y) {{\n  y = f(x)\n}}\n\n<domain: \"\", opset_import: [\"\": 21]>\n"
                      "f ({w}) => (y) {{\n  y = Relu({w})\n}}\n",
    "attribute_graph_name": "g (bool c, float[2] x) => (float[2] y) {{\n  y = If <then_branch = {w} () => (float[2] t) "
                            "{{\n    t = Relu(x)\n  }}, else_branch = e () => (float[2] u) {{\n    u = Neg(x)\n  }}> (c)\n}}\n",
}


def _grammar_words():
    """Every word the grammar spells out (``"seq"``), the element type names of its DTYPE terminal and the
    special floats (any case: a few spellings): the words that could need quotes as names."""
    grammar = os.path.join(ROOT, "grammar")
    text = open(os.path.join(grammar, "onnxtext.lark"), encoding="utf-8").read()
    words = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', text))
    lexical = open(os.path.join(grammar, "lexical.lark"), encoding="utf-8").read()
    words |= set(re.search(r"DTYPE[^:]*: */\(\?:([^)]*)\)", lexical).group(1).split("|"))
    return sorted(words | {"inf", "infinity", "nan", "NaN", "Inf", "INFINITY"})


KEYWORD_WORDS = _grammar_words()


def _known_quoted():
    known = {}
    with open(os.path.join(FIXTURES, "fmt", "quoted_names.known"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                position, words = line.split(":", 1)
                known[position.strip()] = set(words.split())
    return known


@pytest.mark.parametrize("position", sorted(NAME_POSITIONS))
def test_keyword_names_quoted_only_where_needed(position):
    """Every keyword-like word in every position: the text round-trips, and the printer quotes it exactly
    when the bare word does not read back as the same model (the grammar is the oracle)."""
    template = NAME_POSITIONS[position]
    wrong = set()
    for word in KEYWORD_WORDS:
        model = onnxtext.parse_model(_H + template.format(w=f'"{word}"'))
        text = onnxtext.to_text(model)
        assert onnxtext.parse_model(text).SerializeToString() == model.SerializeToString(), (word, text)
        assert format_text(text) == text
        try:
            bare_reads = onnxtext.parse_model(_H + template.format(w=word)).SerializeToString() == \
                model.SerializeToString()
        except onnxtext.ParseError:
            bare_reads = False
        if bare_reads == (f'"{word}"' in text):  # quoted though it reads bare, or bare though it does not
            wrong.add(word)
    known = _known_quoted().get(position, set())
    assert wrong == (set(KEYWORD_WORDS) if known == {"*"} else known & set(KEYWORD_WORDS))


# ------------------------------------------------------------------------------------------- changed content

_SOURCE = ('g (float[4] x) => (float[4] y)\n<\n  float[2, 2] w = {\n    0.70710678, 1e-5,\n    3.0, 4.0\n  }\n>\n'
           '{\n  y = LeakyRelu <alpha = 1e-5> (x)\n}\n')


@pytest.mark.parametrize("changed,kept,canonical", [
    # the model the text now prints, the author's choices still there, the canonical text of changed content
    (_SOURCE, ["0.70710678, 1e-5,\n", "alpha = 1e-5"], []),
    (_SOURCE.replace("1e-5,", "2e-5,"), ["0.70710678, 2e-05,\n", "3.0, 4.0\n", "alpha = 1e-5"], ["2e-05"]),
    (_SOURCE.replace("alpha = 1e-5", "alpha = 0.25"), ["0.70710678, 1e-5,\n"], ["alpha = 0.25"]),
    (_SOURCE.replace("alpha = 1e-5", "alpha = 1"), ["0.70710678, 1e-5,\n"], ["alpha = 1>"]),  # now an INT
    (_SOURCE.replace("float[2, 2] w = {\n    0.70710678, 1e-5,\n    3.0, 4.0\n  }", "float[3] w = {0.70710678, 1e-5, 3.0}"),
     ["alpha = 1e-5"], ["{0.70710677, 1e-05, 3.0}"]),  # another element count: the canonical literal
])
def test_changed_content_gets_the_canonical_form(changed, kept, canonical):
    """The author's spellings and lines are applied to the text of a changed model (what an editor built on
    fmt does): a changed value or literal gets the canonical form, the rest keeps the author's."""
    from onnxtext.syntax.positions import SpanMap
    from onnxtext.syntax.trivia import keep_author_choices

    text = onnxtext.to_text(onnxtext.parse(changed))
    source, canonical_spans = (SpanMap.from_text(t, "graph", located=True) for t in (_SOURCE, text))
    result = keep_author_choices(source, text, canonical_spans, 100)
    assert same_proto(result, text)
    for part in kept + canonical:
        assert part in result, (part, result)


# ------------------------------------------------------------------------------------------- printed models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import realmodels  # noqa: E402

# number tokens outside strings and comments; respelled without changing their length, so the canonical
# layout still fits the width and every spelling must be kept: 0.25 -> .250, 1e-05 -> 1E-05
_NUMBER = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|//[^\n]*|(?<![\w.])(-?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|'
                     r'-?\d+[eE][+-]?\d+)(?![\w.])', re.S)


def _respell(token):
    if re.match(r"-?0\.\d", token) and "e" not in token:
        return token.replace("0.", ".", 1) + "0"
    return token.replace("e", "E")


def _numbers(text):
    return sorted(m.group(1) for m in _NUMBER.finditer(text) if m.group(1))


def _printed_models():
    out = [pytest.param(load, id=name) for name, load in corpus.all_models()[::80]]
    for p in realmodels.params(max_bytes=40_000):
        model = p.values[0]
        out.append(pytest.param(model.load if model else None, id=p.id, marks=p.marks))
    return out


@pytest.mark.parametrize("load", _printed_models())
def test_printed_model_with_comments_and_spellings(load):
    """A printed backend-corpus or real model, with comments sprinkled in and numbers respelled: fmt keeps
    every comment and every spelling, is idempotent, and the text parses to the same bytes."""
    model = load()
    text = onnxtext.to_text(model)
    rng = random.Random(text[:200])
    respelled = _NUMBER.sub(lambda m: _respell(m.group(1)) if m.group(1) else m.group(0), text)
    for _ in range(4):
        source = _sprinkle(respelled, rng)
        try:
            if same_proto(source, text):
                break
        except onnxtext.ParseError:  # a comment landed inside a base64 block
            pass
    else:
        source = respelled
    once = format_text(source)
    assert onnxtext.parse(once).SerializeToString() == onnxtext.parse(source).SerializeToString()
    assert format_text(once) == once
    assert _numbers(once) == _numbers(source)
    assert sorted(c for _, c in comments(source)) == sorted(c for _, c in comments(once))
