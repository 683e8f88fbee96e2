"""Type and shape rules: node inputs that do not fit their operator, declared types that contradict what the
producing node makes, dimension symbols bound to two sizes.

One pass per graph (main graph, subgraphs, training graphs) walks the nodes in order with the types known so
far (graph inputs, initializers, outer scopes, earlier outputs) and asks :mod:`.inference` for each node's
output types. A graph's results are computed once and cached on the checker context; a node's subgraphs are
checked before the node, so that a mistake inside an ``If`` branch is reported at its own line and not a
second time at the ``If``. Function bodies have no input types and are not inferred here (calls to them are,
through onnx's function inference).
"""

from __future__ import annotations

from collections import ChainMap

from onnx import TensorProto, TypeProto

from . import operator_shapes, rule
from .inference import (Dimensions, better, constant_value, dims, elem_type, infer_node, inputs_text, reason,
                        subgraphs, type_text, whole_model_types)

_NODE = ("IR spec: Nodes / Operators (a node's input types MUST satisfy its operator's type constraints and "
         "shape rules; checked with onnx shape inference)")
_DECLARED = ("IR spec: Graphs / Nodes (a declared output or value_info type MUST agree with the type its "
             "producing node makes)")
_DIMENSION = "IR spec: Tensor Shapes (a dimension variable denotes one size throughout a model's graphs)"
#: operators whose inputs broadcast numpy-style (multidirectional broadcasting)
_BROADCASTING = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
                 "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Max",
                 "Min", "Sum", "Mean", "Where", "PRelu"}
#: constant inputs up to this many elements are handed to onnx's inference (Reshape's shape, Slice's starts...)
_DATA_ELEMENTS = 1024


def _results(ctx, scope, rule_id):
    state = getattr(ctx, "shape_state", None)
    if state is None:
        state = ctx.shape_state = ShapeState(ctx)
    if scope.kind != "graph":  # a function body: filled by the first call that gives it input types
        for r, p, m in state.results.get(scope.path, ()):
            if r == rule_id:
                yield p, m
        return
    if scope.path not in state.results:  # a top-level graph (subgraphs are done with their node)
        outer = {}
        if scope.path.startswith("training_info"):
            outer = state.initializer_types(ctx.model.graph)
        state.run_scope(scope.proto, scope.path, ChainMap(outer), ChainMap({}), scope.opsets)
    for r, p, m in state.results.get(scope.path, ()):
        if r == rule_id:
            yield p, m


@rule("type.node", "graph", _NODE)
def node_input_types(ctx, scope, path, _):
    yield from _results(ctx, scope, "type.node")


@rule("type.declared", "graph", _DECLARED)
def declared_types(ctx, scope, path, _):
    yield from _results(ctx, scope, "type.declared")


@rule("type.dimension", "graph", _DIMENSION)
def dimension_symbols(ctx, scope, path, _):
    yield from _results(ctx, scope, "type.dimension")


def tensor_type(t: TensorProto) -> TypeProto:
    tp = TypeProto()
    tp.tensor_type.elem_type = t.data_type
    shape = tp.tensor_type.shape
    for d in t.dims:
        shape.dim.add().dim_value = d
    return tp


def _size(t: TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


class ShapeState:
    """What one check run knows about types: onnx's whole-model result, dimension classes, results per graph."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.model = ctx.model
        self.whole = whole_model_types(ctx.model)
        self.dims = Dimensions()
        self.results: dict[str, list] = {}
        self.scope_types: dict[str, dict] = {}  # graph path -> the types of its own values
        self.opset_list = list(ctx.model.opset_import)
        self.function_index = {(f.domain, f.name, f.overload): i for i, f in enumerate(ctx.model.functions)}
        self.functions_done: set = set()  # bodies inferred once, at their first call with known input types

    def initializer_types(self, g) -> dict:
        return {t.name: tensor_type(t) for t in g.initializer}

    def where(self, path: str, label: str) -> str:
        line = self.ctx.spans.locate(path)[0]
        return f"{label}, line {line}" if line else f"{label} at {path}"

    def run_scope(self, g, path: str, outer: ChainMap, outer_data: ChainMap, opsets: dict) -> dict:
        """Check one graph; returns its own value types (for the node that owns it)."""
        out = self.results.setdefault(path, [])
        # a top-level graph looks names up in plain dicts (most of the time goes there); subgraphs chain
        types = outer.new_child() if any(outer.maps) else {}
        data = outer_data.new_child() if any(outer_data.maps) else {}
        whole = self.whole.get(path, {})
        declared = {}
        for v in g.input:
            t = better(v.type if v.HasField("type") else None, whole.get(v.name))
            if t is not None:
                types[v.name] = t
        for t in g.initializer:
            types[t.name] = tensor_type(t)
            if _size(t) <= _DATA_ELEMENTS and t.data_location != TensorProto.EXTERNAL:
                data[t.name] = t
        for s in g.sparse_initializer:
            tp = tensor_type(s.values)
            del tp.tensor_type.shape.dim[:]
            for d in s.dims:
                tp.tensor_type.shape.dim.add().dim_value = d
            types[s.values.name] = tp
        for key in ("value_info", "output"):
            for v in getattr(g, key):
                if v.HasField("type") and v.type.WhichOneof("value"):
                    declared[v.name] = (v.type, f"{path}.{key}[{v.name}]")
        for i, node in enumerate(g.node):
            self.run_node(node, f"{path}.node[{i}]", types, data, declared, whole, opsets, out)
        for v in g.output:
            if v.name not in types and v.name in declared:
                types[v.name] = declared[v.name][0]
        own = types.maps[0] if isinstance(types, ChainMap) else types
        self.scope_types[path] = own
        return own

    def run_node(self, node, npath, types, data, declared, whole, opsets, out) -> None:
        inside = False  # a subgraph has errors of its own: the node's inference would only repeat them
        branches = []
        for sp, sg in subgraphs(node, npath):
            own = self.run_scope(sg, sp, types if isinstance(types, ChainMap) else ChainMap(types),
                                 data if isinstance(data, ChainMap) else ChainMap(data), opsets)
            inside |= self._has_errors(sp)
            branches.append((sp.rsplit("[", 1)[-1].split("]")[0], [(v.name, own.get(v.name)) for v in sg.output]))
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            t = constant_value(node)
            if t is not None and _size(t) <= _DATA_ELEMENTS:
                data[node.output[0]] = t
        body = self._function_body(node, npath, types, opsets)
        try:
            inferred = infer_node(node, types, data, opsets, self.opset_list, self.model.ir_version,
                                  self.ctx.functions)
            if inferred is None and body:
                inferred = body
            why = None if inferred is None else operator_shapes.problem(node, types, data)
        except Exception as e:  # noqa: BLE001 - onnx's InferenceError / ValidationError: the node's mistake
            inferred, why = None, reason(e, node.op_type)
        if why and not inside:
            shown = inputs_text(node, types)
            if branches and node.op_type == "If":
                shown = "; ".join(f"{b} makes " + ", ".join(type_text(t) for _, t in outs) for b, outs in branches)
            out.append(("type.node", npath + ".op_type", f"{node.op_type}: {why}: {shown}"))
        inferred = inferred or {}
        if not inside:
            self._inner_dimensions(node, npath, types, out)
            if inferred and node.op_type == "Concat" and node.domain in ("", "ai.onnx"):
                self._concat_dimensions(node, npath, types, out)
            if inferred and node.op_type in _BROADCASTING and node.domain in ("", "ai.onnx"):
                self._broadcast_dimensions(node, npath, types, out)
        for o in node.output:
            if not o:
                continue
            t = inferred.get(o)
            d = declared.get(o)
            agrees = True
            if d is not None and t is not None:
                agrees = self._compare(o, d, t, node, npath, out)
            best = better(t, whole.get(o)) if agrees else t
            if d is not None and agrees:
                best = better(best, d[0]) if best is None or elem_type(best) == elem_type(d[0]) else best
            if best is not None:
                types[o] = best

    def _function_body(self, node, npath, types, opsets) -> dict | None:
        """A call of a model-local function: infer its body once with this call's input types, reporting the
        body's mistakes at their own lines; returns the call's output types found that way."""
        key = (node.domain, node.op_type, node.overload)
        index = self.function_index.get(key)
        if index is None or key in self.functions_done or any(x and x not in types for x in node.input):
            return None
        self.functions_done.add(key)
        from .walk import opset_map

        f = self.model.functions[index]
        fpath = f"functions[{index}]"
        out = self.results.setdefault(fpath, [])
        before = len(out)
        ftypes = {formal: types[x] for formal, x in zip(f.input, node.input) if x}
        fopsets = opset_map(f.opset_import, opsets)
        values = {a.name: a for a in f.attribute_proto}  # defaults, then the call's own values
        values.update((a.name, a) for a in node.attribute)
        for i, body_node in enumerate(f.node):
            self.run_node(_resolved(body_node, values), f"{fpath}.node[{i}]", ftypes, {}, {}, {}, fopsets, out)
        if len(out) > before:  # positions are looked up only for messages
            called = self.where(npath, f"called by {node.op_type}")
            out[before:] = [(r, p, f"{m} ({called})") for r, p, m in out[before:]]
        return {o: ftypes[formal] for o, formal in zip(node.output, f.output) if o and formal in ftypes}

    def _has_errors(self, path: str) -> bool:
        return any(p.startswith(path) and r != "type.dimension" for k, items in self.results.items()
                   if k.startswith(path) for r, p, _ in items)

    def _compare(self, name, declared, t, node, npath, out) -> None:
        d, dpath = declared
        kd, kt = d.WhichOneof("value"), t.WhichOneof("value")
        dd, dt = dims(d), dims(t)
        if kd != kt or (kd == "tensor_type" and (
                (elem_type(d) and elem_type(t) and elem_type(d) != elem_type(t))
                or (dd is not None and dt is not None and (
                    len(dd) != len(dt)
                    or any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(dd, dt)))))):
            out.append(("type.declared", dpath, f"{name!r} is declared {type_text(d)}, but "
                                                f"{self.where(npath, node.op_type)} makes {type_text(t)}"))
            return False
        if dd is not None and dt is not None:
            for a, b in zip(dd, dt):
                problem = self.dims.unify(a, b, lambda: self.where(dpath, f"{name!r}"))
                if problem:
                    out.append(("type.dimension", dpath, problem))
        return True

    def _concat_dimensions(self, node, npath, types, out) -> None:
        """Concat: off the axis, the inputs' dimensions are one size (symbols included)."""
        shapes = [dims(types.get(x)) for x in node.input if x]
        if not shapes or any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
            return
        rank = len(shapes[0])
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        axis = axis + rank if axis < 0 else axis
        for k in range(rank):
            if k == axis:
                continue
            column = [s[k] for s in shapes]
            for d in column[1:]:
                problem = self.dims.unify(column[0], d, lambda: self.where(npath, node.op_type))
                if problem:
                    out.append(("type.dimension", npath + ".op_type", f"Concat: {problem}: "
                                                                       f"{inputs_text(node, types)}"))

    def _broadcast_dimensions(self, node, npath, types, out) -> None:
        """A symbol aligned with a size other than 1 is 1 or that size (``float[N] + float[3]``)."""
        shapes = [dims(types.get(x)) for x in node.input if x]
        shapes = [s for s in shapes if s]
        rank = max((len(s) for s in shapes), default=0)
        for k in range(1, rank + 1):
            column = [s[-k] for s in shapes if len(s) >= k]
            sizes = {d for d in column if isinstance(d, int) and d != 1}
            if len(sizes) != 1:
                continue
            (size,) = sizes
            for d in column:
                if isinstance(d, str):
                    problem = self.dims.broadcasts(d, size, lambda: self.where(npath, node.op_type))
                    if problem:
                        out.append(("type.dimension", npath + ".op_type", problem))

    def _inner_dimensions(self, node, npath, types, out) -> None:
        """MatMul / Gemm: the inner dimensions are one size, also when they are symbols."""
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
            return
        a, b = dims(types.get(node.input[0])), dims(types.get(node.input[1]))
        if not a or not b:
            return
        ta = tb = 0
        if node.op_type == "Gemm":
            for at in node.attribute:
                if at.name == "transA":
                    ta = at.i
                elif at.name == "transB":
                    tb = at.i
            if len(a) != 2 or len(b) != 2:
                return
            k1, k2 = a[0 if ta else 1], b[1 if tb else 0]
        else:
            k1, k2 = a[-1], (b[-2] if len(b) >= 2 else b[0])
        if isinstance(k1, int) and isinstance(k2, int):
            return  # onnx's inference compares sizes
        problem = self.dims.unify(k1, k2, lambda: self.where(npath, node.op_type))
        if problem:
            out.append(("type.dimension", npath + ".op_type", f"{node.op_type}: inner dimensions differ: {problem}: "
                                                 f"{inputs_text(node, types)}"))


def _resolved(node, values: dict):
    """A function body node with its attribute references (``@alpha``) replaced by the call's values."""
    if not any(a.ref_attr_name for a in node.attribute):
        return node
    import onnx

    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    del copy.attribute[:]
    for a in node.attribute:
        if a.ref_attr_name:
            value = values.get(a.ref_attr_name)
            if value is None:
                continue  # not given and no default: the attribute is absent
            a2 = copy.attribute.add()
            a2.CopyFrom(value)
            a2.name = a.name
        else:
            copy.attribute.add().CopyFrom(a)
    return copy


def infer_types(model, subgraphs: bool = False) -> dict:
    """Value name -> inferred ``TypeProto`` for the values of a model's main graph (inputs, initializers, node
    outputs), as ``check`` finds them: onnx's inference node by node, dimension symbols kept (``float[B, 3]``).
    Values whose type cannot be inferred are absent. With ``subgraphs``: graph path (``graph``,
    ``graph.node[3].attribute[body].g``) -> such a table, for the main graph and every subgraph.
    Used by the REPL and ``print --shapes``."""
    from .walk import Context, opset_map

    ctx = Context(model)
    state = ShapeState(ctx)
    main = state.run_scope(model.graph, "graph", ChainMap({}), ChainMap({}), opset_map(model.opset_import))
    return {p: dict(t) for p, t in state.scope_types.items()} if subgraphs else dict(main)


#: the doc comment ``print --shapes`` puts on each value_info entry it adds
INFERRED_MARK = "inferred by onnxtext print --shapes"


def add_inferred_value_info(model) -> int:
    """Add a ``value_info`` entry, marked with :data:`INFERRED_MARK`, for each node output of the main graph and
    its subgraphs whose type is inferred and not declared yet; returns how many were added. The model changes
    only by these entries, so its text round-trips and runs as before."""
    tables = infer_types(model, subgraphs=True)

    def annotate(g, path) -> int:
        types = tables.get(path, {})
        declared = {v.name for v in g.value_info} | {v.name for v in g.output} | {v.name for v in g.input}
        added = 0
        for i, node in enumerate(g.node):
            for sp, sg in subgraphs(node, f"{path}.node[{i}]"):
                added += annotate(sg, sp)
            for o in node.output:
                tp = types.get(o)
                if o and o not in declared and tp is not None and tp.WhichOneof("value"):
                    v = g.value_info.add(name=o, doc_string=INFERRED_MARK)
                    v.type.CopyFrom(tp)
                    declared.add(o)
                    added += 1
        return added

    return annotate(model.graph, "graph")
