"""Structural matching of two graph or function bodies, the core of the semantic diff (``differ.py``).

How nodes are matched. Value names of intermediate results are temporaries, and nodes may come in any valid
topological order, so neither names nor positions identify a node. Instead every value gets an id: graph
inputs are paired by name (positionally in subgraphs and functions, whose inputs are formal parameters),
initializers by name, and a node's *key* is its operator, domain, overload and the ids of its inputs. Nodes
with equal keys in both models are paired and their outputs receive shared ids, which in turn makes their
consumers comparable. The passes, repeated until nothing new pairs:

1. forward, exact: key plus attributes (renamed temporaries and reordering are invisible here);
2. forward, loose: key without attributes (a changed attribute at the same structural position);
3. backward from paired graph outputs and paired nodes: producers of corresponding inputs with the same
   operator pair up (this keeps a node inserted upstream from turning everything downstream into changes);
4. same non-empty node name and operator.

Nodes with equal exact keys compute equal values, so all of them (in both models) share output ids, like
common-subexpression elimination: duplicated Constant or Shape nodes in any order do not confuse the pairing.
Where that does not hold (a loose key, a node with a subgraph) and several candidates remain that neither the
node name nor the output names tell apart, they wait for the backward pass to pair them by their consumers;
only what is still ambiguous when nothing else pairs is paired in model order.

Whatever stays unpaired is added or removed. Initializers present in only one model are wildcards in keys
(``_WILD``) and get paired afterwards by the positions of their consumers (a renamed weight); an omitted
optional input has the id ``_EMPTY``.

Pairing state lives in one :class:`_Side` per model and scope (value ids, producers, consumers, how many inputs
of each node still lack an id); :class:`_Matcher` runs the passes. ``diff_graph`` and ``diff_function`` then
report the differences of paired nodes (inputs, attributes, recursing into subgraphs with the enclosing value
ids), of interfaces, initializers and value_info. Changes go to a recorder (``differ._Ctx``, see
:class:`Recorder`), which also compares tensors: this module never imports ``differ``, so there is no import
cycle. The labels of elements named in changes (``_ident``, ``_name``, ``_type_text``...) live here too,
since the scope diffs produce them; ``differ`` imports the few it needs.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Protocol

from onnx import AttributeProto, TensorProto

from . import dtypes

_EMPTY = -1  # the id of an omitted optional input ("")
_WILD = -2  # the id of an initializer present in one model only: equal to any other such initializer
_MAX_SHOWN = 120  # characters of a value shown in a change; longer values are cut
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class Recorder(Protocol):
    """What the scope diffs need from the change collector (implemented by ``differ._Ctx``)."""

    ids: itertools.count  # fresh value ids, shared by all scopes of one comparison
    changes: list  # the changes recorded so far (``_diff_body`` attributes the new ones to nodes)
    scopes: dict  # path -> ScopeMatch: how each scope's nodes paired (for pictures of the diff)

    def add(self, kind, path, subject, name=None, old=None, new=None, **detail) -> None: ...
    def fields(self, prefix, path, subject, a, b, names) -> None: ...
    def keyed(self, kind, path, subject, da: dict, db: dict, show=str, key=json.dumps) -> None: ...
    def opsets(self, kind, path, a, b) -> None: ...
    def tensors(self, ta: TensorProto, tb: TensorProto) -> list[tuple]: ...


# ---------------------------------------------------------------------------------------------- labels
def _cut(text: str) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


def _printer():
    from .printing.printer import Printer

    return Printer(width=10**9, elide=True)


def _type_text(vi) -> str:
    return _printer().print_type(vi.type) if vi.HasField("type") else "(no type)"


def _attr_text(a: AttributeProto) -> str:
    if a.ref_attr_name:
        return "@" + a.ref_attr_name
    return _cut(_printer().print_attribute_value(a, 0)[0])


def _name(n: str) -> str:
    """A value name for display: as is when it is a plain identifier, else a quoted string. (Display only:
    json quoting avoids importing the printer, and its grammar, for every diff.)"""
    return n if _PLAIN.match(n) else json.dumps(n, ensure_ascii=False)


def _dtype(enum: int) -> str:
    try:
        return dtypes.from_enum(enum).name
    except KeyError:
        return f"type {enum}"


def _op(n) -> str:
    dom = _domain(n.domain)
    return (dom + "." if dom else "") + n.op_type + (":" + n.overload if n.overload else "")


def _ident(n, other=None) -> str:
    """A readable identity: operator, name if any, outputs; the second model's spelling when it differs."""
    def tail(x):
        outs = [o or "_" for o in x.output]
        text = (f' "{x.name}"' if x.name else "") + " -> " + ", ".join(outs[:3]) + (", ..." if len(outs) > 3 else "")
        return text if x.output else text[:-4]
    text = _op(n) + tail(n)
    if other is not None and (other.name != n.name or list(other.output) != list(n.output)):
        text += f" (in b:{tail(other)})"
    return text


class _Memo:
    """A string computed on first use (node identities are only needed for nodes that changed)."""

    def __init__(self, make):
        self.make, self.value = make, None

    def __call__(self) -> str:
        if self.value is None:
            self.value = self.make()
        return self.value


def _domain(d: str) -> str:
    return "" if d == "ai.onnx" else d


def _trim(names) -> list[str]:
    names = list(names)
    while names and not names[-1]:
        names.pop()
    return names


# ---------------------------------------------------------------------------------------------- matching
@dataclass
class ScopeMatch:
    """How the nodes of one scope paired, kept for pictures of the diff (``view/diffscene.py``).

    ``a_to_b[i]`` is the index in ``nodes_b`` paired with ``nodes_a[i]`` (None: removed); ``node_changes[i]``
    the changes of that pair (its own, and those inside its subgraphs); ``subscopes[(i, label)]`` the path of
    the scope of a paired node's subgraph attribute ``label`` (``body``, ``branches[1]``);
    ``weights[name_in_a]`` the changes of an initializer of this scope (renamed ones by their name in a)."""

    path: str
    nodes_a: list
    nodes_b: list
    a_to_b: list
    node_changes: dict = field(default_factory=dict)
    subscopes: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)


class _Side:
    """The nodes of one scope of one model: value ids, producers, consumers, readiness and pairing."""

    def __init__(self, nodes, ids: dict):
        self.nodes = list(nodes)
        self.ids = ids  # value name -> id, shared with the other model for corresponding values
        # protobuf field access is slow: read each repeated field once
        self.inputs = [_trim(n.input) for n in self.nodes]
        self.outputs = [list(n.output) for n in self.nodes]
        self.producer: dict[str, tuple[int, int]] = {}
        self.consumers: dict[str, list[int]] = defaultdict(list)
        self.pending = []  # per node: inputs without an id yet; 0 means the node's key can be computed
        for i, outs in enumerate(self.outputs):
            for k, o in enumerate(outs):
                if o:
                    self.producer[o] = (i, k)
            names = set(self.inputs[i])
            names.discard("")
            for x in names:
                self.consumers[x].append(i)
            self.pending.append(sum(1 for x in names if x not in ids))
        self.match: list[int | None] = [None] * len(self.nodes)
        self.on_ready = None
        self._attr_keys: dict[int, tuple] = {}

    def assign(self, name: str, vid: int) -> None:
        if not name or name in self.ids:
            return
        self.ids[name] = vid
        for c in self.consumers.get(name, ()):
            self.pending[c] -= 1
            if not self.pending[c] and self.match[c] is None and self.on_ready:
                self.on_ready(c)

    def in_ids(self, i: int) -> tuple:
        return tuple(self.ids[x] if x else _EMPTY for x in self.inputs[i])

    def attr_key(self, i: int) -> tuple:
        key = self._attr_keys.get(i)
        if key is None:
            # Subgraph bodies are left out: they are diffed (recursively) once their nodes are paired.
            key = self._attr_keys[i] = tuple(sorted((
                (a.name, a.type, len(a.graphs)) if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
                and not a.ref_attr_name else (a.name, _attr_bytes(a)) for a in self.nodes[i].attribute),
                key=lambda item: item[0]))
        return key

    def same_values(self, i: int) -> bool:
        """True when another node with the same exact key computes the same values (no subgraph, whose
        body the key leaves out)."""
        return not any(isinstance(item[1], int) for item in self.attr_key(i))

    def assign_all(self, i: int, ids: list[int]) -> None:
        for o, vid in zip(self.outputs[i], ids):
            self.assign(o, vid)


def _attr_bytes(a: AttributeProto) -> bytes:
    if a.doc_string:
        a = AttributeProto.FromString(a.SerializeToString())
        a.doc_string = ""
    return a.SerializeToString(deterministic=True)


def _loose_key(side: _Side, i: int) -> tuple:
    n = side.nodes[i]
    return (_domain(n.domain), n.op_type, n.overload, side.in_ids(i))


def _exact_key(side: _Side, i: int) -> tuple:
    return _loose_key(side, i) + (side.attr_key(i), tuple(bool(o) for o in side.outputs[i]))


def _same_op(x, y) -> bool:
    return (_domain(x.domain), x.op_type, x.overload) == (_domain(y.domain), y.op_type, y.overload)


class _Matcher:
    """Pairs the nodes of two scopes (see the module docstring for the passes)."""

    def __init__(self, ctx: Recorder, a: _Side, b: _Side):
        self.ctx, self.a, self.b = ctx, a, b
        self.fresh: list[tuple[int, int]] = []  # pairs whose inputs the backward pass has not followed yet
        self.known: dict[tuple, list[int]] = {}  # exact key -> output ids: equal nodes compute equal values

    def run(self, seeds) -> None:
        # Ambiguous candidates (identical heads, duplicated nodes) wait for the backward pass, which pairs
        # them by their consumers; only what is still ambiguous after that pairs up in model order.
        while (self.sweep(_exact_key, True) + self.sweep(_loose_key, True) + self.backward(seeds) + self.by_name()
               or self.sweep(_exact_key, False) + self.sweep(_loose_key, False)):
            pass

    def pair(self, i: int, j: int, key=None) -> None:
        """Pair two nodes and give their outputs shared ids (those of an equal node for an exact ``key``)."""
        a, b = self.a, self.b
        a.match[i], b.match[j] = j, i
        self.fresh.append((i, j))
        n = min(len(a.outputs[i]), len(b.outputs[j]))
        ids = self.known.get(key) if key is not None else None
        if ids is None:
            ids = [next(self.ctx.ids) for _ in range(n)]
            if key is not None:
                self.known[key] = ids
        for oa, ob, vid in zip(a.outputs[i], b.outputs[j], ids):
            if oa and ob:
                a.assign(oa, vid)
                b.assign(ob, vid)

    def best(self, i: int, cands: list[int], strict: bool) -> int | None:
        """Among equal keys prefer the same node name, then the same output names, then (unless ``strict``)
        model order."""
        name, outs = self.a.nodes[i].name, self.a.outputs[i]
        for same in (lambda j: name and self.b.nodes[j].name == name, lambda j: self.b.outputs[j] == outs):
            for j in cands:
                if same(j):
                    return j
        return cands[0] if len(cands) == 1 or not strict else None

    def sweep(self, keyfn, strict: bool) -> int:
        """One forward pass in dependency order; nodes become ready as their producers pair up.

        In the exact pass, a node equal to an already paired one (a duplicate, in either model) shares its
        output ids even before it has a partner: its consumers can be compared, and which duplicate pairs with
        which does not matter."""
        a, b = self.a, self.b
        exact = keyfn is _exact_key
        index: dict[tuple, list[int]] = defaultdict(list)
        waiting: dict[tuple, list[int]] = defaultdict(list)  # a-nodes whose key had no partner yet
        queue = deque(i for i in range(len(a.nodes)) if a.match[i] is None and not a.pending[i])

        def b_ready(j):
            key = keyfn(b, j)
            index[key].append(j)
            if exact and key in self.known and b.same_values(j):
                b.assign_all(j, self.known[key])
            if key in waiting:
                queue.extend(waiting.pop(key))

        for j in range(len(b.nodes)):
            if b.match[j] is None and not b.pending[j]:
                b_ready(j)
        a.on_ready, b.on_ready = queue.append, b_ready
        count = 0
        try:
            while queue:
                i = queue.popleft()
                if a.match[i] is not None:
                    continue
                key = keyfn(a, i)
                consing = exact and a.same_values(i)
                if consing and key in self.known:
                    a.assign_all(i, self.known[key])
                cands = [j for j in index.get(key, ()) if b.match[j] is None]
                if not cands:
                    waiting[key].append(i)
                    continue
                j = self.best(i, cands, strict and not consing)
                if j is not None:
                    self.pair(i, j, key if consing else None)
                    count += 1
        finally:
            a.on_ready = b.on_ready = None
        return count

    def backward(self, seeds) -> int:
        """Pair producers of corresponding values (graph outputs, inputs of paired nodes) by operator."""
        a, b = self.a, self.b
        work = deque(seeds)
        for i, j in self.fresh:  # a value pair that cannot pair its producers now never will: follow once
            work.extend(zip(a.inputs[i], b.inputs[j]))
        self.fresh = []
        count = 0
        while work:
            va, vb = work.popleft()
            pa, pb = a.producer.get(va), b.producer.get(vb)
            if pa is None or pb is None or pa[1] != pb[1]:
                continue
            i, j = pa[0], pb[0]
            if a.match[i] is not None or b.match[j] is not None or not _same_op(a.nodes[i], b.nodes[j]):
                continue
            self.pair(i, j)
            count += 1
            work.extend(zip(a.inputs[i], b.inputs[j]))
        self.fresh = []
        return count

    def by_name(self) -> int:
        a, b = self.a, self.b
        names: dict[str, int] = {}
        for j, n in enumerate(b.nodes):
            if n.name and b.match[j] is None:
                names.setdefault(n.name, j)
        count = 0
        for i, n in enumerate(a.nodes):
            j = names.get(n.name) if n.name and a.match[i] is None else None
            if j is not None and b.match[j] is None and _same_op(n, b.nodes[j]):
                self.pair(i, j)
                count += 1
        return count


# ---------------------------------------------------------------------------------------------- scopes
def diff_graph(ctx: Recorder, path: str, ga, gb, outer_a: dict, outer_b: dict, top: bool = False) -> dict:
    """Diff two graphs; ``outer_*`` are the value ids of the enclosing scope (for subgraphs). Returns the
    initializers of enclosing scopes that this body reads under another name (renamed weights: a -> b)."""
    if top and ga.name != gb.name:
        ctx.add("graph.name", path, "graph", "name", _name(ga.name), _name(gb.name))
    ctx.fields("graph", path, "graph", ga, gb, ("doc_string",))
    ids_a, ids_b = dict(outer_a), dict(outer_b)
    ia = {t.name: t for t in ga.initializer}
    ib = {t.name: t for t in gb.initializer}
    input_renames = {}  # old IR versions list weights among the inputs too: a renamed one pairs here
    for x, y in _interface(ctx, path, "input", ga.input, gb.input, by_name=top):
        ids_a[x.name] = ids_b[y.name] = next(ctx.ids)
        if x.name != y.name and x.name in ia and y.name in ib and x.name not in ib:
            input_renames[x.name] = y.name
    names_a = set(ia) | {s.values.name for s in ga.sparse_initializer}
    names_b = set(ib) | {s.values.name for s in gb.sparse_initializer}
    for n in names_a & names_b:
        vid = ids_a.get(n, ids_b.get(n))
        ids_a.setdefault(n, next(ctx.ids) if vid is None else vid)
        ids_b.setdefault(n, ids_a[n])
    for n in names_a - names_b:
        ids_a.setdefault(n, _WILD)
    for n in names_b - names_a:
        ids_b.setdefault(n, _WILD)
    outs = _interface(ctx, path, "output", ga.output, gb.output, by_name=top)
    sa, sb, renamed = _diff_body(ctx, path, ga.node, gb.node, ids_a, ids_b, [(x.name, y.name) for x, y in outs])
    _diff_initializers(ctx, path, ia, ib, {**renamed, **input_renames})
    outer = {x: y for x, y in renamed.items() if x not in ia}  # weights of an enclosing scope, read only here
    sparse_a = {s.values.name: s for s in ga.sparse_initializer}
    sparse_b = {s.values.name: s for s in gb.sparse_initializer}
    for n in list(sparse_a) + [n for n in sparse_b if n not in sparse_a]:
        x, y = sparse_a.get(n), sparse_b.get(n)
        if x is None or y is None or x.SerializeToString(deterministic=True) != y.SerializeToString(
                deterministic=True):
            how = "added" if x is None else "removed" if y is None else "values"
            ctx.add(f"sparse_initializer.{how}", path, f"sparse_initializer {_name(n)}")
    _sources(ctx, path, "output", [(x.name, y.name) for x, y in outs], sa, sb)
    _value_infos(ctx, path, ga.value_info, gb.value_info, sa.ids, sb.ids)
    return outer


def diff_function(ctx: Recorder, path: str, fa, fb) -> None:
    """Diff two model-local functions with the same (domain, name, overload)."""
    ctx.fields("function", path, "function", fa, fb, ("doc_string",))
    ctx.opsets("function.opset", path, fa, fb)
    if list(fa.attribute) != list(fb.attribute):
        ctx.add("function.attributes", path, "function", "attributes", "[" + ", ".join(fa.attribute) + "]",
                "[" + ", ".join(fb.attribute) + "]")
    ctx.keyed("function.attribute_default", path, "function",
              {a.name: (_attr_bytes(a), a) for a in fa.attribute_proto},
              {a.name: (_attr_bytes(a), a) for a in fb.attribute_proto}, show=lambda v: _attr_text(v[1]), key=str)
    for what in ("input", "output"):
        la, lb = getattr(fa, what), getattr(fb, what)
        if len(la) != len(lb):
            ctx.add(f"function.{what}s", path, "function", f"{what}s", ", ".join(la), ", ".join(lb))
    ids_a, ids_b = {}, {}
    for x, y in zip(fa.input, fb.input):
        ids_a[x] = ids_b[y] = next(ctx.ids)
    outs = list(zip(fa.output, fb.output))
    sa, sb, _ = _diff_body(ctx, path, fa.node, fb.node, ids_a, ids_b, outs)
    _sources(ctx, path, "output", outs, sa, sb)
    _value_infos(ctx, path, fa.value_info, fb.value_info, sa.ids, sb.ids)


def pair_interface(la, lb, by_name: bool) -> tuple[list, list, list]:
    """Pair graph inputs or outputs (ValueInfoProtos): (pairs, only in a, only in b).

    The main graph's interface is matched by name (left-overs in equal numbers are renames in place);
    subgraph inputs and outputs are positional parameters, so they are matched by position."""
    la, lb = list(la), list(lb)
    if not by_name:
        return list(zip(la, lb)), la[len(lb):], lb[len(la):]
    in_b = {v.name: v for v in lb}
    in_a = {v.name for v in la}
    pairs = [(v, in_b[v.name]) for v in la if v.name in in_b]
    gone = [v for v in la if v.name not in in_b]
    new = [v for v in lb if v.name not in in_a]
    if len(gone) == len(new):
        return pairs + list(zip(gone, new)), [], []
    return pairs, gone, new


def _interface(ctx: Recorder, path: str, what: str, la, lb, by_name: bool) -> list[tuple]:
    """Pair graph inputs or outputs and report added, removed, renamed and retyped ones.

    See :func:`pair_interface`."""
    pairs, gone, new = pair_interface(la, lb, by_name)
    for x, y in pairs:
        if x.name != y.name and by_name:
            ctx.add(f"{what}.renamed", path, f"{what} {_name(x.name)}", "name", _name(x.name), _name(y.name))
    for v in gone:
        ctx.add(f"{what}.removed", path, f"{what} {_name(v.name)}", None, _type_text(v))
    for v in new:
        ctx.add(f"{what}.added", path, f"{what} {_name(v.name)}", None, None, _type_text(v))
    for x, y in pairs:
        subject = f"{what} {_name(x.name)}"
        if x.type.SerializeToString(deterministic=True) != y.type.SerializeToString(deterministic=True):
            ctx.add(f"{what}.type", path, subject, "type", _type_text(x), _type_text(y))
        ctx.fields(what, path, subject, x, y, ("doc_string",))
    return pairs


def _diff_body(ctx: Recorder, path: str, nodes_a, nodes_b, ids_a: dict, ids_b: dict, seeds):
    """Pair the nodes of two scopes and report node changes. Returns both sides and the initializers
    present in one model only that consumers pair up (renamed weights)."""
    sa, sb = _Side(nodes_a, ids_a), _Side(nodes_b, ids_b)
    _Matcher(ctx, sa, sb).run(seeds)
    scope = ctx.scopes[path] = ScopeMatch(path, sa.nodes, sb.nodes, sa.match)
    renamed: dict[str, str] = {}
    taken: set[str] = set()
    for i, n in enumerate(sa.nodes):
        if sa.match[i] is None:
            ctx.add("node.removed", path, _ident(n))
        else:
            start = len(ctx.changes)
            _diff_node(ctx, path, sa, sb, i, sa.match[i], renamed, taken)
            if len(ctx.changes) > start:
                scope.node_changes[i] = ctx.changes[start:]
    for j, n in enumerate(sb.nodes):
        if sb.match[j] is None:
            ctx.add("node.added", path, _ident(n))
    return sa, sb, renamed


def _diff_node(ctx: Recorder, path: str, sa: _Side, sb: _Side, i: int, j: int, renamed: dict, taken: set) -> None:
    na, nb = sa.nodes[i], sb.nodes[j]
    subject = _Memo(lambda: _ident(na, nb))
    ina, inb = sa.inputs[i], sb.inputs[j]
    for p in range(max(len(ina), len(inb))):
        xa = ina[p] if p < len(ina) else ""
        xb = inb[p] if p < len(inb) else ""
        va = sa.ids.get(xa) if xa else _EMPTY
        vb = sb.ids.get(xb) if xb else _EMPTY
        if va == vb == _WILD and (renamed.get(xa) == xb or (xa not in renamed and xb not in taken)):
            renamed[xa] = xb  # one-model-only initializers at the same position: a renamed weight
            taken.add(xb)
            continue
        if va is not None and va == vb and va != _WILD:
            continue
        if va is None and vb is None and xa == xb and xa not in sa.producer and xb not in sb.producer:
            continue  # one undefined name on both sides (the checker reports it): nothing changed here
        old, new = _name(xa) if xa else None, _name(xb) if xb else None
        if xa == xb and xa:  # same spelling, different value: say where each comes from
            old, new = f"{old} (from {_source(sa, xa)})", f"{new} (from {_source(sb, xb)})"
        ctx.add("node.input", path, subject, f"input {p}", old, new)
    if [bool(o) for o in sa.outputs[i]] != [bool(o) for o in sb.outputs[j]]:
        ctx.add("node.outputs", path, subject, "outputs", len(sa.outputs[i]), len(sb.outputs[j]))
    aa = {a.name: a for a in na.attribute}
    ab = {a.name: a for a in nb.attribute}
    for k in list(aa) + [k for k in ab if k not in aa] if aa or ab else ():
        x, y = aa.get(k), ab.get(k)
        if x is None or y is None:
            ctx.add("node.attribute", path, subject, k, x and _attr_text(x), y and _attr_text(y))
        elif x.type == y.type == AttributeProto.GRAPH and not (x.ref_attr_name or y.ref_attr_name):
            sub_path = ctx.scopes[path].subscopes[(i, k)] = f"{path} > {subject()} > {k}"
            _outer_renames(diff_graph(ctx, sub_path, x.g, y.g, sa.ids, sb.ids), renamed, taken)
        elif x.type == y.type == AttributeProto.GRAPHS and len(x.graphs) == len(y.graphs) and not x.ref_attr_name:
            for n, (g, h) in enumerate(zip(x.graphs, y.graphs)):
                sub_path = ctx.scopes[path].subscopes[(i, f"{k}[{n}]")] = f"{path} > {subject()} > {k}[{n}]"
                _outer_renames(diff_graph(ctx, sub_path, g, h, sa.ids, sb.ids), renamed, taken)
        elif x.type == y.type == AttributeProto.TENSOR and not (x.ref_attr_name or y.ref_attr_name):
            for how, name, old, new, detail in ctx.tensors(x.t, y.t):
                ctx.add("node.attribute", path, subject, k if name is None else f"{k} {name}", old, new, **detail)
        elif _attr_bytes(x) != _attr_bytes(y):
            ctx.add("node.attribute", path, subject, k, _attr_text(x), _attr_text(y))
    ctx.fields("node", path, subject, na, nb, ("doc_string",))


def _outer_renames(found: dict, renamed: dict, taken: set) -> None:
    """Renamed weights of enclosing scopes found in a subgraph body, added to the enclosing scope's."""
    for x, y in found.items():
        if x not in renamed and y not in taken:
            renamed[x] = y
            taken.add(y)


def _diff_initializers(ctx: Recorder, path: str, ia: dict, ib: dict, renamed: dict) -> None:
    matched_b = set()
    scope = ctx.scopes.get(path)
    for n, t in ia.items():
        other = n if n in ib else renamed.get(n)
        subject = f"initializer {_name(n)}"
        start = len(ctx.changes)
        if other is None:
            ctx.add("initializer.removed", path, subject, None, _tensor_type(t))
            continue
        matched_b.add(other)
        if other != n:
            ctx.add("initializer.renamed", path, subject, "name", _name(n), _name(other))
        for how, name, old, new, detail in ctx.tensors(t, ib[other]):
            ctx.add(f"initializer.{how}", path, subject, name, old, new, **detail)
        ctx.fields("initializer", path, subject, t, ib[other], ("doc_string",))
        if scope is not None and len(ctx.changes) > start:
            scope.weights[n] = ctx.changes[start:]
    for n, t in ib.items():
        if n not in matched_b:
            ctx.add("initializer.added", path, f"initializer {_name(n)}", None, None, _tensor_type(t))


def _tensor_type(t: TensorProto) -> str:
    return f"{_dtype(t.data_type)}[{', '.join(str(d) for d in t.dims)}]"


def _sources(ctx: Recorder, path: str, what: str, pairs, sa: _Side, sb: _Side) -> None:
    """An output now computed by a different (paired) value, e.g. two outputs swapped."""
    for x, y in pairs:
        va, vb = sa.ids.get(x), sb.ids.get(y)
        if va is not None and vb is not None and (va != vb or va == _WILD and x != y):
            ctx.add(f"{what}.source", path, f"{what} {_name(x)}", "computed by", _source(sa, x), _source(sb, y))


def _source(side: _Side, value: str) -> str:
    p = side.producer.get(value)
    return _ident(side.nodes[p[0]]) if p else _name(value)


def _value_infos(ctx: Recorder, path: str, la, lb, ids_a: dict, ids_b: dict) -> None:
    """Type annotations of corresponding values that disagree (values annotated on one side are ignored)."""
    by_id = {ids_b[v.name]: v for v in lb if ids_b.get(v.name, -1) >= 0}
    for v in la:
        w = by_id.get(ids_a.get(v.name, -1))
        if w is not None and v.type.SerializeToString(deterministic=True) != w.type.SerializeToString(
                deterministic=True):
            ctx.add("value_info.type", path, f"value {_name(v.name)}", "type", _type_text(v), _type_text(w))
