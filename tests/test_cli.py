"""CLI behaviour: print/compile round trip, clean errors (no traceback), atomic outputs."""

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
