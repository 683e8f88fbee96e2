"""Neovim's built-in LSP client attached to ``onnxtext lsp``: a diagnostic and a hover read back.

Runs ``nvim --headless`` (Debian's ``neovim`` package; .ci/run installs it) with
tests/fixtures/lsp/nvim_client.lua on a model with an undefined value. Skipped, saying why, when ``nvim``
is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pygls", reason="the language server needs pygls (pip install 'onnxtext[lsp]')")

HERE = os.path.dirname(__file__)
NVIM = shutil.which("nvim")

TEXT = """<ir_version: 10, opset_import: ["": 21], domain: "test.nvim">
main (float[2] x) => (float[2] y) {
  a = Relu(x)
  y = Add(a, undefined_value)
}
"""


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim; .ci/run installs it)")
def test_neovim_builtin_client(tmp_path):
    model = tmp_path / "model.onnxtext"
    model.write_text(TEXT)
    out = tmp_path / "out.txt"
    env = {**os.environ, "NVIM_LSP_OUT": str(out), "NVIM_LSP_PYTHON": sys.executable,
           "NVIM_LSP_FILE": str(model), "PYTHONPATH": os.pathsep.join(filter(None, [
               os.path.dirname(HERE), os.environ.get("PYTHONPATH")]))}
    script = os.path.join(HERE, "fixtures", "lsp", "nvim_client.lua")
    subprocess.run([NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}"], env=env,
                   cwd=tmp_path, timeout=180, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    lines = out.read_text().split("\n")
    # 0-based line 3, column 13: the undefined name in `y = Add(a, undefined_value)`
    assert lines[0].startswith("diagnostic 3:13 graph.undefined ") and "'undefined_value'" in lines[0]
    hover = "\n".join(lines[1:])
    assert hover.startswith("hover ```\nRelu(X: T) -> (Y: T)")
    assert "since opset 14" in hover
