"""Benchmark the evaluator on the ONNX ``light_*`` CNN models against onnxruntime and onnx.reference.

    python benchmarks/eval_light.py [--runs N] [--skip-reference] [--no-memory] [MODEL ...]

For each model of ``onnx/backend/test/data/light`` every runtime runs the model once to warm up, then
``--runs`` times; the table shows the median wall time of ``run`` (session creation excluded), the
ratio to onnxruntime, and whether each output matches the model's expected ``output_0.pb`` (rtol
1e-3, the folder suite's tolerance). Peak memory is measured per model and runtime in a fresh
subprocess: the peak RSS during one run (reset after loading) and its growth over the RSS before it.

The peers (onnxruntime, onnx.reference) appear only here, as yardsticks measured in the same run.
"""

from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _threads import limit_from_argv  # noqa: E402

limit_from_argv(sys.argv)  # before numpy is imported

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from _timing import alternate_rounds, time_slow  # noqa: E402
from conformance import DATA, _read_pb, assert_close, replace_constant_of_shape  # noqa: E402

LIGHT = os.path.join(DATA, "light")
RUNTIMES = ("onnxtext", "onnxruntime", "reference")


def light_models() -> list[str]:
    """Short names of the light models (``alexnet`` for ``light_bvlc_alexnet.onnx``...)."""
    return [os.path.basename(p)[len("light_"):-len(".onnx")] for p in sorted(glob.glob(os.path.join(LIGHT, "*.onnx")))]


def dummy_input(value_info):
    """The input the ONNX backend runner feeds light models: ``arange(n).reshape(shape) / n`` in float32."""
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in value_info.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def load_case(name):
    """(model path, model, input feeds, expected outputs) of one light model.

    The light folder stores only the expected outputs (``light_<name>_output_<i>.pb``); the inputs are
    generated like the backend runner does (see :func:`dummy_input`).
    """
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    model = onnx.load(path)
    init = {t.name for t in model.graph.initializer}
    feeds = {i.name: dummy_input(i) for i in model.graph.input if i.name not in init}
    expected = []
    for i in range(len(model.graph.output)):
        out = os.path.join(LIGHT, f"light_{name}_output_{i}.pb")
        if os.path.exists(out):
            expected.append(_read_pb(out))
    return path, model, feeds, expected


def fold_constant_of_shape(model):
    """A copy of ``model`` whose ConstantOfShape nodes with constant shapes are initializers of the
    same values: what a runtime with constant folding runs (onnxruntime folds them itself)."""
    return replace_constant_of_shape(model, lambda shape, value: np.full(shape, value.reshape(-1)[0]))


def make_runner(runtime, path, model):
    """A zero-argument-per-call runner ``run(feeds) -> list of outputs`` for one runtime."""
    if runtime == "onnxtext":
        from onnxtext.evaluator import Evaluator

        ev = Evaluator(model)
        return lambda feeds: ev.run(None, feeds)
    if runtime == "onnxruntime":
        import onnxruntime as ort

        if path is None:
            path = model.SerializeToString()

        options = ort.SessionOptions()
        options.log_severity_level = 3  # no warnings about unused initializers in the table
        if os.environ.get("OPENBLAS_NUM_THREADS"):  # --threads: the same thread count for both
            options.intra_op_num_threads = int(os.environ["OPENBLAS_NUM_THREADS"])
        sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        return lambda feeds: sess.run(None, feeds)
    if runtime == "reference":
        from onnx.reference import ReferenceEvaluator

        ref = ReferenceEvaluator(model)
        return lambda feeds: ref.run(None, feeds)
    raise ValueError(runtime)


def check(expected, got):
    try:
        for i, e in enumerate(expected):
            assert_close(e, got[i], 1e-3, 1e-7, f"output {i}")
        return "yes"
    except AssertionError as e:
        return "NO: " + str(e).strip().splitlines()[0][:60]


def time_runtimes(runtimes, path, model, feeds, expected, runs):
    """{runtime: (median seconds, correctness)}; errors are reported in the correctness column.

    The timed runs of onnxtext and onnxruntime alternate in blocks (three rounds) so that both see the
    same machine load on a shared machine. Each block starts with a pause and an untimed run: the
    worker threads of onnxruntime and of numpy's OpenBLAS spin for a while after a run (OpenBLAS for
    about 0.1 s) and would slow down whatever runs right after them, and they sleep after a pause
    (so the first run after it is slow). onnx.reference,
    much slower, runs at most 3 times afterwards.
    """
    result, runners = {}, {}
    for r in runtimes:
        try:
            runners[r] = make_runner(r, path, model)
            result[r] = (None, check(expected, runners[r](feeds)))  # warm-up, and the output we check
        except Exception as e:  # a failing runtime is a row entry, not the end of the benchmark
            runners.pop(r, None)
            result[r] = (None, f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:60] if str(e) else ''}")
    times = alternate_rounds({r: run for r, run in runners.items() if r != "reference"}, feeds, runs)
    if "reference" in runners:
        times["reference"] = time_slow(runners["reference"], feeds, min(runs, 3))
    for r, ts in times.items():
        result[r] = (statistics.median(ts), result[r][1])
    return result


def memory_child(name, runtime, fold=False):
    """Run in a subprocess: one run of ``name`` with ``runtime``; print the RSS before the run and the
    peak RSS during it (MiB). The peak is reset right before the run (Linux ``clear_refs``), so model
    loading and session creation do not count."""
    path, model, feeds, _ = load_case(name)
    if fold:
        path, model = None, fold_constant_of_shape(model)
    run = make_runner(runtime, path, model)
    before = _status_mib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident set size (VmHWM)
    except OSError:
        pass
    run(feeds)
    print(json.dumps({"before": before, "peak": _status_mib("VmHWM")}))


def _status_mib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_memory(name, runtime, fold=False):
    """(peak RSS MiB during one run, its growth over the RSS before the run) from a fresh process."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child", name, runtime] +
                          (["--threads", os.environ["OPENBLAS_NUM_THREADS"]] if "--threads" in sys.argv else []) +
                          (["--fold-constants"] if fold else []),
                          capture_output=True, text=True, timeout=1800)
    try:
        m = json.loads(proc.stdout.strip().splitlines()[-1])
        return m["peak"], m["peak"] - m["before"]
    except (IndexError, ValueError, KeyError):
        return None, None


def _fmt(v, spec=".4f"):
    return "-" if v is None else format(v, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="model names (default: all light models)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per runtime after one warm-up")
    ap.add_argument("--skip-reference", action="store_true", help="do not run onnx.reference (very slow)")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-model peak memory subprocesses")
    ap.add_argument("--fold-constants", action="store_true",
                    help="run the models with their ConstantOfShape weights precomputed as initializers "
                         "(kernel speed without the cost of regenerating every weight at each run)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both runtimes (numpy's BLAS, onnxruntime's intra-op pool); 0: defaults. "
                         "On a loaded shared machine, 1 gives far steadier ratios")
    ap.add_argument("--memory-child", nargs=2, metavar=("MODEL", "RUNTIME"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        memory_child(*args.memory_child, fold=args.fold_constants)
        return 0
    names = args.models or light_models()
    runtimes = [r for r in RUNTIMES if not (r == "reference" and args.skip_reference)]
    print(f"numpy {np.__version__}, onnx {onnx.__version__}, median of {args.runs} runs after a warm-up, "
          f"threads: {args.threads or 'defaults'}" +
          (", ConstantOfShape weights folded" if args.fold_constants else ""))
    head = f"{'model':<14}{'onnxtext s':>11}{'ort s':>9}{'ratio':>7}"
    if "reference" in runtimes:
        head += f"{'reference s':>12}{'ratio':>7}"
    head += "  correct (onnxtext / ort" + (" / reference" if "reference" in runtimes else "") + ")"
    if not args.no_memory:
        head += "  peak MiB onnxtext (+run) / ort (+run)"
    print(head)
    worst = 0.0
    for name in names:
        path, model, feeds, expected = load_case(name)
        if args.fold_constants:
            path, model = None, fold_constant_of_shape(model)
        res = time_runtimes(runtimes, path, model, feeds, expected, args.runs)
        t_ours, t_ort = res["onnxtext"][0], res["onnxruntime"][0]
        ratio = t_ours / t_ort if t_ours and t_ort else None
        worst = max(worst, ratio or 0)
        line = f"{name:<14}{_fmt(t_ours):>11}{_fmt(t_ort):>9}{_fmt(ratio, '.2f'):>7}"
        if "reference" in runtimes:
            t_ref = res["reference"][0]
            line += f"{_fmt(t_ref):>12}{_fmt(t_ref / t_ort if t_ref and t_ort else None, '.1f'):>7}"
        line += "  " + " / ".join(res[r][1] for r in runtimes)
        if not args.no_memory:
            ours, ours_run = measure_memory(name, "onnxtext", args.fold_constants)
            ort_peak, ort_run = measure_memory(name, "onnxruntime", args.fold_constants)
            line += (f"  {_fmt(ours, '.0f')} (+{_fmt(ours_run, '.0f')})"
                     f" / {_fmt(ort_peak, '.0f')} (+{_fmt(ort_run, '.0f')})")
        print(line, flush=True)
    print(f"worst onnxtext/onnxruntime ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
