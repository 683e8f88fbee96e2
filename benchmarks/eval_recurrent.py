"""The recurrent kernels' fast path against their general path and onnxruntime, in one process.

    python benchmarks/eval_recurrent.py                      # the one-node table below
    python benchmarks/eval_recurrent.py --models torch_lstm_ts silero_vad ort_lstm_qdyn

Each row is run three ways with one thread each, calls alternating in rounds (benchmarks/_timing.py):
``Evaluator(model)`` (fast path, kernels/rnn_cells.py, weights prepared by the rule prepared_recurrent),
the same with the fast path switched off in this process (every node through the general path of
kernels/rnn.py, the reference the fast path is tested against) and onnxruntime. Medians in ms and the
ratios to onnxruntime. The machine may be shared: compare the columns of one run with each other.
Add a case: one line in ``CASES``.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
from contextlib import contextmanager  # noqa: E402

import numpy as np  # noqa: E402

from _timing import alternate_rounds  # noqa: E402

# (op, direction, steps, batch, input, hidden, attributes): shapes of the corpus' recurrent nodes and around
CASES = [
    ("LSTM", "forward", 1, 2, 128, 128, {}),  # silero-vad: one step per call
    ("LSTM", "bidirectional", 12, 3, 32, 48, {}),  # torch_lstm_*
    ("LSTM", "forward", 50, 1, 64, 64, {}),
    ("LSTM", "bidirectional", 20, 16, 128, 128, {}),
    ("GRU", "forward", 10, 3, 16, 32, {"linear_before_reset": 1}),  # torch_gru_*
    ("GRU", "bidirectional", 10, 3, 16, 32, {}),
    ("RNN", "forward", 20, 4, 16, 32, {}),
    ("DynamicQuantizeLSTM", "bidirectional", 12, 3, 32, 48, {}),  # ort_lstm_qdyn
]


def one_node(op, direction, steps, batch, inputs, hidden, attrs, rng):
    from helpers import node_model

    dirs = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3}.get(op, 4)
    x = rng.uniform(-1, 1, (steps, batch, inputs)).astype(np.float32)
    outputs = ("Y", "Y_h", "Y_c") if gates == 4 else ("Y", "Y_h")
    if op == "DynamicQuantizeLSTM":
        consts = {"W": rng.integers(-127, 128, (dirs, inputs, 4 * hidden)).astype(np.int8),
                  "R": rng.integers(-127, 128, (dirs, hidden, 4 * hidden)).astype(np.int8),
                  "B": rng.uniform(-0.3, 0.3, (dirs, 8 * hidden)).astype(np.float32)}
        model = node_model(op, {"X": x}, dict(hidden_size=hidden, direction=direction), outputs=outputs,
                           constants=consts, domain="com.microsoft")
        node = model.graph.node[0]
        extra = {"W_scale": np.full(dirs, 0.004, np.float32), "W_zero_point": np.zeros(dirs, np.int8),
                 "R_scale": np.full(dirs, 0.004, np.float32), "R_zero_point": np.zeros(dirs, np.int8)}
        node.input.extend(["", "", "", ""] + list(extra))
        import onnx

        model.graph.initializer.extend(onnx.numpy_helper.from_array(v, n) for n, v in extra.items())
        return model, {"X": x}
    consts = {"W": rng.uniform(-0.3, 0.3, (dirs, gates * hidden, inputs)).astype(np.float32),
              "R": rng.uniform(-0.3, 0.3, (dirs, gates * hidden, hidden)).astype(np.float32),
              "B": rng.uniform(-0.3, 0.3, (dirs, 2 * gates * hidden)).astype(np.float32)}
    return node_model(op, {"X": x}, dict(hidden_size=hidden, direction=direction, **attrs), outputs=outputs,
                      constants=consts), {"X": x}


@contextmanager
def general_path_only():
    """Every recurrent node through the general path while the block runs (this process only)."""
    from onnxtext.evaluator.kernels import rnn_cells
    from onnxtext.evaluator.kernels.contrib import quant_lstm

    saved = rnn_cells.default_activations, quant_lstm._fast_attributes
    rnn_cells.default_activations = lambda *args: False
    quant_lstm._fast_attributes = lambda *args: False
    try:
        yield
    finally:
        rnn_cells.default_activations, quant_lstm._fast_attributes = saved


def measure(label, model, feeds, runs):
    import onnxruntime as ort

    import onnxtext

    fast = onnxtext.Evaluator(model, threads=1)
    general = onnxtext.Evaluator(model, threads=1, disable=("prepared_recurrent",))
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run_general(f):
        with general_path_only():
            return general.run(None, f)

    for got, want in zip(fast.run(None, feeds), session.run(None, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=label)
    times = alternate_rounds({"fast": lambda f: fast.run(None, f), "general": run_general,
                              "ort": lambda f: session.run(None, f)}, feeds, runs, pause=0.05)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print(f"| {label} | {med['fast']:.3f} | {med['general']:.3f} | {med['ort']:.3f} | "
          f"{med['fast'] / med['ort']:.2f} | {med['general'] / med['ort']:.2f} | "
          f"{med['general'] / med['fast']:.2f} |", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=[], help="corpus model names (tests/realmodels.py)")
    parser.add_argument("--runs", type=int, default=30, help="timed calls per runtime (median reported)")
    args = parser.parse_args(argv)
    print(f"one thread each; median of {args.runs} calls, alternating in rounds\n")
    print("| case | fast ms | general ms | ort ms | fast/ort | general/ort | general/fast |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    if not args.models:
        for op, direction, steps, batch, inputs, hidden, attrs in CASES:
            model, feeds = one_node(op, direction, steps, batch, inputs, hidden, attrs, rng)
            extra = "".join(f" {k}={v}" for k, v in attrs.items())
            measure(f"{op} {direction} T={steps} B={batch} I={inputs} H={hidden}{extra}", model, feeds, args.runs)
    import realmodels

    for name in args.models:
        model = realmodels.get(name)
        measure(name, model.load(), model.feeds(), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
