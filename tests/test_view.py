"""``onnxtext view`` and ``onnxtext diff --html``: the pictures, checked in the live page in headless Chromium
(every node once, links between the right boxes, clusters that expand, the marks of a planted diff, a
screenshot that is not blank), plus what needs no browser: the scene (folded weights, declared and inferred
edge labels, source lines), the command line, and the checked-in pictures of docs/images.

The expected node paths and links are computed here by walking the protos (the checker's path convention:
``graph.node[3].attribute[body].g.node[0]``, ``functions[0].node[1]``), not read from the code under test.
Browser tests skip when no Chromium is installed (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

import glob
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from onnx import AttributeProto

import onnxtext
from browser import Browser, find_chromium
from onnxtext.view import diff_html, load_for_view, view_html, view_svg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
EXAMPLE_FILES = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".onnxtext"))

needs_browser = pytest.mark.skipif(find_chromium() is None,
                                   reason="chromium is not installed (apt-get install chromium; .ci/run does)")

# a model with everything the picture draws: a branch reading an outer value, a loop reading an outer weight,
# a model-local function called twice, node names, attributes
NESTED = """<ir_version: 10, opset_import: ["": 21, "local": 1]>
nested (bool c, int64 n, float[2] x) => (float[2] y, float[2] z)
<float[2] w = {1.0, 2.0}>
{
  [scale] s = Mul(x, w)
  k = If (c) <
    then_branch = t () => (float[2] o) { o = Relu(s) },
    else_branch = e () => (float[2] o) { o = Neg(s) }
  >
  y = Loop (n, "", k) <
    body = b (int64 i, bool cond, float[2] acc) => (bool cond2, float[2] acc2) {
      cond2 = Identity(cond)
      acc2 = Add(acc, w)
    }
  >
  z = local.twice (y)
}

<domain: "local", opset_import: ["": 21]>
twice (a) => (b) {
  b = Add(a, a)
}
"""


# ---------------------------------------------------------------------------------------------- expectations
def _bodies(n, path):
    for a in n.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.g, f"{path}.attribute[{a.name}].g"
        elif a.type == AttributeProto.GRAPHS:
            for k, g in enumerate(a.graphs):
                yield g, f"{path}.attribute[{a.name}].graphs[{k}]"


def expected_nodes_and_links(model):
    """(node paths, {(producer path, consumer path)}) with initializers folded (no links from them)."""
    nodes, links = [], set()

    def walk(g_nodes, g_inputs, g_outputs, inits, path, producers):
        producers = dict(producers)
        for k, name in enumerate(g_inputs):
            if name not in inits:
                producers[name] = f"{path}.input[{k}]"
        for k, n in enumerate(g_nodes):
            p = f"{path}.node[{k}]"
            nodes.append(p)
            for x in n.input:
                if x and x in producers and x not in inits:
                    links.add((producers[x], p))
            for g, sub in _bodies(n, p):
                walk(g.node, [v.name for v in g.input], [v.name for v in g.output], inits | {t.name for t in g.initializer},
                     sub, producers)
            for o in n.output:
                producers[o] = p
        for k, name in enumerate(g_outputs):
            if name in producers:
                links.add((producers[name], f"{path}.output[{k}]"))

    g = model.graph
    walk(g.node, [v.name for v in g.input], [v.name for v in g.output], {t.name for t in g.initializer}, "graph", {})
    for k, f in enumerate(model.functions):
        walk(f.node, list(f.input), list(f.output), set(), f"functions[{k}]", {})
    return nodes, links


def _models():
    out = [(f, *load_for_view(os.path.join(EXAMPLES, f))) for f in EXAMPLE_FILES]
    out.append(("nested", onnxtext.parse_model(NESTED), NESTED))
    return out


MODELS = _models()

# ---------------------------------------------------------------------------------------------- live page
LIVE_STATE = """(() => {
  const byId = (id) => document.getElementById(id);
  const box = (el) => { const m = el.transform.baseVal.consolidate().matrix, r = el.querySelector('rect');
                        return [m.e, m.f, r.width.baseVal.value, r.height.baseVal.value]; };
  const inside = (p, b, slack) => p.x >= b[0] - slack && p.x <= b[0] + b[2] + slack &&
                                  p.y >= b[1] - slack && p.y <= b[1] + b[3] + slack;
  const links = [...document.querySelectorAll('.link')].map((el) => {
    const path = el.querySelector('path'), len = path.getTotalLength();
    const a = byId(el.dataset.src), b = byId(el.dataset.dst);
    const from = a.dataset.ref ? byId(a.dataset.ref) : a;  // a ghost stands for its value's producer
    return [from.dataset.path, b.dataset.path, inside(path.getPointAtLength(0), box(a), 4),
            inside(path.getPointAtLength(len), box(b), 4)];
  });
  return {nodes: [...document.querySelectorAll('.box.node')].map((el) => el.dataset.path), links: links};
})()"""


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    with Browser() as b:
        yield b


def _open(browser, tmp_path, html, name="page.html"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    browser.open(str(path))
    assert browser.eval("window.onnxtextView && window.onnxtextView.ready") is True
    assert browser.console_errors == []


def _visible(browser, selector):
    return browser.eval(f"""[...document.querySelectorAll({json.dumps(selector)})].filter((el) => {{
        const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; }}).length""")


@needs_browser
@pytest.mark.parametrize("name,model,text", MODELS, ids=[m[0] for m in MODELS])
def test_live_page_has_every_node_once_and_links_between_the_right_boxes(browser, tmp_path, name, model, text):
    _open(browser, tmp_path, view_html(model, text, expanded=True))
    state = browser.eval(LIVE_STATE)
    nodes, links = expected_nodes_and_links(model)
    assert sorted(state["nodes"]) == sorted(nodes)  # every node, each once
    drawn = {(a, b) for a, b, _, _ in state["links"]}
    assert links <= drawn, sorted(links - drawn)
    # the curve of each link starts at its producer's box and ends (arrow tip) at its consumer's box
    assert [x for x in state["links"] if not (x[2] and x[3])] == []


@needs_browser
def test_subgraph_clusters_start_collapsed_and_expand_on_click(browser, tmp_path):
    model = onnxtext.parse_model(NESTED)
    _open(browser, tmp_path, view_html(model, NESTED))
    inside = '.box[data-path*=".attribute["]'
    assert _visible(browser, inside) == 0 and _visible(browser, '.box.node') == 4  # the main graph only
    # a real mouse click on the If box's "then_branch" line
    x, y = browser.eval("""(() => { const el = [...document.querySelectorAll('.box[data-path="graph.node[1]"] .expander')]
        .find((t) => t.textContent.includes('then_branch')); const r = el.getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    browser.click(x, y)
    shown = browser.eval(f"""[...document.querySelectorAll('{inside}')].filter((el) =>
        el.getBoundingClientRect().width > 0).map((el) => el.dataset.path)""")
    assert sorted(p for p in shown if ".node[" in p.split("attribute")[-1]) == [
        "graph.node[1].attribute[then_branch].g.node[0]"]
    # the Loop body (another cluster) stays closed; opening all shows every node
    assert _visible(browser, '.box[data-path^="graph.node[2].attribute"]') == 0
    browser.eval("document.getElementById('expand-all').click()")
    assert _visible(browser, ".box.node") == len(expected_nodes_and_links(model)[0])


@needs_browser
def test_a_function_call_opens_the_function_cluster(browser, tmp_path):
    model = onnxtext.parse_model(NESTED)
    _open(browser, tmp_path, view_html(model, NESTED))
    body = '.box[data-path^="functions[0].node"]'
    assert _visible(browser, body) == 0
    x, y = browser.eval("""(() => { const r = document.querySelector('.box[data-path="graph.node[3]"] rect')
        .getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    browser.click(x, y)
    assert browser.eval("document.querySelector('#panel button.open').textContent") == "show function local.twice"
    x, y = browser.eval("""(() => { const r = document.querySelector('#panel button.open').getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    browser.click(x, y)
    assert _visible(browser, body) == len(model.functions[0].node)


@needs_browser
def test_clicking_a_node_shows_its_onnxtext_and_source_line(browser, tmp_path):
    path = os.path.join(EXAMPLES, "mlp.onnxtext")
    model, text = load_for_view(path)
    _open(browser, tmp_path, view_html(model, text, source=path))
    x, y = browser.eval("""(() => { const r = document.querySelector('.box[data-path="graph.node[1]"] rect')
        .getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    browser.click(x, y)
    panel = browser.eval("document.getElementById('panel').innerText")
    shown = browser.eval("document.querySelector('#panel pre.node-text').textContent")
    assert shown == onnxtext.to_text(model.graph.node[1], elide=True)
    line = 1 + text.splitlines().index("  a = Relu(h)")
    assert f"line {line} of {path}" in panel


@needs_browser
def test_search_by_name_counts_and_selects_matches(browser, tmp_path):
    model, text = load_for_view(os.path.join(EXAMPLES, "attention.onnxtext"))
    _open(browser, tmp_path, view_html(model, text))
    browser.eval("document.getElementById('search').focus()")
    browser.call("Input.insertText", session=True, text="matmul")
    expected = sum(1 for n in model.graph.node if "matmul" in " ".join([n.op_type, n.name, *n.output]).lower())
    assert expected >= 2
    assert browser.eval("document.getElementById('hits').textContent") == f"{expected} found"
    assert browser.eval("document.querySelectorAll('.box.hit').length") == expected
    browser.call("Input.dispatchKeyEvent", session=True, type="keyDown", key="Enter", code="Enter",
                 windowsVirtualKeyCode=13)
    selected = browser.eval("document.querySelector('.box.selected').dataset.path")
    k = int(re.search(r"node\[(\d+)\]$", selected).group(1))
    assert model.graph.node[k].op_type == "MatMul"


# a planted diff of NESTED: one attribute-free change of an input (Neg reads x instead of s), one node added
# (Relu between the loop and the function call), one node removed (the Identity of the loop body replaced by
# a Not), a temporary renamed (s -> scaled), one weight value changed
PLANTED = (NESTED.replace("o = Neg(s)", "o = Neg(x)")
           .replace("  z = local.twice (y)", "  r = Relu(y)\n  z = local.twice (r)")
           .replace("cond2 = Identity(cond)", "cond2 = Not(cond)")
           .replace("[scale] s = Mul(x, w)", "[scale] scaled = Mul(x, w)").replace("Relu(s)", "Relu(scaled)")
           .replace("{1.0, 2.0}", "{1.0, 2.5}"))


def _path_of(model, op, top=False):
    """The path of the one node of this operator in the main graph or its bodies (``top``: main graph only)."""
    nodes, _ = expected_nodes_and_links(model)
    found = [p for p in nodes if _resolve(model, p).op_type == op and p.startswith("graph")
             and (not top or re.fullmatch(r"graph\.node\[\d+\]", p))]
    (p,) = found
    return p


def _resolve(model, path):
    obj = model
    for part in re.findall(r"[a-z_]+(?:\[[^\]]+\])?", path):
        m = re.match(r"([a-z_]+)(?:\[([^\]]+)\])?", part)
        name, idx = m.group(1), m.group(2)
        if name == "attribute":
            obj = next(a for a in obj.attribute if a.name == idx)
            continue
        obj = getattr(obj, name)
        if idx is not None:
            obj = obj[int(idx)]
    return obj


@needs_browser
def test_planted_diff_marks_changed_added_removed_and_renamed(browser, tmp_path):
    a, b = onnxtext.parse_model(NESTED), onnxtext.parse_model(PLANTED)
    _open(browser, tmp_path, diff_html(a, b, a_label="before", b_label="after"))
    marks = browser.eval("""(() => { const out = {}; for (const m of ['added', 'removed', 'changed'])
        out[m] = [...document.querySelectorAll('.box.node.' + m)].map((el) => el.dataset.path || 'a:' + el.dataset.pathA);
        return out; })()""")
    assert sorted(marks["added"]) == sorted([_path_of(b, "Relu", top=True), _path_of(b, "Not")])
    assert marks["removed"] == ["a:" + _path_of(a, "Identity")]
    changed = set(marks["changed"])
    # Neg reads another value; Mul and the loop body's Add fold the changed weight; If and Loop contain
    # changes; the function call reads r instead of y
    assert {_path_of(b, "Neg"), _path_of(b, "Mul"), _path_of(b, "If"), _path_of(b, "Loop"), _path_of(b, "Add"),
            _path_of(b, "twice")} == changed
    neg_changes = browser.eval(f"""document.querySelector('.box[data-path="{_path_of(b, "Neg")}"]').textContent""")
    assert "input 0: s -> x" in neg_changes
    mul_changes = browser.eval(f"""document.querySelector('.box[data-path="{_path_of(b, "Mul")}"]').textContent""")
    assert "[1] 2.0 -> 2.5" in mul_changes
    renamed = browser.eval("[...document.querySelectorAll('.link.renamed text')].map((t) => t.textContent)")
    assert "s → scaled" in renamed
    # every node of both models is drawn once: paired nodes share a box
    state = browser.eval("[...document.querySelectorAll('.box.node')].map((el) => [el.dataset.path || '', el.dataset.pathA || ''])")
    nodes_b, _ = expected_nodes_and_links(b)
    nodes_a, _ = expected_nodes_and_links(a)
    assert sorted(p for p, _ in state if p) == sorted(nodes_b)
    assert sorted(q for _, q in state if q) == sorted(nodes_a)


@needs_browser
def test_screenshot_is_not_blank(browser, tmp_path):
    from PIL import Image

    model, text = load_for_view(os.path.join(EXAMPLES, "cnn_block.onnxtext"))
    _open(browser, tmp_path, view_html(model, text))
    image = Image.open(io.BytesIO(browser.screenshot())).convert("RGB")
    canvas = image.crop((0, 60, int(image.width * 0.6), image.height))  # the graph, left of the side panel
    pixels = np.asarray(canvas).reshape(-1, 3).astype(int)
    inked = float((pixels.sum(axis=1) < 600).mean())  # drawn, not white or near-white background
    colours = len(np.unique(pixels, axis=0))
    assert inked > 0.005 and colours > 20, (inked, colours)


# ---------------------------------------------------------------------------------------------- models nobody here wrote
def _light_models():
    from corpus import DATA

    return sorted(glob.glob(os.path.join(DATA, "light", "light_*.onnx")))


def _node_models_with_bodies():
    """The onnx backend node tests whose models have subgraphs (If, Loop, Scan, SequenceMap) or functions."""
    from corpus import node_models

    return [(name, m) for name, m in node_models()
            if m.functions or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
                                  for n in m.graph.node for a in n.attribute)]


def check_drawing(model):
    """Lay the model out and check the drawing: every node once, every expected link drawn, each curve
    starting on its producer's box and ending on its consumer's."""
    from onnxtext.view.ghosts import add_ghosts
    from onnxtext.view.layout import layout
    from onnxtext.view.scene import build_scene

    scene = add_ghosts(build_scene(model))
    placed = layout(scene)
    boxes = {b.id: b for b in scene.boxes}
    nodes, links = expected_nodes_and_links(model)
    assert sorted(b.path for b in scene.boxes if b.kind == "node") == sorted(nodes)
    assert all(b.id in placed.boxes for b in scene.boxes)
    # a link from a ghost is a link from the producer the ghost stands for (its ref)
    drawn = {(boxes[boxes[lk.src].ref or lk.src].path, boxes[lk.dst].path) for lk in scene.links}
    assert links <= drawn, sorted(links - drawn)[:5]

    def on(point, box_id, slack=4.0):
        x, y, w, h = placed.boxes[box_id]
        return x - slack <= point[0] <= x + w + slack and y - slack <= point[1] <= y + h + slack

    bad = [(boxes[lk.src].path, boxes[lk.dst].path) for lk in scene.links
           if not (on(placed.links[lk.id][0], lk.src) and on(placed.links[lk.id][-1], lk.dst))]
    assert bad == []


@pytest.mark.parametrize("path", _light_models(), ids=os.path.basename)
def test_real_models_are_drawn_completely(path):
    import onnx

    check_drawing(onnx.load(path))


def test_backend_models_with_subgraphs_and_functions_are_drawn_completely():
    models = _node_models_with_bodies()
    assert len(models) >= 40  # If, Loop, Scan, SequenceMap and function-expanded tests of onnx
    failures = []
    for name, model in models:
        try:
            check_drawing(model)
        except AssertionError as e:
            failures.append(f"{name}: {str(e)[:200]}")
    assert failures == []


def long_chain(blocks: int, shared_input: bool = False) -> str:
    """A model of ``blocks`` residual blocks (Neg, Relu, Sum) with an If every 50 blocks and a call of a
    local function; ``shared_input``: every block and the last node also read the graph input ``bias``, so
    the graph has no narrow point."""
    lines, x = [], "x"
    extra = ", bias" if shared_input else ""
    for k in range(blocks):
        lines += [f"  n{k} = Neg({x})", f"  r{k} = Relu(n{k})", f"  s{k} = Sum(r{k}, {x}{extra})"]
        x = f"s{k}"
        if k % 50 == 49:
            lines.append(f"  c{k} = Constant <value = bool {{1}}> ()")
            lines.append(f"  i{k} = If (c{k}) <then_branch = t{k} () => (float[2] o) {{ o = Abs({x}) }}, "
                         f"else_branch = e{k} () => (float[2] o) {{ o = Identity({x}) }}>")
            x = f"i{k}"
    lines.append(f"  f = local.twice ({x})")
    lines.append(f"  y = Sum(f{extra})")
    return ('<ir_version: 10, opset_import: ["": 21, "local": 1]>\n'
            "chain (float[2] x, float[2] bias) => (float[2] y)\n{\n" + "\n".join(lines) + "\n}\n"
            '<domain: "local", opset_import: ["": 21]>\ntwice (a) => (b) {\n  b = Add(a, a)\n}\n')


@pytest.mark.parametrize("shared_input,pieces", [(False, True), (True, False)])
def test_large_graphs_are_laid_out_in_pieces_at_narrow_points(monkeypatch, shared_input, pieces):
    from onnxtext.view import layout, segments
    from onnxtext.view.scene import build_scene

    # the thresholds scaled down 20 times (1,500 -> 75 boxes, pieces of 40), so the test stays fast
    monkeypatch.setattr(layout, "_LARGE", 75)
    monkeypatch.setattr(segments, "TARGET_BOXES", 40)
    model = onnxtext.parse_model(long_chain(120, shared_input))
    scene = build_scene(model)
    assert len(scene.boxes) > 360
    found = segments.split(scene)
    assert (found is not None) == pieces
    if found is not None:
        parts, bridges = found
        assert len(parts) >= 3 and bridges
        # each piece holds whole If nodes with their branches; the function is a piece of its own
        for part in parts:
            ids = {b.id for b in part.boxes}
            assert all(c.owner in ids for c in part.clusters if c.owner)
        assert {b.path.split(".")[0] for b in parts[-1].boxes} == {"functions[0]"}
        check_drawing(model)
    # (the shared-input chain is laid out with ghosts: tests/test_view_ghosts.py)


@needs_browser
@pytest.mark.parametrize("name", ["light_resnet50.onnx", "light_inception_v1.onnx"])
def test_live_page_of_a_real_model(browser, tmp_path, name):
    import onnx
    from corpus import DATA

    model = onnx.load(os.path.join(DATA, "light", name))
    _open(browser, tmp_path, view_html(model))
    state = browser.eval(LIVE_STATE)
    nodes, links = expected_nodes_and_links(model)
    assert sorted(state["nodes"]) == sorted(nodes)
    assert links <= {(a, b) for a, b, _, _ in state["links"]}
    assert [x for x in state["links"] if not (x[2] and x[3])] == []


# names and strings that must stay text in the page: markup, a script end tag, quotes, non-ASCII
HOSTILE = """<ir_version: 10, opset_import: ["": 21], doc_string: "</script><script>window.bad = 1</script>",
  metadata_props: ["<b>key</b>": "a & b"]>
"g<&>" (float[2] "x</script>") => (float[2] y)
{
  ["</script><img src=x onerror=window.bad=2>"] "t&amp;" = Relu("x</script>")
  /// doc </script> ü
  ["naïve ‹node›"] y = Neg("t&amp;")
}
"""


@needs_browser
def test_names_and_strings_stay_text_in_the_page(browser, tmp_path):
    model = onnxtext.parse_model(HOSTILE)
    _open(browser, tmp_path, view_html(model, HOSTILE))
    assert browser.eval("window.bad === undefined && document.querySelectorAll('img').length === 0") is True
    facts = browser.eval("document.getElementById('panel').innerText")  # the model's facts, as text
    assert "metadata <b>key</b>\ta & b" in facts and "</script><script>window.bad = 1</script>" in facts
    assert browser.eval("document.querySelectorAll('.box.node').length") == 2
    assert browser.eval("window.onnxtextView.select(document.querySelector('.box[data-path=\"graph.node[1]\"]').id)")
    assert browser.eval("document.querySelector('#panel pre.node-text').textContent") == \
        onnxtext.to_text(model.graph.node[1], elide=True)
    name = browser.eval("""document.querySelector('.box[data-path="graph.node[0]"] .name').textContent""")
    assert name.startswith('"</script><img src=x')  # the name as text, not markup


# ---------------------------------------------------------------------------------------------- without a browser
def _scene(model, text=None):
    from onnxtext.view.scene import build_scene

    return build_scene(model, text)


def test_weights_are_folded_into_their_consumers():
    model, text = load_for_view(os.path.join(EXAMPLES, "mlp.onnxtext"))
    scene = _scene(model, text)
    inits = {t.name for t in model.graph.initializer}
    assert not any(b.title in inits for b in scene.boxes)
    folded = {b.path: [w.name for w in b.weights] for b in scene.boxes if b.kind == "node"}
    assert folded == {f"graph.node[{k}]": [x for x in n.input if x in inits] for k, n in enumerate(model.graph.node)}
    w1 = next(w for b in scene.boxes for w in b.weights if w.name == "W1")
    assert w1.type == "float[4, 8]"
    assert w1.text == onnxtext.to_text(next(t for t in model.graph.initializer if t.name == "W1"), elide=True)


@pytest.mark.parametrize("value,label", [
    ("x", "float[N, 4]"),  # declared graph input
    ("h", "float[N, 8]"),  # inferred: Gemm of [N, 4] by [4, 8]
    ("logits", "float[N, 3]"),  # inferred
])
def test_links_are_labelled_with_declared_or_inferred_types(value, label):
    model, text = load_for_view(os.path.join(EXAMPLES, "mlp.onnxtext"))
    labels = {lk.label for lk in _scene(model, text).links if lk.value == value}
    assert labels == {label}


def test_inferred_labels_of_a_real_model_use_its_shape_tensors():
    """light_inception_v1 makes its weights with ConstantOfShape from small int64 shape initializers: their
    values must reach shape inference. First Conv: 224x224 input, 7x7 kernel, stride 2, pads 3 -> 112x112."""
    import onnx
    from corpus import DATA

    model = onnx.load(os.path.join(DATA, "light", "light_inception_v1.onnx"))
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    assert list(conv.attribute[0].ints) == [2, 2] and conv.attribute[0].name == "strides"
    labels = {lk.label for lk in _scene(model).links if lk.value == conv.output[0]}
    assert labels == {"float[1, 64, 112, 112]"}


def test_links_have_no_label_when_inference_fails():
    text = '<ir_version: 10, opset_import: ["": 21]>\ng (float[2] x) => (y) {\n  t = Unknown.Op(x)\n  y = Relu(t)\n}\n'
    text = text.replace("Unknown.Op", "NoSuchOp")
    model = onnxtext.parse_model(text)
    scene = _scene(model, text)
    assert {lk.value: lk.label for lk in scene.links} == {"x": "float[2]", "t": "", "y": ""}


def test_source_lines_point_at_the_node_statements():
    path = os.path.join(EXAMPLES, "control_flow.onnxtext")
    model, text = load_for_view(path)
    lines = text.splitlines()
    boxes = {b.path: b for b in _scene(model, text).boxes}
    for statement, node_path in [("  picked = If (cond) <", "graph.node[0]"),
                                 ("      out = Neg(x)", "graph.node[0].attribute[else_branch].g.node[0]"),
                                 ("      step = Add(i, one)           # i counts from 0",
                                  "graph.node[1].attribute[body].g.node[1]")]:
        assert boxes[node_path].line == lines.index(statement) + 1


def test_binary_models_have_no_source_lines(tmp_path):
    model, _ = load_for_view(os.path.join(EXAMPLES, "mlp.onnxtext"))
    onnxtext.save(model, str(tmp_path / "m.onnx"))
    again, text = load_for_view(str(tmp_path / "m.onnx"))
    assert text is None and all(b.line is None for b in _scene(again).boxes)


def test_svg_is_deterministic_and_well_formed():
    import xml.etree.ElementTree as ET

    model = onnxtext.parse_model(NESTED)
    first, second = view_svg(model), view_svg(onnxtext.parse_model(NESTED))
    assert first == second
    root = ET.fromstring(first.encode("utf-8"))
    ns = "{http://www.w3.org/2000/svg}"
    paths = [g.get("data-path") for g in root.iter(ns + "g") if "node" in (g.get("class") or "").split()]
    assert sorted(paths) == sorted(expected_nodes_and_links(model)[0])


def test_pictures_in_docs_are_current():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import gen_pictures
    finally:
        sys.path.pop(0)
    stale = [name for name, text in gen_pictures.pictures().items()
             if not os.path.exists(os.path.join(ROOT, name)) or open(os.path.join(ROOT, name), encoding="utf-8").read() != text]
    assert stale == [], f"stale pictures {stale}: run python tools/gen_pictures.py"


def _cli(*args, cwd=None, env=None):
    env = dict(env or os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "onnxtext", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.mark.parametrize("out", ["page.html", "picture.svg"])
def test_cli_view_writes_the_page_or_picture(tmp_path, out):
    r = _cli("view", os.path.join(EXAMPLES, "control_flow.onnxtext"), "-o", str(tmp_path / out))
    assert r.returncode == 0, r.stderr
    doc = (tmp_path / out).read_text(encoding="utf-8")
    model, _ = load_for_view(os.path.join(EXAMPLES, "control_flow.onnxtext"))
    assert doc.count('class="box node') == len(expected_nodes_and_links(model)[0])
    if out.endswith(".html"):
        assert "<script>" in doc and "http://" not in doc.replace("http://www.w3.org/2000/svg", "")  # offline
    else:
        assert doc.startswith("<?xml") and "<script" not in doc


def test_cli_view_defaults_to_a_page_next_to_the_model_and_opens_it(tmp_path):
    model = tmp_path / "m.onnxtext"
    model.write_text(NESTED)
    opened = tmp_path / "opened.txt"
    opener = tmp_path / "opener.sh"  # webbrowser runs $BROWSER with the page's URL
    opener.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
    opener.chmod(0o755)
    r = _cli("view", str(model), "--open", env=dict(os.environ, BROWSER=str(opener)))
    assert r.returncode == 0, r.stderr
    page = tmp_path / "m.onnxtext.html"
    assert page.exists() and opened.read_text().strip() == page.as_uri()


@pytest.mark.parametrize("args,needle", [
    (["missing.onnx"], "no such file"),
    (["bad.onnxtext"], "bad.onnxtext:3:1"),
    (["good.onnxtext", "-o", "out.txt"], "use .html or .svg"),
])
def test_cli_view_errors_are_clear_and_leave_no_output(tmp_path, args, needle):
    (tmp_path / "bad.onnxtext").write_text("g (x) => (y) {\n  y = Relu(x\n}\n")
    (tmp_path / "good.onnxtext").write_text(open(os.path.join(EXAMPLES, "mlp.onnxtext")).read())
    before = set(os.listdir(tmp_path))
    r = _cli("view", *args, cwd=tmp_path)
    assert r.returncode == 1 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert set(os.listdir(tmp_path)) == before


def test_missing_layout_engine_is_a_clear_error(monkeypatch, tmp_path):
    from onnxtext.errors import OnnxTextError
    from onnxtext.view import layout

    monkeypatch.setattr(layout.sysconfig, "get_path", lambda _name: str(tmp_path))
    monkeypatch.setattr(layout.shutil, "which", lambda *_a, **_k: None)
    with pytest.raises(OnnxTextError, match="pip install graphviz-pure"):
        layout.dot_program()


def test_cli_diff_html_writes_the_picture_and_keeps_the_exit_status(tmp_path):
    (tmp_path / "a.onnxtext").write_text(NESTED)
    (tmp_path / "b.onnxtext").write_text(PLANTED)
    r = _cli("diff", "a.onnxtext", "b.onnxtext", "--html", "d.html", cwd=tmp_path)
    assert r.returncode == 1 and "~ " in r.stdout, r.stderr
    doc = (tmp_path / "d.html").read_text(encoding="utf-8")
    assert doc.count('class="box node added') == 2 and doc.count('class="box node removed') == 1
    r = _cli("diff", "a.onnxtext", "a.onnxtext", "--html", "same.svg", cwd=tmp_path)
    assert r.returncode == 0 and "added" not in (tmp_path / "same.svg").read_text().split("</style>")[1]


def test_git_difftool_draws_the_change(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    pics = tmp_path / "pics"
    pics.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "onnxtext").write_text(f"#!/bin/sh\nexec {sys.executable} -m onnxtext \"$@\"\n")
    (bindir / "onnxtext").chmod(0o755)
    env = dict(os.environ, HOME=str(home), TMPDIR=str(pics), BROWSER="true", GIT_CONFIG_NOSYSTEM="1",
               PATH=str(bindir) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")

    def git(*args):
        r = subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout

    git("init", "-q")
    assert _cli("git-setup", cwd=work, env=env).returncode == 0
    onnxtext.save(onnxtext.parse_model(NESTED), str(work / "m.onnx"))
    git("add", "."), git("commit", "-qm", "one")
    onnxtext.save(onnxtext.parse_model(PLANTED), str(work / "m.onnx"))
    git("difftool", "-y", "-t", "onnxtext", "--", "m.onnx")
    doc = (pics / "onnxtext-diff-m.onnx.html").read_text(encoding="utf-8")
    assert doc.count('class="box node removed') == 1
