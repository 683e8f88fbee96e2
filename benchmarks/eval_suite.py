"""Total time of the ONNX node test suite with the evaluator and with onnxruntime, session creation included.

    python benchmarks/eval_suite.py [--runs N] [--top K] [--threads N] [REGEX]

A user of many small models pays session creation (plan preparation) at least as much as the run
itself, so each case is timed from its in-memory model to its outputs: create the session
(``Evaluator(model)`` / ``onnxruntime.InferenceSession(bytes)``), then run every data set of the
case. Each runtime gets the model in its native in-memory form, prepared before timing (onnxtext a
ModelProto, onnxruntime the serialized bytes), and the inputs already decoded.

Cases onnxruntime cannot load or run (unsupported operators or types) are skipped for BOTH
runtimes, and so are cases the evaluator cannot run, so both totals cover the same set; the table
reports how many were skipped. The whole suite runs ``--runs`` times, alternating runtimes; the
totals shown are medians. The slowest cases relative to onnxruntime are listed with their split
between creation and runs.

onnxruntime appears only here, as a yardstick measured in the same run.
"""

from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import limit_from_argv  # noqa: E402

limit_from_argv(sys.argv)  # before numpy is imported

import argparse  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

from conformance import _decoded, node_cases  # noqa: E402


def onnxtext_case(model, sets):
    from onnxtext.evaluator import Evaluator

    ev = Evaluator(model, seed=0)
    for feeds in sets:
        ev.run(None, feeds)


def make_onnxruntime_case(threads):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # no warnings in the output
    if threads:
        options.intra_op_num_threads = threads

    def run(data, sets):
        sess = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        for feeds in sets:
            sess.run(None, feeds)

    return run


def prepare(pattern):
    """[(name, model, model bytes, [feeds by input name])], and the skipped cases with the reason."""
    cases, skipped = [], []
    for name, model, data_sets, _, _ in node_cases():
        if not pattern.search(name):
            continue
        init = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in init]
        sets = [dict(zip(names, [_decoded(v) for v in inputs])) for inputs, _ in data_sets]
        cases.append((name, model, model.SerializeToString(), sets))
    return cases, skipped


def screen(cases, ort_case):
    """The cases both runtimes run without raising (one untimed run each), and the others' reasons."""
    with _quiet_stderr():  # onnxruntime prints its load errors itself, in addition to raising
        return _screen(cases, ort_case)


class _quiet_stderr:
    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)


def _screen(cases, ort_case):
    kept, skipped = [], []
    for case in cases:
        name, model, data, sets = case
        try:
            ort_case(data, sets)
        except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types
            skipped.append((name, "onnxruntime: " + str(e).strip().splitlines()[0][:80] if str(e) else "error"))
            continue
        try:
            onnxtext_case(model, sets)
        except Exception as e:  # noqa: BLE001
            skipped.append((name, f"onnxtext: {type(e).__name__}"))
            continue
        kept.append(case)
    return kept, skipped


def time_suite(cases, runner, per_case):
    """Total seconds of one pass over ``cases``; adds each case's time to ``per_case[name]``."""
    total = 0.0
    for name, model, data, sets in cases:
        t0 = time.perf_counter()
        runner(model, data, sets)
        dt = time.perf_counter() - t0
        per_case.setdefault(name, []).append(dt)
        total += dt
    return total


def creation_split(model, sets):
    """(seconds to create the evaluator, seconds to run its data sets) of one case, for the listing."""
    from onnxtext.evaluator import Evaluator

    t0 = time.perf_counter()
    ev = Evaluator(model, seed=0)
    t1 = time.perf_counter()
    for feeds in sets:
        ev.run(None, feeds)
    return t1 - t0, time.perf_counter() - t1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pattern", nargs="?", default=".", help="regex on case names (default: every case)")
    ap.add_argument("--runs", type=int, default=3, help="passes over the suite per runtime (median shown)")
    ap.add_argument("--top", type=int, default=10, help="list the K cases slowest relative to onnxruntime")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both (numpy's BLAS via the environment, onnxruntime's intra-op pool); "
                         "0: each runtime's default")
    args = ap.parse_args(argv)
    ort_case = make_onnxruntime_case(args.threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases, skipped = prepare(re.compile(args.pattern))
        cases, more = screen(cases, ort_case)
    skipped += more
    runners = {
        "onnxtext": lambda model, data, sets: onnxtext_case(model, sets),
        "onnxruntime": lambda model, data, sets: ort_case(data, sets),
    }
    totals = {r: [] for r in runners}
    per_case = {r: {} for r in runners}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _ in range(args.runs):
            for r, fn in runners.items():
                totals[r].append(time_suite(cases, fn, per_case[r]))
    ours, theirs = (statistics.median(totals[r]) for r in runners)
    print(f"node suite: {len(cases)} cases timed, {len(skipped)} skipped for both "
          f"({sum(1 for _, why in skipped if why.startswith('onnxruntime'))} that onnxruntime cannot run); "
          f"median of {args.runs} passes, session creation included")
    print(f"{'runtime':<14}{'total s':>9}{'per case ms':>13}{'ratio':>7}")
    for r in runners:
        t = statistics.median(totals[r])
        print(f"{r:<14}{t:9.3f}{t / max(len(cases), 1) * 1e3:13.3f}{t / theirs:7.2f}")
    if args.top:
        med = {r: {n: statistics.median(ts) for n, ts in per_case[r].items()} for r in runners}
        worst = sorted(med["onnxtext"], key=lambda n: med["onnxruntime"][n] - med["onnxtext"][n])[:args.top]
        by_name = {c[0]: c for c in cases}
        print(f"\nslowest cases relative to onnxruntime (ms): onnxtext (creation + runs) / onnxruntime")
        for n in worst:
            create, run = creation_split(by_name[n][1], by_name[n][3])
            print(f"  {n:<58}{med['onnxtext'][n] * 1e3:8.2f} ({create * 1e3:.2f} + {run * 1e3:.2f})"
                  f" / {med['onnxruntime'][n] * 1e3:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
