"""Function rules: identity, attribute declarations, attribute references (IR spec: Functions, Attributes)."""

from __future__ import annotations

from . import rule

_FN = "IR spec: Functions"


@rule("fn.unique", "model", _FN + " (the (domain, name, overload) triple of a function MUST be unique)")
def unique_functions(ctx, m, path, _):
    seen = {}
    for i, f in enumerate(m.functions):
        key = (f.domain, f.name, f.overload)
        if key in seen:
            ov = f" overload {f.overload!r}" if f.overload else ""
            yield f"functions[{i}]", (f"function {f.domain}.{f.name}{ov} is defined twice (functions[{seen[key]}] "
                                      f"and functions[{i}])")
        seen.setdefault(key, i)


@rule("fn.attribute-disjoint", "function", _FN + " (attribute and attribute_proto name distinct attributes)")
def attributes_disjoint(ctx, f, path, _):
    plain = set()
    for a in f.attribute:
        if a in plain:
            yield f"{path}.attribute[{a}]", f"function {f.name!r} declares attribute {a!r} twice"
        plain.add(a)
    seen = set()
    for a in f.attribute_proto:
        if a.name in plain:
            yield f"{path}.attribute_proto[{a.name}]", (f"function {f.name!r} declares attribute {a.name!r} both "
                                                        "with and without a default")
        elif a.name in seen:
            yield f"{path}.attribute_proto[{a.name}]", f"function {f.name!r} declares attribute {a.name!r} twice"
        seen.add(a.name)


def _refs(attrs, path):
    """(path, attribute) for every attribute reference, recursively through subgraphs."""
    for a in attrs:
        p = f"{path}.attribute[{a.name}]"
        if a.ref_attr_name:
            yield p, a
        subs = ([(a.g, p + ".g")] if a.HasField("g") else []) + [(g, f"{p}.graphs[{k}]") for k, g in
                                                                 enumerate(a.graphs)]
        for g, gp in subs:
            for i, n in enumerate(g.node):
                yield from _refs(n.attribute, f"{gp}.node[{i}]")


@rule("fn.ref-attr", "graph", "IR spec: Attributes (ref_attr_name refers to an attribute of the enclosing "
      "function and is only valid inside a function)")
def attribute_references(ctx, scope, path, _):
    if scope.subgraph:
        return  # references inside subgraphs are checked from the top-level body (they are found recursively)
    f = scope.function
    declared = (set(f.attribute) | {a.name for a in f.attribute_proto}) if f is not None else set()
    for i, n in enumerate(scope.proto.node):
        for p, a in _refs(n.attribute, f"{path}.node[{i}]"):
            if f is None:
                yield p, (f"attribute {a.name!r} refers to @{a.ref_attr_name}, but attribute references are only "
                          "allowed inside functions")
            elif a.ref_attr_name not in declared:
                yield p, (f"attribute {a.name!r} refers to @{a.ref_attr_name}, which function {f.name!r} does not "
                          "declare")
