"""Benchmark onnxtext's parser and printer against onnx's C++ ``onnx.parser`` / ``onnx.printer``.

    python benchmarks/text_speed.py [--only node,weight,startup,real,error] [--runs N] [--nodes N] [--lark] [--cpu]

Five workloads (issues 7, 17 and 23), each measured against its peer in the same run (medians of ``--runs`` runs):

* ``node``: a chain of ``--nodes`` (50,000) Add/Mul/Relu nodes with node names, quoted value names
  (``"v.12"``) and a tiny ``float[1]`` initializer per Add/Mul. Rows: onnxtext parse vs
  ``onnx.parser.parse_model`` (each on its own printer's text), onnxtext print vs ``onnx.printer.to_text``,
  and print of the same model after onnx shape inference (a value_info entry per value; no bar).
  ``--lark`` adds one run of the Lark-only parse (``parse_model(text, fast=False)``) for reference.
* ``weight``: resnet50 built from ``light_resnet50.onnx`` with its ConstantOfShape-generated weights
  replaced by seeded random float32 initializers (about 100 MB). Rows: print, parse and print+parse
  round trip vs onnx's printer+parser; peak RSS of the onnxtext round trip in a fresh process vs the
  model size, and of ``onnxtext.save`` to a .onnxtext file (streamed) in another. The script asserts that the
  onnxtext round trip is exact.
* ``startup``: wall time of ``python -c "import onnxtext"`` and ``onnxtext --help`` (the console script
  beside the interpreter, else ``python -m onnxtext``),
  next to ``python -c pass`` as the interpreter's own floor.
* ``real``: every model of the real-model corpus (``python tools/build_corpus.py``; skipped with a note when
  it is not built): onnxtext's parse of its own text vs ``onnx.parser.parse_model`` of onnx's printer's text
  (issue 17 section 4's bar: at most 0.5x). Models whose own text onnx's parser cannot read get no ratio.
  The onnxtext parse must give the model back exactly.

* ``error``: a chain of Relu nodes (20,000 and 200,000) with one typo (``Relu((v5)``) near its start or its end.
  Rows: ``parse_model`` until it raises the first ParseError, and then ``error.errors`` (recovery: the further
  errors, what ``check`` and the CLI show), each against the parse of the corrected text (issue 23: one typo
  near the end of a 200,000-node text cost a whole-text Lark parse, 30 times the corrected text).
  ``--lark`` adds the Lark-only first error (``fast=False``) of the 20,000-node texts.

The peers appear only here, as yardsticks; onnxtext never calls them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.helper as oh  # noqa: E402
import onnx.parser  # noqa: E402
import onnx.printer  # noqa: E402

import onnxtext  # noqa: E402

# the bars: onnxtext time / onnx time
BARS = {"node parse": 5.0, "node print": 2.5, "weight round trip": 1 / 3, "weight peak RSS / size": 3.0,
        "startup": 0.3, "real parse": 0.5}


# ---------------------------------------------------------------------------------------------- models
def chain_model(n: int) -> onnx.ModelProto:
    """``n`` Add/Mul/Relu nodes in a chain, names ``n<i>``, values ``"v.<i>"``, a float[1] constant per Add/Mul."""
    nodes, inits, prev = [], [], "x"
    ops = ("Add", "Mul", "Relu")
    for i in range(n):
        op, out = ops[i % 3], f"v.{i}"
        if op == "Relu":
            nodes.append(oh.make_node(op, [prev], [out], name=f"n{i}"))
        else:
            c = f"c{i}"
            inits.append(oh.make_tensor(c, onnx.TensorProto.FLOAT, [1], [0.5]))
            nodes.append(oh.make_node(op, [prev, c], [out], name=f"n{i}"))
        prev = out
    g = oh.make_graph(nodes, "chain", [oh.make_tensor_value_info("x", 1, ["N"])],
                      [oh.make_tensor_value_info(prev, 1, ["N"])], inits)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)])


def resnet_model(seed: int = 0) -> onnx.ModelProto:
    """light_resnet50 with seeded random float32 weights instead of its ConstantOfShape nodes."""
    from conformance import DATA, replace_constant_of_shape

    rng = np.random.default_rng(seed)
    base = onnx.load(os.path.join(DATA, "light", "light_resnet50.onnx"))
    return replace_constant_of_shape(base, lambda shape, value: rng.standard_normal(shape).astype(np.float32))


def same(a, b) -> bool:
    """Exact round trip, up to scalar fields explicitly set to their default (the corpus's equivalence)."""
    from corpus import cleared

    return cleared(a) == cleared(b)


# ---------------------------------------------------------------------------------------------- timing
#: the clock of in-process timings: wall time, or with --cpu this process's CPU time (time.process_time), which
#: other processes on a loaded machine move much less (both sides of a ratio are timed with the same clock)
CLOCK = time.perf_counter


def median_time(fn, runs: int, clock=None) -> float:
    """Median time of ``fn()`` over ``runs`` runs by ``clock`` (default :data:`CLOCK`; the garbage collector
    collected before each)."""
    clock = clock or CLOCK
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def row(table, name, ours, peer, unit="s", bar=None):
    ratio = ours / peer if peer else None
    table.append((name, ours, peer, ratio, unit, bar))


def bench_node(args, table):
    m = chain_model(args.nodes)
    ours_text = onnxtext.to_text(m)
    onnx_text = onnx.printer.to_text(m)
    assert same(onnxtext.parse_model(ours_text), m), "onnxtext round trip of the chain model is not exact"
    t_parse = median_time(lambda: onnxtext.parse_model(ours_text), args.runs)
    t_onnx_parse = median_time(lambda: onnx.parser.parse_model(onnx_text), args.runs)
    row(table, f"node parse ({args.nodes} nodes)", t_parse, t_onnx_parse, bar=BARS["node parse"])
    t_print = median_time(lambda: onnxtext.to_text(m), args.runs)
    t_onnx_print = median_time(lambda: onnx.printer.to_text(m), args.runs)
    row(table, f"node print ({args.nodes} nodes)", t_print, t_onnx_print, bar=BARS["node print"])
    inferred = onnx.shape_inference.infer_shapes(m)  # a value_info entry per intermediate value
    t_print = median_time(lambda: onnxtext.to_text(inferred), args.runs)
    t_onnx_print = median_time(lambda: onnx.printer.to_text(inferred), args.runs)
    row(table, "node print, shape-inferred (+value_info)", t_print, t_onnx_print)
    if args.lark:
        t_lark = median_time(lambda: onnxtext.parse_model(ours_text, fast=False), 1)
        row(table, "node parse, Lark only (1 run)", t_lark, t_onnx_parse)


def weight_child(path: str) -> None:
    """In a fresh process: one onnxtext print, then one parse of the model at ``path``; print RSS numbers (MiB):
    the RSS before, the peak during printing, and the peak during parsing (the text still alive)."""
    m = onnx.load(path)
    size = m.ByteSize() / 2**20
    before = _status_mib("VmRSS")
    _reset_peak()
    text = onnxtext.to_text(m)
    print_peak = _status_mib("VmHWM")
    _reset_peak()
    back = onnxtext.parse_model(text)
    parse_peak = _status_mib("VmHWM")
    assert same(back, m)
    print(json.dumps({"size": size, "before": before, "print_peak": print_peak, "peak": max(print_peak, parse_peak),
                      "parse_peak": parse_peak}))


def weight_save_child(path: str) -> None:
    """In a fresh process: ``onnxtext.save`` of the model at ``path`` to a .onnxtext file (the text streamed
    to the file a piece at a time); print RSS numbers (MiB): the RSS before and the peak while saving."""
    import tempfile

    m = onnx.load(path)
    before = _status_mib("VmRSS")
    _reset_peak()
    with tempfile.TemporaryDirectory() as d:
        onnxtext.save(m, os.path.join(d, "m.onnxtext"))
        peak = _status_mib("VmHWM")
    print(json.dumps({"size": m.ByteSize() / 2**20, "before": before, "peak": peak}))


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident set size (VmHWM), so what came before does not count
    except OSError:
        pass


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_weight(args, table):
    import tempfile

    m = resnet_model()
    size = m.ByteSize()
    ours_text = onnxtext.to_text(m)
    assert same(onnxtext.parse_model(ours_text), m), "onnxtext round trip of the weight-heavy model is not exact"
    onnx_text = onnx.printer.to_text(m)
    runs = max(1, args.runs // 2) if args.runs > 2 else args.runs
    t_print = median_time(lambda: onnxtext.to_text(m), runs)
    t_onnx_print = median_time(lambda: onnx.printer.to_text(m), runs)
    t_parse = median_time(lambda: onnxtext.parse_model(ours_text), runs)
    t_onnx_parse = median_time(lambda: onnx.parser.parse_model(onnx_text), runs)
    mb = f"{size / 2**20:.0f} MB"
    row(table, f"weight print (resnet50, {mb})", t_print, t_onnx_print)
    row(table, f"weight parse (resnet50, {mb})", t_parse, t_onnx_parse)
    row(table, "weight print+parse round trip", t_print + t_parse, t_onnx_print + t_onnx_parse,
        bar=BARS["weight round trip"])
    del ours_text, onnx_text
    if not args.no_memory:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "resnet50_random.onnx")
            onnx.save(m, path)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--weight-child", path],
                                  capture_output=True, text=True, timeout=1800)
        try:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            for label, key in (("print", "print_peak"), ("parse", "parse_peak")):
                table.append((f"weight {label} peak RSS growth (MiB)", r[key] - r["before"], r["size"],
                              (r[key] - r["before"]) / r["size"], "MiB", None))
            table.append(("weight round trip peak RSS growth (MiB)", r["peak"] - r["before"], r["size"],
                          (r["peak"] - r["before"]) / r["size"], "MiB", BARS["weight peak RSS / size"]))
        except (IndexError, ValueError, KeyError):
            print("memory child failed:\n" + proc.stderr[-2000:], file=sys.stderr)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "resnet50_random.onnx")
            onnx.save(m, path)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--weight-save-child", path],
                                  capture_output=True, text=True, timeout=1800)
        try:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            table.append(("weight save (.onnxtext, streamed) peak RSS (MiB)", r["peak"] - r["before"], r["size"],
                          (r["peak"] - r["before"]) / r["size"], "MiB", None))
        except (IndexError, ValueError, KeyError):
            print("save memory child failed:\n" + proc.stderr[-2000:], file=sys.stderr)


def bench_startup(args, table):
    def wall(cmd):
        def run():
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run()  # warm the OS file cache and lark's grammar cache
        return median_time(run, max(args.runs, 5), clock=time.perf_counter)  # child processes: wall time

    floor = wall([sys.executable, "-c", "pass"])
    row(table, "startup: python -c 'import onnxtext'", wall([sys.executable, "-c", "import onnxtext"]), floor,
        bar=BARS["startup"])
    script = os.path.join(os.path.dirname(sys.executable), "onnxtext")  # the console script, not a pyenv shim
    cli = [script] if os.path.exists(script) else [sys.executable, "-m", "onnxtext"]
    row(table, "startup: onnxtext --help", wall(cli + ["--help"]), floor, bar=BARS["startup"])


def bench_real(args, table):
    import realmodels

    models = realmodels.corpus_models()
    if not models:
        print(f"real: skipped ({realmodels.NOT_BUILT})", file=sys.stderr)
        return
    ratios = []
    for model in models:
        m = model.load()
        ours_text = onnxtext.to_text(m)
        if onnxtext.parse_model(ours_text).SerializeToString() != m.SerializeToString():
            print(f"real: {model.name}: the onnxtext round trip is not byte-exact", file=sys.stderr)
        t_parse = median_time(lambda: onnxtext.parse_model(ours_text), args.runs)
        try:
            onnx_text = onnx.printer.to_text(m)
            onnx.parser.parse_model(onnx_text)
            t_onnx = median_time(lambda: onnx.parser.parse_model(onnx_text), args.runs)
        except Exception:  # noqa: BLE001 - onnx's parser cannot read its printer's text of this model
            t_onnx = None
        row(table, f"real parse: {model.name} ({model.nodes} nodes)", t_parse, t_onnx, bar=BARS["real parse"])
        if t_onnx:
            ratios.append(t_parse / t_onnx)
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        table.append((f"real parse: geometric mean of {len(ratios)} ratios", geo, 1.0, geo, "x", None))


def typo_text(n: int, typo_at: int | None = None) -> str:
    """``n`` Relu nodes ``v<i+1> = Relu(v<i>)``; with ``typo_at``, node ``typo_at`` reads ``Relu((v<i>)``."""
    nodes = [oh.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    g = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("v0", 1, [1])],
                      [oh.make_tensor_value_info(f"v{n}", 1, [1])])
    text = onnxtext.to_text(oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)]))
    if typo_at is None:
        return text
    statement = f"v{typo_at + 1} = Relu(v{typo_at})"
    assert text.count(statement) == 1
    return text.replace(statement, f"v{typo_at + 1} = Relu((v{typo_at})")


def bench_error(args, table):
    def first_error(text, fast=True):
        try:
            onnxtext.parse_model(text, fast=fast)
        except onnxtext.ParseError as e:
            return e
        raise AssertionError("the text with a typo parsed")

    def recovery_time(text, runs):
        """Median time of ``error.errors`` alone (a fresh first error for each run: the list is kept once found)."""
        times = []
        for _ in range(runs):
            e = first_error(text)
            gc.collect()
            t0 = CLOCK()
            e.errors
            times.append(CLOCK() - t0)
        return statistics.median(times)

    for n in (20000, 200000):
        runs = args.runs if n <= 20000 else max(1, args.runs // 2)
        clean = typo_text(n)
        t_clean = median_time(lambda: onnxtext.parse_model(clean), runs)
        for where, at in (("start", 5), ("end", n - 10)):
            text = typo_text(n, at)
            t_first = median_time(lambda: first_error(text), runs)
            row(table, f"error: first, typo near {where}, {n} nodes", t_first, t_clean)
            row(table, f"error: recovery, typo near {where}, {n} nodes", recovery_time(text, runs), t_clean)
            if args.lark and n <= 20000:
                row(table, f"error: first, Lark only, near {where}, {n}", median_time(lambda: first_error(text, False), 1),
                    t_clean)


def print_table(table):
    print(f"{'workload':44} {'onnxtext':>10} {'peer':>10} {'ratio':>8}  bar")
    for name, ours, peer, ratio, unit, bar in table:
        peer_s = f"{peer:.3f}" if peer is not None else "-"
        ratio_s = f"{ratio:.2f}x" if ratio is not None else "-"
        if name.startswith("startup"):
            bar_s = f"< {bar} s" if bar else ""
            ok = ours < bar if bar else None
        elif "RSS" in name:
            bar_s = f"<= {bar:g}x size" if bar else ""
            ok = ratio <= bar if bar else None
        else:
            bar_s = f"<= {bar:.3g}x" if bar else ""
            ok = ratio <= bar if (bar and ratio is not None) else None
        mark = "" if ok is None else ("  ok" if ok else "  MISSED")
        print(f"{name:44} {ours:>9.3f}{unit[0] if unit == 's' else ' '} {peer_s:>10} {ratio_s:>8}  {bar_s}{mark}")
    print("peer: onnx's C++ parser/printer (node, weight, real), model size in MiB (RSS), python -c pass (startup), "
          "onnxtext's parse of the corrected text (error)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="node,weight,startup,real,error",
                    help="comma-separated workloads among node, weight, startup, real, error (default: all)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement (medians)")
    ap.add_argument("--nodes", type=int, default=50000, help="nodes in the node-heavy chain")
    ap.add_argument("--lark", action="store_true", help="also time the Lark-only parse of the chain (slow)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocess")
    ap.add_argument("--cpu", action="store_true",
                    help="time in-process work by CPU time (time.process_time), steadier on a loaded machine")
    ap.add_argument("--weight-child", help=argparse.SUPPRESS)
    ap.add_argument("--weight-save-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.weight_child:
        weight_child(args.weight_child)
        return 0
    if args.weight_save_child:
        weight_save_child(args.weight_save_child)
        return 0
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    table: list = []
    for part in args.only.split(","):
        {"node": bench_node, "weight": bench_weight, "startup": bench_startup,
         "real": bench_real, "error": bench_error}[part.strip()](args, table)
    print_table(table)
    print("clock: " + ("CPU time of this process (--cpu); start-up rows: wall time" if args.cpu else "wall time"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
