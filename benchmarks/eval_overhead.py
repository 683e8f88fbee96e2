"""The evaluator's run loop: its cost per node and per run, against onnxruntime (and onnx.reference) in
the same run.

    python benchmarks/eval_overhead.py [--nodes 1000] [--repeat 50] [--calls 2000]

Per node: a chain of N tiny Adds (shape [4] float32), so the time per run divided by N is almost
entirely dispatch overhead: argument gathering, the kernel call, storing and releasing values.

Per run: chains of 1, 3 and 10 Relus on float32[N, 4] (a symbolic batch, so the dimension check has
work), and one If choosing between two Relu branches, each called ``--calls`` times per round; the
table gives the median over rounds of the thread CPU time per call (other processes' load is left
out) for the usual call, the same Evaluator with its generated usual call switched off (the general
path of ``Evaluator.run``: run_code.py's peer) and onnxruntime, all with one thread.
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


def relu_chain(n: int):
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"v{i}"], [f"v{i + 1}" if i < n - 1 else "y"])
             for i in range(n)]
    graph = helper.make_graph(nodes, "relus", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def relu_if():
    def branch(name, op):
        return helper.make_graph([helper.make_node(op, ["x"], ["r"])], name, [],
                                 [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["N", 4])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("t", "Relu"), else_branch=branch("e", "Neg"))
    graph = helper.make_graph([node], "cond", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                               helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def per_call(fns: list, calls: int, rounds: int = 15) -> list:
    """Median over ``rounds`` of the thread CPU time per call of each function, rounds interleaved."""
    times = [[] for _ in fns]
    for fn in fns:
        for _ in range(50):
            fn()
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t = time.thread_time()
            for _ in range(calls):
                fn()
            times[k].append((time.thread_time() - t) / calls)
    return [sorted(ts)[len(ts) // 2] for ts in times]


def fixed_costs(calls: int) -> None:
    from onnxtext.evaluator import Evaluator

    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    cases = [(f"{n} Relu{'s' if n > 1 else ''}", relu_chain(n), {"x": x}) for n in (1, 3, 10)]
    cases.append(("If of a Relu and a Neg", relu_if(), {"c": np.array(True), "x": x}))
    try:
        import onnxruntime
    except ImportError:
        onnxruntime = None
    print(f"\nper run: thread CPU time per call (us), median of 15 rounds of {calls} calls, one thread each")
    print(f"{'model':24} {'usual call':>11} {'general path':>13} {'onnxruntime':>12} {'usual/general':>14} "
          f"{'usual/ort':>10}")
    for name, model, feeds in cases:
        usual, general = Evaluator(model, threads=1), Evaluator(model, threads=1)
        general._fast_run = None  # (the general path of Evaluator.run: feed checks, bound dict, plan.execute)
        fns = [lambda: usual.run(None, feeds), lambda: general.run(None, feeds)]
        if onnxruntime is not None:
            opts = onnxruntime.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            sess = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            fns.append(lambda: sess.run(None, feeds))
        got = per_call(fns, calls)
        ort = f"{got[2] * 1e6:12.2f}" if len(got) > 2 else f"{'-':>12}"
        ratio = f"{got[0] / got[2]:9.2f}x" if len(got) > 2 else f"{'-':>10}"
        print(f"{name:24} {got[0] * 1e6:11.2f} {got[1] * 1e6:13.2f} {ort} {got[0] / got[1]:13.2f}x {ratio}")


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
    ap.add_argument("--calls", type=int, default=2000, help="calls per round of the per-run table")
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
    fixed_costs(args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
