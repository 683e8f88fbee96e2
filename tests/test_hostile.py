"""The adversarial suite (issue 23): hostile and careless inputs, each probe in a subprocess with limits.

Every probe runs ``onnxtext`` (the CLI) or a Python snippet (the API) in a child process with a wall-clock
limit and an address-space limit (``resource.setrlimit(RLIMIT_AS)`` in the child), so a hang or a memory
blow-up fails one probe instead of taking the test run down. A probe passes when the child

* exits with the expected status (1 for refused input: a clean error; 0 for input that must work);
* prints no traceback and no "internal error";
* names the position as ``file:line:col`` where the input is text and the probe says so (``where``);
* leaves the files the probe lists as they must be (no partial output, no temporary files).

To add a probe, add a line to ``PROBES``: ``Probe(id, setup, argv, ...)``. ``setup(d)`` writes the inputs
into the probe's folder ``d`` (helpers below build models and texts). ``argv`` is a CLI command line, or
``["-c", code]`` for a Python snippet run with ``python``.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxtext

TIME_LIMIT = 60  # seconds per probe (the slowest legitimate probe takes a few seconds on an idle machine)
MEMORY_LIMIT = 3 << 30  # bytes of address space per child (numpy, onnx and lark map ~1 GiB of it at start)


# ---------------------------------------------------------------------------------------------- inputs
def mlp(d, name="m.onnx", external=False):
    """Y = MatMul(X, W) + B (W: 40x50 float); with ``external``, W in ``w.bin`` beside the model."""
    w = numpy_helper.from_array(np.arange(2000, dtype=np.float32).reshape(40, 50) / 1000, "W")
    b = numpy_helper.from_array(np.ones(50, np.float32), "B")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 40])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 50])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    if external:
        onnxtext.save(m, os.path.join(d, name), external_data=os.path.join(d, "w.bin"), threshold=1024)
    else:
        onnx.save(m, os.path.join(d, name))


def external_ref(d, location="w.bin", offset="0", length="8000", text=True):
    """An MLP whose W refers to ``location`` at ``offset``/``length`` (nothing checked when written)."""
    mlp(d)
    m = onnx.load(os.path.join(d, "m.onnx"))
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        e = w.external_data.add()
        e.key, e.value = key, value
    if text:
        with open(os.path.join(d, "m.onnxtext"), "w") as f:
            f.write(onnxtext.to_text(m))
    else:
        onnx.save(m, os.path.join(d, "m.onnx"))


def chain_text(n: int, typo_at: int | None = None) -> str:
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("v0", 1, [1])],
                          [helper.make_tensor_value_info(f"v{n}", 1, [1])])
    lines = onnxtext.to_text(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).split("\n")
    if typo_at is not None:
        k = next(i for i, line in enumerate(lines) if f"v{typo_at + 1} = Relu" in line)
        lines[k] = lines[k].replace("= Relu(", "= Relu((")
    return "\n".join(lines)


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def fifo(d, name):
    os.mkfifo(os.path.join(d, name))


def big_text(d):
    """A text model of ~60 MB (one big base64 weight): compiling it takes long enough to be interrupted."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4000, 4000)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("Identity", ["W"], ["Y"])], "g", [],
                          [helper.make_tensor_value_info("Y", 1, [4000, 4000])], [w])
    write(d, "big.onnxtext", onnxtext.to_text(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])))


THREADS = '''
import threading, numpy as np, onnxtext
ev = onnxtext.Evaluator("m.onnx")
feeds = [{"X": np.random.default_rng(i).standard_normal((1, 40)).astype(np.float32)} for i in range(16)]
serial = [ev.run(None, f)[0] for f in feeds]
out = [None] * len(feeds)
def work(i):
    for _ in range(20):
        out[i] = ev.run(None, feeds[i])[0]
ts = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
[t.start() for t in ts]; [t.join() for t in ts]
assert all(np.array_equal(a, b) for a, b in zip(out, serial)), "threaded runs differ from serial ones"
print("threads ok")
'''


# ---------------------------------------------------------------------------------------------- probes
@dataclass
class Probe:
    id: str
    setup: Callable
    argv: list
    status: int = 1  # expected exit status
    says: tuple = ()  # words the output (stderr + stdout) must contain
    where: str | None = None  # "FILE:LINE:COL" prefix the message must contain (text inputs)
    absent: tuple = ()  # files that must not exist afterwards (outputs of refused commands)
    check: Callable | None = None  # check(d) after the run, for outputs that must be right
    env: dict = field(default_factory=dict)


def _unchanged(name, content):
    def check(d):
        with open(os.path.join(d, name)) as f:
            assert f.read() == content, f"{name} changed"
    return check


def _nodes(name, ops):
    def check(d):
        assert [n.op_type for n in onnxtext.load(os.path.join(d, name)).graph.node] == ops
    return check


UGLY = '<ir_version: 8, opset_import: ["": 17]>\ng (float[1] x) => (float[1] y) {\n  t = Relu(x)\n      y = Neg(t)\n}\n' 

PROBES = [
    # --- family 4: external data
    Probe("external-fifo", lambda d: (external_ref(d, "pipe"), fifo(d, "pipe")), ["run", "m.onnxtext", "--input",
          "X=" + str([[1.0] * 40])], says=("FIFO", "'W'")),
    Probe("external-fifo-compile", lambda d: (external_ref(d, "pipe"), fifo(d, "pipe")),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("FIFO",), absent=("out.onnx",)),
    Probe("external-dev-zero-link", lambda d: (external_ref(d, "zero"), os.symlink("/dev/zero", os.path.join(d, "zero"))),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("outside",), absent=("out.onnx",)),
    Probe("external-huge-offset", lambda d: (external_ref(d, offset=str(10 ** 18)), write(d, "w.bin", b"\0" * 8000)),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("holds 8000 bytes",), absent=("out.onnx",)),
    Probe("external-huge-length", lambda d: (external_ref(d, length=str(10 ** 15)), write(d, "w.bin", b"\0" * 8000)),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("2 GiB",), absent=("out.onnx",)),  # refused first
    Probe("external-huge-length-external", lambda d: (external_ref(d, length=str(10 ** 15)), write(d, "w.bin", b"\0" * 8000)),
          ["compile", "m.onnxtext", "-o", "o.onnx", "--external-data", "o.bin"], says=("1000000000000000",),
          absent=("o.onnx", "o.bin")),
    Probe("external-short-file", lambda d: (external_ref(d), write(d, "w.bin", b"\0" * 7999)),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("7999 bytes",), absent=("out.onnx",)),
    Probe("external-short-file-api", lambda d: (external_ref(d), write(d, "w.bin", b"\0" * 100)),
          ["-c", "import onnxtext\ntry:\n    onnxtext.load('m.onnxtext')\nexcept onnxtext.ExternalDataError as e:\n"
                 "    print(e); raise SystemExit(1)"], says=("100 bytes",)),
    Probe("external-binary-huge-length", lambda d: (external_ref(d, length=str(2 ** 62), text=False),
                                                    write(d, "w.bin", b"\0" * 8000)),
          ["run", "m.onnx", "--input", "X=" + str([[1.0] * 40])], says=("holds 8000 bytes",)),
    # --- family 1/6: model files that are not regular files, or too big
    Probe("model-dev-zero", lambda d: None, ["print", "/dev/zero"], says=("device",)),
    Probe("model-dev-zero-check", lambda d: None, ["-c", "import onnxtext\nfor d in onnxtext.check('/dev/zero'):\n"
          "    print(d)\nraise SystemExit(1)"], says=("model.decode", "device")),
    Probe("model-dev-zero-api", lambda d: None,
          ["-c", "import onnxtext\ntry:\n    onnxtext.load('/dev/zero')\nexcept onnxtext.OnnxTextError as e:\n"
                 "    print(e); raise SystemExit(1)"], says=("device",)),
    Probe("model-fifo", lambda d: fifo(d, "m.onnx"), ["info", "m.onnx"], says=("FIFO",)),
    Probe("model-dev-zero-check-cli", lambda d: None, ["check", "/dev/zero"], says=("device",)),
    Probe("model-size-cap", lambda d: write(d, "m.onnxtext", UGLY * 100), ["compile", "m.onnxtext", "-o", "o.onnx"],
          says=("size limit", "ONNXTEXT_MAX_FILE_BYTES"), env={"ONNXTEXT_MAX_FILE_BYTES": "1000"}, absent=("o.onnx",)),
    # --- family 5: text edge cases
    Probe("lone-cr-ends-comment", lambda d: write(d, "m.onnxtext", "<ir_version: 8, opset_import: [\"\": 17]>\n"
          "g (float x) => (float y) {\n  t = Relu(x)  # note\r  y = Neg(t)\n}\n"),
          ["compile", "m.onnxtext", "-o", "o.onnx"], status=0, check=_nodes("o.onnx", ["Relu", "Neg"])),
    Probe("cr-only-file", lambda d: write(d, "m.onnxtext", "<ir_version: 8, opset_import: [\"\": 17]>\r"
          "g (float x) => (float y) {\r  t = Relu(x)\r  y = Neg(t)\r}\r"),
          ["compile", "m.onnxtext", "-o", "o.onnx"], status=0, check=_nodes("o.onnx", ["Relu", "Neg"])),
    Probe("cr-only-error", lambda d: write(d, "m.onnxtext", "g (float x) => (float y) {\r  t = Relu(x)\r"
          "  y = Neg(t\r}\r"), ["check", "m.onnxtext"], where="m.onnxtext:4:1"),
    Probe("invalid-utf8", lambda d: write(d, "m.onnxtext", b"g (float x) => (float y) {\n  y = F<s = \"\xff\">(x)\n}\n"),
          ["compile", "m.onnxtext", "-o", "o.onnx"], where="m.onnxtext:2:14", says=("UTF-8",), absent=("o.onnx",)),
    Probe("huge-identifier-then-error", lambda d: write(d, "m.onnxtext", "g (float x) => (float y) {\n  "
          + "a" * 10_000_000 + " = Relu(x\n}\n"), ["compile", "m.onnxtext", "-o", "o.onnx"], where="m.onnxtext:3:1",
          absent=("o.onnx",)),
    Probe("typo-near-start-compile", lambda d: write(d, "m.onnxtext", chain_text(20000, typo_at=5)),
          ["compile", "m.onnxtext", "-o", "o.onnx"], where="m.onnxtext:", absent=("o.onnx",)),
    Probe("typo-near-start-check", lambda d: write(d, "m.onnxtext", chain_text(20000, typo_at=5)),
          ["check", "m.onnxtext"], where="m.onnxtext:"),
    Probe("typo-near-end-check", lambda d: write(d, "m.onnxtext", chain_text(20000, typo_at=19990)),
          ["check", "m.onnxtext"], where="m.onnxtext:"),
    # --- family 6: atomicity and files
    Probe("compile-output-is-input", lambda d: mlp(d), ["compile", "m.onnx", "-o", "m.onnx"], status=0,
          check=lambda d: onnx.checker.check_model(os.path.join(d, "m.onnx"))),
    Probe("compile-text-output-is-input", lambda d: write(d, "m.onnxtext", UGLY),
          ["compile", "m.onnxtext", "-o", "m.onnxtext"], status=0, check=_nodes("m.onnxtext", ["Relu", "Neg"])),
    Probe("output-is-fifo", lambda d: (write(d, "m.onnxtext", UGLY), fifo(d, "out.onnx")),
          ["compile", "m.onnxtext", "-o", "out.onnx"], says=("FIFO",),
          check=lambda d: os.path.exists(os.path.join(d, "out.onnx"))),
    Probe("output-is-directory", lambda d: (write(d, "m.onnxtext", UGLY), os.mkdir(os.path.join(d, "out"))),
          ["compile", "m.onnxtext", "-o", "out"], says=("directory",)),
    Probe("fmt-read-only", lambda d: (write(d, "m.onnxtext", UGLY), os.chmod(os.path.join(d, "m.onnxtext"), 0o444)),
          ["fmt", "m.onnxtext"], status=2, says=("read-only",), check=_unchanged("m.onnxtext", UGLY)),  # fmt: 2
    Probe("fmt-through-symlink", lambda d: (write(d, "real.onnxtext", UGLY),
                                            os.symlink("real.onnxtext", os.path.join(d, "m.onnxtext"))),
          ["fmt", "m.onnxtext"], status=0,
          check=lambda d: (os.path.islink(os.path.join(d, "m.onnxtext")) or pytest.fail("link replaced"),
                           _nodes("real.onnxtext", ["Relu", "Neg"])(d),
                           open(os.path.join(d, "real.onnxtext")).read() != UGLY or pytest.fail("not formatted"))),
    # --- concurrency: one Evaluator from many threads at once
    Probe("evaluator-threads", lambda d: mlp(d), ["-c", THREADS], status=0, says=("threads ok",)),
]


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _command(argv):
    if argv[0] == "-c":
        return [sys.executable, "-c", argv[1]]
    return [sys.executable, "-m", "onnxtext", *argv]


def _temporaries(d):
    return [n for n in os.listdir(d) if n.startswith(".onnxtext-")]


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_probe(probe, tmp_path):
    d = str(tmp_path)
    probe.setup(d)
    env = {**os.environ, **probe.env, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(onnxtext.__file__)))] + sys.path)}
    env.pop("ONNXTEXT_TRACEBACK", None)
    try:
        proc = subprocess.run(_command(probe.argv), cwd=d, env=env, capture_output=True, text=True,
                              errors="replace", timeout=TIME_LIMIT, preexec_fn=_limits)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{probe.id}: no answer within {TIME_LIMIT} s (hang)")
    out = proc.stderr + proc.stdout
    assert "Traceback" not in out and "internal error" not in out, out[-3000:]
    assert "MemoryError" not in out, out[-3000:]
    assert proc.returncode == probe.status, f"exit {proc.returncode}:\n{out[-3000:]}"
    for word in probe.says:
        assert word in out, out[-3000:]
    if probe.where:
        assert probe.where in out, out[-3000:]
    for name in probe.absent:
        assert not os.path.exists(os.path.join(d, name)), f"{name} was written"
    assert not _temporaries(d), f"temporary files left: {_temporaries(d)}"
    if probe.check:
        probe.check(d)


@pytest.mark.parametrize("when", [0.5, 1.5, 3.0])
def test_sigterm_during_compile_leaves_nothing(tmp_path, when):
    """SIGTERM at some point of a long compile: afterwards either the complete output or nothing, and never
    a temporary file."""
    d = str(tmp_path)
    big_text(d)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(onnxtext.__file__)))] + sys.path)}
    proc = subprocess.Popen(_command(["compile", "big.onnxtext", "-o", "big.onnx"]), cwd=d, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limits)
    time.sleep(when)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("compile did not stop after SIGTERM")
    assert not _temporaries(d), f"temporary files left: {_temporaries(d)}"
    out = os.path.join(d, "big.onnx")
    if os.path.exists(out):  # it finished before the signal: then the output is complete
        assert proc.returncode == 0
        onnx.checker.check_model(out)
    else:
        assert proc.returncode != 0
    assert b"Traceback" not in err
