"""Large graphs laid out in pieces: a scene of thousands of boxes is cut at its narrow points, each piece is
laid out by dot on its own (two at a time), and the pieces are stacked top to bottom.

Why: dot's x-positioning (network simplex) grows faster than linearly with the number of boxes; on a
5,000-node chain of residual blocks it took 30 s of the layout's 33 s (``graphviz-pure -v``), while five
pieces of 1,000 boxes take about 2 s each. Deep networks are mostly chains of blocks, so narrow points are
common.

A narrow point (a *cut*) is a box of the main graph through which everything flows: in the order of the
main graph's boxes (inputs, nodes in their topological order, outputs), no link from a box before the cut
reaches past it. The links from the cut box itself to the next piece (*bridges*) are drawn here as simple
curves from the bottom of the cut box to the top of their consumers. Boxes inside subgraph bodies go with
the node that owns them; model-local functions form a last piece of their own. A scene without cuts (a
graph input read by every layer, say) is laid out whole.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from .scene import Scene

TARGET_BOXES = 800  # boxes per piece (dot is fast below about 1,000)
GAP = 36.0  # px between stacked pieces


def split(scene: Scene) -> tuple[list[Scene], list] | None:
    """Pieces of the scene (sub-scenes) and the bridge links between consecutive pieces, or None when the
    scene has no cut worth using."""
    boxes = {b.id: b for b in scene.boxes}
    owner = {c.id: c.owner for c in scene.clusters}

    def top(box_id):
        """The main-graph box a box belongs to (itself, or the owner of its body); None inside functions."""
        b = boxes[box_id]
        while b.cluster:
            o = owner.get(b.cluster, "")
            if not o:
                return None
            b = boxes[o]
        return b.id

    top_of = {b.id: top(b.id) for b in scene.boxes}
    order = [b.id for b in scene.boxes if not b.cluster]
    pos = {bid: k for k, bid in enumerate(order)}
    size = defaultdict(int)
    for b in scene.boxes:
        if top_of[b.id] is not None:
            size[top_of[b.id]] += 1
    reach = list(range(len(order)))  # the farthest box each box links to
    for lk in scene.links:
        a, b = top_of[lk.src], top_of[lk.dst]
        if a is None or b is None or a == b:
            continue
        if pos[b] < pos[a]:
            return None  # not in topological order: no safe cut
        reach[pos[a]] = max(reach[pos[a]], pos[b])
    ends, farthest, count, left = [], -1, 0, sum(size.values())
    for p, bid in enumerate(order):
        count += size[bid]
        left -= size[bid]
        if farthest <= p and count >= TARGET_BOXES and left >= TARGET_BOXES // 4:
            ends.append(p)
            count = 0
        farthest = max(farthest, reach[p])
    if not ends:
        return None
    piece_of_top = {}
    start = 0
    for k, end in enumerate(ends + [len(order) - 1]):
        for p in range(start, end + 1):
            piece_of_top[order[p]] = k
        start = end + 1
    n_pieces = len(ends) + 1
    has_functions = any(t is None for t in top_of.values())
    pieces = [Scene(title=scene.title) for _ in range(n_pieces + has_functions)]
    piece = {bid: (piece_of_top[t] if t is not None else n_pieces) for bid, t in top_of.items()}
    for b in scene.boxes:
        pieces[piece[b.id]].boxes.append(b)
    first_member = {}
    for b in scene.boxes:
        first_member.setdefault(b.cluster, b.id)
    for c in scene.clusters:
        k = piece[c.owner] if c.owner else piece[first_member[c.id]] if c.id in first_member else n_pieces
        pieces[min(k, len(pieces) - 1)].clusters.append(c)
    bridges = []
    for lk in scene.links:
        if piece[lk.src] == piece[lk.dst]:
            pieces[piece[lk.src]].links.append(lk)
        else:
            bridges.append(lk)
    return pieces, bridges


def compose(pieces: list[Scene], placed: list, bridges: list, make_placed):
    """Stack the laid-out pieces, centred, and draw the bridges between them."""
    width = max(p.width for p in placed)
    total = make_placed(width, sum(p.height for p in placed) + GAP * (len(placed) - 1))
    y = 0.0
    for pl in placed:
        dx = (width - pl.width) / 2
        for bid, (x0, y0, w, h) in pl.boxes.items():
            total.boxes[bid] = (round(x0 + dx, 2), round(y0 + y, 2), w, h)
        for cid, (x0, y0, w, h) in pl.clusters.items():
            total.clusters[cid] = (x0 + dx, y0 + y, w, h)
        for lid, pts in pl.links.items():
            total.links[lid] = [(px + dx, py + y) for px, py in pts]
        y += pl.height + GAP
    for lk in bridges:
        if lk.src not in total.boxes or lk.dst not in total.boxes:
            continue
        sx, sy, sw, sh = total.boxes[lk.src]
        ex, ey, ew, _ = total.boxes[lk.dst]
        start, end = (sx + sw / 2, sy + sh), (ex + ew / 2, ey)
        bend = max(20.0, (end[1] - start[1]) / 2)
        total.links[lk.id] = [start, (start[0], start[1] + bend), (end[0], end[1] - bend), end, end]
    return total


def lay_out_pieces(pieces: list[Scene], run) -> list:
    """``run(scene)`` for every piece, two dot processes at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run, pieces))
