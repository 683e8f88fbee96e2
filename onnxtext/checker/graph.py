"""Graph rules: single assignment, order, scoping, outputs, names, top-level types (IR spec: Graphs,
Names Within a Graph, Nodes / Input and Output Values)."""

from __future__ import annotations

from . import rule

_GRAPHS = "IR spec: Graphs"
_NAMES = "IR spec: Names Within a Graph"


@rule("graph.ssa", "graph", _GRAPHS + " (a value name is assigned once: static single assignment)")
def single_assignment(ctx, scope, path, _):
    g = scope.proto
    origin = {}
    for n in scope.inputs:
        origin.setdefault(n, f"{path}.input[{n}]")
    for t in scope.initializers:
        # an initializer with the name of an input is its default value (allowed)
        origin.setdefault(t, f"{path}.initializer[{t}]")
    for i, node in enumerate(g.node):
        for j, o in enumerate(node.output):
            if not o:
                continue
            where = f"{path}.node[{i}].output[{j}]"
            if o in origin:
                yield where, f"value {o!r} is assigned twice: by node[{i}] ({node.op_type}) and by {origin[o]}"
            else:
                origin[o] = f"node[{i}] ({node.op_type})"


def _used_names(node):
    """Inputs of a node, plus the outer-scope names its subgraphs use (implicit inputs)."""
    from .walk import iter_subgraphs

    names = [(j, x) for j, x in enumerate(node.input) if x]
    for _, g in iter_subgraphs(node):
        names += [(None, x) for x in sorted(_free_names(g))]
    return names


def _free_names(g) -> set:
    """Names a graph reads from enclosing scopes."""
    from .walk import iter_subgraphs

    defined = {v.name for v in g.input} | {t.name for t in g.initializer}
    defined |= {s.values.name for s in g.sparse_initializer}
    free = set()
    for n in g.node:
        for x in n.input:
            if x and x not in defined:
                free.add(x)
        for _, sub in iter_subgraphs(n):
            free |= {x for x in _free_names(sub) if x not in defined}
        defined.update(n.output)
    free |= {v.name for v in g.output if v.name not in defined}
    return free


@rule("graph.topological", "graph", _GRAPHS + " (nodes MUST be topologically sorted)")
def topological_order(ctx, scope, path, _):
    g = scope.proto
    produced_at = {}
    for i, node in enumerate(g.node):
        for o in node.output:
            if o:
                produced_at.setdefault(o, i)
    early = set(scope.inputs) | set(scope.initializers)
    for i, node in enumerate(g.node):
        for j, x in _used_names(node):
            k = produced_at.get(x)
            if x not in early and k is not None and k >= i and x not in scope.outer:  # outer: shadowing
                where = f"{path}.node[{i}]" + (f".input[{j}]" if j is not None else "")
                via = "" if j is not None else " (inside a subgraph)"
                yield where, (f"node[{i}] ({node.op_type}) uses {x!r}{via} before node[{k}] "
                              f"({g.node[k].op_type}) produces it: nodes are not topologically sorted")


@rule("graph.undefined", "graph", _GRAPHS + " (every input is a graph input, an initializer, an earlier node's "
      "output or, in a subgraph, a name of an enclosing scope)")
def defined_before_use(ctx, scope, path, _):
    from .. import schemas

    known = scope.defined | scope.outer
    for i, node in enumerate(scope.proto.node):
        for j, x in enumerate(node.input):
            if x and x not in known:
                near = schemas.suggest(x, known)
                yield f"{path}.node[{i}].input[{j}]", (f"node[{i}] ({node.op_type}) uses undefined value {x!r}"
                                                       + (f"; did you mean {near!r}?" if near else ""))


@rule("graph.shadowing", "graph", _NAMES + " (a subgraph MUST NOT reuse a name of an enclosing scope)")
def no_shadowing(ctx, scope, path, _):
    if not scope.subgraph:
        return
    for n in scope.inputs:
        if n in scope.outer:
            yield f"{path}.input[{n}]", f"subgraph input {n!r} shadows a value of an enclosing graph"
    for n in scope.initializers:
        if n in scope.outer:
            yield f"{path}.initializer[{n}]", f"subgraph initializer {n!r} shadows a value of an enclosing graph"
    for i, node in enumerate(scope.proto.node):
        for j, o in enumerate(node.output):
            if o and o in scope.outer:
                yield f"{path}.node[{i}].output[{j}]", (f"node[{i}] ({node.op_type}) output {o!r} shadows a "
                                                        "value of an enclosing graph")


@rule("graph.output-produced", "graph", _GRAPHS + " (each graph output is produced by a node, or is an input or "
      "initializer)")
def outputs_produced(ctx, scope, path, _):
    known = scope.defined | scope.outer
    for n in scope.outputs:
        if n and n not in known:
            what = "function" if scope.kind == "function" else "graph"
            yield f"{path}.output[{n}]", f"{what} output {n!r} is not produced by any node, input or initializer"


@rule("graph.unique-names", "graph", _NAMES + " (within a namespace each name MUST be unique)")
def unique_names(ctx, scope, path, _):
    g = scope.proto
    for key, names in (("input", scope.inputs), ("output", scope.outputs)):
        seen = set()
        for n in names:
            if n in seen:
                yield f"{path}.{key}[{n}]", f"{key} {n!r} is listed twice"
            seen.add(n)
    seen = set()
    for n in scope.initializers:
        if n in seen:
            yield f"{path}.initializer[{n}]", f"initializer {n!r} is defined twice"
        seen.add(n)
    nodes = {}
    for i, node in enumerate(g.node):
        if node.name:
            if node.name in nodes:
                yield (f"{path}.node[{i}]", f"node name {node.name!r} is used by node[{nodes[node.name]}] and "
                       f"node[{i}] (onnx.checker and onnxruntime accept it; an error under --strict)", "tolerated")
            nodes.setdefault(node.name, i)
        attrs = set()
        for a in node.attribute:
            if a.name in attrs:
                yield f"{path}.node[{i}].attribute[{a.name}]", f"node[{i}] ({node.op_type}) sets attribute " \
                                                              f"{a.name!r} twice"
            attrs.add(a.name)
    if scope.kind == "graph":
        seen = set()
        for v in g.value_info:
            if v.name in seen:
                yield f"{path}.value_info[{v.name}]", f"value_info {v.name!r} is given twice"
            seen.add(v.name)


@rule("graph.empty-name", "graph", _NAMES + " (names of inputs, outputs and initializers are non-empty)")
def empty_names(ctx, scope, path, _):
    for key, names in (("input", scope.inputs), ("output", scope.outputs), ("initializer", scope.initializers)):
        for k, n in enumerate(names):
            if not n:
                # the path names the empty name (``input[]``): that is what the text's spans know
                yield f"{path}.{key}[]", f"{key} #{k} of {scope.kind} {getattr(scope.proto, 'name', '')!r} " \
                                         "has an empty name"


def _type_problem(tp, need_shape=True):
    """Why a top-level value type is incomplete, or None (element types of containers need no shape)."""
    which = tp.WhichOneof("value")
    if which is None:
        return "has no type"
    if which in ("tensor_type", "sparse_tensor_type"):
        t = getattr(tp, which)
        if not t.elem_type:
            return "has no element type"
        if need_shape and not t.HasField("shape"):
            return "has no shape (the rank must be given, e.g. float[N] or float for a scalar)"
        return None
    if which == "sequence_type":
        return _type_problem(tp.sequence_type.elem_type, False) if tp.sequence_type.HasField("elem_type") else \
            "is a sequence without an element type"
    if which == "optional_type":
        return _type_problem(tp.optional_type.elem_type, False) if tp.optional_type.HasField("elem_type") else \
            "is an optional without an element type"
    if which == "map_type":
        if not tp.map_type.key_type:
            return "is a map without a key type"
        return _type_problem(tp.map_type.value_type, False)
    return None


@rule("graph.io-type", "graph", "IR spec: Graphs (the inputs and outputs of a top-level graph MUST have types, "
      "tensor types with element type and rank)")
def top_level_types(ctx, scope, path, _):
    if scope.kind != "graph" or not scope.top:
        return
    inits = set(scope.initializers)
    g = scope.proto
    for key, values in (("input", g.input), ("output", g.output)):
        for v in values:
            if key == "input" and v.name in inits and not v.HasField("type"):
                continue  # an initializer's type comes from the tensor
            problem = _type_problem(v.type) if v.HasField("type") else "has no type"
            if problem:
                yield f"{path}.{key}[{v.name}]", f"top-level graph {key} {v.name!r} {problem}"


@rule("graph.subgraph-initializer-input", "graph", "IR spec: Graphs (IR >= 4: an initializer of a subgraph MUST "
      "NOT have the name of one of its inputs)")
def subgraph_initializer_not_input(ctx, scope, path, _):
    if not scope.subgraph or ctx.ir_version < 4:
        return
    ins = set(scope.inputs)
    for n in scope.initializers:
        if n in ins:
            yield f"{path}.initializer[{n}]", f"subgraph initializer {n!r} is also a subgraph input"
