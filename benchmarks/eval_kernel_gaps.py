"""One-node models of the kernel paths of docs/evaluator.md "Kernel gaps handed over (session 8)":
the evaluator with the path, the evaluator with it switched off (where a module switch exists) and
onnxruntime, one thread each, in one process with calls alternating.

    python benchmarks/eval_kernel_gaps.py [--rounds 30] [--calls 20]

Switches: ``kernels.activation._TRANSPOSED_MAX_VALUES`` (0: row maxima by the plain last-axis reduction),
``kernels.pool._tiles_input`` (always False: MaxPool tiles by the separable passes). The table gives
medians in microseconds and the ratios to onnxruntime; the machine may be shared, so compare the
columns of one run with each other.
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


def _cases():
    """[(label, op, input array, attributes, constants, switch name or None)]."""
    rng = np.random.default_rng(0)

    def floats(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    image8 = rng.integers(0, 256, (2, 16, 32, 32), dtype=np.uint8)
    tile = {"kernel_shape": [2, 2], "strides": [2, 2]}
    return [
        ("Softmax 1000x10", "Softmax", floats(1000, 10), {"axis": -1}, {}, "row_max"),
        ("Softmax 128x16", "Softmax", floats(128, 16), {"axis": -1}, {}, "row_max"),
        ("Softmax 1x12x31x31", "Softmax", floats(1, 12, 31, 31), {"axis": -1}, {}, "row_max"),
        ("LogSoftmax 3x12x5", "LogSoftmax", floats(3, 12, 5), {"axis": -1}, {}, "row_max"),
        ("MaxPool 2x2/2 uint8 2x16x32x32", "MaxPool", image8, tile, {}, "tiles"),
        ("MaxPool 2x2/2 2x16x32x32", "MaxPool", floats(2, 16, 32, 32), tile, {}, "tiles"),
        ("MaxPool 2x2/2 1x64x56x56", "MaxPool", floats(1, 64, 56, 56), tile, {}, "tiles"),
        ("Pad reflect 1x576", "Pad", floats(1, 576), {"mode": "reflect"},
         {"pads": np.array([0, 64, 0, 64], np.int64)}, None),
        ("Pad constant 1x16x30x30", "Pad", floats(1, 16, 30, 30), {"mode": "constant"},
         {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}, None),
        ("DynamicQuantizeLinear 1x4096", "DynamicQuantizeLinear", floats(1, 4096), {}, {}, None),
    ]


def _switch(name, on: bool):
    from onnxtext.evaluator.kernels import activation, pool

    if name == "row_max":
        activation._TRANSPOSED_MAX_VALUES = _SAVED["row_max"] if on else 0
    elif name == "tiles":
        pool._tiles_input = _SAVED["tiles"] if on else (lambda *args: False)


_SAVED: dict = {}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20, help="calls per variant in each round")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    from helpers import node_model

    from onnxtext import Evaluator
    from onnxtext.evaluator.kernels import activation, pool

    _SAVED.update(row_max=activation._TRANSPOSED_MAX_VALUES, tiles=pool._tiles_input)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    print(f"one thread each; median of {args.rounds * args.calls} calls per variant, variants alternating")
    print("\n| case | onnxtext us | path off us | onnxruntime us | onnxtext/ort | off/ort |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, op, x, attrs, constants, switch in _cases():
        outputs = ("y", "scale", "zero_point") if op == "DynamicQuantizeLinear" else ("y",)
        model = node_model(op, {"x": x}, attrs, outputs=outputs, constants=constants, opset=19)
        feeds = {"x": x}
        evaluator = Evaluator(model, threads=1)
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        variants = {"on": lambda: evaluator.run(None, feeds), "ort": lambda: session.run(None, feeds)}
        if switch:
            variants["off"] = lambda: evaluator.run(None, feeds)
        times = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, run in variants.items():
                if switch:
                    _switch(switch, name != "off")
                run()
                for _ in range(args.calls):
                    t0 = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - t0)
        if switch:
            _switch(switch, True)
        med = {name: float(np.median(t)) * 1e6 for name, t in times.items()}
        off = f"{med['off']:.1f}" if "off" in med else "-"
        off_ratio = f"{med['off'] / med['ort']:.2f}" if "off" in med else "-"
        print(f"| {label} | {med['on']:.1f} | {off} | {med['ort']:.1f} | {med['on'] / med['ort']:.2f} | {off_ratio} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
