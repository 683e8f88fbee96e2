"""Where a quantized-LSTM model's time goes (ort_lstm_qdyn by default), and the floor of its
DynamicQuantizeLSTM steps in numpy.

    python benchmarks/eval_quant_lstm_floor.py [--rounds 150] [--phases 1000]
    python benchmarks/eval_quant_lstm_floor.py --model ddddocr_common_old --rounds 10

One process, one thread each. Per round, each measurement is the best of 10 calls; the table gives the
median over the rounds (us): onnxruntime's whole run, onnxtext's whole run, and each of the model's two
DynamicQuantizeLSTM steps (kernels/contrib/quant_lstm.py) called alone on their inputs three ways: as
they are, with the step loop replaced by nothing (the node's setup: input quantization, projection,
scaling, copies), and with the loop replaced by its 14 numpy calls per step alone (the scales of the
first step kept, none of the Python arithmetic that finds each step's range and scale); a fourth way
runs the loop's recurrent products alone (one matmul of the codes with R a step: for a large hidden
size they are the loop, and the line after the table gives the megabytes of R they read a step and the
rate). The last line puts the minimal loop into the whole run: what the model would cost if the loop's
Python work were free.
``--phases N`` adds a table of each node's run phase by phase (the run written out with a clock between
its phases, as the model's nodes take it: exact float32 product, every sequence as long as X), median of
N calls.
The machine may be shared: compare the rows of one run with each other (``--clock thread``, the default,
times each call's thread CPU time; the phases are wall time).
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


def products_alone(ws, weights, steps):
    """The loop's recurrent products alone (the codes as the workspace holds them), one a step."""
    codes, r_t, product = ws.codes, weights.r_t, ws.product
    for _ in range(steps):
        np.matmul(codes, r_t, product)


PHASES = ("workspace lookup", "X's range and codes", "product with W", "scales and biases", "into step order",
          "initial states", "the steps", "Y", "final states")


def setup_phases(prepared, X, initial_states, reverse, times: dict) -> None:
    """One call of quant_lstm._FastWeights.run written out with perf_counter between its phases (the same
    calls in the same order for the model's nodes, whose W takes the exact float32 product; keep in step
    with it): each phase's time appended to ``times[phase]``."""
    from onnxtext.evaluator.kernels import rnn_cells
    from onnxtext.evaluator.kernels.contrib import quant_lstm

    clock = time.perf_counter
    t = [clock()]
    steps, batch, inputs = X.shape
    dirs, hidden = prepared.dirs, prepared.hidden
    ws = rnn_cells.kept_for_thread(("DynamicQuantizeLSTM", steps, batch, inputs, dirs, hidden),
                                   lambda: quant_lstm._Workspace(steps, batch, inputs, dirs, hidden))
    t.append(clock())
    _, scale = quant_lstm.quantized_input(X, ws.x_codes)
    t.append(clock())
    np.matmul(ws.x_rows, prepared.w_all, ws.projected)
    t.append(clock())
    np.multiply(ws.projected, np.multiply(prepared.w_scales, scale, ws.column_factors), ws.projected)
    np.add(ws.projected, prepared.bias, ws.projected)
    t.append(clock())
    p5 = ws.projected.reshape(steps, batch, dirs, 4, hidden).transpose(0, 3, 2, 1, 4)
    for d, backwards in enumerate(reverse):
        np.copyto(ws.x_steps[:, :, d], p5[::-1, :, d] if backwards else p5[:, :, d])
    t.append(clock())
    for state, initial in zip((ws.h_states[0], ws.cell), initial_states):
        np.copyto(state, 0 if initial is None else initial)
    t.append(clock())
    quant_lstm._quantized_lstm_loop(ws, prepared, steps)
    t.append(clock())
    hs = ws.hs[:, 0]
    y = np.empty((steps, batch, dirs, hidden), np.float32).transpose(0, 2, 1, 3)
    for d, backwards in enumerate(reverse):
        np.copyto(y[:, d], hs[:0:-1, d] if backwards else hs[1:, d])
    t.append(clock())
    np.array(hs[steps]), np.array(ws.cell)
    t.append(clock())
    for phase, start, end in zip(PHASES, t, t[1:]):
        times.setdefault(phase, []).append(end - start)


def phase_table(steps, values, calls: int) -> None:
    """The median time of each phase of the model's DynamicQuantizeLSTM steps over ``calls`` calls."""
    from onnxtext.evaluator.kernels import rnn_cells

    tables = []
    for st in steps:
        fn = st.fn  # fused.recurrent.PreparedRecurrent
        args = fn.args.copy()
        for position, name in zip(fn.positions, st.inputs):
            args[position] = values.get(name)
        reverse = rnn_cells.REVERSE[fn.attrs.get("direction", "forward")]
        times: dict = {}
        for _ in range(calls):
            setup_phases(fn.attrs["prepared"], args[0], [args[5], args[6]], reverse, times)
        tables.append({k: statistics.median(v) * 1e6 for k, v in times.items()})
    print(f"\nthe DynamicQuantizeLSTM steps phase by phase (median of {calls} calls, us)\n")
    print("| phase | " + " | ".join(f"layer {j + 1}" for j in range(len(tables))) + " |")
    print("|---|" + "---:|" * len(tables))
    for phase in PHASES:
        print(f"| {phase} | " + " | ".join(f"{t[phase]:.1f}" for t in tables) + " |")
    print("| all but the steps | " + " | ".join(f"{sum(t.values()) - t['the steps']:.1f}" for t in tables) + " |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="ort_lstm_qdyn", help="a corpus model with DynamicQuantizeLSTM nodes")
    parser.add_argument("--rounds", type=int, default=150, help="rounds of 10 calls per measurement")
    parser.add_argument("--phases", type=int, default=0, metavar="CALLS",
                        help="also time the DynamicQuantizeLSTM steps phase by phase over CALLS calls")
    parser.add_argument("--clock", choices=("thread", "wall"), default="thread",
                        help="the calls' thread CPU time (default: leaves out waiting for a core on a loaded "
                             "machine; onnxruntime with one thread runs on the calling thread) or wall time")
    args = parser.parse_args(argv)
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    import onnxruntime as ort
    import realmodels

    import onnxtext
    from onnxtext.evaluator.kernels.contrib import quant_lstm

    model = realmodels.get(args.model)
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
             " minimal loop": minimal_loop, " products alone": products_alone}
    lengths = [values[st.inputs[0]].shape[0] for st in steps]
    r_bytes = [st.fn.attrs["prepared"].r_t.nbytes for st in steps]

    def best(f):
        times = []
        for _ in range(10):
            t0 = clock()
            f()
            times.append(clock() - t0)
        return min(times)

    rows: dict[str, list] = {}
    real = quant_lstm._quantized_lstm_loop
    try:
        for _ in range(args.rounds):
            quant_lstm._quantized_lstm_loop = real  # (the previous round left its last variant in place)
            rows.setdefault("onnxruntime", []).append(best(lambda: session.run(None, feeds)))
            rows.setdefault("onnxtext", []).append(best(lambda: ev.run(None, feeds)))
            for label, loop in loops.items():
                quant_lstm._quantized_lstm_loop = loop
                for j, call in enumerate(calls):
                    rows.setdefault(f"layer {j + 1}{label}", []).append(best(call))
    finally:
        quant_lstm._quantized_lstm_loop = real
    med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    print(f"one thread each; median of {args.rounds} rounds of the best of 10 calls ({args.clock} time, us)\n")
    print("| measured | us |\n|---|---:|")
    for k, v in med.items():
        print(f"| {k} | {v:.1f} |")
    print()
    for j, n, nbytes in zip(range(1, len(calls) + 1), lengths, r_bytes):
        loop = med[f"layer {j}"] - med[f"layer {j} no loop"]
        floor = med[f"layer {j} minimal loop"] - med[f"layer {j} no loop"]
        products = med[f"layer {j} products alone"] - med[f"layer {j} no loop"]
        print(f"layer {j} ({n} steps): the loop {loop:.1f} us ({loop / n:.2f} a step); its numpy calls alone "
              f"{floor:.1f} us ({floor / n:.2f} a step); its recurrent products alone {products:.1f} us "
              f"({products / n:.2f} a step, reading {nbytes / 1e6:.2f} MB of R: "
              f"{nbytes * n / max(products, 1e-9) / 1e3:.1f} GB/s); the rest of the node "
              f"{med[f'layer {j} no loop']:.1f} us")
    rest = med["onnxtext"] - sum(med[f"layer {j}"] for j in range(1, len(calls) + 1))
    ratio = med["onnxtext"] / med["onnxruntime"]
    print(f"the model's other steps and the run's own cost: {rest:.1f} us; onnxtext / onnxruntime {ratio:.2f}")
    floor_run = med["onnxtext"] - sum(med[f"layer {j}"] - med[f"layer {j} minimal loop"]
                                      for j in range(1, len(calls) + 1))
    print(f"the run with the loops' numpy calls alone: {floor_run:.1f} us, {floor_run / med['onnxruntime']:.2f}x")
    if args.phases:
        phase_table(steps, values, args.phases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
