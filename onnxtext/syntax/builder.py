"""Lark transformer that builds onnx protobufs directly while parsing (one method per grammar rule).

Run inline by the LALR parser (no intermediate tree). Values flowing between rules:

* names are :class:`Name` (a ``str`` that remembers line and column);
* literals are ``int``, ``float``, :class:`Bits` (hex bit patterns), ``bytes`` (strings), ``complex``
  and ``bool``;
* structured data (header entries, annotations) are lists, :class:`Record` and :class:`Pairs`;
* annotations are a list of ``("doc", text)`` and ``("set", field, datum)`` items applied to the
  message that follows them.

Semantic errors raise :class:`onnxtext.errors.ParseError` with the position of the culprit.
"""

from __future__ import annotations

from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TrainingInfoProto, TypeProto, \
    ValueInfoProto

# Literals, tensor data and field/attribute values live in their own modules; their names stay importable
# from here (syntax.fastparse and syntax.fastlex use them as builder.X, with the children Lark passes).
from ..schemas import element_type_attributes
from ..vocabulary import FUNCTION_HEADER, MODEL_HEADER
from .field_values import (ATTR_TYPE_NAMES, Pair, Pairs, RawRef, Record, Ref, _ATTR_TYPES,  # noqa: F401
                           _as_float, _kind_of, _element_type_to_int, _is_type_name, _set_list_attr, _set_single_attr,
                           _type_named_attributes, apply_annotations, assign, build_unchecked)
from .literal_data import (Bits, int_literal, TensorData, _err, _pos, _text, build_sparse, build_tensor,  # noqa: F401
                           decode_base64, decode_hex, literals_to_array, unescape)
from .raw_strings import RawText, append_text, extend_texts, join_raw, set_text, text_or_raw
from .type_rules import MAX_TYPE_NESTING, TypeRules, _opt  # noqa: F401


# ---------------------------------------------------------------------------------------------- values
class Name(str):
    """An identifier or quoted name with its source position."""

    __slots__ = ("line", "column")


class ValueEntry:
    """A ``type? name (= data)?`` entry of an input list or a ``<...>`` value list."""

    __slots__ = ("annotations", "type", "name", "data")

    def __init__(self, annotations, type_, name, data):
        self.annotations = annotations
        self.type = type_
        self.name = name
        self.data = data


# ---------------------------------------------------------------------------------------------- transformer
class Builder(TypeRules):
    """Builds protos from the parse (rule methods are called by lark with the rule's children); the rules of
    types are in :class:`onnxtext.syntax.type_rules.TypeRules`."""

    # ------------------------------------------------------------------ names and literals
    def ident(self, c):
        tok = c[0]
        n = Name(tok)
        n.line, n.column = tok.line, tok.column
        return n

    def quoted_name(self, c):
        tok = c[0]
        text = text_or_raw(unescape(tok), tok)
        if isinstance(text, RawText):  # bytes that are not UTF-8: set as they are (syntax.raw_strings)
            return text
        n = Name(text)
        n.line, n.column = tok.line, tok.column
        return n

    def int_value(self, c):
        return int_literal(c[0])

    def float_value(self, c):
        return float(c[0])

    def hex_value(self, c):
        return Bits(int(c[0], 16))

    def string_value(self, c):
        return unescape(c[0])

    def true_value(self, c):
        return True

    def false_value(self, c):
        return False

    def complex_literal(self, c):
        return complex(float(c[0]), float(c[1]))

    def enum_value(self, c):
        return str(c[0])

    # ------------------------------------------------------------------ data
    def list(self, c):
        return _opt(c)

    def pair(self, c):
        return Pair(c[0] if isinstance(c[0], bytes) else unescape(c[0]), c[1], c[0])

    def pairs(self, c):
        return Pairs(x for x in c if x is not None)

    def field(self, c):
        return (self.ident([c[0]]), c[1])

    def record(self, c):
        return Record(x for x in c if x is not None)

    def annotations(self, c):
        return list(c)

    def doc_line(self, c):
        text = str(c[0])[3:]
        return ("doc", text[1:] if text.startswith(" ") else text)

    def annotation(self, c):
        tok = c[0]
        n = Name(tok[1:])
        n.line, n.column = tok.line, tok.column
        return ("set", n, c[1])

    # ------------------------------------------------------------------ tensor data
    def typed_data(self, c):
        return TensorData("typed", _opt(c))

    def raw_data(self, c):
        return TensorData("raw", _opt(c))

    def base64_data(self, c):
        return decode_base64(c[0])

    def hex_data(self, c):
        return decode_hex(c[0])

    def external_data(self, c):
        return TensorData("external", c[0] if c else Pairs())

    def unchecked_data(self, c):
        return TensorData("unchecked", c[0])

    def base64_bytes(self, c):
        return decode_base64(c[0]).values

    def hex_bytes(self, c):
        return decode_hex(c[0]).values

    def elided_data(self, c):
        return TensorData("elided", c[1], c[0])  # extra: the `elided` token, for the error's position

    def sparse_data(self, c):
        return TensorData("sparse", c[0], c[1])

    def tensor_constant(self, c):
        ann, tp, name, data = c
        last, dtype_token = self._last_type
        # an unnamed constant (in an attribute) reports its errors at its type (a str, no position, in fastparse)
        # the name is set only when written (`float[2] "" = ...` sets it empty): field presence is kept
        t = _tensor(tp, name, data, name or (dtype_token if last is tp else None))
        apply_annotations(t, ann)
        return t

    def untyped_constant(self, c):
        ann, shape, name, data = c
        t = _tensor(self.untyped_tensor([None, shape, None]), name, data, name)
        apply_annotations(t, ann)
        return t

    def sparse_constant(self, c):
        ann, tp, name, data = c
        full = TypeProto()
        full.sparse_tensor_type.elem_type = tp.tensor_type.elem_type
        full.sparse_tensor_type.shape.CopyFrom(tp.tensor_type.shape)
        s = build_sparse(full, name, data, name)
        apply_annotations(s, ann)
        return s

    # ------------------------------------------------------------------ attributes
    def attr_type(self, c):
        tok = c[0]
        t = _ATTR_TYPES.get(str(tok))
        if t is None:
            raise _err(f"unknown attribute type {str(tok)!r}", tok, hint="one of: " + ", ".join(_ATTR_TYPES))
        return t

    def attr_ref(self, c):
        tok = c[0]
        if str(tok).startswith("@"):
            return Ref(str(tok)[1:])
        text = text_or_raw(unescape(tok), tok)
        return RawRef(text) if isinstance(text, RawText) else Ref(text)

    def type_value(self, c):
        return c[0]

    def graph_value(self, c):
        return c[0]

    def value_list_attr(self, c):
        return ("list", _opt(c))

    def attr(self, c):
        ann, name, declared, value = c
        a = AttributeProto()
        set_text(a, "name", name)
        if isinstance(value, tuple) and value and value[0] == "list":
            _set_list_attr(a, value[1], declared, name)
        else:
            _set_single_attr(a, value, declared, name)
            if declared is None and isinstance(value, TypeProto) and _is_type_name(value):
                _type_named_attributes()[id(a)] = a  # `to = float`: node() decides by the operator
        apply_annotations(a, ann)
        return a

    def attr_list(self, c):
        return c

    # ------------------------------------------------------------------ nodes
    def id_list(self, c):
        if len(c) == 1 and c[0] is None:
            return []
        if c and c[-1] is None:
            c = c[:-1]
        return ["" if x is None else x for x in c]

    def label(self, c):
        return c[0] or ""

    def overload(self, c):
        return c[0]

    def op_ref(self, c):
        # no prefix: the domain stays unset (None); a written prefix, even "" ("".Relu), sets it
        return (join_raw(".", c[:-2]) if len(c) > 2 else None, c[-2], c[-1])

    def node(self, c):
        ann, label, outputs, op, attrs1, inputs, attrs2 = c
        n = NodeProto()
        try:
            if label is not None:
                n.name = label
            n.input.extend(inputs)
            n.output.extend(outputs)
            n.op_type = op[1]
            if op[0] is not None:
                n.domain = op[0]
            if op[2] is not None:
                n.overload = op[2]
        except ValueError:  # a string that is not UTF-8 (RawText): set through wire bytes, field by field
            n = _node_with_raw_strings(label, inputs, outputs, op)
        if attrs1 and attrs2:
            raise _err("attributes given both before and after the inputs", op[1])
        attrs = attrs1 or attrs2 or []
        pending = _type_named_attributes()
        if pending:
            type_names = element_type_attributes(op[0] or "", op[1])
            for a in attrs:
                if pending.pop(id(a), None) is not None and a.name in type_names:
                    _element_type_to_int(a)
        n.attribute.extend(attrs)
        apply_annotations(n, ann)
        return n

    def node_list(self, c):
        return list(c)

    # ------------------------------------------------------------------ graphs
    def value_entry(self, c):
        return ValueEntry(c[0], c[1], c[2], c[3])

    def input_list(self, c):
        return _opt(c)

    output_list = input_list
    value_list = input_list

    def graph(self, c):
        ann, name, inputs, outputs, values, nodes = c
        g = GraphProto()
        set_text(g, "name", name)
        for e in inputs:
            g.input.append(_value_info(e))
            if e.data is not None:
                if e.type is None:
                    raise _err(f"initializer {e.name} needs a type", e.name)
                g.initializer.append(_tensor(e.type, e.name, e.data, e.name))
        for e in outputs:
            if e.data is not None:
                raise _err(f"graph output {e.name} cannot have a value", e.name)
            g.output.append(_value_info(e))
        for e in values or ():
            _graph_value_entry(g, e)
        g.node.extend(nodes)
        apply_annotations(g, ann)
        return g

    # ------------------------------------------------------------------ functions
    def fn_attr_name(self, c):
        return c[0]

    def fn_attrs(self, c):
        return _opt(c)

    def fn_value(self, c):
        return (c[0], c[1])

    def fn_io(self, c):
        return _opt(c)

    def header_entry(self, c):
        return (self.ident([c[0]]), c[1], c[0])

    def header(self, c):
        return _opt(c)

    def function(self, c):
        ann, header, name, attrs, ins, outs, values, nodes = c
        f = FunctionProto()
        if header is not None:
            _apply_header(f, header, FUNCTION_HEADER)
        set_text(f, "name", name)
        for a in attrs or ():
            if isinstance(a, AttributeProto):
                f.attribute_proto.append(a)
            else:
                append_text(f, "attribute", a)
        for tp, n in ins:
            append_text(f, "input", n)
            if tp is not None:
                f.value_info.append(_vi(n, tp))
        for tp, n in outs:
            append_text(f, "output", n)
            if tp is not None:
                f.value_info.append(_vi(n, tp))
        for e in values or ():
            if e.data is not None:
                raise _err(f"function value_info {e.name} cannot have a value (functions have no initializers; "
                           "use a Constant node)", e.name)
            f.value_info.append(_value_info(e))
        f.node.extend(nodes)
        apply_annotations(f, ann)
        pending = _type_named_attributes()
        for a in f.attribute_proto:
            pending.pop(id(a), None)
        return f

    # ------------------------------------------------------------------ models
    def training_graph(self, c):
        return (self.ident([c[0]]), c[1])

    training_binding = training_graph

    def training_info(self, c):
        t = TrainingInfoProto()
        for key, value in c:
            if key in ("initialization", "algorithm"):
                if not isinstance(value, GraphProto):
                    raise _err(f"training_info {key} expects a graph", key)
                getattr(t, key).CopyFrom(value)
            elif key in ("initialization_binding", "update_binding"):
                if not isinstance(value, list) or (not isinstance(value, Pairs) and
                                                   not all(isinstance(v, Record) for v in value)):
                    raise _err(f"training_info {key} expects [\"name\": \"name\", ...] pairs", key)
                assign(t, key, value, key)
            else:
                raise _err(f"training_info has no field {key!r}", key,
                           hint="fields: initialization, algorithm, initialization_binding, update_binding")
        return t

    def model(self, c):
        ann, header, graph = c[0], c[1], c[2]
        m = ModelProto()
        if header is not None:
            _apply_header(m, header, MODEL_HEADER)
        m.graph.CopyFrom(graph)
        for item in c[3:]:
            if isinstance(item, FunctionProto):
                m.functions.append(item)
            elif isinstance(item, TrainingInfoProto):
                m.training_info.append(item)
        apply_annotations(m, ann)
        return m


def _node_with_raw_strings(label, inputs, outputs, op) -> NodeProto:
    """A node's string fields when one holds bytes that are not UTF-8 (wire-level setters, in field order)."""
    n = NodeProto()
    if label is not None:
        set_text(n, "name", label)
    extend_texts(n, "input", inputs)
    extend_texts(n, "output", outputs)
    set_text(n, "op_type", op[1])
    if op[0] is not None:
        set_text(n, "domain", op[0])
    if op[2] is not None:
        set_text(n, "overload", op[2])
    return n


def _tensor(tp: TypeProto, name, data: TensorData, where):
    """A TensorProto from its declared type, name and data (``unchecked {...}``: the fields as written)."""
    if data.kind == "unchecked":
        return build_unchecked(tp, name, data.values, where)
    return build_tensor(tp, name, data, where)


def _vi(name, tp) -> ValueInfoProto:
    v = ValueInfoProto()
    set_text(v, "name", name)
    if tp is not None:
        v.type.CopyFrom(tp)
    return v


def _value_info(e: ValueEntry) -> ValueInfoProto:
    v = _vi(e.name, e.type)
    apply_annotations(v, e.annotations)
    return v


def _graph_value_entry(g: GraphProto, e: ValueEntry) -> None:
    """An entry of a graph's ``<...>`` list: a value_info, an initializer or a sparse initializer."""
    if e.data is None:
        g.value_info.append(_value_info(e))
        return
    if e.type is None:
        raise _err(f"initializer {e.name} needs a type", e.name)
    if e.type.HasField("sparse_tensor_type"):
        s = build_sparse(e.type, e.name, e.data, e.name)
        apply_annotations(s, e.annotations)
        g.sparse_initializer.append(s)
        return
    t = _tensor(e.type, e.name, e.data, e.name)
    apply_annotations(t, e.annotations)
    g.initializer.append(t)




def _apply_header(msg, entries, allowed):
    seen = set()
    for key, value, tok in entries:
        if key not in allowed:
            raise _err(f"unknown {msg.DESCRIPTOR.name[:-5].lower()} header key {str(key)!r}", tok,
                       hint="known keys: " + ", ".join(sorted(allowed)))
        if key in seen:
            raise _err(f"header key {str(key)!r} given twice", tok)
        seen.add(key)
        if key == "opset_import" and isinstance(value, list) and not value:
            continue
        assign(msg, key, value, tok)

