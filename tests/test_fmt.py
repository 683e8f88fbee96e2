"""``onnxtext fmt``: canonical form, idempotent, same proto, every comment kept next to its element.

Add a formatting case by dropping a pair ``NAME.in.onnxtext`` / ``NAME.out.onnxtext`` (the expected output,
written by hand) in tests/fixtures/fmt/. Every text of examples/, docs/ and tests/fixtures/ is also checked
for idempotence and proto equality, plain and with comments sprinkled in at random places.
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


def test_docs_example():
    doc = open(os.path.join(ROOT, "docs", "fmt.md"), encoding="utf-8").read()
    before, after = (re.search(rf"<!-- fmt: {w} -->\n```onnxtext\n(.*?)```", doc, re.S).group(1)
                     for w in ("before", "after"))
    assert format_text(before) == after


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
