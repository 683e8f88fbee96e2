"""YOLOv5's Focus layer (four strided 2x2-phase Slices concatenated on channels): the evaluator with rule
``space_to_depth_slices`` (one ``PhaseConcat`` copy) against the same graph with the rule disabled (the
Slices' and the Concat's own steps) and onnxruntime, in one process, calls alternating (ABBA).

    python benchmarks/space_to_depth_slices.py [--calls N]

The graph is the rule's fixture (tests/fixtures/optimizer/space_to_depth_slices.onnxtext, the form torch
exports: two Slices per phase), fed images of YOLO input sizes. One thread for everything; other processes
may be running, so compare the columns of one row with each other.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import numpy as np  # noqa: E402

SHAPES = [(1, 3, 416, 416), (1, 3, 640, 640), (2, 3, 320, 320), (1, 3, 64, 64)]
FIXTURE = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "optimizer", "space_to_depth_slices.onnxtext")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each runtime per shape")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    from helpers import text_model

    from onnxtext import Evaluator

    with open(FIXTURE) as f:
        model = text_model(f.read())
    on, off = Evaluator(model, threads=1), Evaluator(model, threads=1, disable=("space_to_depth_slices",))
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    print(f"one thread; median of {args.calls} alternating calls each; load average {os.getloadavg()[0]:.1f}")
    print("\n| input | rule on ms | rule off ms | ort ms | on/off | on/ort | off/ort |\n|---|---:|---:|---:|---:|---:|---:|")
    for shape in SHAPES:
        feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        runs = {"on": lambda: on.run(None, feeds), "off": lambda: off.run(None, feeds),
                "ort": lambda: session.run(None, feeds)}
        want = runs["off"]()[0]
        assert np.array_equal(runs["on"]()[0], want) and np.array_equal(runs["ort"]()[0], want)
        for run in runs.values():
            for _ in range(5):
                run()
        times = {k: [] for k in runs}
        for i in range(args.calls):
            for k in (("on", "off", "ort") if i % 2 else ("off", "on", "ort")):
                t = time.perf_counter()
                runs[k]()
                times[k].append(time.perf_counter() - t)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"| {'x'.join(map(str, shape))} | {med['on']:.3f} | {med['off']:.3f} | {med['ort']:.3f} | "
              f"{med['on'] / med['off']:.2f} | {med['on'] / med['ort']:.2f} | {med['off'] / med['ort']:.2f} |")
    print(f"\n(load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
