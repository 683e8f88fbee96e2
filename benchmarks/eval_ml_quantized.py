"""Benchmark the ai.onnx.ml, quantized and com.microsoft kernels against onnxruntime on one-node models.

    python benchmarks/eval_ml_quantized.py [--runs N] [--only NAME ...] [--threads N]

Each case is a one-node model whose weights are initializers (as in converted models), fed seeded random
inputs of realistic sizes. onnxtext's Evaluator and onnxruntime run it in the same process, calls
alternating in blocks (benchmarks/eval_light.time_runtimes), after a warm-up call whose outputs are
compared (eval_light.check: rtol 1e-3). The table gives median milliseconds and the ratio to onnxruntime;
the last line the geometric mean and the worst ratio. Use ``--threads 1`` for one thread each (numpy's
BLAS and onnxruntime's intra-op pool). The machine may be shared: compare ratios from the same run.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from _threads import limit_from_argv  # noqa: E402

limit_from_argv(sys.argv)

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from eval_light import time_runtimes  # noqa: E402

RNG = np.random.default_rng(0)


def _model(op, feeds: dict, weights: dict, attrs=None, n_outputs=1, domain="", names=None):
    """One ``op`` node: inputs ``feeds`` (graph inputs) then ``weights`` (initializers), in ``names`` order."""
    names = names or list(feeds) + list(weights)
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for n, v in feeds.items()]
    graph = helper.make_graph([node], op, inputs, [helper.make_value_info(o, onnx.TypeProto()) for o in outs],
                              [numpy_helper.from_array(v, n) for n, v in weights.items()])
    opsets = [helper.make_opsetid("", 19)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 3 if domain == "ai.onnx.ml" else 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    return model, feeds


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def s8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def forest(n_trees, depth, n_features, n_targets=1, classes=None):
    interior = 2 ** depth - 1
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids")}
    prefix = "class" if classes else "target"
    leaves = {f"{prefix}_{k}": [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t in range(n_trees):
        for n in range(2 * interior + 1):
            leaf = n >= interior
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(n)
            a["nodes_featureids"].append(0 if leaf else int(RNG.integers(n_features)))
            a["nodes_values"].append(0.0 if leaf else float(RNG.normal()))
            a["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            a["nodes_truenodeids"].append(0 if leaf else 2 * n + 1)
            a["nodes_falsenodeids"].append(0 if leaf else 2 * n + 2)
            if leaf:
                for target in range(classes or n_targets):
                    leaves[f"{prefix}_treeids"].append(t)
                    leaves[f"{prefix}_nodeids"].append(n)
                    leaves[f"{prefix}_ids"].append(target)
                    leaves[f"{prefix}_weights"].append(float(RNG.random()))
    a.update(leaves)
    if classes:
        a["classlabels_int64s"] = list(range(classes))
    else:
        a["n_targets"] = n_targets
    return a


def cases():
    """{name: (model, feeds)}."""
    c = {}
    c["MatMulInteger 64x256 @ 256x256 (float32 path)"] = _model(
        "MatMulInteger", {"a": u8(64, 256)}, {"b": s8(256, 256), "azp": np.uint8(128), "bzp": np.int8(0)})
    c["MatMulInteger 64x768 @ 768x768 (float64 path)"] = _model(
        "MatMulInteger", {"a": u8(64, 768)}, {"b": s8(768, 768), "azp": np.uint8(128), "bzp": np.int8(0)})
    c["DynamicQuantizeLinear 128x768"] = _model("DynamicQuantizeLinear", {"x": f32(128, 768)}, {}, n_outputs=3)
    c["QLinearMatMul 64x768 @ 768x768"] = _model(
        "QLinearMatMul", {"a": u8(64, 768)},
        {"as": np.float32(0.02), "az": np.uint8(128), "b": s8(768, 768), "bs": np.float32(0.01),
         "bz": np.int8(0), "ys": np.float32(0.5), "yz": np.uint8(128)},
        names=["a", "as", "az", "b", "bs", "bz", "ys", "yz"])
    c["QLinearConv 1x32x56x56, 32 3x3"] = _model(
        "QLinearConv", {"x": u8(1, 32, 56, 56)},
        {"xs": np.float32(0.02), "xz": np.uint8(128), "w": s8(32, 32, 3, 3), "ws": np.float32(0.01),
         "wz": np.int8(0), "ys": np.float32(0.5), "yz": np.uint8(128)},
        dict(pads=[1, 1, 1, 1]), names=["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"])
    c["DynamicQuantizeMatMul 64x768 @ 768x768"] = _model(
        "DynamicQuantizeMatMul", {"a": f32(64, 768)}, {"b": s8(768, 768), "bs": np.float32(0.01)},
        domain="com.microsoft")
    c["MatMulNBits 8x1024, N=1024, 4 bits, block 32"] = _model(
        "MatMulNBits", {"a": f32(8, 1024)}, {"b": u8(1024, 32, 16), "s": np.full(1024 * 32, 0.01, np.float32)},
        dict(K=1024, N=1024, bits=4, block_size=32), domain="com.microsoft")
    c["DynamicQuantizeLSTM T=20 B=4 in=64 H=128"] = _model(
        "DynamicQuantizeLSTM", {"x": f32(20, 4, 64)},
        {"w": s8(1, 64, 512), "r": s8(1, 128, 512), "b": (f32(1, 1024) * 0.1).astype(np.float32),
         "ws": np.full(1, 0.01, np.float32), "wz": np.zeros(1, np.int8), "rs": np.full(1, 0.01, np.float32),
         "rz": np.zeros(1, np.int8)},
        dict(hidden_size=128), n_outputs=3, domain="com.microsoft",
        names=["x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"])
    c["TreeEnsembleRegressor 100 trees depth 8, 1000x20"] = _model(
        "TreeEnsembleRegressor", {"x": f32(1000, 20)}, {}, forest(100, 8, 20), domain="ai.onnx.ml")
    c["TreeEnsembleClassifier 50 trees depth 6, 3 classes, 1000x20"] = _model(
        "TreeEnsembleClassifier", {"x": f32(1000, 20)}, {}, forest(50, 6, 20, classes=3), n_outputs=2,
        domain="ai.onnx.ml")
    sv = f32(300, 20)
    c["SVMRegressor RBF 300 SVs, 1000x20"] = _model(
        "SVMRegressor", {"x": f32(1000, 20)}, {},
        dict(support_vectors=sv.ravel().tolist(), coefficients=f32(300).tolist(), n_supports=300, rho=[0.1],
             kernel_type="RBF", kernel_params=[0.05, 0.0, 3.0]), domain="ai.onnx.ml")
    c["LinearClassifier 1000x50, 10 classes"] = _model(
        "LinearClassifier", {"x": f32(1000, 50)}, {},
        dict(coefficients=f32(500).tolist(), intercepts=f32(10).tolist(), classlabels_ints=list(range(10)),
             post_transform="SOFTMAX"), n_outputs=2, domain="ai.onnx.ml")
    c["ZipMap 1000x10"] = _model(
        "ZipMap", {"x": np.abs(f32(1000, 10))}, {}, dict(classlabels_int64s=list(range(10))), domain="ai.onnx.ml")
    return c


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", nargs="*", default=None, help="cases whose name contains one of these")
    parser.add_argument("--threads", default=None, help="threads for numpy's BLAS and onnxruntime")
    args = parser.parse_args(argv)
    rows = []
    print("| case | onnxtext ms | onnxruntime ms | onnxtext/ort | outputs match |")
    print("|---|---:|---:|---:|---|")
    for name, (model, feeds) in cases().items():
        if args.only and not any(o.lower() in name.lower() for o in args.only):
            continue
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # (its DynamicQuantizeLSTM's results depend on the thread count)
        expected = ort.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"]).run(None, feeds)
        result = time_runtimes(["onnxtext", "onnxruntime"], None, model, feeds, expected, args.runs)
        ours, theirs = result["onnxtext"][0], result["onnxruntime"][0]
        ratio = ours / theirs if ours and theirs else float("nan")
        rows.append(ratio)
        print(f"| {name} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {ratio:.2f} | {result['onnxtext'][1]} |",
              flush=True)
    finite = [r for r in rows if r == r]
    if finite:
        geo = math.exp(sum(math.log(r) for r in finite) / len(finite))
        print(f"\nonnxtext / onnxruntime: geometric mean {geo:.2f}, worst {max(finite):.2f} ({len(finite)} cases)")


if __name__ == "__main__":
    main()
