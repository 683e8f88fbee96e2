"""Type and shape inference for the checker: every node's output types from its input types, node by node.

The engine is onnx's own shape inference (the ecosystem's reference), used in two ways:

* once on the whole model (``onnx.shape_inference.infer_shapes`` with data propagation, not strict), on a
  light copy whose large initializers have no values: this gives the best types onnx can find, through
  ``Shape -> Gather -> Concat -> Reshape`` chains, model-local functions and subgraph bodies;
* then per node (``infer_node_outputs``) in graph order, from the types found so far, so that a failure
  belongs to one node (and so to one text line) and a declared type can be compared with what the node
  really makes. A node whose input types are unknown is skipped: one mistake does not cascade.

On top of onnx, :class:`Dimensions` unifies dimension symbols across the model (``N`` in two inputs is
one N; a ``MatMul`` of ``[N, K]`` by ``[4, 2]`` binds K to 4) and reports a symbol bound to two values once.
Results are cached on the checker context per graph path; the rules in :mod:`.shapes` report them.
"""

from __future__ import annotations

import re

import onnx
import onnx.shape_inference
from onnx import AttributeProto, TypeProto

from .. import schemas

#: initializers above this many elements lose their values in the whole-model pass (shapes need none)
_LIGHT_ELEMENTS = 1024


# ---------------------------------------------------------------------------------------------- text of types
def type_text(tp: TypeProto | None) -> str:
    """``float[N, 4]`` for a tensor type, ``?`` when unknown."""
    if tp is None or tp.WhichOneof("value") is None:
        return "?"
    from ..printing.printer import Printer

    try:
        return Printer(width=10 ** 9).print_type(tp)
    except Exception:  # noqa: BLE001 - a malformed type is reported by the type rules, not here
        return "?"


def elem_type(tp: TypeProto | None) -> int:
    return tp.tensor_type.elem_type if tp is not None and tp.WhichOneof("value") == "tensor_type" else 0


def dims(tp: TypeProto | None):
    """The dimensions of a tensor type (ints, symbol strings or None), None when the rank is unknown."""
    if tp is None or tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    out = []
    for d in tp.tensor_type.shape.dim:
        w = d.WhichOneof("value")
        out.append(d.dim_value if w == "dim_value" else d.dim_param if w == "dim_param" else None)
    return out


def _known(tp: TypeProto | None) -> int:
    """How much a type says: 0 nothing, then element type, rank, and one point per known dimension."""
    if tp is None:
        return 0
    which = tp.WhichOneof("value")
    if which != "tensor_type":
        return 0 if which is None else 1
    tt = tp.tensor_type
    n = 1 if tt.elem_type else 0
    if tt.HasField("shape"):
        n += 1
        for d in tt.shape.dim:
            if d.WhichOneof("value") is not None:
                n += 1
    return n


def better(a: TypeProto | None, b: TypeProto | None) -> TypeProto | None:
    """The more informative of two types of the same value (``a`` on ties)."""
    return b if _known(b) > _known(a) else a


# ---------------------------------------------------------------------------------------------- dimensions
class Dimensions:
    """Union-find over dimension symbols; each class may be bound to one concrete size, and limited by
    broadcasting to a set of sizes (``float[N] + float[3]``: N is 1 or 3)."""

    def __init__(self):
        self.parent: dict[str, str] = {}
        self.value: dict[str, tuple[int, str]] = {}  # root -> (size, where it was bound)
        self.allowed: dict[str, tuple[frozenset, int, object]] = {}  # root -> (sizes, the size broadcast, where)
        self.reported: set = set()

    def broadcasts(self, symbol: str, size: int, where) -> str | None:
        """``symbol`` broadcasts against ``size`` (not 1): it is 1 or ``size``; a message when it cannot be."""
        r = self.find(symbol)
        sizes = frozenset((1, size))
        old = self.allowed.get(r)
        self.allowed[r] = (sizes if old is None else old[0] & sizes, size, where) if old is None else \
            (old[0] & sizes, old[1], old[2])
        return self._check_allowed(symbol, r)

    def _check_allowed(self, symbol: str, root: str) -> str | None:
        bound, allowed = self.value.get(root), self.allowed.get(root)
        if bound is None or allowed is None or bound[0] in allowed[0]:
            return None
        key = (symbol, bound[0], "broadcast")
        if key in self.reported:
            return None
        self.reported.add(key)
        places = [w() if callable(w) else w for w in (bound[1], allowed[2])]
        can = " or ".join(str(s) for s in sorted(allowed[0])) or "nothing"
        return (f"dimension {symbol} cannot be {bound[0]} ({places[0]}): it broadcasts against {allowed[1]} "
                f"({places[1]}), so it is {can}")

    def find(self, s: str) -> str:
        while self.parent.get(s, s) != s:
            s = self.parent[s]
        return s

    def unify(self, a, b, where) -> str | None:
        """Say that two dimensions are equal; a message when that cannot hold (each conflict once). ``where``
        describes the place (a string, or a function giving it: positions are looked up only for messages)."""
        if a is None or b is None or a == b:
            return None
        if isinstance(a, int) and isinstance(b, int):
            return None  # two sizes: the caller compares them and says so in its own words
        if isinstance(a, int):
            a, b = b, a
        ra = self.find(a)
        if isinstance(b, int):
            bound = self.value.get(ra)
            if bound is None:
                self.value[ra] = (b, where)
                return self._check_allowed(a, ra)
            if bound[0] == b:
                return None
            return self._conflict(a, bound, (b, where))
        rb = self.find(b)
        if ra == rb:
            return None
        va, vb = self.value.get(ra), self.value.get(rb)
        self.parent[rb] = ra
        if rb in self.allowed:
            other = self.allowed.pop(rb)
            mine = self.allowed.get(ra)
            self.allowed[ra] = other if mine is None else (mine[0] & other[0], mine[1], mine[2])
        if vb is not None:
            if va is None:
                self.value[ra] = vb
            elif va[0] != vb[0]:
                return self._conflict(f"{a} (= {b})", va, vb)
        return self._check_allowed(a, ra)

    def _conflict(self, symbol: str, first, second) -> str | None:
        key = (symbol.split(" ")[0], first[0], second[0])
        if key in self.reported:
            return None
        self.reported.add(key)
        places = [w() if callable(w) else w for w in (first[1], second[1])]
        return f"dimension {symbol} cannot be both {first[0]} ({places[0]}) and {second[0]} ({places[1]})"


# ---------------------------------------------------------------------------------------------- whole model
def _light_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model without the values of its large main-graph initializers (never copied: a model of gigabytes
    costs no second copy), and of large subgraph initializers."""
    light = onnx.ModelProto()
    for fd, value in model.ListFields():
        if fd.name != "graph":
            (getattr(light, fd.name).extend(value) if fd.is_repeated else
             getattr(light, fd.name).CopyFrom(value) if fd.message_type is not None else setattr(light, fd.name, value))
    g, src = light.graph, model.graph
    for fd, value in src.ListFields():
        if fd.name != "initializer":
            getattr(g, fd.name).extend(value) if fd.is_repeated else setattr(g, fd.name, value) \
                if fd.message_type is None else getattr(g, fd.name).CopyFrom(value)
    for t in src.initializer:
        if _elements(t) > _LIGHT_ELEMENTS:
            g.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims)
        else:
            g.initializer.add().CopyFrom(t)
    for sub in _graphs(g):
        if sub is not g:
            for t in sub.initializer:
                if _elements(t) > _LIGHT_ELEMENTS:
                    for key in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                                "uint64_data", "string_data"):
                        t.ClearField(key)
    return light


def _elements(t) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


def _graphs(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)):
                yield from _graphs(sub)


def subgraphs(node, path: str):
    """(path, GraphProto) of each graph attribute of a node, with checker paths."""
    for a in node.attribute:
        if a.HasField("g"):
            yield f"{path}.attribute[{a.name}].g", a.g
        for k, g in enumerate(a.graphs):
            yield f"{path}.attribute[{a.name}].graphs[{k}]", g


def whole_model_types(model: onnx.ModelProto) -> dict[str, dict[str, TypeProto]]:
    """Graph path -> {value name: type} as onnx's whole-model inference finds them ({} when it fails)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(_light_copy(model), strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - onnx's inference gives up on some models; the per-node pass remains
        return {}
    out: dict = {}

    def index(g, path):
        table = out.setdefault(path, {})
        for v in list(g.input) + list(g.value_info) + list(g.output):
            if v.HasField("type"):
                table[v.name] = better(table[v.name], v.type) if v.name in table else v.type
        for i, n in enumerate(g.node):
            for sp, sub in subgraphs(n, f"{path}.node[{i}]"):
                index(sub, sp)

    index(inferred.graph, "graph")
    return out


# ---------------------------------------------------------------------------------------------- messages
_PREFIX = re.compile(r"\[(?:Shape|Type)InferenceError\]\s*|\(op_type:[^)]*\):\s*|Inference error\(s\):\s*")
_REASONS = [  # onnx's words -> ours (first match wins); the types of the inputs follow the reason
    (re.compile(r"Incompatible dimensions for matrix multiplication"), "inner dimensions differ"),
    (re.compile(r"^Incompatible dimensions$"), "shapes do not broadcast"),
    (re.compile(r"(\w+) has inconsistent type (\S+)"),
     "inputs that share a type parameter have different element types"),
]


#: onnx's node verification repeats what the structural rules (op.arity, op.attribute...) already say
_COVERED = re.compile(r"input size \d+ not in range|output size \d+ not in range|marked single but has an empty|"
                      r"[Aa]ttribute '?[^ ]* ?'? ?(appeared multiple times|is missing)|Mismatched attribute type|"
                      r"Unrecognized attribute|both a subgraph initializer and subgraph input")


_MERGE = re.compile(r"Can't merge shape info\. Both inferred and declared dimension have values but they differ\. "
                    r"Inferred=(\d+) Declared=(\d+) Dimension=(\d+)")
_UNIFY = re.compile(r"Dimension mismatch in unification between (\d+) and (\d+)")


def reason(error: Exception, op_type: str = "") -> str | None:
    """onnx's inference message without its tags, in onnxtext's words where we have better ones; None when
    another rule reports the same problem."""
    text = " ".join(_PREFIX.sub("", str(error)).split())
    if _COVERED.search(text):
        return None
    if op_type == "If" and text.startswith("Mismatched"):
        return "the branches make different types"
    m = _MERGE.search(text)
    if m:
        return f"dimension {m.group(3)} differs: {m.group(2)} and {m.group(1)}"
    m = _UNIFY.search(text)
    if m and op_type == "Gemm":
        return f"inner dimensions differ ({m.group(1)} and {m.group(2)})"
    if m:
        return f"dimensions differ: {m.group(1)} and {m.group(2)}"
    for pattern, words in _REASONS:
        if pattern.search(text):
            return pattern.sub(words, text) if "\\" in words else words
    return text.rstrip(".")


def inputs_text(node, types: dict) -> str:
    parts = []
    for x in node.input:
        if x and x not in {p.split(" is ")[0] for p in parts}:
            parts.append(f"{x} is {type_text(types.get(x))}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------- per node
def constant_value(node):
    """The tensor a Constant node makes, when it is given as a tensor (``value``)."""
    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            return a.t
    return None


def infer_node(node, types: dict, data: dict, opsets: dict, opset_list, ir_version: int, functions: dict):
    """Output name -> type inferred for one node; None when inference cannot run (unknown op, unknown input).

    Raises onnx's InferenceError / ValidationError when the node's inputs do not fit its operator.
    """
    names = [x for x in node.input if x]
    if any(x not in types for x in names):
        return None
    local = functions.get((node.domain, node.op_type, node.overload))
    if local is not None:
        try:
            outs = onnx.shape_inference.infer_function_output_types(
                local, [types[x] if x else TypeProto() for x in node.input], list(node.attribute))
        except Exception:  # noqa: BLE001 - a body onnx cannot infer: the outputs stay unknown
            return None
        return {o: t for o, t in zip(node.output, outs) if o and t.WhichOneof("value")}
    version = opsets.get(node.domain)
    if version is None or not schemas.is_known_domain(node.domain):
        return None
    s = schemas.schema(node.domain, node.op_type, version)
    if s is None:
        return None
    given = {x: types[x] for x in names}
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
        from .graph import _free_names

        for _, g in subgraphs(node, ""):
            free = _free_names(g)
            if any(x not in types for x in free):
                return None  # a name the subgraph reads is undefined or untyped: graph.undefined says so
            given.update((x, types[x]) for x in free)
    try:
        found = onnx.shape_inference.infer_node_outputs(
            s, node, given, {x: data[x] for x in names if x in data}, opset_imports=opset_list,
            ir_version=max(ir_version, 3))
    except (ValueError, TypeError) as e:  # onnx's C++ side decodes the node: subgraphs nested deeper than
        if "Unable to parse proto" in str(e):  # protobuf's 100 levels (~32 nested Ifs) leave the outputs unknown
            return None
        if any(isinstance(x, bytes) for x in (*node.output, *given)):  # names that are not UTF-8, which onnx's
            return None  # binding cannot take: proto.invalid-utf8 reports them, the outputs stay unknown
        raise
    return {o: t for o, t in found.items() if t.WhichOneof("value")}
