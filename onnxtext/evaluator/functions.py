"""Function calls: model-local functions (``ModelProto.functions``) and schema operators with a body.

A call node becomes a context kernel that runs the function body as a prepared plan. Bodies are
isolated (no outer scope): the call's inputs bind the function's formal inputs by position (absent
optional inputs bind ``None``), and ``ref_attr_name`` attributes in the body take the call's
attributes, or the function's declared defaults (``attribute_proto``), or the schema defaults.

Schema functions whose body depends on the call (``has_context_dependent_function``: the body differs
with input element types or with which optional inputs are present) are built with
``schema.get_context_dependent_function_with_opset_version`` on first run and cached per input types.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TypeProto

from .. import dtypes
from ..errors import EvalError
from .plan import Preparation, find_schema, prepare_graph
from .steps import CONTROL
from .registry import normalize_domain


def _body_graph(fproto: onnx.FunctionProto) -> onnx.GraphProto:
    """A GraphProto view of a function body (inputs/outputs as untyped value infos)."""
    g = onnx.GraphProto()
    g.name = fproto.name
    g.node.extend(fproto.node)
    for n in fproto.input:
        g.input.add().name = n
    for n in fproto.output:
        g.output.add().name = n
    return g


def _requested_outputs(fproto, node) -> list[str]:
    """The body's outputs the call asks for; an output the call leaves unnamed becomes "" (None), so
    the body's nodes computing only unrequested outputs are pruned (schema bodies may not even
    compute them)."""
    return [o if i < len(node.output) and node.output[i] else "" for i, o in enumerate(fproto.output)]


def _body_preparation(fproto, call_attrs: dict, info) -> Preparation:
    outer = info.prep
    opsets = dict(outer.opsets)
    opsets.update({normalize_domain(o.domain): o.version for o in fproto.opset_import})
    return Preparation(outer.evaluator, opsets, call_attrs, outer.local_functions)


class FunctionCall:
    """The kernel of a call node: runs the prepared body plan with the call's inputs."""

    def __init__(self, info, plan_for):
        self.info = info
        self.plan_for = plan_for  # args -> GraphPlan (cached inside)

    def __call__(self, ctx, *args):
        plan = self.plan_for(args)
        inputs = list(args) + [None] * (len(plan.input_names) - len(args))
        control = ctx.scope.get(CONTROL)  # the body is isolated from the caller's values, not from its run
        try:
            return tuple(plan.run_positional(inputs, {} if control is None else {CONTROL: control}))
        except KeyError as e:
            raise EvalError(f"function body of {self.info.describe()} did not compute output {e.args[0]!r}") \
                from None


def local_function_call(fproto: onnx.FunctionProto, attributes, info) -> FunctionCall:
    """Call of a model-local function; its body plan is prepared now, with this call's attributes."""
    call_attrs = {a.name: a for a in fproto.attribute_proto}
    call_attrs.update({a.name: a for a in attributes})
    plan = prepare_graph(_body_graph(fproto), _body_preparation(fproto, call_attrs, info),
                         outputs=_requested_outputs(fproto, info.node), path=_function_path(info, fproto))
    return FunctionCall(info, lambda args: plan)


def _function_path(info, fproto) -> str:
    """``functions[i]``: the checker-style path of a model-local function's body."""
    for i, f in enumerate(info.prep.evaluator.model.functions):
        if f.name == fproto.name and f.domain == fproto.domain and \
                getattr(f, "overload", "") == getattr(fproto, "overload", ""):
            return f"functions[{i}]"
    return f"{info.path}.function"


def _function_versions(schema) -> tuple[list[int], list[int]]:
    static = list(schema.function_opset_versions) if schema.has_function else []
    dependent = list(schema.context_dependent_function_opset_versions) \
        if schema.has_context_dependent_function else []
    return static, dependent


def schema_function_call(node, attributes, info):
    """Call of a schema operator through its function body, or None when it has none."""
    schema = find_schema(node.op_type, info.domain, info.opset)
    if schema is None:
        return None
    static, dependent = _function_versions(schema)
    usable = [v for v in static + dependent if v <= info.opset]
    if not usable:
        return None
    version = max(usable)
    call_attrs = {name: a.default_value for name, a in schema.attributes.items()
                  if a.default_value is not None and a.default_value.type != 0}
    call_attrs.update({a.name: a for a in attributes})
    if version in static:
        fproto = onnx.FunctionProto()
        fproto.ParseFromString(schema.get_function_with_opset_version(version))
        plan = prepare_graph(_body_graph(fproto), _body_preparation(fproto, call_attrs, info),
                             outputs=_requested_outputs(fproto, node), path=f"{info.path}.body")
        return FunctionCall(info, lambda args: plan)

    # context-dependent: the body is built for the actual input types on first use
    call_node = onnx.NodeProto()
    call_node.CopyFrom(node)
    del call_node.attribute[:]
    call_node.attribute.extend(a for a in attributes)
    node_bytes = call_node.SerializeToString()
    cache: dict[tuple, object] = {}

    def build(args, with_dims: bool):
        types = [_type_proto(a, with_dims).SerializeToString() for a in args]
        types += [TypeProto().SerializeToString()] * (len(node.input) - len(args))
        fproto = onnx.FunctionProto()
        fproto.ParseFromString(schema.get_context_dependent_function_with_opset_version(version, node_bytes, types))
        return fproto if fproto.node or fproto.output else None

    def plan_for(args):
        key = tuple(_type_key(a) for a in args)
        plan = cache.get(key)
        if plan is None:
            plan = cache.get((key, tuple(getattr(a, "shape", None) for a in args)))
        if plan is None:
            # most builders need element types and ranks only, so one body serves every size; a few
            # (e.g. kernel sizes read from a weight's shape) need the sizes: then cache per shape
            fproto = build(args, False)
            if fproto is None:
                fproto = build(args, True)
                key = (key, tuple(getattr(a, "shape", None) for a in args))
            if fproto is None:
                raise EvalError(f"{info.describe()}: onnx could not build the function body of "
                                f"{node.op_type} for these input types")
            plan = cache[key] = prepare_graph(_body_graph(fproto), _body_preparation(fproto, call_attrs, info),
                                              outputs=_requested_outputs(fproto, node), path=f"{info.path}.body")
        return plan

    return FunctionCall(info, plan_for)


def _type_key(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.ndim)
    if isinstance(v, list):
        return ("seq",) + (_type_key(v[0]) if v else ())
    return type(v).__name__


def _type_proto(v, with_dims: bool = False) -> TypeProto:
    """The TypeProto of a runtime value: element type and rank, and the sizes only ``with_dims``
    (a body built without sizes cannot depend on them, so it can be cached per type and rank)."""
    tp = TypeProto()
    if isinstance(v, np.ndarray):
        tp.tensor_type.elem_type = dtypes.from_numpy(v.dtype).enum
        shape = tp.tensor_type.shape
        for d in v.shape:
            dim = shape.dim.add()
            if with_dims:
                dim.dim_value = d
    elif isinstance(v, list):
        tp.sequence_type.elem_type.CopyFrom(_type_proto(v[0], with_dims) if v else TypeProto())
    elif v is None:
        pass
    return tp


__all__ = ["FunctionCall", "local_function_call", "schema_function_call"]
