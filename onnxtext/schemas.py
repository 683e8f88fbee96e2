"""THE home of operator knowledge from ``onnx.defs``: schema lookup, domains, defaults, name hints, docs.

The checker, the evaluator, the REPL and the language server all ask here: which domains onnx knows,
which operators an imported opset offers, the schema in force at a version (cached), the nearest
operator name to a typo, an operator's signature and documentation, and whether a node's input types
satisfy its schema's type constraints. ``""`` and ``"ai.onnx"`` name the same domain everywhere.
"""

from __future__ import annotations

import difflib
import functools
import re

import onnx
import onnx.defs

DEFAULT_DOMAINS = ("", "ai.onnx")


def canonical_domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


@functools.lru_cache(maxsize=1)
def all_schemas() -> dict:
    """(domain, op) -> schemas of every version, oldest first."""
    table: dict = {}
    for s in onnx.defs.get_all_schemas_with_history():
        table.setdefault((canonical_domain(s.domain), s.name), []).append(s)
    for versions in table.values():
        versions.sort(key=lambda s: s.since_version)
    return table


def known_domains() -> list[str]:
    return sorted({d for d, _ in all_schemas()})


def newest_version(domain: str) -> int:
    """The newest opset version of a domain known to the installed onnx."""
    domain = canonical_domain(domain)
    if domain == "":
        return onnx.defs.onnx_opset_version()
    return max(s.since_version for (d, _), ss in all_schemas().items() if d == domain for s in ss)


@functools.cache
def schema(domain: str, op: str, version: int):
    """The schema of ``op`` in effect at opset ``version`` of ``domain``, or None."""
    try:
        return onnx.defs.get_schema(op, version, canonical_domain(domain))
    except onnx.defs.SchemaError:  # not a schema op (model-local function, custom domain, too old opset)
        return None
    except TypeError:  # an op_type or domain that is not UTF-8 (bytes, from a damaged binary): no schema's name
        return None


def is_known_domain(domain: str) -> bool:
    """Whether ``onnx.defs`` has schemas for ``domain`` (custom operator sets are not known)."""
    return canonical_domain(domain) in _domains()


@functools.cache
def _domains() -> frozenset:
    return frozenset(d for d, _ in all_schemas())


@functools.cache
def ops_of(domain: str, version: int) -> tuple:
    """Names of the operators ``domain`` offers at opset ``version`` (deprecated ones included), sorted."""
    domain = canonical_domain(domain)
    return tuple(sorted(op for (d, op), versions in all_schemas().items()
                        if d == domain and versions[0].since_version <= version))


def nearest_op(name: str, opsets: dict) -> str | None:
    """The operator of the imported opsets (domain -> version) whose name is closest to ``name``."""
    names = []
    for domain, version in opsets.items():
        if is_known_domain(domain):
            names += ops_of(domain, version)
    exact = [n for n in names if n.lower() == name.lower()]
    if exact:
        return exact[0]
    return suggest(name, names)


def defaults(domain: str, op: str, version: int) -> dict:
    """Attribute name -> default ``AttributeProto`` declared by the schema (empty when there is none)."""
    s = schema(domain, op, version)
    if s is None:
        return {}
    return {name: a.default_value for name, a in s.attributes.items()
            if a.default_value is not None and a.default_value.type != 0}


def introduced_in(domain: str, op: str) -> int | None:
    versions = all_schemas().get((canonical_domain(domain), op))
    return versions[0].since_version if versions else None


def op_names(opsets: dict[str, int]) -> dict[str, object]:
    """Operator names callable with the imported ``opsets`` -> their schema.

    Default-domain operators are bare (``Relu``); others carry their domain (``ai.onnx.ml.Binarizer``),
    as the node syntax writes them.
    """
    out = {}
    for (domain, op), versions in all_schemas().items():
        if domain not in opsets:
            continue
        s = schema(domain, op, opsets[domain])
        if s is None or s.deprecated:
            continue
        out[f"{domain}.{op}" if domain else op] = s
    return out


def suggest(name: str, candidates) -> str | None:
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return match[0] if match else None


def attribute_default(attr) -> str | None:
    """A schema attribute's default as text (``alpha = 0.01``), None when it has none."""
    if not attr.default_value.name:
        return None
    import onnxtext

    return onnxtext.to_text(attr.default_value).strip()


def _attr_type(attr) -> str:
    return str(attr.type).rsplit(".", 1)[-1].lower()


def attributes(s) -> list[tuple[str, str, str]]:
    """(name, type, 'required' / default text / '') for each attribute of schema ``s``."""
    out = []
    for a in s.attributes.values():
        default = attribute_default(a)
        out.append((a.name, _attr_type(a), "required" if a.required else (default or "")))
    return out


def _formal(p) -> str:
    opt = {onnx.defs.OpSchema.FormalParameterOption.Optional: "?",
           onnx.defs.OpSchema.FormalParameterOption.Variadic: "..."}.get(p.option, "")
    return f"{p.name}{opt}: {p.type_str}"


def signature(s) -> str:
    """One line: ``Relu(X: T) -> (Y: T)  <alpha: float = 0.01>  T in {tensor(float), ...}``."""
    ins = ", ".join(_formal(p) for p in s.inputs)
    outs = ", ".join(_formal(p) for p in s.outputs)
    name = f"{s.domain}.{s.name}" if canonical_domain(s.domain) else s.name
    text = f"{name}({ins}) -> ({outs})"
    attrs = []
    for a_name, a_type, default in attributes(s):
        if default == "required":
            attrs.append(f"{a_name}: {a_type} (required)")
        elif default:
            attrs.append(f"{a_type} {default}")
        else:
            attrs.append(f"{a_name}: {a_type}")
    if attrs:
        text += "  <" + ", ".join(attrs) + ">"
    for c in s.type_constraints:
        allowed = [t.replace("tensor(", "").rstrip(")") if t.startswith("tensor(") else t
                   for t in c.allowed_type_strs]
        shown = ", ".join(allowed[:6]) + (", ..." if len(allowed) > 6 else "")
        text += f"  {c.type_param_str}: {shown}"
    return text


def doc(s) -> str:
    """The signature, the attributes one per line, and the schema's documentation."""
    lines = [signature(s).split("  ")[0], f"since opset {s.since_version}"
             + (f" of {s.domain}" if canonical_domain(s.domain) else "")]
    for p in s.inputs:
        lines.append(f"  input  {_formal(p)}  {p.description.strip()}")
    for p in s.outputs:
        lines.append(f"  output {_formal(p)}  {p.description.strip()}")
    for a in s.attributes.values():
        default = attribute_default(a)
        extra = "required" if a.required else (f"default {default}" if default else "optional")
        lines.append(f"  attr   {a.name}: {_attr_type(a)} ({extra})  {a.description.strip()}")
    for c in s.type_constraints:
        lines.append(f"  {c.type_param_str} in {{{', '.join(c.allowed_type_strs)}}}")
    lines.append("")
    lines.append((s.doc or "").strip())
    return "\n".join(lines)


def type_errors(s, node: onnx.NodeProto, input_types: dict) -> str | None:
    """A message naming the first input whose type the schema does not accept, or None.

    ``input_types`` maps value names to ONNX type strings (``tensor(float)``; None when unknown).

    Checks each input against its type constraint and that inputs sharing a type parameter (``T``)
    have the same type. Values of unknown type (empty sequences, optionals) are not checked.
    """
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in s.type_constraints}
    bound: dict[str, tuple[str, str]] = {}
    formals = list(s.inputs)
    for i, name in enumerate(node.input):
        if not name or name not in input_types:
            continue
        if i < len(formals):
            formal = formals[i]
        elif formals and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            formal = formals[-1]
        else:
            return (f"{node.op_type} takes at most {len(formals)} inputs, got {len(node.input)} "
                    f"(signature: {signature(s).split('  ')[0]})")
        got = input_types[name]
        if got is None:
            continue
        param = formal.type_str
        ok = allowed.get(param, {param})
        if got not in ok:
            shown = ", ".join(sorted(ok)[:8]) + (", ..." if len(ok) > 8 else "")
            return (f"{node.op_type}: input {formal.name} ({name!r}) is {got}, which is not allowed "
                    f"(expected {shown})")
        variadic = formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        if param in allowed and (formal.is_homogeneous or not variadic):
            if param in bound and bound[param][1] != got:
                other = bound[param][0]
                return (f"{node.op_type}: inputs {other!r} and {name!r} must have the same type {param}, "
                        f"got {bound[param][1]} and {got}")
            bound.setdefault(param, (name, got))
    required = [p for p in formals if p.option == onnx.defs.OpSchema.FormalParameterOption.Single]
    if len(node.input) < len(required):
        missing = required[len(node.input)]
        return (f"{node.op_type}: missing input {missing.name} "
                f"(signature: {signature(s).split('  ')[0]})")
    return None


def attribute_type(attr) -> str:
    """A schema attribute's type as onnxtext writes it: ``float``, ``ints``, ``graph``..."""
    return _attr_type(attr)


def first_paragraph(text: str) -> str:
    """The first paragraph of a schema's documentation (up to the first blank line)."""
    text = (text or "").strip()
    return text.split("\n\n", 1)[0].strip()


def markdown(s) -> str:
    """Markdown for an editor's hover: signature, since-version, attributes, type constraints, first paragraph."""
    name = f"{s.domain}.{s.name}" if canonical_domain(s.domain) else s.name
    ins = ", ".join(_formal(p) for p in s.inputs)
    outs = ", ".join(_formal(p) for p in s.outputs)
    lines = [f"```\n{name}({ins}) -> ({outs})\n```",
             f"**{name}** since opset {s.since_version}" + (f" of `{s.domain}`" if canonical_domain(s.domain) else "")
             + (" (deprecated)" if s.deprecated else "")]
    if s.attributes:
        lines.append("Attributes:\n" + "\n".join(
            f"- `{a_name}`: `{a_type}`" + (" (required)" if default == "required" else
                                           f" = `{default.partition('=')[2].strip()}`" if default else "")
            for a_name, a_type, default in attributes(s)))
    if s.type_constraints:
        lines.append("Types:\n" + "\n".join(
            f"- `{c.type_param_str}`: {', '.join(c.allowed_type_strs)}" for c in s.type_constraints))
    para = first_paragraph(s.doc)
    if para:
        lines.append(para)
    return "\n\n".join(lines)


# ---------------------------------------------------------------------------------------------- type-name attributes
# `Cast <to = float>`: INT attributes whose value is a TensorProto element type print and parse as type names.
# Which ones: every INT attribute of an onnx.defs schema (any version) whose documentation says its value is a
# data type in its first sentence (Cast.to, EyeLike.dtype, the Random* dtype, QuantizeLinear.output_dtype,
# LayerNormalization's stash_type, ...), read from the schemas rather than kept as a hand list. Unknown operators and custom
# domains keep integers.
_DATA_TYPE_DOC = re.compile(r"data ?type|DataType|TensorProto|precision|\bType of\b")


@functools.cache
def _element_type_attributes() -> dict:
    table: dict = {}
    for s in onnx.defs.get_all_schemas_with_history():
        for a in s.attributes.values():
            first_sentence = a.description.split(". ", 1)[0]
            if a.type == onnx.defs.OpSchema.AttrType.INT and _DATA_TYPE_DOC.search(first_sentence):
                table.setdefault((canonical_domain(s.domain), s.name), set()).add(a.name)
    return {k: frozenset(v) for k, v in table.items()}


_NONE: frozenset = frozenset()


def element_type_attributes(domain: str, op_type: str) -> frozenset:
    """Names of the attributes of ``domain.op_type`` whose INT value is an element type (printed ``float``)."""
    return _element_type_attributes().get((canonical_domain(domain), op_type), _NONE)
