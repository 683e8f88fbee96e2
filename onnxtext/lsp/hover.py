"""Hover texts (Markdown): operators, attributes, values, initializers and model-local functions.

* an operator: its schema in the imported opset (:mod:`onnxtext.schemas`): signature, attributes with types
  and defaults, since-version, the documentation's first paragraph;
* an attribute name in a node: its type, default and description from the schema;
* a value: its declared type (or the type ``onnxtext check`` infers for it) and where it is defined;
* an initializer: dtype, shape and summary statistics of its data;
* a model-local function (definition or call): its signature.
"""

from __future__ import annotations

from .. import schemas
from .analysis import Analysis, as_model
from .index import NodeInfo, Occurrence

_ROLES = {"input": "graph input", "initializer": "initializer", "output": "node output",
          "param": "function input"}


def hover_text(an: Analysis, line: int, column: int) -> tuple[str, object] | None:
    """(markdown, span) for the element at 1-based (line, column), or None."""
    idx = an.index
    if idx is None:
        return None
    occ = idx.at(line, column)
    node = idx.node_at(line, column)
    if occ is not None and occ.kind == "function":
        target = idx.functions.get(occ.name)
        if target is not None:
            return function_signature(an, target), occ.span
        if node is not None:
            text = operator_doc(an, node)
            return (text, node.op_span) if text else None
    if occ is not None and occ.kind == "fattr":
        d = idx.definition(occ)
        return (f"function attribute `{occ.name}`" + (f", declared at line {d.span.line}" if d else "")), occ.span
    if occ is not None:
        return value_doc(an, occ), occ.span
    if node is not None:
        if node.op_span.contains(line, column):
            target = idx.functions.get(f"{node.domain}.{node.op}")
            if target is not None:
                return function_signature(an, target), node.op_span
            text = operator_doc(an, node)
            return (text, node.op_span) if text else None
        for name, span in node.attributes:
            if span.contains(line, column):
                text = attribute_doc(an, node, name)
                return (text, span) if text else None
    return None


def opsets_of(an: Analysis, node: NodeInfo) -> dict:
    """Domain -> version imported where ``node`` is (a function's own imports over the model's)."""
    model = as_model(an.model)
    out = {o.domain: o.version for o in model.opset_import} if model is not None else dict(an.index.opsets)
    if node.scope.kind == "function" and model is not None:
        for f in model.functions:
            if f"{f.domain}.{f.name}" == node.scope.function:
                out.update({o.domain: o.version for o in f.opset_import})
    if "ai.onnx" in out:
        out.setdefault("", out["ai.onnx"])
    return out


def schema_for(an: Analysis, node: NodeInfo):
    version = opsets_of(an, node).get(schemas.canonical_domain(node.domain))
    if version is None:
        return None
    return schemas.schema(node.domain, node.op, version)


def operator_doc(an: Analysis, node: NodeInfo) -> str | None:
    s = schema_for(an, node)
    if s is None:
        return None
    return schemas.markdown(s)


def attribute_doc(an: Analysis, node: NodeInfo, name: str) -> str | None:
    s = schema_for(an, node)
    if s is None or name not in s.attributes:
        return None
    a = s.attributes[name]
    default = schemas.attribute_default(a)
    extra = "required" if a.required else (f"default `{default}`" if default else "optional")
    return f"attribute `{name}`: `{schemas.attribute_type(a)}` ({extra})\n\n{a.description.strip()}"


def function_signature(an: Analysis, occ: Occurrence) -> str:
    model = as_model(an.model)
    for f in (model.functions if model is not None else []):
        if f"{f.domain}.{f.name}" == occ.name:
            attrs = [*f.attribute, *(a.name for a in f.attribute_proto)]
            sig = f"{f.domain + '.' if f.domain else ''}{f.name}"
            if attrs:
                sig += f" <{', '.join(attrs)}>"
            sig += f" ({', '.join(f.input)}) => ({', '.join(f.output)})"
            doc = f"\n\n{f.doc_string}" if f.doc_string else ""
            return f"```onnxtext\n{sig}\n```\nmodel-local function, line {occ.span.line}{doc}"
    return f"function `{occ.name}`"


def value_doc(an: Analysis, occ: Occurrence) -> str:
    idx = an.index
    d = idx.definition(occ)
    declared = d.detail if d is not None and d.detail else ""
    if not declared:  # a value_info entry or a graph output may declare it
        for o in idx.occurrences:
            if o.name == occ.name and o.detail and idx.definition(o) is d and o.scope is occ.scope:
                declared = o.detail
                break
    lines = [f"`{occ.name}`"]
    if declared:
        lines[0] += f": `{declared}`"
    else:
        inferred = an.inferred_types(d.scope.path).get(occ.name) if d is not None else None
        if inferred is not None and inferred.WhichOneof("value") is not None:
            from ..checker.inference import type_text

            lines[0] += f": `{type_text(inferred)}` (inferred)"
    if d is None:
        lines.append("not defined in this scope")
    else:
        where = _ROLES.get(d.role, d.role)
        node = idx.node_at(d.span.line, d.span.column) if d.role == "output" else None
        if node is not None:
            where += f" of {node.op}"
        lines.append(f"{where}, line {d.span.line}" + (f" (graph `{d.scope.name}`)" if d.scope.name else ""))
        if d.role == "initializer":
            lines.append(initializer_summary(an, d))
    return "\n\n".join(x for x in lines if x)


def initializer_summary(an: Analysis, d: Occurrence) -> str:
    import numpy as np

    from ..tensors import to_array

    tensor = _find_initializer(as_model(an.model), d.scope.path, d.name)
    if tensor is None:
        return ""
    try:
        arr = to_array(tensor)
    except Exception as e:  # noqa: BLE001 - external data that is missing, say: show why instead
        return f"data not readable: {e}"
    text = f"{arr.dtype} {list(arr.shape)}, {arr.size} elements"
    if arr.size and np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, np.complexfloating):
        a = arr.astype(np.float64)
        finite = a[np.isfinite(a)]
        if finite.size:
            text += (f"; min {finite.min():.6g}, max {finite.max():.6g}, mean {finite.mean():.6g}, "
                     f"std {finite.std():.6g}")
        if finite.size != a.size:
            text += f"; {a.size - finite.size} non-finite"
    return text


def _find_initializer(model, path: str, name: str):
    """The initializer ``name`` of the graph at checker ``path`` in ``model``."""
    g = proto_at(model, path)
    for t in getattr(g, "initializer", ()):
        if t.name == name:
            return t
    return None


def proto_at(model, path: str):
    """The graph or function at a checker path (``graph.node[3].attribute[body].g``, ``functions[0]``)."""
    import re

    obj = model
    for part in re.findall(r"[A-Za-z_]+(?:\[[^\]]*\])?", path):
        key, _, arg = part.partition("[")
        arg = arg.rstrip("]")
        if key == "attribute":
            obj = next((a for a in obj.attribute if a.name == arg), None)
        elif arg:
            seq = getattr(obj, key, None)
            obj = seq[int(arg)] if seq is not None and int(arg) < len(seq) else None
        else:
            obj = getattr(obj, key, None)
        if obj is None:
            return None
    return obj
