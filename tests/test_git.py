"""git integration: ``onnxtext git-setup`` in a temporary repository makes ``git log -p`` show .onnx changes as
onnxtext, with the graph name in hunk headers; the set-up is idempotent; external data prints as a reference.

git runs with a temporary HOME and GIT_CONFIG_NOSYSTEM=1 so neither the user's nor the system's
configuration leaks in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxtext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env(home):
    env = dict(os.environ, HOME=str(home), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(home / ".config"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), GIT_PAGER="cat", PAGER="cat")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(var, None)
    return env


def onnxtext_cli(*args, cwd, env):
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], cwd=cwd, env=env, capture_output=True, text=True)


def git(*args, cwd, env):
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def repo(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home)
    work = tmp_path / "repo"
    work.mkdir()
    git("init", "-q", cwd=work, env=env)
    git("config", "user.name", "Test", cwd=work, env=env)
    git("config", "user.email", "test@example.com", cwd=work, env=env)
    return work, env


def _textconv_args(env):
    """The documented default runs ``onnxtext`` from PATH; when the console script is not installed there,
    point git at this interpreter instead (the same program)."""
    if shutil.which("onnxtext", path=env.get("PATH")):
        return []
    return ["--command", f"{sys.executable} -m onnxtext print --elide"]


def _model(alpha: float, weights: np.ndarray) -> onnx.ModelProto:
    # enough nodes that a change near the end is far from the graph's first line (hunk header context)
    body = "\n".join(f"  h{i + 1} = Relu(h{i})" for i in range(12))
    m = onnxtext.parse_model(f"""<ir_version: 10, opset_import: ["": 21]>
review_graph (float[64] x) => (float[64] y) {{
  h0 = Mul(x, w)
{body}
  y = LeakyRelu <alpha = {alpha}> (h12)
}}
""")
    m.graph.initializer.append(numpy_helper.from_array(weights, "w"))
    return m


def test_git_log_shows_onnx_changes_as_text(repo):
    work, env = repo
    r = onnxtext_cli("git-setup", *_textconv_args(env), cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    weights = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    onnx.save(_model(0.1, weights), str(work / "model.onnx"))
    git("add", ".", cwd=work, env=env)
    git("commit", "-qm", "first", cwd=work, env=env)
    changed = weights.copy()
    changed[7] += 1
    onnx.save(_model(0.2, changed), str(work / "model.onnx"))
    git("commit", "-qam", "second", cwd=work, env=env)
    log = git("log", "-p", "-1", cwd=work, env=env)
    assert "Binary files" not in log
    assert "-  y = LeakyRelu <alpha = 0.1> (h12)" in log and "+  y = LeakyRelu <alpha = 0.2> (h12)" in log
    # the weight is one elided line that changes (a digest), not a dump of its values
    assert re.search(r"^-\s*<?float\[64\] w = elided \{.*sha256", log, re.M)
    assert re.search(r"^\+\s*<?float\[64\] w = elided \{.*sha256", log, re.M)
    headers = re.findall(r"^@@ .* @@(.*)$", log, re.M)
    assert any("review_graph" in h for h in headers), headers


def test_setup_is_idempotent_and_keeps_existing_attributes(repo):
    work, env = repo
    (work / ".gitattributes").write_text("*.png binary")  # no final newline: the setup must add one
    for _ in range(2):
        assert onnxtext_cli("git-setup", cwd=work, env=env).returncode == 0
    assert (work / ".gitattributes").read_text() == "*.png binary\n*.onnx diff=onnx\n"
    config = git("config", "--local", "--get-regexp", r"^diff\.onnx\.", cwd=work, env=env)
    assert "diff.onnx.textconv onnxtext print --elide" in config
    assert "diff.onnx.cachetextconv true" in config and "diff.onnx.xfuncname" in config


def test_global_setup_writes_user_config(repo):
    work, env = repo
    home = env["HOME"]
    r = onnxtext_cli("git-setup", "--global", "--pattern", "*.ort", cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(home, ".config", "git", "attributes")) as f:
        assert f.read() == "*.ort diff=onnx\n"
    assert "onnxtext print" in git("config", "--global", "diff.onnx.textconv", cwd=work, env=env)
    assert not (work / ".gitattributes").exists()


def test_outside_a_repository_is_a_clear_error(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    outside = tmp_path / "plain"
    outside.mkdir()
    env = dict(_env(home), GIT_CEILING_DIRECTORIES=str(tmp_path))
    r = onnxtext_cli("git-setup", cwd=outside, env=env)
    assert r.returncode == 1 and "not inside a git work tree" in r.stderr and "Traceback" not in r.stderr
    assert not (outside / ".gitattributes").exists()


def test_xfuncname_matches_graph_and_function_first_lines():
    from onnxtext.commands.git_setup import XFUNCNAME

    text = onnxtext.to_text(onnxtext.load(os.path.join(ROOT, "examples", "local_function.onnxtext")))
    pattern = re.compile(XFUNCNAME)
    model = onnxtext.load(os.path.join(ROOT, "examples", "local_function.onnxtext"))
    names = [model.graph.name] + [f.name for f in model.functions]
    heads = [line for line in text.splitlines() if pattern.match(line)]
    assert [h.split(" ", 1)[0].strip('"') for h in heads] == names, heads


def test_textconv_prints_external_data_as_references_when_the_data_file_is_absent(tmp_path):
    """git gives textconv a temporary copy of the .onnx without its data file next to it."""
    m = _model(0.1, np.arange(64, dtype=np.float32))
    onnx.save(m, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data", size_threshold=0)
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    shutil.copy(tmp_path / "m.onnx", copy / "tmp_m.onnx")
    r = onnxtext_cli("print", "--elide", str(copy / "tmp_m.onnx"), cwd=copy, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert '"location": "m.data"' in r.stdout and '"length": "256"' in r.stdout
