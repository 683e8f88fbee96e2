"""Proto fields from parsed values: generic fields set by reflection, and typed attribute values.

* :func:`assign` sets any message field from a generic datum (header entries, ``@field value`` annotations,
  ``{field: value}`` records, ``["key": value]`` pairs); :func:`apply_annotations` applies the annotations
  and ``///`` doc lines written before a message, ``@field unset`` (:func:`unset`) and ``@unknown [...]``
  (:func:`merge_unknown`: fields onnx.proto does not describe, kept as protobuf's unknown fields).
* :func:`_set_single_attr` / :func:`_set_list_attr` fill an AttributeProto from a value or a list, checking
  it against a declared type (``name: ints = [...]``); :class:`Ref` is an ``@name`` reference.

Used by :mod:`onnxtext.builder`; errors are :class:`onnxtext.errors.ParseError` at the culprit's position.
"""

from __future__ import annotations

import threading

import numpy as np
from onnx import AttributeProto, GraphProto, SparseTensorProto, TensorProto, TypeProto

from .. import dtypes, wireformat
from ..vocabulary import ATTR_TYPE_NAMES, ATTR_TYPES as _ATTR_TYPES  # noqa: F401
from .literal_data import Bits, _err, _text, literals_to_array
from .raw_strings import RawText, extend_texts, set_text, text_or_raw


class Record(list):
    """``{field: value, ...}``: a list of (field, value) pairs."""


class Pairs(list):
    """``["key": value, ...]``: a list of (key bytes, value) pairs."""


class Pair(tuple):
    """``"key": value``: a (key, value) pair that remembers its key token (errors point at the pair)."""

    def __new__(cls, key, value, at=None):
        self = super().__new__(cls, (key, value))
        self.at = at
        return self


class Ref(str):
    """``@name``: a reference to an attribute of the enclosing function."""


class RawRef(RawText):
    """``@"\xff"``: a reference by a name whose bytes are not UTF-8."""


# ---------------------------------------------------------------------------------------------- field assignment


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
                elif not _fill(sub, item):
                    raise _err(f"field {field!r} expects a list of {{...}} records", at or field)
        else:
            if not isinstance(value, list):
                raise _err(f"field {field!r} expects a list", at or field)
            values = [_scalar(fd, v, field) for v in value]
            if fd.type == fd.TYPE_STRING:
                extend_texts(msg, fd.name, values)  # elements that are not UTF-8 as wire bytes
            else:
                target.extend(values)
        return
    if fd.message_type is not None:
        if not _fill(getattr(msg, fd.name), value):
            raise _err(f"field {field!r} expects a {{...}} record", at or field)
        return
    if fd.type == fd.TYPE_STRING:
        set_text(msg, fd.name, _scalar(fd, value, field))  # not UTF-8: as wire bytes
    else:
        setattr(msg, fd.name, _scalar(fd, value, field))


def _fill(sub, value) -> bool:
    """Set message ``sub`` from a ``{field: value}`` record or a message of its type; False for others."""
    if isinstance(value, Record):
        sub.SetInParent()
        unknown = []
        for k, v in value:
            if k == UNKNOWN:
                unknown.append((k, v))
            else:
                assign(sub, k, v)
        for k, v in unknown:
            merge_unknown(sub, v, k)
        return True
    if isinstance(value, type(sub)):
        sub.CopyFrom(value)
        return True
    return False


def _assign_pair(sub, item, field):
    key, value = item
    at = getattr(item, "at", None) or field  # the pair's key token: values carry no position
    name = sub.DESCRIPTOR.name
    if name == "StringStringEntryProto":
        set_text(sub, "key", text_or_raw(key, at))
        if not isinstance(value, (bytes, str)):
            raise _err(f"field {field!r} expects string values", at, hint="put the value in quotes")
        set_text(sub, "value", text_or_raw(value, at))
    elif name == "OperatorSetIdProto":
        set_text(sub, "domain", text_or_raw(key, at))
        if not isinstance(value, int) or isinstance(value, bool):
            number = str(value).strip() if isinstance(value, str) and str(value).strip().isdigit() else "<version>"
            raise _err(f"field {field!r} expects integer versions", at,
                       hint=f"write {_quoted(key)}: {number} (a number, not {_shown(value)})")
        sub.version = value
    else:
        raise _err(f"field {field!r} does not take \"key\": value pairs", field)


def _quoted(key) -> str:
    from ..printing.atoms import quote

    return quote(key)


def _shown(value) -> str:
    if isinstance(value, (bytes, str)):
        return "a string"
    return "a list" if isinstance(value, list) else type(value).__name__


def _bad(field, what):
    raise _err(f"field {field!r} expects {what}", field)


def _scalar(fd, value, field):
    t = fd.type
    if t == fd.TYPE_STRING:
        if not isinstance(value, (bytes, str)):
            _bad(field, "a string")
        return text_or_raw(value, field) if isinstance(value, bytes) else str(value)
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
    unknown = []
    for a in annotations:
        if a[0] != "set":
            continue
        if a[1] == UNKNOWN:
            unknown.append(a)
        elif type(a[2]) is str and a[2] == UNSET:  # the bare word, not a string literal (bytes)
            unset(msg, a[1])
        else:
            assign(msg, a[1], a[2], a[1])
    for a in unknown:  # after the known fields (protobuf writes unknown ones last anyway)
        merge_unknown(msg, a[2], a[1])


#: ``@field unset``: a field the syntax always writes (a name, a graph) is not set
UNSET = "unset"
#: ``@unknown [...]`` (``unknown:`` in a record): fields onnx.proto does not describe, see onnxtext.wireformat
UNKNOWN = "unknown"


def unset(msg, field) -> None:
    """``@field unset``: clear a singular field the main syntax always sets."""
    fd = msg.DESCRIPTOR.fields_by_name.get(str(field))
    if fd is None:
        raise _err(f"{msg.DESCRIPTOR.name} has no field {str(field)!r}", field,
                   hint="known fields: " + ", ".join(sorted(msg.DESCRIPTOR.fields_by_name)))
    if fd.is_repeated:
        raise _err(f"{str(field)!r} is a list: an empty list is written [] (unset applies to single fields)", field)
    msg.ClearField(fd.name)


_ENTRY_KEYS = ("at", "number", "raw") + tuple(wireformat.WIRE_TYPES)


def merge_unknown(msg, entries, at=None) -> None:
    """``@unknown [{number: 9, varint: 1}, {at: "type.tensor_type", number: 3, bytes: "x"}, {raw: hex "..."}]``:
    append each entry's wire bytes to the unknown fields of ``msg`` (or of the message at the entry's ``at``
    path inside it). An entry that protobuf would read as a known field is an error: write it in the syntax."""
    if not isinstance(entries, list) or not all(isinstance(e, Record) for e in entries):
        raise _err("@unknown expects a list of {number: N, varint|fixed32|fixed64|bytes|group: value} records", at)
    data: dict[str, tuple] = {}  # path -> (message, bytes so far), in order
    for entry in entries:
        fields = {}
        for k, v in entry:
            if str(k) not in _ENTRY_KEYS or str(k) in fields:
                raise _err(f"an @unknown entry has fields at, number and one of {', '.join(_ENTRY_KEYS[2:])} "
                           f"(once each), not {str(k)!r}", k)
            fields[str(k)] = (k, v)
        kinds = [k for k in fields if k not in ("at", "number")]
        if len(kinds) != 1 or (kinds[0] == "raw") == ("number" in fields):
            raise _err("an @unknown entry is {number: N, <wire type>: value} or {raw: bytes}", at)
        wire = kinds[0]
        token, value = fields[wire]
        number = fields["number"][1] if "number" in fields else None
        if wire in ("raw", "bytes", "group") and not isinstance(value, bytes):
            raise _err(f"{wire} takes a string, hex or base64 value", token)
        try:
            encoded = wireformat.encode_field(wire, number, value)
        except (ValueError, TypeError) as e:
            raise _err(f"@unknown entry: {e}", token) from None
        path = fields["at"][1] if "at" in fields else b""
        key = _text(path, "at") if isinstance(path, bytes) else None
        if key is None:
            raise _err("at takes a quoted path such as \"type.tensor_type\"", fields["at"][0])
        target = data[key][0] if key in data else _message_at(msg, key, fields.get("at", (at,))[0])
        data[key] = (target, (data[key][1] if key in data else b"") + encoded)
    for key, (target, raw) in data.items():
        probe = type(target)()
        try:
            probe.MergeFromString(raw)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError or RuntimeError, by implementation
            raise _err(f"@unknown entries are not valid protobuf wire data ({e})", at) from None
        if probe.ListFields():
            known = ", ".join(fd.name for fd, _ in probe.ListFields())
            raise _err(f"@unknown entries hold {known}, a known field of {target.DESCRIPTOR.name}: write it in the "
                       "syntax instead", at)
        target.MergeFromString(raw)


def _message_at(msg, path: str, at):
    """The message at ``path`` (``type.tensor_type.shape.dim[0]``) inside ``msg``."""
    target = msg
    for part in path.split(".") if path else ():
        field, _, index = part.partition("[")
        fd = target.DESCRIPTOR.fields_by_name.get(field)
        if fd is None or fd.message_type is None or bool(index) != fd.is_repeated:
            raise _err(f"@unknown path {path!r}: {target.DESCRIPTOR.name} has no message field {part!r}", at)
        if index:
            items = getattr(target, field)
            i = int(index.rstrip("]")) if index.rstrip("]").isdigit() else -1
            if not 0 <= i < len(items):
                raise _err(f"@unknown path {path!r}: {field} has no element {index.rstrip(']')}", at)
            target = items[i]
        else:
            target = getattr(target, field)
    return target


# ---------------------------------------------------------------------------------------------- attribute values
#: Python value class -> attribute kind, in lookup order (bool before int: bool is an int subclass).
_KIND_OF_CLASS = ((bool, AttributeProto.INT), (int, AttributeProto.INT), (float, AttributeProto.FLOAT),
                  (bytes, AttributeProto.STRING), (TensorProto, AttributeProto.TENSOR),
                  (GraphProto, AttributeProto.GRAPH), (SparseTensorProto, AttributeProto.SPARSE_TENSOR),
                  (TypeProto, AttributeProto.TYPE_PROTO))


def _kind_of(v):
    if isinstance(v, (Ref, RawRef)):
        return None
    for cls, kind in _KIND_OF_CLASS:
        if isinstance(v, cls):
            return kind
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
    if isinstance(value, (Ref, RawRef)):
        set_text(a, "ref_attr_name", value)
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
        try:
            setattr(a, field, value)
        except (ValueError, TypeError) as e:  # protobuf's range checks: an int beyond int64
            raise _err(f"attribute {name}: {e}", name) from None


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
    if kind is None:  # only @refs: a reference names a whole attribute of the function, not list items
        raise _err(f"attribute {name}: a list cannot hold @references (write {name} = @attr for the whole "
                   "attribute)", name)
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
        try:
            target.extend(values)
        except (ValueError, TypeError) as e:  # protobuf's range checks: an int beyond int64
            raise _err(f"attribute {name}: {e}", name) from None


# ---------------------------------------------------------------------------------------------- type-name attributes
# `Cast <to = float>`: a bare type name parses as a TYPE_PROTO value (a scalar tensor type); the node it belongs
# to turns it into the INT element type when its operator documents the attribute as one
# (schemas.element_type_attributes). Until the node is built, attr() keeps such attributes here, per
# thread (the Builder instance is shared), by identity: a TYPE_PROTO written `: type_proto = float` is not
# kept, and stays a type.
_pending = threading.local()


def _type_named_attributes() -> dict:
    table = getattr(_pending, "table", None)
    if table is None:
        table = _pending.table = {}
    return table


def _is_type_name(tp: TypeProto) -> bool:
    """A TypeProto written as a bare element type name (``float``: a rank-0 tensor type, nothing else)."""
    if tp.WhichOneof("value") != "tensor_type" or tp.HasField("denotation"):
        return False
    tt = tp.tensor_type
    return tt.HasField("elem_type") and tt.HasField("shape") and not len(tt.shape.dim) and len(tt.ListFields()) == 2


def _element_type_to_int(a: AttributeProto) -> None:
    elem = a.tp.tensor_type.elem_type
    a.ClearField("tp")
    a.type = AttributeProto.INT
    a.i = elem


# ---------------------------------------------------------------------------------------------- unchecked tensors
#: the fields ``unchecked {...}`` may set: the data fields as they are stored, and an undefined data_type
_UNCHECKED_FIELDS = ("data_type", "float_data", "int32_data", "string_data", "int64_data", "raw_data", "double_data",
                     "uint64_data", "external_data")


def build_unchecked(type_proto: TypeProto, name, record, where=None) -> TensorProto:
    """``float[3] w = unchecked {raw_data: hex "0000803f"}``: a TensorProto whose data fields are set as written,
    not checked against its element type and shape (a damaged or hostile model keeps its bytes; ``check``
    reports the mismatch). The head may be ``tensor[dims]`` (no element type); ``data_type`` in the record
    sets an undefined one."""
    if not type_proto.HasField("tensor_type"):
        raise _err("a tensor constant needs a tensor type such as float[2,3]", where)
    tt = type_proto.tensor_type
    t = TensorProto()
    if tt.HasField("elem_type"):
        t.data_type = tt.elem_type
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            raise _err(f"tensor dimensions are numbers, not {d.dim_param or '?'}", where)
        t.dims.append(d.dim_value)
    if name is not None:
        set_text(t, "name", name)
    if not isinstance(record, Record):
        raise _err("unchecked expects a {field: value} record", where)
    for key, value in record:
        field = str(key)
        if field not in _UNCHECKED_FIELDS:
            raise _err(f"unchecked data has no field {field!r}", key, hint="fields: " + ", ".join(_UNCHECKED_FIELDS))
        if field in ("float_data", "double_data"):
            if not isinstance(value, list):
                raise _err(f"{field} expects a list of numbers", key)
            # floats as in a tensor literal: decimals, or hex bit patterns (NaN payloads)
            arr = literals_to_array(value, dtypes.BY_NAME["float" if field == "float_data" else "double"], key)
            getattr(t, field).extend(arr.tolist())
        else:
            try:
                assign(t, key, value, key)
            except ValueError as e:  # a value out of the field's range
                raise _err(f"{field}: {e}", key) from None
    return t
