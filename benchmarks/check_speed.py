"""Benchmark ``onnxtext.check`` (IR rules + per-node type and shape inference) on a 5,000-node model.

    python benchmarks/check_speed.py [--nodes N] [--runs N]

The model is a stack of transformer-like blocks with a symbolic batch and sequence (``float[B, S, 64]``):
MatMul, Add, Reshape with constant shapes, Transpose, Softmax, LayerNormalization, Relu; small weights, so the
cost is the graph, not the data. The table gives the median time in-process over ``--runs`` runs, and the
ratio to the peer ``onnx.checker.check_model(full_check=True)`` (the C++ checker with strict shape
inference), all measured in the same run:

* ``onnx.shape_inference.infer_shapes`` (data propagation on): onnx's whole-model inference alone;
* ``onnx.checker.check_model(full_check=True)``: the peer;
* ``onnxtext.check(model)`` with only the structural rules (no ``type.*`` rules), then the default check;
* ``onnxtext.check(model, text=text)``: what ``compile`` runs after its parse (positions are found only when a
  diagnostic needs one, so a clean model costs no second parse);
* ``onnxtext.check(text)``: from text, which adds the parse;
* ``onnxtext.parse_model(text)``: the parse alone, for scale.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(nodes: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    d, heads = 64, 4
    inits, body = [], []

    def weight(name, shape):
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))
        return name

    inits.append(numpy_helper.from_array(np.array([0, 0, heads, d // heads], np.int64), "split_shape"))
    inits.append(numpy_helper.from_array(np.array([0, 0, d], np.int64), "merge_shape"))
    x, k = "x", 0
    while len(body) < nodes:
        p = f"b{k}_"
        w1, b1, w2 = weight(p + "w1", [d, d]), weight(p + "b1", [d]), weight(p + "w2", [d, d])
        sc, bi = weight(p + "scale", [d]), weight(p + "bias", [d])
        body += [
            helper.make_node("MatMul", [x, w1], [p + "m1"]),
            helper.make_node("Add", [p + "m1", b1], [p + "a1"]),
            helper.make_node("Reshape", [p + "a1", "split_shape"], [p + "r1"]),
            helper.make_node("Transpose", [p + "r1"], [p + "t1"], perm=[0, 2, 1, 3]),
            helper.make_node("Softmax", [p + "t1"], [p + "s1"], axis=-1),
            helper.make_node("Transpose", [p + "s1"], [p + "t2"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [p + "t2", "merge_shape"], [p + "r2"]),
            helper.make_node("MatMul", [p + "r2", w2], [p + "m2"]),
            helper.make_node("Relu", [p + "m2"], [p + "u"]),
            helper.make_node("Add", [p + "u", x], [p + "res"]),
            helper.make_node("LayerNormalization", [p + "res", sc, bi], [p + "out"], axis=-1),
        ]
        x, k = p + "out", k + 1
    graph = helper.make_graph(body, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", d])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["B", "S", d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    import onnxtext
    from onnxtext.checker import RULES, _load_rules

    model = build(args.nodes)
    text = onnxtext.to_text(model)
    _load_rules()
    structural = {r for r in RULES if not r.startswith("type.")}
    errors = [d for d in onnxtext.check(model) if d.severity == "error"]
    assert errors == [], errors[:3]
    rows = [
        ("onnx infer_shapes (data_prop)", lambda: onnx.shape_inference.infer_shapes(model, data_prop=True)),
        ("onnx.checker full_check (peer)", lambda: onnx.checker.check_model(model, full_check=True)),
        ("onnxtext.check, structural rules only", lambda: onnxtext.check(model, rules=structural)),
        ("onnxtext.check(model)", lambda: onnxtext.check(model)),
        ("onnxtext.check(model, text=text)", lambda: onnxtext.check(model, text=text)),
        ("onnxtext.check(text)", lambda: onnxtext.check(text)),
        ("onnxtext.parse_model(text)", lambda: onnxtext.parse_model(text)),
    ]
    results = [(name, median_time(fn, args.runs)) for name, fn in rows]
    peer = results[1][1]
    print(f"{len(model.graph.node)} nodes, {len(text.splitlines())} text lines; median of {args.runs} runs")
    print(f"{'':40} {'seconds':>9} {'x peer':>8}")
    for name, t in results:
        print(f"{name:40} {t:9.3f} {t / peer:8.2f}")


if __name__ == "__main__":
    main()
