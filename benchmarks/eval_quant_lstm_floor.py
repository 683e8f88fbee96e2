"""Where ort_lstm_qdyn's time goes, and the floor of its DynamicQuantizeLSTM steps in numpy.

    python benchmarks/eval_quant_lstm_floor.py [--rounds 150]

One process, one thread each. Per round, each measurement is the best of 10 calls; the table gives the
median over the rounds (us): onnxruntime's whole run, onnxtext's whole run, and each of the model's two
DynamicQuantizeLSTM steps (kernels/contrib/quant_lstm.py) called alone on their inputs three ways: as
they are, with the step loop replaced by nothing (the node's setup: input quantization, projection,
scaling, copies), and with the loop replaced by its 14 numpy calls per step alone (the scales of the
first step kept, none of the Python arithmetic that finds each step's range and scale). The last line
puts the minimal loop into the whole run: what the model would cost if the loop's Python work were free.
The machine may be shared: compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import numpy as np  # noqa: E402

STEPS = 12  # the model's sequence length


def minimal_loop(ws, weights, steps):
    """The fast loop's numpy calls (quant_lstm._quantized_lstm_loop) without the per-step range arithmetic
    in Python: the scales and multipliers stay those the workspace holds."""
    g = ws.gates
    codes, product, ranges = ws.codes, ws.product, ws.ranges
    dirs, batch, hidden = codes.shape
    flat_codes, flat_scale = codes.reshape(dirs, -1), ws.scale.reshape(dirs, 1)
    extremes = ranges.reshape(4) if dirs == 2 else ranges[:, 0]
    product_gates = product.reshape(dirs, batch, 4, hidden).transpose(2, 0, 1, 3)
    multiplier, r_t, tmp, c = ws.multiplier, weights.r_t, ws.tmp, g[4]
    gates, sig, pairs, partners, gi, gf, go = g[:4], g[:3], g[1:3], g[3:5], g[1], g[2], g[0]
    half = np.array(0.5, np.float32)
    for h, negated, signed, flat, x, h_next in ws.step_views:
        np.negative(h, negated)
        np.maximum.reduce(signed, 1, None, extremes, False, 0.0)
        np.divide(flat, flat_scale, flat_codes)
        np.rint(codes, codes)
        np.matmul(codes, r_t, product)
        np.multiply(product_gates, multiplier, gates)
        np.add(gates, x, gates)
        np.tanh(gates, gates)
        np.multiply(sig, half, sig)
        np.add(sig, half, sig)
        np.multiply(pairs, partners, pairs)
        np.add(gi, gf, c)
        np.tanh(c, tmp)
        np.multiply(go, tmp, h_next)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=150, help="rounds of 10 calls per measurement")
    args = parser.parse_args(argv)
    import onnxruntime as ort
    import realmodels

    import onnxtext
    from onnxtext.evaluator.kernels.contrib import quant_lstm

    model = realmodels.get("ort_lstm_qdyn")
    proto, feeds = model.load(), model.feeds()
    ev = onnxtext.Evaluator(proto, threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for _ in range(10):
        ev.run(None, feeds)
        session.run(None, feeds)
    values = {}
    ev.run(None, feeds, trace=lambda step, outputs: values.update(outputs))
    steps = [st for st in ev._main.steps if st.info.node.op_type == "DynamicQuantizeLSTM"]
    calls = [(lambda st=st, a=[values.get(n) for n in st.inputs]: st.fn(*a)) for st in steps]
    loops = {"": quant_lstm._quantized_lstm_loop, " no loop": lambda ws, weights, steps: None,
             " minimal loop": minimal_loop}

    def best(f):
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times)

    rows: dict[str, list] = {}
    real = quant_lstm._quantized_lstm_loop
    try:
        for _ in range(args.rounds):
            rows.setdefault("onnxruntime", []).append(best(lambda: session.run(None, feeds)))
            rows.setdefault("onnxtext", []).append(best(lambda: ev.run(None, feeds)))
            for label, loop in loops.items():
                quant_lstm._quantized_lstm_loop = loop
                for j, call in enumerate(calls):
                    rows.setdefault(f"layer {j + 1}{label}", []).append(best(call))
    finally:
        quant_lstm._quantized_lstm_loop = real
    med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    print(f"one thread each; median of {args.rounds} rounds of the best of 10 calls (us)\n")
    print("| measured | us |\n|---|---:|")
    for k, v in med.items():
        print(f"| {k} | {v:.1f} |")
    print()
    for j in range(1, len(calls) + 1):
        loop = med[f"layer {j}"] - med[f"layer {j} no loop"]
        floor = med[f"layer {j} minimal loop"] - med[f"layer {j} no loop"]
        print(f"layer {j}: the loop {loop:.1f} us ({loop / STEPS:.2f} a step); its numpy calls alone {floor:.1f} us "
              f"({floor / STEPS:.2f} a step); the rest of the node {med[f'layer {j} no loop']:.1f} us")
    rest = med["onnxtext"] - sum(med[f"layer {j}"] for j in range(1, len(calls) + 1))
    ratio = med["onnxtext"] / med["onnxruntime"]
    print(f"the model's other steps and the run's own cost: {rest:.1f} us; onnxtext / onnxruntime {ratio:.2f}")
    floor_run = med["onnxtext"] - sum(med[f"layer {j}"] - med[f"layer {j} minimal loop"]
                                      for j in range(1, len(calls) + 1))
    print(f"the run with the loops' numpy calls alone: {floor_run:.1f} us, {floor_run / med['onnxruntime']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
