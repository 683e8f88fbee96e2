"""IR-version rules: the model's ir_version is in the supported range, and every feature it uses exists in that
IR version (IR spec: ONNX Versioning; onnx's VERSION_TABLE; element types from ``onnxtext.dtypes``).

Feature gates: training_info IR 7; model-local functions and the optional type IR 8 (sequence and map types
IR 6); function attribute defaults (attribute_proto) IR 9; overloads, function value_info and metadata_props
below the model IR 10; multi-device configuration IR 11; each element type from the IR version in the
``ir_version`` column of the dtypes table.
"""

from __future__ import annotations

import onnx

from .. import dtypes
from . import rule

_VER = "IR spec: ONNX Versioning (a model MUST only use features of its ir_version)"


def _too_old(ctx, need: int) -> bool:
    return 0 < ctx.ir_version < need


@rule("ir.range", "model", "IR spec: Models (ir_version MUST be present; a consumer supports up to its IR version)")
def ir_range(ctx, m, path, _):
    if m.ir_version <= 0:
        yield "ir_version", "the model has no ir_version (it is required)"
    elif m.ir_version > onnx.IR_VERSION:
        yield "ir_version", f"ir_version {m.ir_version} is newer than the newest supported ({onnx.IR_VERSION})"


def _type_features(tp):
    """(feature, IR version, elem_type or None) for a TypeProto, recursively."""
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        yield None, 0, getattr(tp, which).elem_type
    elif which == "sequence_type":
        yield "sequence type", 6, None
        yield from _type_features(tp.sequence_type.elem_type)
    elif which == "map_type":
        yield "map type", 6, tp.map_type.key_type
        yield from _type_features(tp.map_type.value_type)
    elif which == "optional_type":
        yield "optional type", 8, None
        yield from _type_features(tp.optional_type.elem_type)


@rule("ir.type", "type", _VER + " (sequence/map IR 6, optional IR 8, element types per their IR version)")
def type_gate(ctx, tp, path, _):
    for feature, need, elem in _type_features(tp):
        if feature and _too_old(ctx, need):
            yield path, f"the {feature} needs IR version {need}, the model declares {ctx.ir_version}"
        if elem:
            dt = dtypes.BY_ENUM.get(elem)
            if dt is None:
                yield path, f"unknown element type {elem}"
            elif _too_old(ctx, dt.ir_version):
                yield path, f"element type {dt.name} needs IR version {dt.ir_version}, the model declares " \
                            f"{ctx.ir_version}"


@rule("ir.tensor-type", "tensor", _VER + " (element types per their IR version)")
def tensor_gate(ctx, t, path, _):
    dt = dtypes.BY_ENUM.get(t.data_type)
    if dt is not None and _too_old(ctx, dt.ir_version):
        yield path, f"tensor {t.name!r} of {dt.name} needs IR version {dt.ir_version}, the model declares " \
                    f"{ctx.ir_version}"


@rule("ir.feature", "model", _VER + " (training_info IR 7, functions IR 8, function attribute defaults IR 9, "
      "overloads / function value_info / metadata_props IR 10, multi-device configuration IR 11)")
def feature_gates(ctx, m, path, _):
    def need(version, where, what):
        if _too_old(ctx, version):
            return where, f"{what} needs IR version {version}, the model declares {ctx.ir_version}"
        return None

    out = []
    if len(m.training_info):
        out.append(need(7, "training_info[0]", "training_info"))
    if len(m.configuration):
        out.append(need(11, "configuration", "multi-device configuration"))
    for i, f in enumerate(m.functions):
        p = f"functions[{i}]"
        out.append(need(8, p, f"model-local function {f.name!r}"))
        if len(f.attribute_proto):
            out.append(need(9, f"{p}.attribute_proto[{f.attribute_proto[0].name}]",
                            f"a default value for attribute {f.attribute_proto[0].name!r} of function {f.name!r}"))
        if f.overload:
            out.append(need(10, p, f"the overload of function {f.name!r}"))
        if len(f.value_info):
            out.append(need(10, f"{p}.value_info[{f.value_info[0].name}]", f"value_info in function {f.name!r}"))
        if len(f.metadata_props):
            out.append(need(10, p, f"metadata_props of function {f.name!r}"))
    from .model import _with_metadata

    for p, msg in _with_metadata(m):
        if p and not p.startswith("functions[") and len(getattr(msg, "metadata_props", ())):
            out.append(need(10, p, "metadata_props below the model"))
            break
    yield from (x for x in out if x)


@rule("ir.node-feature", "node", _VER + " (node overloads IR 10, node device configurations IR 11)")
def node_gates(ctx, node, path, scope):
    if node.overload and _too_old(ctx, 10):
        yield path, f"the overload {node.overload!r} of node {node.op_type} needs IR version 10, the model " \
                    f"declares {ctx.ir_version}"
    if len(node.device_configurations) and _too_old(ctx, 11):
        yield path, f"device configurations of node {node.op_type} need IR version 11, the model declares " \
                    f"{ctx.ir_version}"
