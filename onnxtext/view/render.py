"""Draws a laid-out scene as SVG markup, and wraps it in one self-contained HTML page (styles, script and
data inline: the page needs no network and no other file).

The SVG is static markup (boxes are ``<g class="box">`` groups with ``<text>`` elements, so their text can be
selected and searched); the page's script (``assets/view.js``) only adds behaviour: pan and zoom, search,
the side panel with the clicked node's onnxtext, and expanding clusters. Every box carries ``data-path``
(its checker path), every link ``data-src``/``data-dst`` (box ids), every cluster ``data-owner``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from .layout import LINE_H, PAD_X, PAD_Y, Placed
from .scene import Scene

_ASSETS = Path(__file__).parent / "assets"
_MARGIN = 20.0


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _path_d(pts: list[tuple[float, float]]) -> str:
    curve = pts[:-1]
    if not curve:
        return ""
    d = [f"M{_n(curve[0][0])},{_n(curve[0][1])}"]
    rest = curve[1:]
    if len(rest) % 3 == 0 and rest:
        d.append("C" + " ".join(f"{_n(x)},{_n(y)}" for x, y in rest))
    else:
        d.append("L" + " ".join(f"{_n(x)},{_n(y)}" for x, y in rest))
    tip = pts[-1]
    d.append(f"L{_n(tip[0])},{_n(tip[1])}")
    return "".join(d)


def _label_point(pts):
    curve = pts[:-1] or pts
    k = (len(curve) - 1) // 2
    k -= k % 3  # an on-curve point of the cubic segments
    x0, y0 = curve[k]
    x1, y1 = curve[min(k + 3, len(curve) - 1)]
    return (x0 + x1) / 2, (y0 + y1) / 2


def svg_markup(scene: Scene, placed: Placed, *, standalone: bool, expanded: bool = True) -> str:
    """The ``<svg>`` element of a scene; ``standalone`` adds the XML declaration's namespace and the styles
    (for an .svg file), ``expanded`` False draws clusters collapsed (the page's initial state)."""
    w, h = placed.width + 2 * _MARGIN, placed.height + 2 * _MARGIN
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="onnxtext-graph" viewBox="0 0 {_n(w)} {_n(h)}" '
           f'width="{_n(w)}" height="{_n(h)}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
           f'font-size="12">']
    if standalone:
        out.append("<style>" + (_ASSETS / "graph.css").read_text(encoding="utf-8") + "</style>")
    out.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#6e7781"/></marker></defs>')
    out.append(f'<g id="viewport" transform="translate({_n(_MARGIN)},{_n(_MARGIN)})">')
    hidden = {} if expanded else _hidden_clusters(scene)
    out.append('<g class="clusters">')
    for c in scene.clusters:
        if c.id not in placed.clusters:
            continue
        x, y, cw, ch = placed.clusters[c.id]
        state = " collapsed" if c.id in hidden else ""
        out.append(f'<g class="cluster{state}" id="{c.id}" data-owner="{c.owner}" data-parent="{c.parent}" '
                   f'data-path="{_e(c.path)}"{_hide(hidden.get(c.parent))}>'
                   f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(cw)}" height="{_n(ch)}" rx="6"/>'
                   f'<text class="ctitle" x="{_n(x + 8)}" y="{_n(y + 15)}">{_e(c.title)} ({c.size} nodes)</text></g>')
    out.append('</g><g class="links">')
    cluster_of = {b.id: b.cluster for b in scene.boxes}
    for lk in scene.links:
        pts = placed.links.get(lk.id)
        if not pts:
            continue
        lx, ly = _label_point(pts)
        mark = f" {lk.mark}" if lk.mark else ""
        hide = hidden.get(cluster_of.get(lk.src)) or hidden.get(cluster_of.get(lk.dst))
        out.append(f'<g class="link{mark}" id="{lk.id}" data-src="{lk.src}" data-dst="{lk.dst}" '
                   f'data-value="{_e(lk.value)}"{_hide(hide)}><path d="{_path_d(pts)}"/>'
                   + (f'<text x="{_n(lx + 4)}" y="{_n(ly)}">{_e(lk.label)}</text>' if lk.label else "") + "</g>")
    out.append('</g><g class="boxes">')
    for b in scene.boxes:
        if b.id not in placed.boxes:
            continue
        x, y, bw, bh = placed.boxes[b.id]
        mark = f" {b.mark}" if b.mark else ""
        attrs = f' data-path="{_e(b.path)}" data-cluster="{b.cluster}"'
        if b.path_a:
            attrs += f' data-path-a="{_e(b.path_a)}"'
        if b.expands:
            attrs += f' data-expands="{" ".join(b.expands)}"'
        if b.line:
            attrs += f' data-line="{b.line}"'
        if b.ref:
            attrs += f' data-ref="{b.ref}"'
        out.append(f'<g class="box {b.kind}{mark}" id="{b.id}"{attrs} transform="translate({_n(x)},{_n(y)})"'
                   f'{_hide(hidden.get(b.cluster))}>'
                   f'<rect width="{_n(bw)}" height="{_n(bh)}" rx="{12 if b.kind != "node" else 3}"/>'
                   f'<text class="title" x="{_n(PAD_X)}" y="{_n(PAD_Y + LINE_H - 4)}">{_e(b.title)}</text>')
        for k, (kind, line) in enumerate(b.lines):
            out.append(f'<text class="line {kind}" x="{_n(PAD_X)}" y="{_n(PAD_Y + (k + 2) * LINE_H - 4)}">'
                       f'{_e(line)}</text>')
        out.append("</g>")
    out.append("</g></g></svg>")
    return "\n".join(out) + "\n"


def _hide(flag) -> str:
    return ' style="display:none"' if flag else ""


def _hidden_clusters(scene: Scene) -> dict[str, bool]:
    """Collapsed state: every cluster is collapsed; its contents (boxes, links, inner clusters) hidden."""
    return {c.id: True for c in scene.clusters}


def page_data(scene: Scene, source: str = "") -> dict:
    """The JSON the page's script reads: per box its text, line, weights, changes; clusters; model facts."""
    boxes = {}
    for b in scene.boxes:
        item = {"kind": b.kind, "title": b.title, "path": b.path or b.path_a, "text": b.text, "search": b.search}
        if b.line:
            item["line"] = b.line
        if b.weights:
            item["weights"] = [[w.name, w.type, w.text] for w in b.weights]
        if b.changes:
            item["changes"] = b.changes
        if b.mark:
            item["mark"] = b.mark
        if b.expands:
            item["expands"] = b.expands
        if b.ref:
            item["ref"] = b.ref
        boxes[b.id] = item
    clusters = {c.id: {"title": c.title, "parent": c.parent, "owner": c.owner, "path": c.path}
                for c in scene.clusters}
    return {"title": scene.title, "source": source, "boxes": boxes, "clusters": clusters,
            "info": [list(x) for x in scene.info]}


def html_page(scene: Scene, placed: Placed, *, title: str, source: str = "", expanded: bool = False) -> str:
    """One self-contained HTML page: the SVG, the styles, the script and the data."""
    data = json.dumps(page_data(scene, source), ensure_ascii=False, separators=(",", ":"))
    data = data.replace("</", "<\\/")
    css = (_ASSETS / "graph.css").read_text(encoding="utf-8") + (_ASSETS / "page.css").read_text(encoding="utf-8")
    js = (_ASSETS / "view.js").read_text(encoding="utf-8")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n<title>{_e(title)}</title>\n'
            f"<style>{css}</style></head>\n<body>\n"
            '<header><span class="name">' + _e(title) + '</span>'
            '<input id="search" type="search" placeholder="search names, operators (Enter: next)" autocomplete="off">'
            '<span id="hits"></span><button id="fit">fit</button><button id="expand-all">expand all</button>'
            '<button id="collapse-all">collapse all</button></header>\n'
            '<main><div id="canvas">\n' + svg_markup(scene, placed, standalone=False, expanded=expanded)
            + '</div><aside id="panel"></aside></main>\n'
            f'<script type="application/json" id="onnxtext-data">{data}</script>\n'
            f"<script>{js}</script>\n</body></html>\n")

