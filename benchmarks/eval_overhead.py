"""Per-node overhead of the evaluator's run loop, against onnxruntime and onnx.reference in the same run.

    python benchmarks/eval_overhead.py [--nodes 1000] [--repeat 50]

The model is a chain of N tiny Adds (shape [4] float32), so the time per run divided by N is almost
entirely dispatch overhead: argument gathering, the kernel call, storing and releasing values.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def chain_model(n: int):
    nodes = [helper.make_node("Add", ["x" if i == 0 else f"v{i}", "one"], [f"v{i + 1}" if i < n - 1 else "y"])
             for i in range(n)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [helper.make_tensor("one", TensorProto.FLOAT, [4], [1.0] * 4)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def best_of(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args(argv)
    model = chain_model(args.nodes)
    x = np.zeros(4, np.float32)
    feeds = {"x": x}
    rows = []

    from onnxtext.evaluator import Evaluator

    t = time.perf_counter()
    ev = Evaluator(model)
    prep = time.perf_counter() - t
    got = ev.run(None, feeds)[0]
    assert np.allclose(got, args.nodes), got
    rows.append(("onnxtext (numpy)", best_of(lambda: ev.run(None, feeds), args.repeat), prep))
    # the kernels alone: the same Add kernel called once per node on the same operands, no plan
    from onnxtext.evaluator.registry import lookup

    add, one = lookup("Add", "", 18).fn, np.ones(4, np.float32)

    def kernels_only():
        v = x
        for _ in range(args.nodes):
            v = add(v, one)

    kernel_seconds = best_of(kernels_only, args.repeat)

    try:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        # no graph optimizations: a fused/folded chain would not measure per-node dispatch
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        t = time.perf_counter()
        sess = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        prep = time.perf_counter() - t
        rows.append(("onnxruntime (no graph opt)", best_of(lambda: sess.run(None, feeds), args.repeat), prep))
    except ImportError:
        pass
    try:
        from onnx.reference import ReferenceEvaluator

        t = time.perf_counter()
        ref = ReferenceEvaluator(model)
        prep = time.perf_counter() - t
        rows.append(("onnx.reference", best_of(lambda: ref.run(None, feeds), max(3, args.repeat // 10)), prep))
    except ImportError:
        pass

    base = rows[0][1]
    print(f"chain of {args.nodes} Add nodes on float32[4], best of {args.repeat} runs")
    print(f"{'engine':28} {'run (ms)':>10} {'us/node':>9} {'vs onnxtext':>12} {'prepare (ms)':>13}")
    for name, seconds, prep in rows:
        print(f"{name:28} {seconds * 1e3:10.3f} {seconds / args.nodes * 1e6:9.2f} {seconds / base:11.2f}x "
              f"{prep * 1e3:13.1f}")
    print(f"\nthe Add kernel alone, called {args.nodes} times: {kernel_seconds * 1e3:.3f} ms; evaluator work "
          f"beyond the kernels: {(base - kernel_seconds) / args.nodes * 1e6:.2f} us per node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
