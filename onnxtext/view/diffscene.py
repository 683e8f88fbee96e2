"""One scene from two models: the picture of ``onnxtext diff A B --html``.

The semantic diff (``differ.compare``) pairs the nodes of every graph, subgraph and function body and keeps
that pairing (``DiffResult.scopes``, one ``diffmatch.ScopeMatch`` per body). This module draws the union:
a paired node is one box (drawn from model b, marked ``changed`` with its changes listed when it has any,
including changes of the weights folded into it), a node of a only is ``removed``, a node of b only
``added``. Links are the union of both models' links between the merged boxes: in both (plain; ``renamed``
with ``old → new`` as label when the value's name differs), in a only (``removed``) or b only (``added``).
Every box keeps the checker path of its node in b (``path``) and in a (``path_a``).
"""

from __future__ import annotations

from onnx import GraphProto

from ..diffmatch import pair_interface
from .scene import (Box, Cluster, Scene, SceneBuilder, captured, cut, function_graph, model_info,
                    subgraphs, type_line, type_text)

_MAX_CHANGE_LINES = 4


class DiffSceneBuilder:
    def __init__(self, result, ma, mb):
        self.result = result
        self.a = SceneBuilder(ma, prefix="a")
        self.b = SceneBuilder(mb, prefix="b")
        self.scene = self.b.scene = self.a.scene = Scene(title=f"{result.a_label} → {result.b_label}")

    # ------------------------------------------------------------------------------------------ one side
    def one_side(self, side: str, g: GraphProto, path: str, cluster: str, weights: dict, producers: dict) -> None:
        """A body present in one model only (its node was added or removed): every box gets that mark."""
        builder = self.a if side == "a" else self.b
        mark = "removed" if side == "a" else "added"
        first_box, first_link = len(self.scene.boxes), len(self.scene.links)
        builder.graph(g, path, cluster, weights, producers)
        for box in self.scene.boxes[first_box:]:
            box.mark = mark
            if side == "a":
                box.path_a, box.path = box.path, ""
        for lk in self.scene.links[first_link:]:
            lk.mark = mark

    # ------------------------------------------------------------------------------------------ both sides
    def pair_scope(self, diff_path: str, ga: GraphProto, gb: GraphProto, pa: str, pb: str, cluster: str,
                   weights_a: dict, weights_b: dict, prod_a: dict, prod_b: dict, top: bool,
                   weight_changes: dict | None = None) -> None:
        sm = self.result.scopes.get(diff_path)
        # changes of the weights visible here (this scope's and the enclosing scopes'), by name in a
        weight_changes = {**(weight_changes or {}), **(sm.weights if sm is not None else {})}
        scene = self.scene
        weights_a = {**weights_a, **{t.name: t for t in ga.initializer}}
        weights_b = {**weights_b, **{t.name: t for t in gb.initializer}}
        prod_a, prod_b = dict(prod_a), dict(prod_b)
        # graph inputs: by name in the main graph (left-overs in equal numbers are renames), else by position
        ins_a = [v for v in ga.input if v.name not in weights_a]
        ins_b = [v for v in gb.input if v.name not in weights_b]
        pairs, gone, new = pair_interface(ins_a, ins_b, top)
        for k, (x, y) in enumerate(pairs):
            box = self._value_box("input", x, y, f"{pa}.input", f"{pb}.input", ga.input, gb.input, cluster)
            prod_a[x.name] = prod_b[y.name] = box.id
        for x in gone:
            prod_a[x.name] = self._value_box("input", x, None, f"{pa}.input", "", ga.input, (), cluster).id
        for y in new:
            prod_b[y.name] = self._value_box("input", None, y, "", f"{pb}.input", (), gb.input, cluster).id
        # nodes
        a_to_b = sm.a_to_b if sm is not None else [None] * len(ga.node)
        b_to_a = [None] * len(gb.node)
        for i, j in enumerate(a_to_b):
            if j is not None:
                b_to_a[j] = i
        ids_a: list = [None] * len(ga.node)
        ids_b: list = [None] * len(gb.node)
        for j, n in enumerate(gb.node):
            box = self.b.node_box(n, f"{pb}.node[{j}]", cluster, weights_b)
            i = b_to_a[j]
            if i is None:
                box.mark = "added"
            else:
                box.path_a = f"{pa}.node[{i}]"
                ids_a[i] = box.id
                self._mark_changes(box, sm, i, diff_path, ga.node[i], weights_a, weight_changes)
            ids_b[j] = box.id
            k = self.b.functions.get((n.domain, n.op_type, n.overload))
            if k is not None:
                box.expands.append(f"bf{k}")
            scene.boxes.append(box)
        for i, n in enumerate(ga.node):
            if ids_a[i] is None:
                box = self.a.node_box(n, "", cluster, weights_a)
                box.path_a, box.mark = f"{pa}.node[{i}]", "removed"
                ids_a[i] = box.id
                scene.boxes.append(box)
        for nodes, ids, prod in ((ga.node, ids_a, prod_a), (gb.node, ids_b, prod_b)):
            for k, n in enumerate(nodes):
                for o in n.output:
                    if o:
                        prod[o] = ids[k]
        # graph outputs
        opairs, ogone, onew = pair_interface(list(ga.output), list(gb.output), top)
        out_a: dict[str, str] = {}
        out_b: dict[str, str] = {}
        for x, y in opairs:
            box = self._value_box("output", x, y, f"{pa}.output", f"{pb}.output", ga.output, gb.output, cluster)
            out_a[x.name], out_b[y.name] = box.id, box.id
        for x in ogone:
            out_a[x.name] = self._value_box("output", x, None, f"{pa}.output", "", ga.output, (), cluster).id
        for y in onew:
            out_b[y.name] = self._value_box("output", None, y, "", f"{pb}.output", (), gb.output, cluster).id
        self._links(ga, gb, ids_a, ids_b, prod_a, prod_b, weights_a, weights_b, out_a, out_b)
        # subgraph bodies: paired nodes recurse with the pairing of their bodies; the others are one-sided
        for j, n in enumerate(gb.node):
            i = b_to_a[j]
            bodies_a = {label: (suffix, g) for label, suffix, g in subgraphs(ga.node[i])} if i is not None else {}
            for label, suffix, g in subgraphs(n):
                cl = self._cluster(label, g, cluster, ids_b[j], f"{pb}.node[{j}]{suffix}")
                sub = sm.subscopes.get((i, label)) if sm is not None and i is not None else None
                if sub is not None and label in bodies_a:
                    suffix_a, g_a = bodies_a.pop(label)
                    self.pair_scope(sub, g_a, g, f"{pa}.node[{i}]{suffix_a}", cl.path, cl.id, weights_a, weights_b,
                                    prod_a, prod_b, top=False, weight_changes=weight_changes)
                else:
                    self.one_side("b", g, cl.path, cl.id, weights_b, prod_b)
            for label, (suffix_a, g_a) in bodies_a.items():  # bodies of a paired node that b no longer has
                cl = self._cluster(label, g_a, cluster, ids_b[j], f"{pa}.node[{i}]{suffix_a}")
                self.one_side("a", g_a, cl.path, cl.id, weights_a, prod_a)
        for i, n in enumerate(ga.node):
            if a_to_b[i] is None:
                for label, suffix, g in subgraphs(n):
                    cl = self._cluster(label, g, cluster, ids_a[i], f"{pa}.node[{i}]{suffix}")
                    self.one_side("a", g, cl.path, cl.id, weights_a, prod_a)

    def _cluster(self, label: str, g: GraphProto, parent: str, owner: str, path: str) -> Cluster:
        owner_box = next(b for b in reversed(self.scene.boxes) if b.id == owner)
        return self.b.cluster(label, g, parent, owner_box, path)

    def _value_box(self, kind: str, x, y, pa: str, pb: str, list_a, list_b, cluster: str) -> Box:
        v = y if y is not None else x
        builder = self.b if y is not None else self.a
        box = Box(builder.new_id(kind[0]), kind, v.name, type_line(v),
                  f"{pb}[{list(list_b).index(y)}]" if y is not None else "", cluster, builder.to_text(v),
                  search=" ".join(w.name for w in (x, y) if w is not None).lower())
        if x is not None:
            box.path_a = f"{pa}[{list(list_a).index(x)}]"
        if x is None:
            box.mark = "added"
        elif y is None:
            box.mark = "removed"
        else:
            changes = []
            if x.name != y.name:
                changes.append(f"renamed: {x.name} -> {y.name}")
            if x.type.SerializeToString(deterministic=True) != y.type.SerializeToString(deterministic=True):
                changes.append(f"type: {type_text(x.type) or '?'} -> {type_text(y.type) or '?'}")
            if changes:
                box.mark, box.changes = "changed", changes
                box.lines += [("change", cut("~ " + c)) for c in changes]
        self.scene.boxes.append(box)
        return box

    def _mark_changes(self, box: Box, sm, i: int, diff_path: str, node_a, weights_a: dict,
                      weight_changes: dict) -> None:
        own, short, inside = [], [], set()
        for c in sm.node_changes.get(i, ()):
            if c.path == diff_path:
                own.append(c.what() or c.kind)
                short.append(own[-1])
            else:
                inside.add(c.path.rsplit(" > ", 1)[-1])
        for x in dict.fromkeys(node_a.input):
            for c in weight_changes.get(x, ()) if x in weights_a else ():
                own.append(f"{x}: {c.what() or c.kind}")
                short.append(f"{x}: {_brief(c)}")
        own += [f"changes inside {label}" for label in sorted(inside)]
        short += [f"changes inside {label}" for label in sorted(inside)]
        if not own:
            return
        box.mark, box.changes = "changed", own
        box.lines += [("change", cut("~ " + c)) for c in short[:_MAX_CHANGE_LINES]]
        if len(own) > _MAX_CHANGE_LINES:
            box.lines.append(("change", f"+{len(own) - _MAX_CHANGE_LINES} more changes"))

    def _links(self, ga, gb, ids_a, ids_b, prod_a, prod_b, weights_a, weights_b, out_a, out_b) -> None:
        def edges(nodes, ids, prod, weights, outs):
            found: dict[tuple[str, str], str] = {}
            for k, n in enumerate(nodes):
                for x in list(dict.fromkeys(n.input)) + sorted(captured(n) - set(n.input)):
                    if x and x in prod and x not in weights:
                        found.setdefault((prod[x], ids[k]), x)
            for name, box_id in outs.items():
                if name in prod:
                    found.setdefault((prod[name], box_id), name)
            return found

        ea = edges(ga.node, ids_a, prod_a, weights_a, out_a)
        eb = edges(gb.node, ids_b, prod_b, weights_b, out_b)
        for key, vb in eb.items():
            va = ea.get(key)
            if va is None:
                self.b.link(key[0], key[1], vb, "added")
            elif va != vb:
                self.b.link(key[0], key[1], vb, "renamed", label=cut(f"{va} → {vb}", 40))
            else:
                self.b.link(key[0], key[1], vb)
        for key, va in ea.items():
            if key not in eb:
                self.a.link(key[0], key[1], va, "removed")

    def functions(self, ma, mb) -> None:
        fa = {(f.domain, f.name, f.overload): (k, f) for k, f in enumerate(ma.functions)}
        fb = {(f.domain, f.name, f.overload): (k, f) for k, f in enumerate(mb.functions)}
        for key in list(fb) + [k for k in fa if k not in fb]:
            label = ".".join(p for p in key[:2] if p) + (":" + key[2] if key[2] else "")
            side = "both" if key in fa and key in fb else "b" if key in fb else "a"
            k, f = fb[key] if key in fb else fa[key]
            cl = Cluster(f"{'b' if key in fb else 'a'}f{k}", f"function {label}", "", "", f"functions[{k}]",
                         len(f.node))
            self.scene.clusters.append(cl)
            if side == "both":
                ka, f_a = fa[key]
                self.pair_scope(f"function {label}", function_graph(f_a), function_graph(f), f"functions[{ka}]",
                                cl.path, cl.id, {}, {}, {}, {}, top=False)
            else:
                self.one_side(side, function_graph(f), cl.path, cl.id, {}, {})


def _brief(change) -> str:
    """A weight change in a few words for a box: the changed elements first (the panel has the rest)."""
    d = change.detail
    if d.get("elements"):
        first = ", ".join(f"[{', '.join(map(str, i))}] {old} -> {new}" for i, old, new in d["elements"][:2])
        return first if d["differing"] == 1 else f"{d['differing']} of {d['total']}: {first}"
    return change.what() or change.kind


def build_diff_scene(a, b, a_label: str = "a", b_label: str = "b") -> Scene:
    """The merged scene of two models (ModelProto, onnxtext text or path on either side)."""
    from ..differ import compare

    result = compare(a, b)
    ma, mb = result.models
    result.a_label, result.b_label = a_label, b_label
    builder = DiffSceneBuilder(result, ma, mb)
    from ..diffmatch import _name

    builder.pair_scope(f"graph {_name(ma.graph.name)}", ma.graph, mb.graph, "graph", "graph", "", {}, {}, {}, {},
                       top=True)
    builder.functions(ma, mb)
    scene = builder.scene
    counts = {m: sum(1 for x in scene.boxes if x.mark == m and x.kind == "node") for m in ("changed", "added",
                                                                                            "removed")}
    scene.info = [("a", result.a_label), ("b", result.b_label),
                  ("nodes", f"{counts['changed']} changed, {counts['added']} added, {counts['removed']} removed"),
                  ("changes", str(len(result.changes)))]
    scene.info += [(c.path, ("+ " if c.marker == "+" else "- " if c.marker == "-" else "~ ") + c.message())
                   for c in result.changes[:200]]
    scene.info += [(f"b: {k}", v) for k, v in model_info(mb)]
    return scene
