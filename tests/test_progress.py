"""Progress bars of print/compile: drawn on a terminal for large models, silent otherwise, never on stdout."""

import os
import pty
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxtext
from onnxtext import progress
from onnxtext.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TERM="xterm")


@pytest.fixture
def model_path(tmp_path):
    w = numpy_helper.from_array(np.arange(20000, dtype=np.float32).reshape(100, 200), "W")
    graph = helper.make_graph([helper.make_node("Identity", ["W"], ["Y"])], "g", [],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [100, 200])], [w])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


COMMANDS = {  # name -> argv after the model path, and the file it writes (None: stdout)
    "print": (["print"], [], None),
    "print-external": (["print"], ["--external-data", "w.bin", "-o", "out.onnxtext"], "out.onnxtext"),
    "compile": (["compile"], ["-o", "out.onnx", "--external-data", "w.bin"], "out.onnx"),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_quiet_when_stderr_is_not_a_terminal(model_path, monkeypatch, capsys, command):
    monkeypatch.setattr(progress, "LARGE_BYTES", 0)  # every model counts as large
    monkeypatch.chdir(model_path.parent)
    head, tail, _ = COMMANDS[command]
    assert main(head + [str(model_path)] + tail) == 0
    assert capsys.readouterr().err == ""


def _run(args, cwd, stderr=subprocess.PIPE):
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                          env=ENV)


@pytest.mark.parametrize("command", COMMANDS)
def test_forced_bar_leaves_the_output_unchanged(model_path, command):
    head, tail, written = COMMANDS[command]
    plain = _run(head + [str(model_path)] + tail, model_path.parent)
    expected = plain.stdout if written is None else (model_path.parent / written).read_bytes()
    forced = _run(head + [str(model_path)] + tail + ["--progress"], model_path.parent)
    assert plain.returncode == forced.returncode == 0, forced.stderr
    assert forced.stderr  # the bar went to stderr...
    got = forced.stdout if written is None else (model_path.parent / written).read_bytes()
    assert got == expected  # ...and nothing else changed
    if written is None:
        assert onnxtext.parse_model(got.decode()) == onnxtext.parse_model(plain.stdout.decode())


def _on_a_terminal(args, cwd):
    """Run the CLI with stderr on a pseudo-terminal (stdout to a pipe); LARGE_BYTES=0. -> (stdout, terminal)."""
    code = ("import sys; from onnxtext import progress; progress.LARGE_BYTES = 0; from onnxtext.cli import main; "
            f"sys.exit(main({args!r}))")
    master, slave = pty.openpty()
    stdout = open(os.path.join(cwd, "stdout.txt"), "w+b")  # a file, not a pipe that could fill up and block
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=stdout, stderr=slave, cwd=cwd, env=ENV)
    os.close(slave)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    assert proc.wait(timeout=60) == 0, screen
    os.close(master)
    stdout.seek(0)
    out = stdout.read()
    stdout.close()
    return out, screen


def test_bar_is_drawn_on_a_terminal(model_path):
    out, screen = _on_a_terminal(["print", str(model_path)], str(model_path.parent))
    assert b"reading m.onnx" in screen and b"100.0%" in screen
    assert out.decode() == onnxtext.to_text(onnxtext.load(model_path))


def test_quiet_option_silences_the_terminal(model_path):
    out, screen = _on_a_terminal(["print", str(model_path), "--quiet"], str(model_path.parent))
    assert screen == b"" and out.startswith(b"<")


def test_small_models_draw_nothing(model_path):
    assert progress.LARGE_BYTES > os.path.getsize(model_path)
    p = progress.Progress("auto", stream=_FakeTerminal())
    with p:
        p.stage("reading", os.path.getsize(model_path)).advance(10)
    assert p._bar is None and p.enabled


class _FakeTerminal:
    def isatty(self):
        return True

    def write(self, s):
        raise AssertionError("nothing may be drawn")
