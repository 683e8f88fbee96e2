"""CLI behaviour: print/compile round trip, clean errors (no traceback), atomic outputs, compile checks."""

import glob
import os
import subprocess
import sys

import onnx
import pytest

import onnxtext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "mlp.onnxtext")


def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_compile_then_print_roundtrip(tmp_path):
    out = tmp_path / "mlp.onnx"
    r = cli("compile", EXAMPLE, "-o", str(out))
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    assert model == onnxtext.load(EXAMPLE)
    p = cli("print", str(out))
    assert p.returncode == 0 and onnxtext.parse_model(p.stdout) == model


def test_parse_error_names_file_line_column_and_leaves_no_output(tmp_path):
    bad = tmp_path / "bad.onnxtext"
    bad.write_text("g (x) => (y) {\n  y = Relu(x\n}\n")
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous")
    r = cli("compile", str(bad), "-o", str(out))
    assert r.returncode == 1
    assert f"{bad}:3:1:" in r.stderr and "Traceback" not in r.stderr and "^" in r.stderr
    assert out.read_bytes() == b"previous"  # never clobbered by a failed compile
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".onnxtext-")]  # no temp file left


@pytest.mark.parametrize("content,needle", [(None, "no such file"), (b"", "empty"),
                                            (b"\x08\x07\x12\xff\xff\xff", "not a valid ONNX model")])
def test_bad_binary_models_give_one_clear_message(tmp_path, content, needle):
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    r = cli("print", str(path))
    assert r.returncode == 1 and needle in r.stderr and "Traceback" not in r.stderr
    assert str(path) in r.stderr


def test_truncated_model(tmp_path):
    data = onnxtext.load(os.path.join(ROOT, "examples", "cnn_block.onnxtext")).SerializeToString()
    path = tmp_path / "t.onnx"
    path.write_bytes(data[: len(data) // 2])
    r = cli("print", str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr and str(path) in r.stderr


def test_text_detected_by_content_not_extension(tmp_path):
    path = tmp_path / "model.bin"
    path.write_text(open(EXAMPLE).read())
    assert onnxtext.load(str(path)) == onnxtext.load(EXAMPLE)


def test_save_text_and_binary(tmp_path):
    m = onnxtext.load(EXAMPLE)
    onnxtext.save(m, tmp_path / "a.onnxtext")
    onnxtext.save(m, tmp_path / "a.onnx")
    assert onnxtext.load(tmp_path / "a.onnxtext") == m == onnxtext.load(tmp_path / "a.onnx")


def test_help_lists_commands():
    r = cli("--help")
    assert r.returncode == 0 and "print" in r.stdout and "compile" in r.stdout


def test_unexpected_exception_is_one_line_not_a_traceback(monkeypatch, capsys):
    """A bug inside a command still reaches the user as one clear line (and exit status 1, 2 for diff)."""
    from onnxtext import cli
    from onnxtext.commands import info

    def boom(args):
        raise KeyError("surprise")

    monkeypatch.setattr(info, "run", boom)
    monkeypatch.delenv("ONNXTEXT_TRACEBACK", raising=False)
    assert cli.main(["info", "whatever.onnx"]) == 1
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "Traceback" not in err


def test_every_command_module_exists_and_matches_the_dispatch_table():
    """cli.COMMANDS (read without importing, for a fast --help) agrees with each module's HELP and contract."""
    import importlib

    from onnxtext import cli

    for name, (module, help_) in cli.COMMANDS.items():
        mod = importlib.import_module(f"onnxtext.commands.{module}")
        assert mod.HELP == help_, name
        assert callable(mod.add_arguments) and callable(mod.run), name


# ------------------------------------------------------------------------------------------ compile checks
INVALID = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "invalid", "*.onnxtext")))
SHAPE_CASES = sorted(glob.glob(os.path.join(ROOT, "tests", "shape_cases", "*.onnxtext")))


@pytest.mark.parametrize("path", INVALID + SHAPE_CASES, ids=[os.path.basename(p) for p in INVALID + SHAPE_CASES])
def test_compile_of_a_bad_text_writes_nothing_and_exits_1(tmp_path, capsys, path):
    from onnxtext import cli as cli_module

    out = tmp_path / "out.onnx"
    assert cli_module.main(["compile", path, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert not out.exists() and os.listdir(tmp_path) == []
    assert f"{path}:" in err and "^" in err and "Traceback" not in err


def test_compile_reports_every_error_with_its_source_line(tmp_path):
    bad = tmp_path / "bad.onnxtext"
    bad.write_text('<ir_version: 10, opset_import: ["": 18]>\n'
                   "g (float[N, 4] x, float[3, 2] W) => (float[N, 2] y) {\n"
                   "  t = Reluu(x)\n"
                   "  y = MatMul(x, W)\n"
                   "  z = Add(xx, t)\n"
                   "}\n")
    out = tmp_path / "out.onnx"
    r = cli("compile", str(bad), "-o", str(out))
    assert r.returncode == 1 and not out.exists()
    lines = r.stderr.splitlines()
    assert lines[0] == f"{bad}:3:7: error[op.unknown]: operator 'Reluu' does not exist in opset ai.onnx 18; " \
                       "did you mean 'Relu'?"
    assert lines[1:3] == ["    t = Reluu(x)", "        ^^^^^"]
    assert lines[3] == f"{bad}:4:7: error[type.node]: MatMul: inner dimensions differ: x is float[N, 4], " \
                       "W is float[3, 2]"
    assert lines[4:6] == ["    y = MatMul(x, W)", "        ^^^^^^"]
    assert lines[6] == f"{bad}:5:11: error[graph.undefined]: node[2] (Add) uses undefined value 'xx'; " \
                       "did you mean 'x'?"
    assert "3 errors" in lines[-1]
    r = cli("compile", str(bad), "-o", str(out), "--no-check")
    assert r.returncode == 0 and out.exists() and r.stderr == ""


def test_compile_prints_warnings_and_writes(tmp_path):
    text = tmp_path / "w.onnxtext"
    text.write_text('<ir_version: 10, opset_import: ["": 18, "": 18]>\ng (float[N] x) => (float[N] y) {\n'
                    "  y = Relu(x)\n}\n")
    out = tmp_path / "w.onnx"
    r = cli("compile", str(text), "-o", str(out))
    assert r.returncode == 0 and out.exists()
    assert f"{text}:1:" in r.stderr and "warning[model.opset-import]" in r.stderr
    out.unlink()
    r = cli("compile", str(text), "-o", str(out), "--strict")
    assert r.returncode == 1 and not out.exists() and "error[model.opset-import]" in r.stderr
    r = cli("compile", str(text), "-o", str(out), "--no-warnings")
    assert r.returncode == 0 and r.stderr == ""


def test_run_into_a_closed_pipe_is_quiet(tmp_path):
    """``onnxtext run --trace ... | head``: a reader that stops early is not an error (exit 0, nothing on stderr)."""
    model = tmp_path / "chain.onnxtext"
    model.write_text('<ir_version: 10, opset_import: ["": 18]>\ng (float[N] x0) => (float[N] x500) {\n'
                     + "".join(f"  x{i + 1} = Relu(x{i})\n" for i in range(500)) + "}\n")
    p = subprocess.Popen([sys.executable, "-m", "onnxtext", "run", str(model), "--random", "--dim", "N=1000",
                          "--trace"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 0 and err == ""


@pytest.mark.parametrize("example", ["mlp", "cnn_block", "attention", "control_flow", "local_function"])
def test_print_shapes_adds_marked_value_info_that_round_trips(example):
    from onnxtext.checker.shapes import INFERRED_MARK

    path = os.path.join(ROOT, "examples", example + ".onnxtext")
    r = cli("print", "--shapes", path)
    assert r.returncode == 0, r.stderr
    model, original = onnxtext.parse_model(r.stdout), onnxtext.load(path)
    assert onnxtext.to_text(model) == r.stdout  # byte-exact round trip

    def strip(g) -> int:
        """Remove the marked entries (subgraphs too); how many there were."""
        kept = [v for v in g.value_info if v.doc_string != INFERRED_MARK]
        removed = len(g.value_info) - len(kept)
        del g.value_info[:]
        g.value_info.extend(kept)
        for n in g.node:
            for a in n.attribute:
                removed += sum(strip(sg) for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs))
        return removed

    assert r.stdout.count("/// " + INFERRED_MARK) == strip(model.graph) > 0
    assert model == original  # nothing else changed
    assert [d for d in onnxtext.check(r.stdout) if d.severity == "error"] == []


def test_print_shapes_keeps_symbols():
    r = cli("print", "--shapes", EXAMPLE)
    assert "/// inferred by onnxtext print --shapes\n  float[N, 8] h," in r.stdout
