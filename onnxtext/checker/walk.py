"""The checker's walker: visits every element of a model and runs the rules registered for it.

Element kinds and what a rule of that kind receives as ``elem``:

* ``model``    the ModelProto (once);
* ``graph``    a :class:`Scope` (main graph, subgraphs, training graphs and function bodies alike);
* ``node``     a NodeProto, with the Scope it lives in;
* ``function`` a FunctionProto;
* ``tensor``   a TensorProto (initializers, tensor attributes, sparse values/indices);
* ``sparse``   a SparseTensorProto;
* ``type``     a TypeProto of a value (graph input/output/value_info, function value_info, type attribute).

Every rule is called as ``rule(ctx, elem, path, scope)`` and yields ``(path, message[, severity])``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from onnx import AttributeProto

from . import Diagnostic


@dataclass
class Scope:
    """A graph or function body: the unit of name resolution."""

    kind: str  # "graph" or "function"
    proto: object
    path: str
    outer: frozenset  # names visible from enclosing graphs (empty at top level)
    top: bool  # a top-level graph (main, training) or a function body
    opsets: dict  # domain -> version in force ("" and "ai.onnx" both present)
    function: object = None  # the enclosing FunctionProto, if any
    subgraph: bool = False  # a graph attribute of a node
    inputs: list = field(default_factory=list)  # input names
    outputs: list = field(default_factory=list)
    initializers: list = field(default_factory=list)

    @cached_property
    def defined(self) -> set:
        """Names defined in this scope: inputs, initializers, node outputs (computed once: rules share it)."""
        names = set(self.inputs) | set(self.initializers)
        for n in self.proto.node:
            names.update(o for o in n.output if o)
        return names


def make_scope(kind, proto, path, outer=frozenset(), top=False, opsets=None, function=None, subgraph=False):
    if kind == "function":
        ins, outs, inits = list(proto.input), list(proto.output), []
    else:
        ins = [v.name for v in proto.input]
        outs = [v.name for v in proto.output]
        inits = [t.name for t in proto.initializer] + [s.values.name for s in proto.sparse_initializer]
    return Scope(kind, proto, path, frozenset(outer), top, opsets or {}, function, subgraph, ins, outs, inits)


def opset_map(imports, base=None) -> dict:
    out = dict(base or {})
    for o in imports:
        out[o.domain] = o.version
    if "" in out:
        out.setdefault("ai.onnx", out[""])
    elif "ai.onnx" in out:
        out[""] = out["ai.onnx"]
    return out


class Context:
    """State of one check run: the model, its source positions and the diagnostics so far."""

    def __init__(self, model, *, text=None, filename=None, base_dir=None, rules=(), strict=False):
        self.model = model
        self.wrapped = False  # True when the input was a bare graph, function or node
        self.ir_version = model.ir_version
        self.text = text
        self.filename = filename
        self.base_dir = base_dir
        self.strict = strict
        self._spans = None
        self.diagnostics: list[Diagnostic] = []
        self.functions = {(f.domain, f.name, f.overload): f for f in model.functions}
        self.by_kind: dict[str, list] = {}
        for r in rules:
            self.by_kind.setdefault(r.kind, []).append(r)

    @property
    def spans(self):
        """Checker path -> text position. Built on first use: finding positions parses the text a second time
        (the slowest part of checking a large text), which a model without findings never needs."""
        if self._spans is None:
            from ..syntax.positions import SpanMap

            self._spans = SpanMap.from_text(self.text) if self.text is not None else SpanMap()
        return self._spans

    def run(self, kind, elem, path, scope=None):
        for r in self.by_kind.get(kind, ()):
            for item in r.func(self, elem, path, scope) or ():
                p, msg = item[0], item[1]
                sev = item[2] if len(item) > 2 else r.severity
                if sev == "tolerated":
                    sev = "error" if self.strict else "warning"
                elif sev == "lint":
                    sev = "warning"
                line, col = item[3] if len(item) > 3 else self.spans.locate(p)  # a rule may know the token
                self.diagnostics.append(Diagnostic(sev, r.id, msg, r.spec, p, line, col, self.filename))


def walk(ctx: Context) -> None:
    m = ctx.model
    ctx.run("model", m, "")
    model_opsets = opset_map(m.opset_import)
    main = make_scope("graph", m.graph, "graph", top=True, opsets=model_opsets)
    walk_scope(ctx, main)
    for i, f in enumerate(m.functions):
        path = f"functions[{i}]"
        ctx.run("function", f, path)
        walk_scope(ctx, make_scope("function", f, path, top=True, opsets=opset_map(f.opset_import, model_opsets),
                                   function=f))
    # training graphs see the main graph's initializers (IR spec: Training Related Information)
    visible = frozenset(main.initializers)
    for i, t in enumerate(m.training_info):
        for key in ("initialization", "algorithm"):
            if t.HasField(key):
                walk_scope(ctx, make_scope("graph", getattr(t, key), f"training_info[{i}].{key}",
                                           outer=visible, top=True, opsets=model_opsets))


def walk_scope(ctx: Context, scope: Scope) -> None:
    g = scope.proto
    ctx.run("graph", scope, scope.path, scope)
    if scope.kind == "graph":
        for v in g.input:
            if v.HasField("type"):
                ctx.run("type", v.type, f"{scope.path}.input[{v.name}]", scope)
        for v in g.output:
            if v.HasField("type"):
                ctx.run("type", v.type, f"{scope.path}.output[{v.name}]", scope)
        for v in g.value_info:
            if v.HasField("type"):
                ctx.run("type", v.type, f"{scope.path}.value_info[{v.name}]", scope)
        for t in g.initializer:
            ctx.run("tensor", t, f"{scope.path}.initializer[{t.name}]", scope)
        for s in g.sparse_initializer:
            walk_sparse(ctx, s, f"{scope.path}.sparse_initializer[{s.values.name}]", scope)
    else:
        for v in g.value_info:
            if v.HasField("type"):
                ctx.run("type", v.type, f"{scope.path}.value_info[{v.name}]", scope)
        for a in g.attribute_proto:
            walk_attribute(ctx, a, f"{scope.path}.attribute_proto[{a.name}]", scope)
    visible = scope.outer | scope.defined
    for i, n in enumerate(g.node):
        path = f"{scope.path}.node[{i}]"
        ctx.run("node", n, path, scope)
        for a in n.attribute:
            walk_attribute(ctx, a, f"{path}.attribute[{a.name}]", scope, visible)


def walk_attribute(ctx, a, path, scope, visible=frozenset()):
    if a.HasField("t"):
        ctx.run("tensor", a.t, path + ".t", scope)
    for k, t in enumerate(a.tensors):
        ctx.run("tensor", t, f"{path}.tensors[{k}]", scope)
    if a.HasField("sparse_tensor"):
        walk_sparse(ctx, a.sparse_tensor, path + ".sparse_tensor", scope)
    for k, s in enumerate(a.sparse_tensors):
        walk_sparse(ctx, s, f"{path}.sparse_tensors[{k}]", scope)
    if a.HasField("tp"):
        ctx.run("type", a.tp, path + ".tp", scope)
    for k, tp in enumerate(a.type_protos):
        ctx.run("type", tp, f"{path}.type_protos[{k}]", scope)
    subs = [(a.g, path + ".g")] if a.HasField("g") else []
    subs += [(g, f"{path}.graphs[{k}]") for k, g in enumerate(a.graphs)]
    for g, p in subs:
        walk_scope(ctx, make_scope("graph", g, p, outer=visible, opsets=scope.opsets, function=scope.function,
                                   subgraph=True))


def walk_sparse(ctx, s, path, scope):
    ctx.run("sparse", s, path, scope)
    ctx.run("tensor", s.values, path + ".values", scope)
    ctx.run("tensor", s.indices, path + ".indices", scope)


ATTR_FIELDS = {AttributeProto.FLOAT: "f", AttributeProto.INT: "i", AttributeProto.STRING: "s",
               AttributeProto.TENSOR: "t", AttributeProto.GRAPH: "g", AttributeProto.SPARSE_TENSOR: "sparse_tensor",
               AttributeProto.TYPE_PROTO: "tp"}


def iter_subgraphs(node):
    """(attribute name, GraphProto) for every graph attribute of a node."""
    for a in node.attribute:
        if a.HasField("g"):
            yield a.name, a.g
        for g in a.graphs:
            yield a.name, g
