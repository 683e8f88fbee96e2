"""Benchmark the evaluator on real models: the corpus of tools/build_corpus.py plus onnx's light CNNs,
against onnxruntime and onnx.reference in the same process.

    python benchmarks/eval_models.py [--runs N] [--only NAME ...] [--kind KIND ...] [--threads 1|default|both]
                                     [--contention] [--skip-reference] [--json FILE] [--tables FILE]

For each model the three runtimes run the model's feeds (the corpus's feeds/<name>.npz; for a light CNN
the backend runner's input, see benchmarks/eval_light.py): one untimed warm-up call each, whose outputs
are checked against onnxruntime's (float32: rtol 1e-3, atol 1e-4; float16: rtol 1e-2, atol 1e-2; integers,
strings and labels exactly), then timed calls alternating between onnxtext and onnxruntime in rounds
(each round starts with a pause and an untimed call, see eval_light.time_runtimes for why); onnx.reference,
far slower, is timed on at most 3 calls afterwards. Tables give medians, ratios to onnxruntime, the
geometric mean and the worst ratio per column; a runtime that cannot run a model is marked with its
error's first line below the table.

Thread modes run in separate child processes, because numpy's BLAS fixes its thread count when numpy is
imported: ``1`` (OPENBLAS_NUM_THREADS=1, onnxruntime intra_op_num_threads=1) and ``default``.
``--contention`` runs the default-threads mode while a CPU-bound process spins beside it (stopped at the
end) and adds a table of each runtime's time under contention over its one-thread time.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

from _threads import limit_from_argv  # noqa: E402

limit_from_argv(sys.argv)  # before numpy is imported (the child processes get --threads 1)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

import realmodels  # noqa: E402
from _timing import alternate_rounds, time_slow  # noqa: E402
from conformance import assert_close  # noqa: E402
from eval_light import light_models, load_case, make_runner  # noqa: E402

RUNTIMES = ("onnxtext", "onnxruntime", "reference")
FLOAT32_TOL, FLOAT16_TOL = (1e-3, 1e-4), (1e-2, 1e-2)


def cases(only=None, kinds=None):
    """[(name, kind, nodes, loader)]: the corpus models, then the light CNNs (kind "light")."""
    out = []
    for m in realmodels.corpus_models():
        out.append((m.name, m.kind, m.nodes, lambda m=m: (str(m.path), m.load(), m.feeds())))
    for name in light_models():
        def load(name=name):
            path, model, feeds, _ = load_case(name)
            return path, model, feeds
        out.append((f"light_{name}", "light", None, load))
    return [c for c in out if (not only or c[0] in only) and (not kinds or c[1] in kinds)]


def compare(expected, got) -> str:
    """"yes", or "NO: " and the first difference, checking every output against onnxruntime's."""
    try:
        assert len(got) == len(expected), f"{len(got)} outputs, onnxruntime gives {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            dtype = getattr(e, "dtype", None)
            rtol, atol = FLOAT16_TOL if dtype == np.float16 else FLOAT32_TOL
            assert_close(e, g, rtol, atol, f"output {i}")
        return "yes"
    except AssertionError as e:
        return "NO: " + _difference(expected, got, e)


def _difference(expected, got, error) -> str:
    """The largest absolute difference per differing output, or the assertion's first line."""
    parts = []
    for i, (e, g) in enumerate(zip(expected, got)):
        if isinstance(e, np.ndarray) and isinstance(g, np.ndarray) and e.shape == g.shape and e.dtype.kind in "fiu":
            d = np.abs(e.astype(np.float64) - g.astype(np.float64))
            rtol, atol = FLOAT16_TOL if e.dtype == np.float16 else FLOAT32_TOL
            if d.size and not np.allclose(g.astype(np.float64), e.astype(np.float64), rtol, atol):
                parts.append(f"output {i} max abs diff {np.nanmax(d):.3g}")
    return ", ".join(parts) if parts else str(error).strip().splitlines()[0][:100]


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:150] if text else ''}"


def measure(path, model, feeds, runs, runtimes, pause) -> dict:
    """{runtime: {"seconds": median or None, "check": ..., "error": ...}} for one model."""
    res, runners, expected = {}, {}, None
    for r in ("onnxruntime",) + tuple(x for x in runtimes if x != "onnxruntime"):
        try:
            runners[r] = make_runner(r, path, model)
            out = runners[r](feeds)
        except Exception as e:  # noqa: BLE001 - a runtime that cannot run the model is a table entry
            runners.pop(r, None)
            res[r] = {"seconds": None, "check": "-", "error": first_line(e)}
            continue
        if r == "onnxruntime":
            expected = out
        res[r] = {"seconds": None, "check": compare(expected, out) if expected is not None else "-",
                  "error": None}
    fast = {r: runners[r] for r in ("onnxtext", "onnxruntime") if r in runners}
    times = alternate_rounds(fast, feeds, runs, pause)
    if "reference" in runners:  # a call over 5 s: one timed call is enough
        times["reference"] = time_slow(runners["reference"], feeds, min(runs, 3), enough=5.0)
    for r, ts in times.items():
        res[r]["seconds"] = statistics.median(ts)
    return res


def child(args) -> int:
    """Measure every selected model in this process; print one JSON line per model."""
    runtimes = [r for r in RUNTIMES if not (r == "reference" and args.skip_reference)]
    pause = 0.0 if os.environ.get("OPENBLAS_NUM_THREADS") == "1" else 0.3
    for name, kind, nodes, load in cases(args.only, args.kind):
        print(f"  {name} ...", file=sys.stderr, flush=True)
        try:
            path, model, feeds = load()
            if nodes is None:
                nodes = len(model.graph.node)
            res = measure(path, model, feeds, args.runs, runtimes, pause)
        except Exception as e:  # noqa: BLE001
            res = {r: {"seconds": None, "check": "-", "error": "loading: " + first_line(e)} for r in runtimes}
        print(json.dumps({"name": name, "kind": kind, "nodes": nodes, "results": res}), flush=True)
    return 0


def run_mode(mode: str, args, busy: bool) -> list[dict]:
    """Run the models in a child process in thread ``mode`` ("one" or "default"), optionally beside a
    CPU-bound process; returns the child's records."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--runs", str(args.runs)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if mode == "one":
        cmd += ["--threads", "1"]
    for flag, values in (("--only", args.only), ("--kind", args.kind)):
        if values:
            cmd += [flag, *values]
    if args.skip_reference:
        cmd.append("--skip-reference")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    before = os.getloadavg()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.wait()
    print(f"\n(load average {before[0]:.2f} when the {mode}-threads child started, {os.getloadavg()[0]:.2f} "
          f"when it ended{', the busy process counted' if busy else ''})")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _ms(s):
    return "-" if s is None else f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.2f}" if s < 1 else f"{s * 1e3:.0f}"


def _ratio(a, b):
    return a / b if a is not None and b else None


def _summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-", "-"
    return f"{math.exp(sum(map(math.log, values)) / len(values)):.2f}", f"{max(values):.2f}"


def print_table(title: str, records: list[dict]) -> None:
    print(f"\n## {title}\n")
    print("| model | kind | nodes | onnxtext ms | ort ms | onnxtext/ort | reference ms | reference/ort "
          "| matches ort (onnxtext / reference) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    ratios = {"onnxtext": [], "reference": []}
    notes = []
    for rec in records:
        res = rec["results"]
        ort = res.get("onnxruntime", {}).get("seconds")
        cells = []
        for r in ("onnxtext", "reference"):
            s = res.get(r, {}).get("seconds") if r in res else None
            ratio = _ratio(s, ort)
            ratios[r].append(ratio)
            cells += [_ms(s) if r in res else "skipped", "-" if ratio is None else f"{ratio:.2f}"]
        for r in RUNTIMES:
            if r in res and res[r]["error"]:
                notes.append(f"- {rec['name']}: {r} cannot run it: {res[r]['error']}")
                if r == "onnxtext":
                    cells[0] = "cannot run"
                elif r == "reference":
                    cells[2] = "cannot run"
        checks = " / ".join(res[r]["check"] if r in res else "skipped" for r in ("onnxtext", "reference"))
        print(f"| {rec['name']} | {rec['kind']} | {rec['nodes']} | {cells[0]} | {_ms(ort)} | {cells[1]} "
              f"| {cells[2]} | {cells[3]} | {checks} |")
    for r in ("onnxtext", "reference"):
        ran = [v for v in ratios[r] if v is not None]
        gm, worst = _summary(ran)
        print(f"\n{r}: runs {len(ran)} of {len(records)} models; time / onnxruntime's: geometric mean {gm}, "
              f"worst {worst}")
    print_kinds(records)
    if notes:
        print("\n" + "\n".join(notes))


def print_kinds(records: list[dict]) -> None:
    """Geometric mean and worst ratio to onnxruntime per kind, for the corpus as a whole and the light CNNs."""
    groups: dict[str, list[dict]] = {}
    for rec in records:
        groups.setdefault(rec["kind"], []).append(rec)
    corpus = [rec for rec in records if rec["kind"] != "light"]
    rows = list(groups.items()) + ([("real-model corpus (all but light)", corpus)] if corpus and "light" in groups
                                   else [])
    print("\n| kind | models | onnxtext runs | onnxtext/ort geomean | worst | reference runs | reference/ort geomean |"
          " worst |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, recs in rows:
        cells = []
        for r in ("onnxtext", "reference"):
            ratios = [_ratio(rec["results"].get(r, {}).get("seconds"),
                             rec["results"].get("onnxruntime", {}).get("seconds")) for rec in recs]
            ratios = [v for v in ratios if v is not None]
            cells += [str(len(ratios)), *_summary(ratios)]
        print(f"| {kind} | {len(recs)} | " + " | ".join(cells) + " |")


def print_contention(one: list[dict], busy: list[dict]) -> None:
    print("\n## default threads beside a busy process, over the same runtime's one-thread time\n")
    print("| model | onnxtext one ms | onnxtext busy ms | slowdown | ort one ms | ort busy ms | slowdown |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = {r["name"]: r["results"] for r in one}
    slow = {"onnxtext": [], "onnxruntime": []}
    for rec in busy:
        cells = []
        for r in ("onnxtext", "onnxruntime"):
            a = base.get(rec["name"], {}).get(r, {}).get("seconds")
            b = rec["results"].get(r, {}).get("seconds")
            ratio = _ratio(b, a)
            slow[r].append(ratio)
            cells += [_ms(a), _ms(b), "-" if ratio is None else f"{ratio:.2f}"]
        print(f"| {rec['name']} | " + " | ".join(cells) + " |")
    for r, values in slow.items():
        gm, worst = _summary(values)
        print(f"\n{r}: slowdown under contention: geometric mean {gm}, worst {worst}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed calls per fast runtime (median reported)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these models (corpus names, light_<name>)")
    ap.add_argument("--kind", nargs="+", metavar="KIND", help="only these kinds (see docs/corpus.md; light)")
    ap.add_argument("--threads", default="both", choices=("1", "default", "both"),
                    help="1 (one thread each), default, or both (default: both)")
    ap.add_argument("--contention", action="store_true",
                    help="measure the default-threads mode beside a CPU-bound process")
    ap.add_argument("--skip-reference", action="store_true", help="do not run onnx.reference")
    ap.add_argument("--json", metavar="FILE", help="also write the raw records as JSON")
    ap.add_argument("--tables", metavar="FILE", help="print the tables of a --json file again, measuring nothing")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if args.tables:
        with open(args.tables) as f:
            saved = json.load(f)
        titles = {"one": "one thread each", "default": "default threads",
                  "busy": "default threads, a CPU-bound process beside"}
        for mode, records in saved.items():
            print_table(titles[mode], records)
        if "busy" in saved and "one" in saved:
            print_contention(saved["one"], saved["busy"])
        return 0
    if not cases(args.only, args.kind):
        print(realmodels.NOT_BUILT if not realmodels.corpus_built() else "no model matches", file=sys.stderr)
        return 1
    import onnx
    import onnxruntime

    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h %cI"], capture_output=True, text=True)
    print(f"onnxtext at {commit.stdout.strip() or 'an unknown commit'}; numpy {np.__version__}, "
          f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, {os.cpu_count()} cores; "
          f"median of {args.runs} calls after a warm-up; corpus {realmodels.corpus_dir()}")
    print(f"outputs compared with onnxruntime's: float32 rtol {FLOAT32_TOL[0]} atol {FLOAT32_TOL[1]}, float16 "
          f"rtol {FLOAT16_TOL[0]} atol {FLOAT16_TOL[1]}, integers, strings and maps exactly")
    results = {}
    if args.threads in ("1", "both") or args.contention:
        results["one"] = run_mode("one", args, busy=False)
        print_table("one thread each", results["one"])
    if args.threads in ("default", "both") and not args.contention:
        results["default"] = run_mode("default", args, busy=False)
        print_table("default threads", results["default"])
    if args.contention:
        results["busy"] = run_mode("default", args, busy=True)
        print_table("default threads, a CPU-bound process beside", results["busy"])
        print_contention(results["one"], results["busy"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
