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

import base64
import binascii
import re
import sys

import numpy as np
from lark import Transformer
from onnx import (AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
                  SparseTensorProto, StringStringEntryProto, TensorProto, TrainingInfoProto, TypeProto,
                  TensorShapeProto, ValueInfoProto)

from . import dtypes, tensors
from .errors import ParseError

# binascii's strict mode (3.11+) accepts exactly what b64decode(validate=True) accepts
_STRICT_BASE64 = sys.version_info >= (3, 11)


# ---------------------------------------------------------------------------------------------- values
class Name(str):
    """An identifier or quoted name with its source position."""

    __slots__ = ("line", "column")


class Bits(int):
    """A hexadecimal literal: the bit pattern of an element, not its value."""


class Record(list):
    """``{field: value, ...}``: a list of (field, value) pairs."""


class Pairs(list):
    """``["key": value, ...]``: a list of (key bytes, value) pairs."""


class Ref(str):
    """``@name``: a reference to an attribute of the enclosing function."""


class TensorData:
    """The right-hand side of a tensor constant, before the element type is applied."""

    __slots__ = ("kind", "values", "extra")

    def __init__(self, kind, values, extra=None):
        self.kind = kind
        self.values = values
        self.extra = extra


class ValueEntry:
    """A ``type? name (= data)?`` entry of an input list or a ``<...>`` value list."""

    __slots__ = ("annotations", "type", "name", "data")

    def __init__(self, annotations, type_, name, data):
        self.annotations = annotations
        self.type = type_
        self.name = name
        self.data = data


_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\", '"': b'"', "'": b"'"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)


def unescape(token: str) -> bytes:
    """The bytes of a STRING token (quotes removed, escapes decoded)."""
    body = token[1:-1]
    if "\\" not in body:
        return body.encode("utf-8")
    out = []
    pos = 0
    for m in _ESCAPE_RE.finditer(body):
        out.append(body[pos:m.start()].encode("utf-8"))
        e = m.group(1)
        if e[0] == "x" and len(e) == 3:
            out.append(bytes([int(e[1:], 16)]))
        elif e[0] in "uU" and len(e) > 1:
            out.append(chr(int(e[1:], 16)).encode("utf-8", "surrogatepass"))
        else:
            out.append(_ESCAPES.get(e, e.encode("utf-8")))
        pos = m.end()
    out.append(body[pos:].encode("utf-8"))
    return b"".join(out)


def _text(value, where=None) -> str:
    """Decode bytes to str for proto string fields; raise a ParseError when not UTF-8."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise _err(f"{where or 'this string'} must be valid UTF-8 (it is a text field)", where) from None
    return str(value)


def _pos(obj):
    return getattr(obj, "line", None), getattr(obj, "column", None)


def _err(message, at=None, hint=None):
    line, col = _pos(at)
    return ParseError(message, line=line, column=col, hint=hint)


# ---------------------------------------------------------------------------------------------- field assignment
_ATTR_TYPES = {
    "float": AttributeProto.FLOAT, "int": AttributeProto.INT, "string": AttributeProto.STRING,
    "tensor": AttributeProto.TENSOR, "graph": AttributeProto.GRAPH, "sparse_tensor": AttributeProto.SPARSE_TENSOR,
    "type_proto": AttributeProto.TYPE_PROTO, "floats": AttributeProto.FLOATS, "ints": AttributeProto.INTS,
    "strings": AttributeProto.STRINGS, "tensors": AttributeProto.TENSORS, "graphs": AttributeProto.GRAPHS,
    "sparse_tensors": AttributeProto.SPARSE_TENSORS, "type_protos": AttributeProto.TYPE_PROTOS,
}
ATTR_TYPE_NAMES = {v: k for k, v in _ATTR_TYPES.items()}


def assign(msg, field: str, value, at=None) -> None:
    """Set ``msg.field`` from a generic datum (header entries, annotations, records), by reflection."""
    fd = msg.DESCRIPTOR.fields_by_name.get(str(field))
    if fd is None:
        names = ", ".join(sorted(msg.DESCRIPTOR.fields_by_name))
        raise _err(f"{msg.DESCRIPTOR.name} has no field {field!r}", at or field, hint=f"known fields: {names}")
    if fd.is_repeated:
        target = getattr(msg, fd.name)
        if fd.message_type is not None:
            items = value
            if not isinstance(value, list):
                raise _err(f"field {field!r} expects a list", at or field)
            for item in items:
                sub = target.add()
                if isinstance(value, Pairs):
                    _assign_pair(sub, item, field)
                elif isinstance(item, Record):
                    for k, v in item:
                        assign(sub, k, v)
                elif isinstance(item, fd.message_type._concrete_class):
                    sub.CopyFrom(item)
                else:
                    raise _err(f"field {field!r} expects a list of {{...}} records", at or field)
        else:
            if not isinstance(value, list):
                raise _err(f"field {field!r} expects a list", at or field)
            target.extend(_scalar(fd, v, field) for v in value)
        return
    if fd.message_type is not None:
        sub = getattr(msg, fd.name)
        if isinstance(value, Record):
            sub.SetInParent()
            for k, v in value:
                assign(sub, k, v)
        elif isinstance(value, fd.message_type._concrete_class):
            sub.CopyFrom(value)
        else:
            raise _err(f"field {field!r} expects a {{...}} record", at or field)
        return
    setattr(msg, fd.name, _scalar(fd, value, field))


def _assign_pair(sub, item, field):
    key, value = item
    name = sub.DESCRIPTOR.name
    if name == "StringStringEntryProto":
        sub.key = _text(key)
        sub.value = _text(value) if isinstance(value, (bytes, str)) else _bad(field, "string values")
    elif name == "OperatorSetIdProto":
        sub.domain = _text(key)
        if not isinstance(value, int) or isinstance(value, bool):
            _bad(field, "integer versions")
        sub.version = value
    else:
        raise _err(f"field {field!r} does not take \"key\": value pairs", field)


def _bad(field, what):
    raise _err(f"field {field!r} expects {what}", field)


def _scalar(fd, value, field):
    t = fd.type
    if t == fd.TYPE_STRING:
        if not isinstance(value, (bytes, str)):
            _bad(field, "a string")
        return _text(value, field)
    if t == fd.TYPE_BYTES:
        if not isinstance(value, (bytes, str)):
            _bad(field, "a string")
        return value if isinstance(value, bytes) else value.encode()
    if t == fd.TYPE_ENUM:
        if isinstance(value, str) and not isinstance(value, bytes):
            ev = fd.enum_type.values_by_name.get(str(value))
            if ev is None:
                _bad(field, "one of " + ", ".join(fd.enum_type.values_by_name))
            return ev.number
        if isinstance(value, int):
            return value
        _bad(field, "an enum name or number")
    if t in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        _bad(field, "a number")
    if t == fd.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        _bad(field, "true or false")
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    _bad(field, "an integer")


def apply_annotations(msg, annotations) -> None:
    """Apply ``/// doc`` lines and ``@field value`` annotations to a message."""
    if not annotations:
        return
    doc = [a[1] for a in annotations if a[0] == "doc"]
    if doc:
        if "doc_string" not in msg.DESCRIPTOR.fields_by_name:
            raise _err(f"{msg.DESCRIPTOR.name} has no doc_string; remove the /// comment")
        msg.doc_string = "\n".join(doc)
    for a in annotations:
        if a[0] == "set":
            assign(msg, a[1], a[2], a[1])


# ---------------------------------------------------------------------------------------------- tensors
def literals_to_array(values, dt: dtypes.DType, where=None) -> np.ndarray:
    """Literal values of a tensor constant -> flat array of ``dt`` (bit-pattern rules applied)."""
    if dt.kind == "string":
        bad = [v for v in values if not isinstance(v, bytes)]
        if bad:
            raise _err(f"string tensor expects string literals, got {bad[0]!r}", where)
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    if dt.kind == "bool":
        out = []
        for v in values:
            if isinstance(v, bool):
                out.append(v)
            elif isinstance(v, int) and v in (0, 1):
                out.append(bool(v))
            else:
                raise _err(f"bool tensor expects true, false, 0 or 1, got {v!r}", where)
        return np.array(out, dtype=np.bool_)
    if dt.kind == "complex":
        if values and not any(isinstance(v, complex) for v in values):
            if len(values) % 2:
                raise _err("a complex tensor given as real numbers needs (real, imaginary) pairs", where)
            values = [complex(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        return np.array([complex(v) for v in values], dtype=dt.np)
    if dt.kind == "int":
        out = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"{dt.name} tensor expects integers, got {_show(v)}", where)
            out.append(int(v))
        try:
            if dt.packed:
                arr = np.array(out, dtype=np.int64)
                lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.name.startswith("int") else \
                    (0, (1 << dt.bits) - 1)
                if arr.size and (arr.min() < lo or arr.max() > hi):
                    raise OverflowError
                return arr.astype(dt.np)
            return np.array(out, dtype=dt.np)
        except OverflowError:
            raise _err(f"integer literal out of range for {dt.name}", where) from None
    # floating point: ints are values for float/double, bit patterns for the narrow types (onnx rule)
    if all(isinstance(v, float) for v in values):
        return np.array(values, dtype=np.float64).astype(dt.np)
    uint = np.dtype(f"uint{max(8, dt.bits if dt.bits in (8, 16, 32, 64) else 8)}")
    out = np.empty(len(values), dtype=dt.np)
    for i, v in enumerate(values):
        if isinstance(v, Bits) or (dt.bitpattern and isinstance(v, int) and not isinstance(v, bool)):
            limit = 1 << dt.bits
            if not 0 <= v < limit:
                raise _err(f"bit pattern {v:#x} does not fit a {dt.bits}-bit {dt.name}", where)
            if dt.bits in (8, 16, 32, 64):
                out[i] = np.array(v, dtype=uint).view(dt.np)
            else:
                out[i] = np.array(v, dtype=np.uint8).view(dt.np)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[i] = np.array(float(v), dtype=np.float64).astype(dt.np)
        else:
            raise _err(f"{dt.name} tensor expects numbers, got {_show(v)}", where)
    return out


def _show(v):
    if isinstance(v, bytes):
        return "a string"
    if isinstance(v, complex):
        return "a complex pair"
    return repr(v)


def build_tensor(type_proto: TypeProto, name, data: TensorData, where=None) -> TensorProto:
    """A TensorProto from a declared tensor type, a name and its data."""
    if not type_proto.HasField("tensor_type"):
        raise _err("a tensor constant needs a tensor type such as float[2,3]", where)
    tt = type_proto.tensor_type
    t = TensorProto()
    try:
        dt = dtypes.from_enum(tt.elem_type)
    except KeyError:
        raise _err("a tensor constant needs an element type", where) from None
    t.data_type = dt.enum
    if not tt.HasField("shape"):
        raise _err(f"tensor {name or ''} needs a shape with numeric dimensions (write {dt.name} for a scalar, "
                   f"{dt.name}[3] for a vector)", where)
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            raise _err(f"tensor {name or ''} needs numeric dimensions, not {d.dim_param or '?'}", where)
        t.dims.append(d.dim_value)
    if name:
        t.name = name
    count = tensors.element_count(t)
    kind = data.kind
    if kind in ("typed", "raw"):
        arr = literals_to_array(data.values, dt, where)
        if arr.size != count:
            raise _err(f"tensor {name or ''} of shape {list(t.dims)} needs {count} element"
                       f"{'s' if count != 1 else ''}, the literal has {arr.size}", where)
        if kind == "typed" or dt.kind == "string":
            if kind == "raw":
                raise _err("string tensors cannot use raw encoding", where)
            tensors.set_typed(t, arr, dt)
        else:
            t.raw_data = tensors.raw_bytes(arr, dt)
    elif kind == "bytes":
        if dt.kind == "string":
            raise _err("string tensors cannot use a byte block", where)
        need = -(-count * dt.bits // 8)
        if len(data.values) != need:
            raise _err(f"tensor {name or ''} of shape {list(t.dims)} needs {need} bytes of {dt.name} data, "
                       f"the block has {len(data.values)}", where)
        t.raw_data = data.values
    elif kind == "external":
        t.data_location = TensorProto.EXTERNAL
        for k, v in data.values:
            e = t.external_data.add()
            e.key = _text(k)
            e.value = _text(v) if isinstance(v, (bytes, str)) else str(v)
    elif kind == "elided":
        what = f"tensor {str(name)!r}" if name else "an unnamed tensor"
        raise _err(f"{what} was elided for reading (printed with --elide); its values are not in the text",
                   where if name else data.extra, hint="print the model without --elide to get a parseable text")
    else:
        raise _err(f"unexpected {kind} data for a dense tensor", where)
    return t


def build_sparse(type_proto: TypeProto, name, data: TensorData, where=None) -> SparseTensorProto:
    if data.kind != "sparse":
        raise _err("a sparse tensor needs sparse(values, indices) data", where)
    s = SparseTensorProto()
    tt = type_proto.sparse_tensor_type if type_proto.HasField("sparse_tensor_type") else type_proto.tensor_type
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            raise _err("a sparse tensor needs numeric dimensions", where)
        s.dims.append(d.dim_value)
    s.values.CopyFrom(data.values)
    s.indices.CopyFrom(data.extra)
    if name and not s.values.name:
        s.values.name = name
    return s


# ---------------------------------------------------------------------------------------------- transformer
def _opt(children):
    return [c for c in children if c is not None]


class Builder(Transformer):
    """Builds protos from the parse (rule methods are called by lark with the rule's children)."""

    # ------------------------------------------------------------------ names and literals
    def ident(self, c):
        tok = c[0]
        n = Name(tok)
        n.line, n.column = tok.line, tok.column
        return n

    def quoted_name(self, c):
        tok = c[0]
        n = Name(_text(unescape(tok), "a name"))
        n.line, n.column = tok.line, tok.column
        return n

    def int_value(self, c):
        return int(c[0])

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
        return (c[0] if isinstance(c[0], bytes) else unescape(c[0]), c[1])

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

    # ------------------------------------------------------------------ types
    def denotation(self, c):
        return _text(unescape(c[0]))

    def dim(self, c):
        d = TensorShapeProto.Dimension()
        v = c[0]
        if v.type == "INT":
            d.dim_value = int(v)
        elif v.type == "IDENT":
            d.dim_param = str(v)
        elif v.type == "STRING":
            d.dim_param = _text(unescape(v))
        if c[1] is not None:
            d.denotation = c[1]
        return d

    def shape(self, c):
        return _opt(c)

    def tensor_type(self, c):
        tp = TypeProto()
        tt = tp.tensor_type
        tt.elem_type = dtypes.BY_NAME[str(c[0])].enum
        shape = c[1]
        if shape is None:
            tt.shape.SetInParent()  # no brackets: a scalar (rank 0), as in onnx's syntax
        elif shape:
            tt.shape.dim.extend(shape)
        # 'float[]' = unknown rank: no shape
        if c[2] is not None:
            tp.denotation = c[2]
        return tp

    def _with_denotation(self, tp, den):
        if den is not None:
            tp.denotation = den
        return tp

    def seq_type(self, c):
        tp = TypeProto()
        tp.sequence_type.elem_type.CopyFrom(c[0])
        return self._with_denotation(tp, c[1])

    def map_type(self, c):
        tp = TypeProto()
        tp.map_type.key_type = dtypes.BY_NAME[str(c[0])].enum
        tp.map_type.value_type.CopyFrom(c[1])
        return self._with_denotation(tp, c[2])

    def optional_type(self, c):
        tp = TypeProto()
        tp.optional_type.elem_type.CopyFrom(c[0])
        return self._with_denotation(tp, c[1])

    def sparse_type(self, c):
        tp = TypeProto()
        tt = c[0].tensor_type
        st = tp.sparse_tensor_type
        st.elem_type = tt.elem_type
        if tt.HasField("shape"):
            st.shape.CopyFrom(tt.shape)
        if c[0].denotation:
            raise _err("put the denotation after sparse_tensor(...)")
        return self._with_denotation(tp, c[1])

    def dotted(self, c):
        return ".".join(c)

    def opaque_type(self, c):
        # opaque(a.b.c) -> name only; opaque(dom.ain, name) -> domain and name (onnx's rule)
        tp = TypeProto()
        tp.opaque_type.SetInParent()
        first, second, den = c
        if second is not None:
            tp.opaque_type.domain = first or ""
            tp.opaque_type.name = second
        elif first:
            tp.opaque_type.name = first
        return self._with_denotation(tp, den)

    def untyped_tensor(self, c):
        tp = TypeProto()
        tp.tensor_type.SetInParent()
        return self._with_denotation(tp, c[0])

    def empty_type(self, c):
        tp = TypeProto()
        return self._with_denotation(tp, c[0])

    # ------------------------------------------------------------------ tensor data
    def typed_data(self, c):
        return TensorData("typed", _opt(c))

    def raw_data(self, c):
        return TensorData("raw", _opt(c))

    def base64_data(self, c):
        body = c[0][1:-1]
        if "\\" not in body and body.isascii() and _STRICT_BASE64:
            try:  # the printer's one-line block: decoded in one call, without the copies below
                return TensorData("bytes", binascii.a2b_base64(body, strict_mode=True))
            except binascii.Error:
                pass  # line breaks or an error: the general way decides
        s = unescape(c[0])
        try:
            return TensorData("bytes", base64.b64decode(b"".join(s.split()), validate=True))
        except (binascii.Error, ValueError):
            raise _err("invalid base64 block", c[0]) from None

    def hex_data(self, c):
        s = unescape(c[0])
        try:
            return TensorData("bytes", bytes.fromhex(b"".join(s.split()).decode("ascii")))
        except ValueError:
            raise _err("invalid hex block", c[0]) from None

    def external_data(self, c):
        return TensorData("external", c[0] if c else Pairs())

    def elided_data(self, c):
        return TensorData("elided", c[1], c[0])  # extra: the `elided` token, for the error's position

    def sparse_data(self, c):
        return TensorData("sparse", c[0], c[1])

    def tensor_constant(self, c):
        ann, tp, name, data = c
        t = build_tensor(tp, name, data, name)
        t.name = name or ""  # explicitly present, as onnx's parser does
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
        return Ref(str(tok)[1:] if str(tok).startswith("@") else _text(unescape(tok)))

    def type_value(self, c):
        return c[0]

    def graph_value(self, c):
        return c[0]

    def value_list_attr(self, c):
        return ("list", _opt(c))

    def attr(self, c):
        ann, name, declared, value = c
        a = AttributeProto()
        a.name = name
        if isinstance(value, tuple) and value and value[0] == "list":
            _set_list_attr(a, value[1], declared, name)
        else:
            _set_single_attr(a, value, declared, name)
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
        return (".".join(c[:-2]), c[-2], c[-1])

    def node(self, c):
        ann, label, outputs, op, attrs1, inputs, attrs2 = c
        n = NodeProto()
        if label is not None:
            n.name = label
        n.input.extend(inputs)
        n.output.extend(outputs)
        n.op_type = op[1]
        n.domain = op[0]
        if op[2] is not None:
            n.overload = op[2]
        if attrs1 and attrs2:
            raise _err("attributes given both before and after the inputs", op[1])
        n.attribute.extend(attrs1 or attrs2 or [])
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
        g.name = name
        for e in inputs:
            g.input.append(_value_info(e))
            if e.data is not None:
                if e.type is None:
                    raise _err(f"initializer {e.name} needs a type", e.name)
                g.initializer.append(build_tensor(e.type, e.name, e.data, e.name))
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
            _apply_header(f, header, _FUNCTION_HEADER)
        f.name = name
        for a in attrs or ():
            if isinstance(a, AttributeProto):
                f.attribute_proto.append(a)
            else:
                f.attribute.append(a)
        for tp, n in ins:
            f.input.append(n)
            if tp is not None:
                f.value_info.append(_vi(n, tp))
        for tp, n in outs:
            f.output.append(n)
            if tp is not None:
                f.value_info.append(_vi(n, tp))
        for e in values or ():
            if e.data is not None:
                raise _err(f"function value_info {e.name} cannot have a value (functions have no initializers; "
                           "use a Constant node)", e.name)
            f.value_info.append(_value_info(e))
        f.node.extend(nodes)
        apply_annotations(f, ann)
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
                if not isinstance(value, Pairs):
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
            _apply_header(m, header, _MODEL_HEADER)
        m.graph.CopyFrom(graph)
        for item in c[3:]:
            if isinstance(item, FunctionProto):
                m.functions.append(item)
            elif isinstance(item, TrainingInfoProto):
                m.training_info.append(item)
        apply_annotations(m, ann)
        return m


def _vi(name, tp) -> ValueInfoProto:
    v = ValueInfoProto()
    v.name = name
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
    t = build_tensor(e.type, e.name, e.data, e.name)
    apply_annotations(t, e.annotations)
    g.initializer.append(t)


_MODEL_HEADER = {"ir_version", "opset_import", "producer_name", "producer_version", "domain", "model_version",
                 "doc_string", "metadata_props", "configuration"}
_FUNCTION_HEADER = {"domain", "opset_import", "doc_string", "overload", "metadata_props"}


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


# ---------------------------------------------------------------------------------------------- attribute values
def _kind_of(v):
    if isinstance(v, Ref):
        return None
    if isinstance(v, bool):
        return AttributeProto.INT
    if isinstance(v, int):
        return AttributeProto.INT
    if isinstance(v, float):
        return AttributeProto.FLOAT
    if isinstance(v, bytes):
        return AttributeProto.STRING
    if isinstance(v, TensorProto):
        return AttributeProto.TENSOR
    if isinstance(v, GraphProto):
        return AttributeProto.GRAPH
    if isinstance(v, SparseTensorProto):
        return AttributeProto.SPARSE_TENSOR
    if isinstance(v, TypeProto):
        return AttributeProto.TYPE_PROTO
    raise _err(f"unsupported attribute value {v!r}")


_SINGLE_FIELD = {AttributeProto.FLOAT: "f", AttributeProto.INT: "i", AttributeProto.STRING: "s",
                 AttributeProto.TENSOR: "t", AttributeProto.GRAPH: "g", AttributeProto.SPARSE_TENSOR: "sparse_tensor",
                 AttributeProto.TYPE_PROTO: "tp"}
_LIST_OF = {AttributeProto.FLOAT: AttributeProto.FLOATS, AttributeProto.INT: AttributeProto.INTS,
            AttributeProto.STRING: AttributeProto.STRINGS, AttributeProto.TENSOR: AttributeProto.TENSORS,
            AttributeProto.GRAPH: AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSOR: AttributeProto.SPARSE_TENSORS,
            AttributeProto.TYPE_PROTO: AttributeProto.TYPE_PROTOS}
_LIST_FIELD = {AttributeProto.FLOATS: "floats", AttributeProto.INTS: "ints", AttributeProto.STRINGS: "strings",
               AttributeProto.TENSORS: "tensors", AttributeProto.GRAPHS: "graphs",
               AttributeProto.SPARSE_TENSORS: "sparse_tensors", AttributeProto.TYPE_PROTOS: "type_protos"}
_ELEMENT_OF = {v: k for k, v in _LIST_OF.items()}


def _as_float(v, name):
    """An int literal in a float attribute: a hex literal is the float32 bit pattern, a decimal one its value."""
    if isinstance(v, Bits):
        if not 0 <= v < 1 << 32:
            raise _err(f"attribute {name}: hex literal {v:#x} is not a 32-bit float bit pattern", name)
        return float(np.array(v, np.uint32).view(np.float32))
    return float(v)


def _set_single_attr(a: AttributeProto, value, declared, name):
    if isinstance(value, Ref):
        a.ref_attr_name = value
        if declared is not None:
            a.type = declared
        return
    kind = _kind_of(value)
    if declared is not None and declared != kind:
        if declared == AttributeProto.FLOAT and kind == AttributeProto.INT and not isinstance(value, bool):
            value, kind = _as_float(value, name), AttributeProto.FLOAT
        elif declared in _ELEMENT_OF:
            raise _err(f"attribute {name} is declared {ATTR_TYPE_NAMES[declared]}: write its value as a list [...]",
                       name)
        else:
            raise _err(f"attribute {name} is declared {ATTR_TYPE_NAMES[declared]} but its value is "
                       f"{ATTR_TYPE_NAMES[kind]}", name)
    a.type = kind
    field = _SINGLE_FIELD[kind]
    if kind in (AttributeProto.TENSOR, AttributeProto.GRAPH, AttributeProto.SPARSE_TENSOR, AttributeProto.TYPE_PROTO):
        getattr(a, field).CopyFrom(value)
    else:
        setattr(a, field, value)


def _set_list_attr(a: AttributeProto, values, declared, name):
    if declared is not None and declared not in _ELEMENT_OF:
        raise _err(f"attribute {name} is declared {ATTR_TYPE_NAMES[declared]}, a single value, but has a list", name)
    kinds = {_kind_of(v) for v in values}
    if not values:
        if declared is None:
            raise _err(f"empty list attribute {name} needs a type annotation, e.g. {name}: ints = []", name)
        a.type = declared
        return
    if kinds == {AttributeProto.INT, AttributeProto.FLOAT}:
        kinds = {AttributeProto.FLOAT}
        values = [_as_float(v, name) for v in values]
    if len(kinds) != 1:
        raise _err(f"list attribute {name} mixes kinds of values", name)
    kind = kinds.pop()
    if declared is not None:
        want = _ELEMENT_OF[declared]
        if want == AttributeProto.FLOAT and kind == AttributeProto.INT:
            values, kind = [_as_float(v, name) for v in values], AttributeProto.FLOAT
        elif want != kind:
            raise _err(f"attribute {name} is declared {ATTR_TYPE_NAMES[declared]} but holds "
                       f"{ATTR_TYPE_NAMES[kind]} values", name)
    a.type = _LIST_OF[kind]
    target = getattr(a, _LIST_FIELD[a.type])
    if kind in (AttributeProto.TENSOR, AttributeProto.GRAPH, AttributeProto.SPARSE_TENSOR, AttributeProto.TYPE_PROTO):
        for v in values:
            target.add().CopyFrom(v)
    else:
        target.extend(values)
