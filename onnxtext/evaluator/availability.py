"""Which operators of a model the evaluator cannot run, found before anything runs.

``Evaluator(model)`` calls :func:`missing_operators` on every graph a run can reach (the main graph,
If/Loop/Scan bodies, the bodies of the model-local functions it calls, training graphs) and raises one
EvalError naming every operator without a kernel at once, instead of failing at the first such node
halfway through a run. An operator counts as available when a kernel is registered for it at the
imported opset, when it is a model-local function, or when its onnx.defs schema has a function body
for that opset (:mod:`.functions` runs it).
"""

from __future__ import annotations

from onnx import AttributeProto

from .registry import lookup, normalize_domain

_A = AttributeProto


def _has_schema_body(op: str, domain: str, version: int) -> bool:
    from .plan import find_schema

    schema = find_schema(op, domain, version)
    if schema is None:
        return False
    versions = list(schema.function_opset_versions) if schema.has_function else []
    if schema.has_context_dependent_function:
        versions += list(schema.context_dependent_function_opset_versions)
    return any(v <= version for v in versions)


def missing_operators(model, opsets: dict) -> list[tuple[str, str, int | None]]:
    """``(op_type, domain, opset)`` of every operator reachable in ``model`` that has no kernel, no
    local function and no schema function body (opset None: the domain is not imported), in order of
    first appearance, each once. ``opsets`` are the model's imports (normalized domains)."""
    functions = {(f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions}
    missing: dict[tuple, None] = {}
    seen_functions: set = set()
    pending = []  # (nodes, opsets) still to look through

    def scan(nodes, imports):
        for node in nodes:
            key = (node.domain, node.op_type, getattr(node, "overload", ""))
            if key in functions:
                if key not in seen_functions:
                    seen_functions.add(key)
                    f = functions[key]
                    inner = dict(imports)
                    inner.update({normalize_domain(o.domain): o.version for o in f.opset_import})
                    pending.append((f.node, inner))
            else:
                domain = normalize_domain(node.domain)
                version = imports.get(domain)
                if version is None or (lookup(node.op_type, domain, version) is None and
                                       not _has_schema_body(node.op_type, domain, version)):
                    missing[(node.op_type, domain or "ai.onnx", version)] = None
            for a in node.attribute:
                if a.type == _A.GRAPH:
                    scan(a.g.node, imports)
                elif a.type == _A.GRAPHS:
                    for g in a.graphs:
                        scan(g.node, imports)

    pending.append((model.graph.node, opsets))
    for ti in model.training_info:
        pending.append((ti.initialization.node, opsets))
        pending.append((ti.algorithm.node, opsets))
    while pending:
        nodes, imports = pending.pop(0)
        scan(nodes, imports)
    return list(missing)


def describe_missing(missing) -> str:
    """One message naming every missing operator."""
    parts = [f"{domain}::{op}" + (f" (opset {v})" if v is not None else " (domain not imported)")
             for op, domain, v in missing]
    if len(parts) == 1:
        return f"no kernel for {parts[0]}"
    return f"no kernel for {len(parts)} operators: {', '.join(parts)}"
