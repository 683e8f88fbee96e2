"""Benchmark ``onnxtext diff`` on resnet50 with ~100 MB of real weights against a copy with one changed weight.

    python benchmarks/diff_speed.py [--runs N] [--keep DIR]

The model is ``light_resnet50.onnx`` from onnx's backend test data with its ConstantOfShape weight
generators replaced by seeded random initializers (``replace_constant_of_shape`` of tests/conformance.py),
saved twice: as is, and with one element of one Conv weight changed. Each command runs ``--runs`` times in
a fresh process (interpreter start-up included, as a user sees it); the table shows the median wall time,
the median CPU time of the process (user + system: steadier than wall time on a busy machine) and their
ratios to the peer ``onnx.load`` of both files, all measured in the same run:

* ``cmp`` of the two files (byte comparison, the cheapest possible "are they different");
* ``onnx.load`` of both files in a fresh process (the cost of just reading the models);
* ``onnxtext diff`` (the semantic diff; exit status 1, one reported change).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from conformance import DATA, replace_constant_of_shape  # noqa: E402


def build(directory: str) -> tuple[str, str, str]:
    """Write a.onnx and b.onnx (one weight element changed); return both paths and the changed name."""
    rng = np.random.default_rng(0)
    model = onnx.load(os.path.join(DATA, "light", "light_resnet50.onnx"))
    model = replace_constant_of_shape(model, lambda shape, value: rng.standard_normal(shape).astype(np.float32))
    a = os.path.join(directory, "a.onnx")
    onnx.save(model, a)
    conv_weight = next(n.input[1] for n in model.graph.node if n.op_type == "Conv")
    init = next(t for t in model.graph.initializer if t.name == conv_weight)
    w = onnx.numpy_helper.to_array(init).copy()
    w.flat[w.size // 2] += 0.25
    init.CopyFrom(onnx.numpy_helper.from_array(w, conv_weight))
    b = os.path.join(directory, "b.onnx")
    onnx.save(model, b)
    return a, b, conv_weight


def timed(cmd: list[str], runs: int, expect: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system of the child) over ``runs`` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if r.returncode != expect:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}, expected {expect}\n{r.stdout}{r.stderr}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", metavar="DIR", help="build the models in DIR and keep them")
    args = ap.parse_args()
    directory = args.keep or tempfile.mkdtemp(prefix="diff-speed-")
    os.makedirs(directory, exist_ok=True)
    try:
        a, b, changed = build(directory)
        size = os.path.getsize(a) / 1e6
        out = subprocess.run([sys.executable, "-m", "onnxtext", "diff", a, b], capture_output=True, text=True)
        print(f"resnet50: {size:.1f} MB per file; changed weight {changed!r}; onnxtext diff reports:")
        print("".join("    " + line + "\n" for line in out.stdout.splitlines()))
        load_both = f"import onnx; onnx.load({a!r}); onnx.load({b!r})"
        rows = [
            ("cmp a b", ["cmp", "-s", a, b], 1),
            ("python: onnx.load both", [sys.executable, "-c", load_both], 0),
            ("onnxtext diff a b", [sys.executable, "-m", "onnxtext", "diff", a, b], 1),
            ("onnxtext diff a a", [sys.executable, "-m", "onnxtext", "diff", a, a], 0),
        ]
        results = [(label, *timed(cmd, args.runs, expect)) for label, cmd, expect in rows]
        base, base_cpu = results[1][1], results[1][2]
        print(f"{'command':<26}{'wall s':>8}{'x load':>8}{'cpu s':>8}{'x load':>8}")
        for label, wall, cpu in results:
            print(f"{label:<26}{wall:>8.3f}{wall / base:>8.2f}{cpu:>8.3f}{cpu / base_cpu:>8.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
