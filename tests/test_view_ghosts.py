"""Ghost boxes of ``onnxtext view`` (onnxtext/view/ghosts.py): a value read by many far-apart nodes is drawn as
a reference box next to each group of readers, so dot lays out graphs where one input feeds every layer.

Checked: a generated 400-box chain whose graph input feeds 121 nodes is laid out within a time limit (in a
subprocess, so it can never hang the suite) and every reader still gets the value; in the live page ghosts
are not nodes nor search hits and clicking one selects the producer; every transformer export of the
real-model corpus renders through ``onnxtext view`` within a time limit. Expected nodes and links come from
walking the protos (test_view.expected_nodes_and_links), not from the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import onnxtext
import realmodels
from onnxtext.view import view_html
from test_view import LIVE_STATE, ROOT, browser, expected_nodes_and_links, long_chain, needs_browser  # noqa: F401


def _open(browser, tmp_path, html):
    path = tmp_path / "page.html"
    path.write_text(html, encoding="utf-8")
    browser.open(str(path))
    assert browser.eval("window.onnxtextView && window.onnxtextView.ready") is True
    assert browser.console_errors == []


# Run in a subprocess with a time limit: without ghosts dot did not finish this layout in 8 minutes.
GHOST_LAYOUT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import onnxtext
from test_view import long_chain
from onnxtext.view.ghosts import add_ghosts
from onnxtext.view.layout import layout
from onnxtext.view.scene import build_scene
scene = add_ghosts(build_scene(onnxtext.parse_model(long_chain(int(sys.argv[2]), shared_input=True))))
placed = layout(scene)
boxes = {b.id: b for b in scene.boxes}
print(json.dumps({
    "nodes": sorted(b.path for b in scene.boxes if b.kind == "node"),
    "ghosts": [[b.id, b.title, boxes[b.ref].path, b.cluster] for b in scene.boxes if b.kind == "ghost"],
    "links": [[boxes[lk.src].ref or lk.src, lk.src, lk.dst, lk.value] for lk in scene.links],
    "paths": {b.id: b.path for b in scene.boxes},
    "placed": sorted(placed.boxes),
}))
"""


def test_a_value_read_by_every_layer_is_drawn_as_ghosts():
    # 120 blocks: about 400 boxes, the graph input bias read by 121 nodes spread over the whole chain
    model = onnxtext.parse_model(long_chain(120, shared_input=True))
    readers = {f"graph.node[{k}]" for k, n in enumerate(model.graph.node) if "bias" in n.input}
    assert len(readers) == 121
    r = subprocess.run([sys.executable, "-c", GHOST_LAYOUT, os.path.dirname(__file__), "120"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    nodes, _ = expected_nodes_and_links(model)
    assert got["nodes"] == sorted(nodes)  # every real node once; ghosts are not nodes
    assert set(got["placed"]) == set(got["paths"])  # every box, ghosts too, has a position
    paths = got["paths"]
    # every reader of bias gets it: from the input box directly or from a ghost standing for the input
    bias_readers = {paths[dst] for producer, src, dst, value in got["links"] if value == "bias"
                    if paths[producer] == "graph.input[1]"}
    assert bias_readers == readers
    ghosts = {g[0]: g for g in got["ghosts"]}
    assert ghosts and all(g[1] == "bias" and g[2] == "graph.input[1]" for g in ghosts.values())
    # the input box itself keeps only a few direct links; the far readers read ghosts
    direct = [dst for producer, src, dst, value in got["links"] if src == producer and paths[src] == "graph.input[1]"]
    assert 1 <= len(direct) <= 4
    # each ghost is next to its readers: every reader of a ghost is within a few boxes of it in the box order
    order = list(paths)
    for producer, src, dst, value in got["links"]:
        if src in ghosts:
            assert 0 < order.index(dst) - order.index(src) <= 16, (paths[dst], src)


@needs_browser
def test_ghosts_in_the_page_lead_to_the_producer_and_are_not_nodes_or_search_hits(browser, tmp_path):
    model = onnxtext.parse_model(long_chain(30, shared_input=True))
    _open(browser, tmp_path, view_html(model))
    state = browser.eval(LIVE_STATE)
    nodes, links = expected_nodes_and_links(model)
    assert sorted(state["nodes"]) == sorted(nodes)  # .box.node: real nodes only, each once
    assert links <= {(a, b) for a, b, _, _ in state["links"]}  # links from ghosts count as from the input
    assert [x for x in state["links"] if not (x[2] and x[3])] == []
    ghosts = browser.eval("[...document.querySelectorAll('.box.ghost')].map((el) => [el.dataset.ref, "
                          "el.querySelector('.title').textContent])")
    bias_box = browser.eval("""document.querySelector('.box.input[data-path="graph.input[1]"]').id""")
    assert ghosts and all(g == [bias_box, "bias"] for g in ghosts)
    # clicking a ghost selects the box of the value's producer (the graph input bias) and shows its text
    x, y = browser.eval("""(() => { const r = document.querySelectorAll('.box.ghost rect')[2]
        .getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    browser.click(x, y)
    assert browser.eval("document.querySelector('.box.selected').id") == bias_box
    assert browser.eval("document.querySelector('#panel pre.node-text').textContent") == \
        onnxtext.to_text(model.graph.input[1])
    # searching the value's name finds the input box, not its ghosts
    assert browser.eval("window.onnxtextView.search('bias')") == [bias_box]


@pytest.mark.parametrize("model", realmodels.params(kind="transformers") + [
    p for p in realmodels.params() if p.values[0] is not None and p.values[0].name == "torch_encoder_ts"],
    ids=lambda m: m.name if m is not None else "corpus-not-built")
def test_transformer_exports_render_within_a_time_limit(model, tmp_path):
    out = tmp_path / "page.html"
    r = subprocess.run([sys.executable, "-m", "onnxtext", "view", str(model.path), "-o", str(out)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    page = out.read_text(encoding="utf-8")
    import onnx

    nodes, _ = expected_nodes_and_links(onnx.load(str(model.path), load_external_data=False))
    assert page.count('<g class="box node') == len(nodes)  # every node once; ghosts are not counted
