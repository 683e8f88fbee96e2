"""Places a :class:`~onnxtext.view.scene.Scene` with Graphviz's ``dot`` layout: box positions, edge curves and
cluster frames, in SVG pixel coordinates (y downwards).

The layout engine is a dependency, not written here: ``graphviz-pure`` (a Rust port of Graphviz's ``dot``
shipped as binary wheels on PyPI for Linux, macOS and Windows, so ``pip install onnxtext`` needs no system
Graphviz). A system ``dot`` is used when graphviz-pure is absent. Why this engine: docs/viewing.md.

Box sizes are computed here from their text (a monospace font of known width), so the layout is exact for
the page and the SVG, and deterministic: the same scene gives the same bytes on every platform.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field

from ..errors import OnnxTextError
from .scene import Scene

_LARGE = 1500  # boxes above which a scene is laid out in pieces (segments.py)
CHAR_W = 7.2  # px per character of the 12px monospace font used for boxes
LINE_H = 16.0  # px per text line
PAD_X, PAD_Y = 10.0, 8.0


@dataclass
class Placed:
    """Positions of one laid-out scene (all in px, origin top-left)."""

    width: float
    height: float
    boxes: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)  # id -> x, y, w, h
    links: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # id -> bezier points, arrow tip
    clusters: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)  # id -> x, y, w, h


def box_size(title: str, lines: list[tuple[str, str]]) -> tuple[float, float]:
    chars = max([len(title)] + [len(text) for _, text in lines])
    return round(chars * CHAR_W + 2 * PAD_X, 1), round((1 + len(lines)) * LINE_H + 2 * PAD_Y - 4, 1)


def dot_program() -> list[str]:
    """The command that runs dot: graphviz-pure (next to this Python or on PATH), else a system dot."""
    scripts = sysconfig.get_path("scripts")
    for name in ("graphviz-pure", "graphviz-pure.exe"):
        candidate = os.path.join(scripts, name) if scripts else None
        if candidate and os.path.exists(candidate):
            return [candidate]
        found = shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))
        if found:
            return [found]
    if shutil.which("dot"):
        return [shutil.which("dot")]
    raise OnnxTextError("no layout engine: install graphviz-pure (pip install graphviz-pure) or Graphviz's dot")


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_source(scene: Scene) -> str:
    """The scene as a dot graph: boxes as fixed-size nodes, clusters as nested ``cluster_`` subgraphs."""
    children: dict[str, list] = {}
    for c in scene.clusters:
        children.setdefault(c.parent, []).append(c)
    members: dict[str, list] = {}
    for b in scene.boxes:
        members.setdefault(b.cluster, []).append(b)
    out = ["digraph G {", 'graph [rankdir=TB, nodesep=0.3, ranksep=0.45, fontname="Courier", fontsize=12];',
           "node [shape=box, fixedsize=true, label=\"\"];", "edge [arrowsize=0.6];"]

    def emit(cluster_id: str, indent: str) -> None:
        for b in members.get(cluster_id, ()):
            w, h = box_size(b.title, b.lines)
            out.append(f"{indent}{b.id} [width={w / 72:.4f}, height={h / 72:.4f}];")
        for c in children.get(cluster_id, ()):
            out.append(f"{indent}subgraph cluster_{c.id} {{ label={_q(c.title)}; margin=12;")
            emit(c.id, indent + "  ")
            out.append(indent + "}")

    emit("", "")
    for lk in scene.links:
        out.append(f"{lk.src} -> {lk.dst} [id={lk.id}];")
    # a subgraph body hangs below the node that owns it: invisible edges from the owner to the boxes of the
    # body that nothing inside the body feeds
    cluster_of = {b.id: b.cluster for b in scene.boxes}
    fed = {lk.dst for lk in scene.links if cluster_of.get(lk.src) == cluster_of.get(lk.dst)}
    for c in scene.clusters:
        if c.owner:
            for b in members.get(c.id, ()):
                if b.id not in fed:
                    out.append(f"{c.owner} -> {b.id} [style=invis, weight=2];")
    out.append("}")
    return "\n".join(out) + "\n"


def layout(scene: Scene) -> Placed:
    """Run dot on the scene and read back the positions; a large scene in pieces (see segments.py)."""
    if not scene.boxes:
        return Placed(0.0, 0.0)
    if len(scene.boxes) > _LARGE:
        from . import segments

        found = segments.split(scene)
        if found is not None:
            pieces, bridges = found
            placed = segments.lay_out_pieces(pieces, _layout_whole)
            return segments.compose(pieces, placed, bridges, Placed)
    return _layout_whole(scene)


def _layout_whole(scene: Scene) -> Placed:
    if not scene.boxes:
        return Placed(0.0, 0.0)
    try:
        r = subprocess.run([*dot_program(), "-Tjson0"], input=dot_source(scene).encode("utf-8"),
                           capture_output=True)
    except OSError as e:
        raise OnnxTextError(f"cannot run the layout engine: {e}") from None
    if r.returncode != 0:
        raise OnnxTextError("the layout engine failed: " + r.stderr.decode("utf-8", "replace").strip()[-400:])
    return read_layout(json.loads(r.stdout), scene)


def _bb(text: str) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in text.split(","))
    return x0, y0, x1, y1


def read_layout(doc: dict, scene: Scene) -> Placed:
    """Placed positions from dot's JSON output (dot's y axis points up: flip it)."""
    _, _, width, height = _bb(doc["bb"])
    placed = Placed(width, height)
    sizes = {b.id: box_size(b.title, b.lines) for b in scene.boxes}
    names = {}
    for obj in doc.get("objects", ()):
        name = obj.get("name", "")
        names[obj.get("_gvid")] = name
        if name.startswith("cluster_") and "bb" in obj:
            x0, y0, x1, y1 = _bb(obj["bb"])
            placed.clusters[name[len("cluster_"):]] = (x0, height - y1, x1 - x0, y1 - y0)
        elif "pos" in obj and name in sizes:
            x, y = (float(v) for v in obj["pos"].split(","))
            w, h = sizes[name]
            placed.boxes[name] = (round(x - w / 2, 2), round(height - y - h / 2, 2), w, h)
    for e in doc.get("edges", ()):
        if "pos" not in e or "id" not in e:
            continue
        points, tip = [], None
        for tok in e["pos"].split():
            if tok.startswith("e,"):
                tip = tok[2:]
            elif not tok.startswith("s,"):
                points.append(tok)
        pts = [(float(a), height - float(b)) for a, b in (p.split(",") for p in points)]
        if tip:  # the last point is always the arrow's tip
            a, b = tip.split(",")
            pts.append((float(a), height - float(b)))
        elif pts:
            pts.append(pts[-1])
        placed.links[e["id"]] = pts
    _snap_ends(placed, scene)
    return placed


_SNAP = 12.0  # px: dot prints 5 significant digits, so coordinates past 100,000 px are off by up to 5 px


def _snap_ends(placed: Placed, scene: Scene) -> None:
    """Put each link's start on its producer's box and its arrow tip on its consumer's box when rounding
    left them a few pixels off (tall layouts); a link farther off than that is left as dot drew it."""
    def clamp(point, box):
        x, y, w, h = box
        q = (min(max(point[0], x), x + w), min(max(point[1], y), y + h))
        return q if abs(q[0] - point[0]) + abs(q[1] - point[1]) <= _SNAP else point

    for lk in scene.links:
        pts = placed.links.get(lk.id)
        if pts and lk.src in placed.boxes and lk.dst in placed.boxes:
            pts[0] = clamp(pts[0], placed.boxes[lk.src])
            pts[-1] = clamp(pts[-1], placed.boxes[lk.dst])
