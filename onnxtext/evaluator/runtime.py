"""Execution of ONNX graphs with numpy kernels (first version: straight-line graphs and subgraphs).

An :class:`Evaluator` prepares a plan once (kernels resolved, attributes converted, schema defaults
filled) and runs it many times. Values are numpy arrays, lists (sequences), dicts (maps) or None.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import AttributeProto, defs

from .. import tensors
from ..errors import EvalError
from .registry import lookup, normalize_domain

_A = AttributeProto


def attribute_value(attr: AttributeProto, base_dir: str | None = None):
    """Python value of an AttributeProto (see the registry's calling convention)."""
    t = attr.type
    if t == _A.FLOAT:
        return attr.f
    if t == _A.INT:
        return attr.i
    if t == _A.STRING:
        return _text(attr.s)
    if t == _A.TENSOR:
        return tensors.to_array(attr.t, base_dir)
    if t == _A.GRAPH:
        return attr.g
    if t == _A.SPARSE_TENSOR:
        return attr.sparse_tensor
    if t == _A.TYPE_PROTO:
        return attr.tp
    if t == _A.FLOATS:
        return list(attr.floats)
    if t == _A.INTS:
        return list(attr.ints)
    if t == _A.STRINGS:
        return [_text(s) for s in attr.strings]
    if t == _A.TENSORS:
        return [tensors.to_array(x, base_dir) for x in attr.tensors]
    if t == _A.GRAPHS:
        return list(attr.graphs)
    if t == _A.SPARSE_TENSORS:
        return list(attr.sparse_tensors)
    if t == _A.TYPE_PROTOS:
        return list(attr.type_protos)
    raise EvalError(f"attribute {attr.name!r} has no type")


def _text(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


_DEFAULTS: dict[tuple[str, str, int], dict] = {}


def schema_defaults(op: str, domain: str, version: int) -> dict:
    """Attribute defaults declared by the onnx.defs schema of ``domain::op`` at opset ``version``."""
    key = (op, domain, version)
    d = _DEFAULTS.get(key)
    if d is None:
        d = {}
        try:
            schema = defs.get_schema(op, version, domain)
        except Exception:  # not a schema op (model-local function, custom domain)
            schema = None
        if schema is not None:
            for name, a in schema.attributes.items():
                if a.default_value is not None and a.default_value.type != 0:
                    d[name] = attribute_value(a.default_value)
        _DEFAULTS[key] = d
    return d


class KernelContext:
    """What a ``context=True`` kernel sees: the node, its opset, and a way to run subgraphs."""

    __slots__ = ("node", "opset", "evaluator", "scope", "num_outputs")

    def __init__(self, node, opset, evaluator, scope):
        self.node = node
        self.opset = opset
        self.evaluator = evaluator
        self.scope = scope
        self.num_outputs = len(node.output)

    @property
    def rng(self):
        return self.evaluator.rng

    def run_graph(self, graph, inputs, scope=None):
        """Run a subgraph with positional ``inputs`` (outer-scope values visible); returns its outputs."""
        return self.evaluator._run_graph(graph, list(inputs), self.scope if scope is None else scope)


class Evaluator:
    """Runs an ONNX model with numpy. ``Evaluator(model).run(output_names, feeds) -> list``."""

    def __init__(self, model, *, opsets: dict[str, int] | None = None, seed: int | None = None):
        base_dir = None
        if isinstance(model, (str, os.PathLike)) and not str(model).lstrip().startswith(("<", "{")) and \
                os.path.exists(model):
            base_dir = os.path.dirname(os.path.abspath(model))
            model = onnx.load(str(model), load_external_data=False)
        self.model = model
        self.base_dir = base_dir
        self.opsets = {normalize_domain(o.domain): o.version for o in model.opset_import}
        if opsets:
            self.opsets.update({normalize_domain(k): v for k, v in opsets.items()})
        self.rng = np.random.default_rng(seed)
        g = model.graph
        self.input_names = [i.name for i in g.input if i.name not in {t.name for t in g.initializer}]
        self.output_names = [o.name for o in g.output]

    def run(self, output_names, feeds: dict):
        scope = {}
        values = self._run_graph(self.model.graph, None, scope, feeds=feeds, full=True)
        names = output_names or self.output_names
        missing = [n for n in names if n not in values]
        if missing:
            raise EvalError(f"no value named {missing[0]!r} in the graph")
        return [values[n] for n in names]

    def _run_graph(self, graph, inputs, outer, feeds=None, full=False):
        env = dict(outer)
        for init in graph.initializer:
            env[init.name] = tensors.to_array(init, self.base_dir)
        if feeds is not None:
            env.update(feeds)
        else:
            for vi, v in zip(graph.input, inputs):
                env[vi.name] = v
        for node in graph.node:
            self._run_node(node, env)
        if full:
            return env
        return [env[o.name] for o in graph.output]

    def _run_node(self, node, env):
        domain = normalize_domain(node.domain)
        version = self.opsets.get(domain)
        if version is None:
            raise EvalError(f"node {node.name or node.op_type!r}: domain {node.domain!r} is not imported")
        k = lookup(node.op_type, domain, version)
        if k is None:
            raise EvalError(f"no kernel for {node.domain or 'ai.onnx'}::{node.op_type} at opset {version}")
        attrs = dict(schema_defaults(node.op_type, domain, version))
        for a in node.attribute:
            attrs[a.name] = attribute_value(a, self.base_dir)
        args = [env[n] if n else None for n in node.input]
        try:
            if k.context:
                out = k.fn(KernelContext(node, version, self, env), *args, **attrs)
            else:
                out = k.fn(*args, **attrs)
        except EvalError:
            raise
        except Exception as e:
            shapes = ", ".join(f"{getattr(a, 'dtype', type(a).__name__)}{list(getattr(a, 'shape', []))}"
                               for a in args)
            raise EvalError(f"node {node.name!r} ({node.op_type}) failed on inputs ({shapes}): "
                            f"{type(e).__name__}: {e}") from e
        outs = out if isinstance(out, tuple) else (out,)
        for name, v in zip(node.output, outs):
            if name:
                env[name] = v
