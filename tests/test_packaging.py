"""Packaging: the wheel holds the grammar and every module, and a fresh virtual environment with only the
wheel installed compiles and prints a bundled example from another directory (what a newcomer does)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import venv
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), ROOT], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (path,) = glob.glob(str(out / "onnxtext-*.whl"))
    return path


def test_wheel_holds_grammar_and_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"onnxtext/grammar/onnxtext.lark", "onnxtext/grammar/lexical.lark"} <= names
    sources = {os.path.relpath(p, ROOT).replace(os.sep, "/")
               for p in glob.glob(os.path.join(ROOT, "onnxtext", "**", "*.py"), recursive=True)}
    assert sources <= names, sorted(sources - names)
    assert not any(n.startswith("tests/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "onnxtext = onnxtext.cli:main" in text and "onnxtext.lexer:OnnxTextLexer" in text


def dependency_dirs() -> list[str]:
    """The folders the running interpreter imports onnxtext's dependencies from (of this environment, however
    it was made: a venv, a user install, the system), found from the wheel's own requirement list."""
    import importlib.metadata as md
    import re

    dirs = []
    for req in md.requires("onnxtext") or []:
        if "extra ==" in req:
            continue
        name = re.match(r"[A-Za-z0-9_.-]+", req).group()
        dist = md.distribution(name)
        folder = os.path.abspath(str(dist.locate_file("")))
        if folder not in dirs:
            dirs.append(folder)
    return dirs


def test_fresh_environment_compiles_and_prints_an_example(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    # an isolated venv (no system site packages: they are the base interpreter's, not this environment's);
    # no network here, so the dependencies come from this environment's folders through a .pth file, after
    # the venv's own site-packages, where the wheel's onnxtext is installed
    venv.EnvBuilder(system_site_packages=False, with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(purelib, "onnxtext-test-dependencies.pth"), "w") as f:
        f.write("\n".join(dependency_dirs()) + "\n")
    r = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    where = subprocess.run([python, "-c", "import onnxtext; print(onnxtext.__file__)"], capture_output=True,
                           text=True, cwd=work, env=env)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr  # not the source checkout
    exe = str(bindir / "onnxtext")
    example = os.path.join(ROOT, "examples", "mlp.onnxtext")
    r = subprocess.run([exe, "compile", example, "-o", "mlp.onnx"], capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([exe, "print", "mlp.onnx"], capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert "Gemm" in r.stdout and "=>" in r.stdout
    # the fast path may not need the grammar: parse with Lark, the parser of record, too
    code = f"import onnxtext; print(onnxtext.parse_model(open({example!r}).read(), fast=False).graph.name)"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
