"""Evaluator limits and hostile models (issue 23): each probe runs in a subprocess with time and memory limits.

A probe is a model text and a Python snippet that runs it; the child has a wall-clock limit and an
address-space limit (``resource.setrlimit(RLIMIT_AS)``), so a hang or a memory blow-up fails one probe
instead of taking the test run down. The snippet sees ``model`` (the parsed text), ``np`` and ``onnxtext``,
and ``run(feeds)``, which runs the model with the Evaluator and prints its outputs, or prints the
``OnnxTextError`` and exits with status 1. A probe passes when the child exits with the expected status,
prints the expected words, and shows no traceback, "internal error", RecursionError or MemoryError.

To add a probe, add a line to ``PROBES``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass

import pytest

import onnxtext

TIME_LIMIT = 60  # seconds per probe; the slowest legitimate one takes a few seconds on an idle machine
MEMORY_LIMIT = 3 << 30  # bytes of address space per child (numpy, onnx and lark map ~1 GiB at start)

PRELUDE = '''
import sys, numpy as np, onnxtext
model = onnxtext.parse_model(open("m.onnxtext").read())
def run(feeds=None, **options):
    try:
        outputs = onnxtext.Evaluator(model).run(None, feeds or {}, **options)
    except onnxtext.OnnxTextError as e:
        print(type(e).__name__, e)
        raise SystemExit(1)
    for o in outputs:
        print(np.asarray(o).tolist() if np.asarray(o).size < 100 else np.asarray(o).shape)
'''

HEADER = '<ir_version: 10, opset_import: ["": 20]>\n'


@dataclass
class Probe:
    id: str
    text: str  # the model (HEADER is prepended)
    code: str  # the snippet run after PRELUDE
    says: tuple = ()  # words the output must contain
    status: int = 1  # expected exit status: 1 for a clean refusal, 0 for a run that must work


REGEX = 'g (string[N] x) => (bool[N] y) {\n  y = RegexFullMatch <pattern = "%s"> (x)\n}\n'

PROBES = [
    # --- RegexFullMatch: RE2 semantics, linear time
    Probe("regex-backtracking-pattern", REGEX % "(a+)+$",
          'run({"x": np.array(["a" * 100_000 + "b", "aaa"], dtype=object)})', ("[False, True]",), status=0),
    Probe("regex-nested-quantifiers", REGEX % "(x+x+)+y",
          'run({"x": np.array(["x" * 50_000, "xxy"], dtype=object)})', ("[False, True]",), status=0),
    Probe("regex-posix-class", REGEX % "[[:alpha:]]+[[:digit:]]",
          'run({"x": np.array(["abc1", "ab1c", ""], dtype=object)})', ("[True, False, False]",), status=0),
    Probe("regex-backreference-refused", REGEX % "(a)\\\\1",
          'run({"x": np.array(["aa"], dtype=object)})', ("not valid RE2 syntax", "invalid escape")),
    Probe("regex-lookahead-refused", REGEX % "a(?=b)",
          'run({"x": np.array(["ab"], dtype=object)})', ("not valid RE2 syntax",)),
]


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_probe(probe, tmp_path):
    (tmp_path / "m.onnxtext").write_text(HEADER + probe.text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(onnxtext.__file__)))] + sys.path)}
    try:
        proc = subprocess.run([sys.executable, "-c", PRELUDE + probe.code], cwd=tmp_path, env=env,
                              capture_output=True, text=True, errors="replace", timeout=TIME_LIMIT,
                              preexec_fn=_limits)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{probe.id}: no answer within {TIME_LIMIT} s (hang)")
    out = proc.stderr + proc.stdout
    for bad in ("Traceback", "internal error", "RecursionError", "MemoryError"):
        assert bad not in out, out[-3000:]
    assert proc.returncode == probe.status, f"exit {proc.returncode}:\n{out[-3000:]}"
    for word in probe.says:
        assert word in out, out[-3000:]
