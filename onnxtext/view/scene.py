"""What a graph picture shows, before layout: boxes (nodes, graph inputs and outputs), links (values flowing
from a producer to a consumer) and clusters (subgraph bodies and model-local functions), built from a model.

A :class:`Scene` is plain data. ``layout.py`` places it with Graphviz's dot and ``render.py`` draws it as SVG
and wraps it in an HTML page; ``diffscene.py`` builds one scene from two models (marks on boxes and links).

Every node box carries its checker-style path (``graph.node[3]``, ``graph.node[3].attribute[body].g.node[0]``,
``functions[0].node[1]``), the onnxtext of the node (``to_text(node)``) and, when the model came from text,
the line it starts on. Initializers are not boxes: they are folded into the boxes of their consumers (one
``weight`` entry per initializer input, with its type and an elided text of its values). Links are labelled
with the value's type: declared (inputs, outputs, value_info) or inferred by onnx's shape inference on a copy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from onnx import AttributeProto, GraphProto, ModelProto, TensorProto, TypeProto, ValueInfoProto

from ..non_utf8 import escaped

_MAX_ATTRS = 4  # key attributes shown in a box; the rest are in the node's text
_MAX_WEIGHTS = 4  # folded initializers listed in a box; the rest are counted
_MAX_CHARS = 44  # width of a box in characters; longer lines are cut


@dataclass
class Weight:
    """An initializer folded into a consumer box."""

    name: str
    type: str
    text: str  # its onnxtext, large values elided


@dataclass
class Box:
    """A node, a graph input or a graph output."""

    id: str  # unique in the scene (and in the page: DOM id)
    kind: str  # "node", "input" or "output"
    title: str  # operator (with domain) or value name
    lines: list[tuple[str, str]]  # (kind, text): kind is name, attr, weight, expander or change
    path: str = ""  # checker path of the node (``graph.node[3]``); inputs/outputs: ``graph.input[0]``
    cluster: str = ""  # id of the enclosing cluster, "" for the main graph
    text: str = ""  # onnxtext of the element, shown when clicked
    line: int | None = None  # source line when the model came from text
    weights: list[Weight] = field(default_factory=list)
    expands: list[str] = field(default_factory=list)  # clusters this box opens (subgraphs, called function)
    search: str = ""  # lowercase words the search box matches (op, node name, output names)
    mark: str = ""  # diff: "added", "removed", "changed" or ""
    changes: list[str] = field(default_factory=list)  # diff: what changed, one line each
    path_a: str = ""  # diff pictures: the path of the same element in model a ("" when b only)
    ref: str = ""  # ghosts (kind "ghost", ghosts.py): the id of the box producing the value it stands for


@dataclass
class Link:
    """A value from one box to another; ``label`` is its type (``float[N, 4]``)."""

    id: str
    src: str
    dst: str
    value: str
    label: str
    mark: str = ""  # diff: "added", "removed", "renamed" or ""


@dataclass
class Cluster:
    """A subgraph body (inside ``parent``'s cluster) or a model-local function (top level)."""

    id: str
    title: str
    parent: str = ""  # enclosing cluster, "" for the top level
    owner: str = ""  # the box whose attribute holds this body ("" for functions)
    path: str = ""
    size: int = 0  # number of node boxes directly inside


@dataclass
class Scene:
    boxes: list[Box] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    info: list[tuple[str, str]] = field(default_factory=list)  # (label, text) for the side panel
    title: str = ""


# ---------------------------------------------------------------------------------------------- labels
@functools.lru_cache(maxsize=1)
def _printer():
    """One printer for types and attribute values (their print methods keep no state between calls)."""
    from ..printing.printer import Printer

    return Printer(width=10**9, elide=True)


def type_text(t: TypeProto | None) -> str:
    """``float[N, 4]`` for a tensor type, "" when unknown."""
    if t is None or t.WhichOneof("value") is None:
        return ""
    return _printer().print_type(t)


def cut(text: str, width: int = _MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def op_label(n) -> str:
    dom = "" if n.domain in ("", "ai.onnx") else n.domain + "."
    return dom + n.op_type + (":" + n.overload if n.overload else "")


def attr_lines(n) -> list[str]:
    """Key attributes of a node, one short line each (subgraphs are clusters, not lines)."""
    printer = _printer()
    lines = []
    shown = [a for a in n.attribute if a.type not in (AttributeProto.GRAPH, AttributeProto.GRAPHS)]
    for a in shown[:_MAX_ATTRS]:
        value = "@" + a.ref_attr_name if a.ref_attr_name else printer.print_attribute_value(a, 0)[0]
        lines.append(cut(f"{a.name} = {value}"))
    if len(shown) > _MAX_ATTRS:
        lines.append(f"+{len(shown) - _MAX_ATTRS} more attributes")
    return lines


def infer_types(model: ModelProto) -> dict[str, TypeProto]:
    """Value name -> declared or inferred type, for every scope of the model (names are unique across
    scopes in a valid model). onnx's shape inference runs on a copy; when it fails, declared types only."""
    import onnx

    types: dict[str, TypeProto] = {}

    def collect(g: GraphProto):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.HasField("type"):
                types.setdefault(vi.name, vi.type)
        for t in g.initializer:
            tt = TypeProto()
            tt.tensor_type.elem_type = t.data_type
            for d in t.dims:
                tt.tensor_type.shape.dim.add().dim_value = d
            types.setdefault(t.name, tt)
        for n in g.node:
            for _, _, sub in subgraphs(n):
                collect(sub)

    collect(model.graph)
    for f in model.functions:
        for vi in f.value_info:
            types.setdefault(vi.name, vi.type)
    try:
        light = ModelProto()
        light.CopyFrom(model)
        for t in light.graph.initializer:  # big weights' values are not needed for shapes: keep the copy small
            if t.data_type != TensorProto.INT64 and math.prod(t.dims) > 64:  # (int64 ones may be shapes)
                t.ClearField("raw_data")
                for name in ("float_data", "int32_data", "double_data", "uint64_data", "string_data"):
                    t.ClearField(name)
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False)
    except Exception:  # noqa: BLE001 - onnx's inference fails on many real models; declared types remain
        return types
    collect(inferred.graph)
    return types


def type_line(vi) -> list[tuple[str, str]]:
    """The type line of an input or output box (none for a function's untyped parameters)."""
    text = type_text(vi.type) if vi.HasField("type") else ""
    return [("type", cut(text))] if text else []


def source_lines(text: str | None):
    """path -> source line, from the text the model was parsed from (None without text)."""
    if not text:
        return None
    from ..syntax.positions import SpanMap

    spans = SpanMap.from_text(text)
    return lambda path: spans.table.get(path, (None, None))[0]


# ---------------------------------------------------------------------------------------------- build
class SceneBuilder:
    """Builds a :class:`Scene` from a model (``build_scene``); ``diffscene`` reuses its box makers."""

    def __init__(self, model: ModelProto, text: str | None = None, prefix: str = ""):
        from ..printing.printer import to_text

        self.model, self.to_text = model, to_text
        self.types = infer_types(model)
        self.line_of = source_lines(text)
        self.prefix = prefix
        self.scene = Scene(title=model.graph.name)
        self.functions = {(f.domain, f.name, f.overload): k for k, f in enumerate(model.functions)}
        self._count = 0

    def new_id(self, kind: str) -> str:
        self._count += 1
        return f"{self.prefix}{kind}{self._count}"

    def node_box(self, n, path: str, cluster: str, weights: dict) -> Box:
        lines = ([("name", cut(f'"{n.name}"'))] if n.name else []) + [("attr", x) for x in attr_lines(n)]
        folded = [x for x in dict.fromkeys(n.input) if x in weights]
        box = Box(self.new_id("n"), "node", op_label(n), lines, path, cluster,
                  self.to_text(n, elide=True), self.line_of(path) if self.line_of else None,
                  search=" ".join([n.op_type, n.name, *n.output]).lower())
        for x in folded:
            t = weights[x]
            box.weights.append(Weight(x, type_text(self.types.get(x)), self.to_text(t, elide=True)))
        box.lines += [("weight", cut(f"{w.name}: {w.type}")) for w in box.weights[:_MAX_WEIGHTS]]
        if len(folded) > _MAX_WEIGHTS:
            box.lines.append(("weight", f"+{len(folded) - _MAX_WEIGHTS} more weights"))
        return box

    def graph(self, g: GraphProto, path: str, cluster: str, outer_weights: dict, producers: dict) -> None:
        """Add the boxes and links of a graph; ``producers`` maps visible value names to box ids."""
        scene = self.scene
        weights = dict(outer_weights)
        weights.update({t.name: t for t in g.initializer})
        producers = dict(producers)
        for k, vi in enumerate(g.input):
            if vi.name in weights:  # an old-IR weight listed among the inputs: folded like the others
                continue
            box = Box(self.new_id("i"), "input", vi.name, type_line(vi), f"{path}.input[{k}]", cluster,
                      self.to_text(vi), search=vi.name.lower())
            scene.boxes.append(box)
            producers[vi.name] = box.id
        for k, n in enumerate(g.node):
            npath = f"{path}.node[{k}]"
            box = self.node_box(n, npath, cluster, weights)
            scene.boxes.append(box)
            self.node_links(n, box.id, producers, weights)
            self.expansions(n, box, npath, cluster, weights, producers)
            for o in n.output:
                if o:
                    producers[o] = box.id
        for k, vi in enumerate(g.output):
            box = Box(self.new_id("o"), "output", vi.name, type_line(vi), f"{path}.output[{k}]", cluster,
                      self.to_text(vi), search=vi.name.lower())
            scene.boxes.append(box)
            if vi.name in producers:
                self.link(producers[vi.name], box.id, vi.name)

    def node_links(self, n, box_id: str, producers: dict, weights: dict) -> None:
        for x in dict.fromkeys(n.input):
            if x and x in producers and x not in weights:
                self.link(producers[x], box_id, x)
        # values a subgraph body reads from the enclosing scopes are inputs of the node too
        for x in sorted(captured(n) - set(n.input)):
            if x in producers and x not in weights:
                self.link(producers[x], box_id, x)

    def link(self, src: str, dst: str, value: str, mark: str = "", label: str | None = None) -> Link:
        lk = Link(self.new_id("e"), src, dst, value,
                  cut(type_text(self.types.get(value)), 28) if label is None else label, mark)
        self.scene.links.append(lk)
        return lk

    def expansions(self, n, box: Box, path: str, cluster: str, weights: dict, producers: dict) -> None:
        for name, suffix, sub in subgraphs(n):
            cl = self.cluster(name, sub, cluster, box, path + suffix)
            self.graph(sub, cl.path, cl.id, weights, producers)
        k = self.functions.get((n.domain, n.op_type, n.overload))
        if k is not None:
            box.expands.append(f"{self.prefix}f{k}")

    def cluster(self, label: str, body: GraphProto, parent: str, owner: Box, path: str) -> Cluster:
        """A cluster for a subgraph body, opened from its owner box (which gets a ``▸ label`` line)."""
        cl = Cluster(self.new_id("c"), f"{label}: {body.name}" if body.name else label, parent, owner.id, path,
                     len(body.node))
        self.scene.clusters.append(cl)
        owner.expands.append(cl.id)
        owner.lines.append(("expander", cut(f"▸ {label} ({len(body.node)} nodes)")))
        return cl

    def function(self, k: int, f) -> None:
        """A model-local function as a top-level cluster, opened from the nodes that call it."""
        label = ".".join(p for p in (f.domain, f.name) if p) + (":" + f.overload if f.overload else "")
        cl = Cluster(f"{self.prefix}f{k}", f"function {label}", "", "", f"functions[{k}]", len(f.node))
        self.scene.clusters.append(cl)
        self.graph(function_graph(f), cl.path, cl.id, {}, {})


def function_graph(f) -> GraphProto:
    """A function body as a graph (inputs and outputs without types), so one routine draws both."""
    g = GraphProto(name=f.name)
    g.input.extend(ValueInfoProto(name=x) for x in f.input)
    g.output.extend(ValueInfoProto(name=x) for x in f.output)
    g.node.extend(f.node)
    return g


def subgraphs(n) -> list[tuple[str, str, GraphProto]]:
    """(label, checker path suffix, body) of each subgraph attribute of a node: ``("body", ".attribute[body].g",
    g)``, ``("branches[1]", ".attribute[branches].graphs[1]", g)``. Attributes referring to a function's
    attribute (``@name``) have no body here."""
    out = []
    for a in n.attribute:
        if a.ref_attr_name:
            continue
        if a.type == AttributeProto.GRAPH:
            out.append((a.name, f".attribute[{a.name}].g", a.g))
        elif a.type == AttributeProto.GRAPHS:
            out += [(f"{a.name}[{k}]", f".attribute[{a.name}].graphs[{k}]", g) for k, g in enumerate(a.graphs)]
    return out


def captured(n) -> set[str]:
    """Names a node's subgraph bodies read but do not define (values of the enclosing scopes)."""
    out: set[str] = set()
    for _, _, g in subgraphs(n):
        defined = {vi.name for vi in g.input} | {t.name for t in g.initializer}
        for m in g.node:
            out |= {x for x in m.input if x and x not in defined}
            out |= captured(m) - defined
            defined |= set(m.output)
    return out


def model_info(model: ModelProto) -> list[tuple[str, str]]:
    """Model-level facts for the side panel: IR version, opsets, producer, doc strings, metadata."""
    info = [("ir_version", str(model.ir_version)),
            ("opset_import", ", ".join(f'"{o.domain}": {o.version}' for o in model.opset_import))]
    for f in ("producer_name", "producer_version", "domain", "model_version"):
        v = getattr(model, f)
        if v:
            info.append((f, str(v)))
    if model.doc_string:
        info.append(("doc_string", model.doc_string))
    if model.graph.doc_string:
        info.append(("graph doc_string", model.graph.doc_string))
    info += [(f"metadata {p.key}", p.value) for p in model.metadata_props]
    info.append(("size", f"{len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers, "
                         f"{len(model.functions)} functions"))
    return info


def build_scene(model: ModelProto, text: str | None = None) -> Scene:
    """The scene of a model; ``text`` is the onnxtext it was parsed from (for source lines), if any."""
    model = escaped(model)  # strings that are not UTF-8 (bytes) shown as \xHH text
    b = SceneBuilder(model, text)
    b.graph(model.graph, "graph", "", {}, {})
    for k, f in enumerate(model.functions):
        b.function(k, f)
    b.scene.info = model_info(model)
    return b.scene
