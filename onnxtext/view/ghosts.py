"""Values read by many far-apart boxes are drawn as *ghost* boxes (small references labelled with the value's
name) next to their readers, instead of as long links from one producer box, as Netron-like viewers do.

Why: dot lays out a graph where one value (a transformer's attention mask, a graph input read by every
layer) feeds a hundred boxes spread over the whole graph very slowly: a 380-box chain whose input feeds 121
nodes did not finish in 8 minutes (2 GB). Long links also remove every narrow point, so segments.py cannot
cut the graph into pieces. With ghosts each reader's link is short.

Rule: a value (a link source and value name) with more than ``FANOUT`` readers keeps direct links to its
first ``FANOUT`` readers within ``NEAR`` boxes of its producer (in the scene's box order, which is the
topological order); every other reader reads it from a ghost. Readers in the same cluster less than
``GROUP`` boxes apart share one ghost. A ghost has ``kind == "ghost"`` and ``ref`` set to its producer's box id;
it is not a node (``every node once`` holds for real boxes), and the page selects the producer when a ghost is
clicked.
"""

from __future__ import annotations

from collections import defaultdict

from .scene import Box, Link, Scene

FANOUT = 4  # readers a value may have before far readers get ghosts
NEAR = 24  # boxes: readers this close to the producer keep a direct link
GROUP = 12  # boxes: readers of one value this close to each other share a ghost


def add_ghosts(scene: Scene) -> Scene:
    """Replace the far links of many-reader values by ghost boxes next to their readers (in place)."""
    order = {b.id: k for k, b in enumerate(scene.boxes)}
    boxes = {b.id: b for b in scene.boxes}
    readers: dict[tuple[str, str], list[Link]] = defaultdict(list)
    for lk in scene.links:
        readers[(lk.src, lk.value)].append(lk)
    taken = {b.id for b in scene.boxes}
    before: dict[str, list[Box]] = defaultdict(list)  # reader id -> ghosts placed just before it
    replaced: dict[str, Link] = {}  # link id -> the link from its ghost
    for (src, value), links in readers.items():
        if len(links) <= FANOUT or src not in order:
            continue
        links = sorted(links, key=lambda lk: order.get(lk.dst, 0))
        direct = [lk for lk in links if order.get(lk.dst, 0) - order[src] <= NEAR][:FANOUT]
        keep = {lk.id for lk in direct}
        group: Box | None = None
        group_start = 0
        for lk in links:
            if lk.id in keep or lk.dst not in boxes:
                continue
            reader = boxes[lk.dst]
            if group is None or group.cluster != reader.cluster or order[lk.dst] - group_start > GROUP:
                gid = "g" + lk.id
                while gid in taken:
                    gid += "g"
                taken.add(gid)
                producer = boxes[src]
                group = Box(gid, "ghost", value, [("type", lk.label)] if lk.label else [], "", reader.cluster,
                            producer.text, ref=src)
                group_start = order[lk.dst]
                before[lk.dst].append(group)
            replaced[lk.id] = Link(lk.id, group.id, lk.dst, lk.value, "", lk.mark)
    if not replaced:
        return scene
    new_boxes = []
    for b in scene.boxes:
        new_boxes += before.get(b.id, [])
        new_boxes.append(b)
    scene.boxes = new_boxes
    scene.links = [replaced.get(lk.id, lk) for lk in scene.links]
    return scene
