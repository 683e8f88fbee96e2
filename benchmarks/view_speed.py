"""How long ``onnxtext view`` takes to make a page of a large model, and the page to open in a browser.

A synthetic ResNet-like model (blocks of Conv, BatchNormalization, Relu and a residual Add; weights folded
into their consumers) of about N nodes (default 5,000) is drawn. Two tables, medians of ``--repeat`` runs:

1. generation: building the scene, the dot layout (graphviz-pure), rendering the HTML, and the total; the
   peer is the layout engine alone making its own SVG of the same graph (``graphviz-pure -Tsvg``)
   (one dot run on the whole graph: onnxtext lays graphs of more than 1,500 boxes out in pieces);
2. opening in headless Chromium (DevTools protocol, tests/browser.py): from navigation to the load event
   plus two animation frames (the page is painted and its script has run); the peer is the same picture as
   a static .svg file without script.

    python benchmarks/view_speed.py [--nodes 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))


def resnet_like(nodes: int, channels: int = 8):
    """A chain of residual blocks: Conv -> BatchNormalization -> Relu -> Add(residual), 4 nodes per block."""
    rng = np.random.default_rng(0)
    graph_nodes, inits = [], []
    x = "input"
    for b in range(max(1, nodes // 4)):
        w, s, bias, mean, var = (f"b{b}_{n}" for n in ("w", "scale", "bias", "mean", "var"))
        inits.append(numpy_helper.from_array(rng.standard_normal((channels, channels, 3, 3), np.float32), w))
        for name in (s, bias, mean, var):
            inits.append(numpy_helper.from_array(rng.random(channels, np.float32) + 0.5, name))
        graph_nodes += [
            helper.make_node("Conv", [x, w], [f"b{b}_c"], name=f"block{b}/conv", kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [f"b{b}_c", s, bias, mean, var], [f"b{b}_n"], name=f"block{b}/bn"),
            helper.make_node("Relu", [f"b{b}_n"], [f"b{b}_r"], name=f"block{b}/relu"),
            helper.make_node("Add", [f"b{b}_r", x], [f"b{b}_out"], name=f"block{b}/add"),
        ]
        x = f"b{b}_out"
    graph = helper.make_graph(graph_nodes, "resnet_like",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, 16, 16])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, 16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def median_time(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from onnxtext.view.layout import dot_program, dot_source, layout
    from onnxtext.view.render import html_page, svg_markup
    from onnxtext.view.scene import build_scene

    print(f"load average at start: {os.getloadavg()[0]:.1f} (other processes share the machine)")
    model = resnet_like(args.nodes)
    n = len(model.graph.node)
    t_scene, scene = median_time(lambda: build_scene(model), args.repeat)
    t_layout, placed = median_time(lambda: layout(scene), args.repeat)
    t_render, page = median_time(lambda: html_page(scene, placed, title="resnet_like"), args.repeat)
    source = dot_source(scene).encode()
    t_peer, _ = median_time(lambda: subprocess.run([*dot_program(), "-Tsvg"], input=source, capture_output=True,
                                                   check=True), args.repeat)
    total = t_scene + t_layout + t_render
    print(f"model: {n} nodes, {len(model.graph.initializer)} initializers; {len(scene.links)} links; "
          f"page {len(page.encode()) / 1e6:.1f} MB; median of {args.repeat}")
    print("\n| generation step | seconds | x peer |\n|---|---:|---:|")
    for label, t in [("scene (boxes, links, shape inference, node texts)", t_scene),
                     ("layout (graphviz-pure dot, JSON)", t_layout), ("render HTML", t_render),
                     ("total onnxtext view", total), ("peer: graphviz-pure -Tsvg alone", t_peer)]:
        print(f"| {label} | {t:.2f} | {t / t_peer:.2f} |")

    from browser import Browser, find_chromium

    if find_chromium() is None:
        print("\nchromium not installed: page load not measured")
        return 0
    with tempfile.TemporaryDirectory() as d:
        page_path = os.path.join(d, "view.html")
        svg_path = os.path.join(d, "static.svg")
        with open(page_path, "w", encoding="utf-8") as f:
            f.write(page)
        with open(svg_path, "w", encoding="utf-8") as f:
            f.write(svg_markup(scene, placed, standalone=True))
        with Browser() as b:
            def load(path):
                def run():
                    b.open(path)
                    b.eval("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
                return run

            load(page_path)()  # warm the browser's caches once
            t_page, _ = median_time(load(page_path), args.repeat)
            ready = b.eval("window.onnxtextView && window.onnxtextView.ready")
            boxes = b.eval("document.querySelectorAll('.box.node').length")
            t_search, _ = median_time(lambda: b.eval("window.onnxtextView.search('block2/')"), args.repeat)
            t_svg, _ = median_time(load(svg_path), args.repeat)
    print(f"\npage in headless Chromium ({boxes} node boxes in the live page, script ready: {ready})")
    print("\n| open | seconds | x peer |\n|---|---:|---:|")
    print(f"| onnxtext view page (load + 2 frames) | {t_page:.2f} | {t_page / t_svg:.2f} |")
    print(f"| peer: the same picture as a static .svg | {t_svg:.2f} | 1.00 |")
    print(f"| search 'block2/' in the page | {t_search:.3f} | |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
