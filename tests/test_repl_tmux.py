"""``onnxtext repl`` in a real terminal (tmux): type a constant, two nodes (one completed with Tab), a
deliberate unknown-operator error and ``:save``, read the screen, then load and run the saved file.

Runs on a private tmux server socket so it never touches the user's sessions. Skips only when tmux is
not installed (.ci/run installs it).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import onnxtext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 60.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


_SERVERS = itertools.count()


class Terminal:
    """A tmux pane running one command, on its own server socket."""

    def __init__(self, command: list[str], cwd: str, env: dict):
        # a server per terminal: the previous test's server may still be shutting down after kill-server
        self.socket = f"onnxtext-test-{os.getpid()}-{next(_SERVERS)}"
        self.target = "repl"
        self._tmux("new-session", "-d", "-s", self.target, "-x", "120", "-y", "40", "-c", cwd,
                   " ".join(_shell_quote(c) for c in command), env=env)

    def _tmux(self, *args, env=None):
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=env, timeout=30)
        if done.returncode:
            pytest.fail(f"tmux {' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def type(self, text: str, enter: bool = True):
        self._tmux("send-keys", "-t", self.target, "-l", text)
        if enter:
            self._tmux("send-keys", "-t", self.target, "Enter")

    def key(self, name: str):
        self._tmux("send-keys", "-t", self.target, name)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.target, "-S", "-200").stdout

    def wait_for(self, text: str) -> str:
        """The screen once ``text`` is on it (fails with the screen after TIMEOUT seconds)."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        pytest.fail(f"{text!r} did not appear on the screen:\n{self.screen()}")

    def wait_for_prompt(self, n: int) -> str:
        """The screen once the ``n``-th ``onnx>`` prompt is drawn: keys typed before it would reach a terminal
        still in cooked mode, whose echo garbles the screen (seen on a loaded machine)."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count("onnx>") >= n:
                return screen
            time.sleep(0.1)
        pytest.fail(f"prompt {n} did not appear on the screen:\n{self.screen()}")

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def _shell_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.fixture
def terminal(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, ONNXTEXT_HISTORY=str(tmp_path / "history"), TERM="xterm-256color")
    command = ["env", f"PYTHONPATH={ROOT}", f"ONNXTEXT_HISTORY={tmp_path / 'history'}",
               sys.executable, "-m", "onnxtext", "repl"]
    term = Terminal(command, str(tmp_path), env)
    yield term
    term.close()


def test_repl_in_a_real_terminal(terminal, tmp_path):
    x = np.array([1.5, -2.0, 3.0], np.float32)
    terminal.wait_for("onnx>")
    terminal.type("x = Constant<value = float[3] {1.5, -2.0, 3.0}>()")
    terminal.wait_for("float[3] x = {1.5, -2.0, 3.0}")

    terminal.type("y = Relu(x)")
    terminal.wait_for("float[3] y = {1.5, 0.0, 3.0}")
    terminal.wait_for_prompt(3)

    # Tab completes the operator; the toolbar shows its signature while the arguments are typed
    terminal.type("z = LeakyRe", enter=False)
    terminal.key("Tab")
    terminal.wait_for("z = LeakyRelu")
    terminal.type("<alpha = 0.5>(y, ", enter=False)
    terminal.wait_for("LeakyRelu(X: T) -> (Y: T)")
    terminal.key("BSpace")
    terminal.key("BSpace")
    terminal.type(")")
    terminal.wait_for("float[3] z =")

    terminal.type("w = Nope(z)")
    terminal.wait_for("unknown operator 'Nope'")

    terminal.type(":save out.onnxtext")
    screen = terminal.wait_for("saved out.onnxtext")
    assert "Traceback" not in screen
    terminal.type(":quit")

    model = onnxtext.parse_model((tmp_path / "out.onnxtext").read_text())
    assert [n.op_type for n in model.graph.node] == ["Constant", "Relu", "LeakyRelu"]
    (z,) = onnxtext.Evaluator(model).run(None, {})
    y = np.maximum(x, 0)
    np.testing.assert_array_equal(z, np.where(y >= 0, y, 0.5 * y))


def test_repl_shows_inferred_shapes_in_a_real_terminal(terminal):
    """A symbolic input: the new value's inferred type keeps the symbol, and :show types the output with it."""
    terminal.wait_for("onnx>")
    terminal.type(":input float[B, 3] a")
    terminal.wait_for("float[2, 3] a =")
    terminal.type("b = Relu(a)")
    terminal.wait_for("type: float[B, 3] (inferred; this sample is [2, 3])")
    terminal.type(":show")
    screen = terminal.wait_for("=> (float[B, 3] b)")
    assert "float[?" not in screen and "Traceback" not in screen
    terminal.type(":quit")
