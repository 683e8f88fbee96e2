"""Model rules: opset imports, metadata keys, domain, identifier syntax (IR spec: Models, Optional Metadata,
Operator Set Identifiers, Names Within a Graph)."""

from __future__ import annotations

import re

from . import rule

_C90 = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@rule("model.opset-import", "model", "IR spec: Operator Sets (a model MUST import at least one operator set; "
      "each domain once)")
def opset_imports(ctx, m, path, _):
    if not len(m.opset_import):
        yield "opset_import", "the model imports no operator set (opset_import is empty)"
    seen = {}
    for o in m.opset_import:
        d = "" if o.domain == "ai.onnx" else o.domain
        if d in seen and seen[d] == o.version:
            yield (f"opset_import[{o.domain}]", f"domain {o.domain or 'ai.onnx'!r} is imported twice, both times "
                   f"version {o.version} (onnx.checker and onnxruntime accept it; an error under --strict)",
                   "tolerated")
        elif d in seen:
            yield (f"opset_import[{o.domain}]", f"domain {o.domain or 'ai.onnx'!r} is imported twice, with "
                   f"versions {seen[d]} and {o.version}")
        seen.setdefault(d, o.version)
        if o.version < 1:
            yield f"opset_import[{o.domain}]", f"domain {o.domain or 'ai.onnx'!r} has invalid version {o.version}"
    for i, f in enumerate(m.functions):
        fseen = set()
        for o in f.opset_import:
            if o.domain in fseen:
                yield f"functions[{i}]", f"function {f.name!r} imports domain {o.domain or 'ai.onnx'!r} twice"
            fseen.add(o.domain)


def _with_metadata(m):
    """(path, message) for every message carrying metadata_props."""
    yield "", m
    for i, f in enumerate(m.functions):
        yield f"functions[{i}]", f
        yield from _graph_metadata(f, f"functions[{i}]", function=True)
    yield "graph", m.graph
    yield from _graph_metadata(m.graph, "graph")
    for i, t in enumerate(m.training_info):
        for key in ("initialization", "algorithm"):
            if t.HasField(key):
                yield f"training_info[{i}].{key}", getattr(t, key)
                yield from _graph_metadata(getattr(t, key), f"training_info[{i}].{key}")


def _graph_metadata(g, path, function=False):
    if not function:
        for key in ("input", "output", "value_info"):
            for v in getattr(g, key):
                yield f"{path}.{key}[{v.name}]", v
        for t in g.initializer:
            yield f"{path}.initializer[{t.name}]", t
    else:
        for v in g.value_info:
            yield f"{path}.value_info[{v.name}]", v
    for i, n in enumerate(g.node):
        yield f"{path}.node[{i}]", n
        for a in n.attribute:
            subs = ([a.g] if a.HasField("g") else []) + list(a.graphs)
            for k, sg in enumerate(subs):
                sp = f"{path}.node[{i}].attribute[{a.name}]." + ("g" if a.HasField("g") else f"graphs[{k}]")
                yield sp, sg
                yield from _graph_metadata(sg, sp)


@rule("model.metadata-unique", "model", "IR spec: Optional Metadata (metadata_props keys MUST be unique)")
def metadata_unique(ctx, m, path, _):
    for p, msg in _with_metadata(m):
        if "metadata_props" not in msg.DESCRIPTOR.fields_by_name:
            continue
        seen = set()
        for e in msg.metadata_props:
            if e.key in seen:
                yield (p or "metadata_props"), f"metadata_props key {e.key!r} is given twice" + \
                    (f" in {p}" if p else "")
            seen.add(e.key)


@rule("model.domain", "model", "IR spec: Models (domain: a reverse-DNS name of the model's namespace, SHOULD be set)",
      "lint")
def model_domain(ctx, m, path, _):
    if not m.domain and not ctx.wrapped:
        yield "domain", "the model has no domain (e.g. domain: \"com.example.models\")"


def _is_c90(name) -> bool:
    return isinstance(name, str) and _C90.match(name) is not None  # bytes (not UTF-8) are no identifier


@rule("model.identifier", "graph", "IR spec: Names Within a Graph (names MUST adhere to C90 identifier syntax)",
      "lint")
def c90_names(ctx, scope, path, _):
    """One warning per graph listing the first offending names (real models break this rule massively)."""
    g = scope.proto
    bad = []
    for n in scope.inputs + scope.initializers + scope.outputs:
        if n and not _is_c90(n):
            bad.append((f"{path}", n))
    for i, node in enumerate(g.node):
        for j, o in enumerate(node.output):
            if o and not _is_c90(o):
                bad.append((f"{path}.node[{i}].output[{j}]", o))
        if node.name and not _is_c90(node.name):
            bad.append((f"{path}.node[{i}]", node.name))
    if bad:
        names = sorted({n for _, n in bad}, key=str)  # bytes: names that are not UTF-8
        shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        yield bad[0][0], f"{len(names)} name{'s' if len(names) > 1 else ''} in {path} are not C identifiers: {shown}"


@rule("model.graph", "model", "IR spec: Models (graph: the model's computation, required)")
def has_graph(ctx, m, path, _):
    if not m.HasField("graph"):
        if not len(m.functions):
            yield "graph", "the model has no graph"
