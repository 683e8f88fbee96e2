"""A/B of the evaluator at an earlier commit against this tree on real models, in ONE process with calls
alternating with onnxruntime's, one thread each:

    python benchmarks/eval_commit_ab.py --commit b66d344 --only torch_mlp_ts torch_cond_dy

The commit's ``onnxtext`` package is extracted with ``git archive`` into a temporary directory and its
imports renamed to ``onnxtext_at_commit``, so both versions load side by side (the evaluator only: the
renamed copy's CLI and grammar lookups are not used). On a machine shared with other processes, runs of
the two trees one after the other move with the load (10-50% on small models here); in one process the
rounds interleave, so the load hits both sides alike. ``--clock thread`` (the default) times the
thread's CPU time, which also leaves out the time the process waits for a core; ``--clock wall`` gives
wall time. The table gives per runtime the median over rounds of the mean time per call.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

PACKAGE = "onnxtext_at_commit"
_IMPORT = re.compile(r"\b(from|import) onnxtext(?=[.\s])")


def load_commit(commit: str, where: str):
    """The ``onnxtext.evaluator`` module of ``commit`` (this repository), as ``onnxtext_at_commit.evaluator``."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "onnxtext"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    os.rename(os.path.join(where, "onnxtext"), os.path.join(where, PACKAGE))
    for folder, _, files in os.walk(os.path.join(where, PACKAGE)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                with open(path, "w", encoding="utf-8") as f:
                    f.write(_IMPORT.sub(rf"\1 {PACKAGE}", text))
    sys.path.insert(0, where)
    return importlib.import_module(f"{PACKAGE}.evaluator")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", required=True, help="the commit to compare this tree with (A side)")
    parser.add_argument("--only", nargs="+", required=True, help="corpus model names")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=50, help="calls per runtime in each round")
    parser.add_argument("--clock", choices=("thread", "wall"), default="thread")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    import realmodels

    import onnxtext
    from onnxtext.evaluator.runtime import set_blas_threads

    models = {m.name: m for m in realmodels.corpus_models()}
    missing = [n for n in args.only if n not in models]
    if missing:
        print(f"not in the corpus: {', '.join(missing)}", file=sys.stderr)
        return 2
    set_blas_threads(1)
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    with tempfile.TemporaryDirectory() as where:
        old = load_commit(args.commit, where)
        print(f"A: onnxtext at {args.commit}; B: this tree; one thread; {args.clock} time, median of "
              f"{args.rounds} rounds of {args.calls} calls each")
        print("\n| model | A us | B us | ort us | A/ort | B/ort | B/A |\n|---|---:|---:|---:|---:|---:|---:|")
        for name in args.only:
            model = models[name]
            proto, feeds = model.load(), model.feeds()
            a, b = old.Evaluator(proto, threads=1), onnxtext.Evaluator(proto, threads=1)
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
            runs = {"a": lambda: a.run(None, feeds), "b": lambda: b.run(None, feeds),
                    "ort": lambda: session.run(None, feeds)}
            for fn in runs.values():
                for _ in range(5):  # (past the plans' compilation after their third run)
                    fn()
            times = {k: [] for k in runs}
            for _ in range(args.rounds):
                for key, fn in runs.items():
                    start = clock()
                    for _ in range(args.calls):
                        fn()
                    times[key].append((clock() - start) / args.calls)
            med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
            print(f"| {name} | {med['a']:.1f} | {med['b']:.1f} | {med['ort']:.1f} | {med['a'] / med['ort']:.2f} | "
                  f"{med['b'] / med['ort']:.2f} | {med['b'] / med['a']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
