"""Operator rules: imported domains, op existence in the imported opset version, arity and attributes per
the operator schema (IR spec: Operator Sets, Operators, Nodes; schemas from ``onnx.defs``).

Nodes that call a model-local function (same domain, name and overload) are checked against the function's
declared inputs, outputs and attributes instead of a schema. Domains that ``onnx.defs`` knows nothing about
(custom operator sets) are only checked for being imported.
"""

from __future__ import annotations

import onnx
from onnx import AttributeProto, defs

from .. import schemas
from . import rule

_OPS = "IR spec: Operators (each operator used MUST be declared by an imported operator set)"


#: default-domain operators onnxruntime registers on its own at version 1 (its fused-graph optimizers write them
#: in models of any opset): invalid for the spec at older opsets, but runtimes run them
_ORT_DEFAULT_DOMAIN = {"LayerNormalization", "SimplifiedLayerNormalization"}


def _local(ctx, node):
    return ctx.functions.get((node.domain, node.op_type, node.overload))


@rule("op.domain", "node", "IR spec: Operator Sets (each model MUST explicitly name the operator sets it relies on)")
def domain_imported(ctx, node, path, scope):
    if scope.function is not None:
        # a function body sees only its own imports, also for calls of other model-local functions
        own = {schemas.canonical_domain(o.domain) for o in scope.function.opset_import}
        if schemas.canonical_domain(node.domain) not in own:
            yield path, (f"node {_label(node)} uses domain {node.domain or 'ai.onnx'!r}, which is not in the "
                         f"opset_import of function {scope.function.name!r}")
        return
    if node.domain not in scope.opsets and _local(ctx, node) is None:
        where = "the function's" if scope.function is not None else "the model's"
        yield path, (f"node {_label(node)} uses domain {node.domain or 'ai.onnx'!r}, which is not in "
                     f"{where} opset_import")


@rule("op.unknown", "node", _OPS)
def op_exists(ctx, node, path, scope):
    version = scope.opsets.get(node.domain)
    if version is None or _local(ctx, node) is not None or not schemas.is_known_domain(node.domain):
        return
    if schemas.schema(node.domain, node.op_type, version) is None:
        near = schemas.nearest_op(node.op_type, {node.domain: version})
        newer = schemas.schema(node.domain, node.op_type, onnx.defs.onnx_opset_version() + 10)
        msg = f"operator {node.op_type!r} does not exist in opset {node.domain or 'ai.onnx'} {version}"
        if newer is not None:
            msg += f" (it was introduced in version {newer.since_version})"
        elif near:
            msg += f"; did you mean {near!r}?"
        if node.op_type in _ORT_DEFAULT_DOMAIN and schemas.canonical_domain(node.domain) == "":
            yield (path + ".op_type", msg + " (onnxruntime runs it as its own operator; an error under --strict)",
                   "tolerated")
            return
        yield path + ".op_type", msg


def _label(node) -> str:
    return f"{node.name!r} ({node.op_type})" if node.name else node.op_type


@rule("op.arity", "node", "IR spec: Nodes / Variadic and Optional Inputs and Outputs (input and output counts per "
      "the operator's signature)")
def arity(ctx, node, path, scope):
    f = _local(ctx, node)
    if f is not None:
        if len(node.input) > len(f.input):
            yield path, f"{_label(node)} has {len(node.input)} inputs; function {f.name!r} takes {len(f.input)}"
        if len(node.output) > len(f.output):
            yield path, (f"{_label(node)} has {len(node.output)} outputs; function {f.name!r} returns "
                         f"{len(f.output)}")
        return
    s = _schema(node, scope)
    if s is None:
        return
    for key, given, params, lo, hi in (("input", node.input, s.inputs, s.min_input, s.max_input),
                                       ("output", node.output, s.outputs, s.min_output, s.max_output)):
        n = len(given)
        if n < lo or n > hi:
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi >= 2 ** 31 - 1 else f"{lo} to {hi}")
            yield path, f"{_label(node)} has {n} {key}{'s' if n != 1 else ''}; opset {s.since_version} {s.name} takes {want}"
            continue
        # a required (Single, non-optional) parameter must not be left empty
        for j, p in enumerate(params):
            if j < n and not given[j] and p.option == defs.OpSchema.FormalParameterOption.Single:
                yield f"{path}.{key}[{j}]", f"{_label(node)} leaves required {key} {j} ({p.name}) empty"


def _schema(node, scope):
    version = scope.opsets.get(node.domain)
    if version is None or not schemas.is_known_domain(node.domain):
        return None
    return schemas.schema(node.domain, node.op_type, version)


_TYPE_NAMES = {v: k.lower() for k, v in AttributeProto.AttributeType.items()}


@rule("op.attribute", "node", "IR spec: Nodes / Attributes (attribute names and types per the operator's schema)")
def attribute_names_types(ctx, node, path, scope):
    f = _local(ctx, node)
    if f is not None:
        known = set(f.attribute) | {a.name for a in f.attribute_proto}
        for a in node.attribute:
            if a.name not in known:
                yield f"{path}.attribute[{a.name}]", f"function {f.name!r} has no attribute {a.name!r}"
        return
    s = _schema(node, scope)
    if s is None:
        return
    for a in node.attribute:
        spec = s.attributes.get(a.name)
        where = f"{path}.attribute[{a.name}]"
        if spec is None:
            from difflib import get_close_matches

            near = get_close_matches(a.name, list(s.attributes), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            yield where, f"{_label(node)} (opset {s.since_version}) has no attribute {a.name!r}{hint}"
        elif a.type and int(spec.type) != a.type and int(spec.type) != 0:
            yield where, (f"attribute {a.name!r} of {_label(node)} must be {_TYPE_NAMES[int(spec.type)]}, "
                          f"not {_TYPE_NAMES.get(a.type, a.type)}")
        elif not a.type and not a.ref_attr_name:
            yield where, f"attribute {a.name!r} of {_label(node)} has no type"


@rule("op.attribute-required", "node", "IR spec: Nodes / Attributes (required attributes per the schema)")
def required_attributes(ctx, node, path, scope):
    s = _schema(node, scope)
    if s is None or _local(ctx, node) is not None:
        return
    given = {a.name for a in node.attribute}
    for name, spec in s.attributes.items():
        if spec.required and name not in given:
            yield path, f"{_label(node)} needs attribute {name!r} ({_TYPE_NAMES[int(spec.type)]})"
