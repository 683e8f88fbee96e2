"""A/B of optimizer rules on real models: ``Evaluator(model)`` against the same model with some rules
disabled, and onnxruntime, in one process with calls alternating.

    python benchmarks/eval_rules_ab.py --disable qdq_pair qlinear_conv --only ort_cnn_qdq ort_cnn_qop

Models are corpus names (tests/realmodels.py; built by tools/build_corpus.py). Everything runs with one
thread (BLAS and onnxruntime's intra-op pool). Each round calls each runtime ``--calls`` times in turn;
the table gives medians over all rounds in milliseconds and the ratios to onnxruntime. The machine may
be shared: the three columns come from the same rounds, so compare them with each other.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

QUANTIZATION_RULES = ("qdq_pair", "qlinear_conv", "integer_matmul_to_float", "dynamic_quantized_matmul",
                      "prepared_matmul_nbits", "qgemm_constant", "float16_in_float32")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", required=True, help="corpus model names")
    parser.add_argument("--disable", nargs="+", default=list(QUANTIZATION_RULES),
                        help="rules the B side disables (default: the quantization and float16 rules)")
    parser.add_argument("--rounds", type=int, default=10)
    # (blocks of 3 calls measured mostly the cost of switching between the runtimes' data: on
    # ort_cnn_qdq two rules' 6% vanished in them; blocks of 10 are warm like a model run in a loop)
    parser.add_argument("--calls", type=int, default=10, help="calls per runtime in each round")
    # (on a loaded machine, blocks of 10 measured a 4-rule change on ort_cnn_qop as +2% one run and -4% the
    # next; single calls alternating on/off in ABBA order, onnxruntime in its own block, gave 0.93-0.95 in
    # three runs: both sides see the same cache state and the same load)
    parser.add_argument("--alternate", action="store_true",
                        help="on/off alternate call by call (ABBA), onnxruntime in its own block per round")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    import realmodels

    import onnxtext

    models = {m.name: m for m in realmodels.corpus_models()}
    missing = [n for n in args.only if n not in models]
    if missing:
        print(f"not in the corpus: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"B disables: {', '.join(args.disable)}; one thread; median of {args.rounds * args.calls} calls each")
    print("\n| model | rules on ms | rules off ms | ort ms | on/ort | off/ort |\n|---|---:|---:|---:|---:|---:|")
    for name in args.only:
        model = models[name]
        proto, feeds = model.load(), model.feeds()
        on = onnxtext.Evaluator(proto, threads=1)
        off = onnxtext.Evaluator(proto, threads=1, disable=tuple(args.disable))
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
        runs = {"on": lambda: on.run(None, feeds), "off": lambda: off.run(None, feeds),
                "ort": lambda: session.run(None, feeds)}
        times = {k: [] for k in runs}
        for fn in runs.values():
            fn()
        for _ in range(args.rounds):
            blocks = list(runs.items())
            if args.alternate:
                blocks = blocks[2:]
                for i in range(args.calls):
                    for key in (("on", "off") if i % 2 == 0 else ("off", "on")):
                        start = time.perf_counter()
                        runs[key]()
                        times[key].append(time.perf_counter() - start)
            for key, fn in blocks:
                for _ in range(args.calls):
                    start = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - start)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"| {name} | {med['on']:.3f} | {med['off']:.3f} | {med['ort']:.3f} | "
              f"{med['on'] / med['ort']:.2f} | {med['off'] / med['ort']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
