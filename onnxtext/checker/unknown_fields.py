"""Wire data a runtime does not read as onnx.proto says: unknown fields (an unknown field number, a known field
with the wrong wire type, a closed enum value outside the enum), which protobuf keeps and onnxtext prints as
``@unknown`` annotations (:mod:`onnxtext.wireformat`), and string fields holding bytes that are not UTF-8 (proto2
does not check them; protobuf returns them as ``bytes``, onnxtext prints them as ``"\\xHH"`` escapes and sets
them back through wire bytes, :mod:`onnxtext.syntax.raw_strings`). A model holding either is reported."""

from __future__ import annotations

from ..wireformat import any_unknown, decode_fields, has_unknown, unknown_bytes
from . import rule

from google.protobuf.descriptor import FieldDescriptor
from onnx import TensorProto

#: repeated fields whose elements the checker's paths name by their name (``graph.input[x]``), not by index
_NAMED = frozenset({"input", "output", "value_info", "initializer", "attribute", "sparse_initializer"})


def _key(v, i: int):
    """How a checker path names element ``i`` of a repeated message field: by its name (bytes that are not UTF-8
    as the text's positions name them), or by index."""
    name = getattr(v, "name", None)
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if name else i


def _messages(msg, path: str):
    """(checker path, message) of every message inside ``msg`` that holds unknown fields."""
    if has_unknown(msg):
        yield path, msg
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        sub = f"{path}.{fd.name}" if path else fd.name
        if fd.is_repeated:
            for i, v in enumerate(value):
                key = _key(v, i) if fd.name in _NAMED and fd.message_type.name != "SparseTensorProto" else i
                yield from _messages(v, f"{sub}[{key}]")
        else:
            yield from _messages(value, sub)


def _describe(msg, wire: str, number) -> str:
    if wire == "raw":
        return "a field in a non-canonical encoding"
    fd = msg.DESCRIPTOR.fields_by_number.get(number)
    if fd is None:
        return f"field {number} ({wire})"
    if fd.enum_type is not None and wire == "varint":
        return f"field {number} ({fd.name}: a value outside {fd.enum_type.name})"
    return f"field {number} ({wire}, but {fd.name} is not written that way)"


@rule("proto.unknown-fields", "model", "IR spec: the model is defined by onnx.proto (a message holds only the fields "
      "onnx.proto describes, each with its wire type)")
def unknown_fields(ctx, m, path, _):
    if not any_unknown(m):
        return
    for where, msg in _messages(m, ""):
        entries = decode_fields(unknown_bytes(msg))
        shown = ", ".join(_describe(msg, wire, number) for wire, number, _ in entries[:4])
        more = f" and {len(entries) - 4} more" if len(entries) > 4 else ""
        yield where, (f"{msg.DESCRIPTOR.name} holds {len(entries)} field{'s' if len(entries) != 1 else ''} onnx.proto "
                      f"does not describe: {shown}{more} (kept as @unknown; no runtime reads them)")


_STRING, _MESSAGE = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
_TENSOR = TensorProto.DESCRIPTOR
#: the fields of a TensorProto that hold strings, or messages that do (its data fields are numbers or bytes)
_TENSOR_STRINGS = [fd for fd in _TENSOR.fields if fd.type == _STRING or fd.message_type is not None]


def _not_utf8(msg, path: str):
    """(checker path, message, field, bytes) of every string field inside ``msg`` that is not UTF-8 (protobuf
    returns such a field as ``bytes``, a valid one as ``str``)."""
    if msg.DESCRIPTOR is _TENSOR:  # its string fields only: ListFields would copy the weights out
        fields = [(fd, getattr(msg, fd.name)) for fd in _TENSOR_STRINGS if fd.is_repeated or msg.HasField(fd.name)]
    else:
        fields = msg.ListFields()
    for fd, value in fields:
        t = fd.type
        if t == _STRING:
            at = f"{path}.{fd.name}" if path else fd.name  # the field's own position, when the text has one
            if fd.is_repeated:
                for i, v in enumerate(value):
                    if isinstance(v, bytes):
                        yield f"{at}[{i}]", msg, fd.name, v
            elif isinstance(value, bytes):
                yield at, msg, fd.name, value
        elif t == _MESSAGE:
            sub = f"{path}.{fd.name}" if path else fd.name
            if fd.is_repeated:
                named = fd.name in _NAMED
                sparse = fd.message_type.name == "SparseTensorProto"  # named by its values' name in the text
                for i, v in enumerate(value):
                    key = (_key(v.values, i) if sparse else _key(v, i)) if named else i
                    yield from _not_utf8(v, f"{sub}[{key}]")
            else:
                yield from _not_utf8(value, sub)


@rule("proto.invalid-utf8", "model", "IR spec: strings are UTF-8 (onnx.proto's string fields; proto2 does not check "
      "them, so a file can hold other bytes)")
def invalid_utf8(ctx, m, path, _):
    for where, msg, field, value in _not_utf8(m, ""):
        shown = value[:60].decode("utf-8", "backslashreplace") + ("..." if len(value) > 60 else "")
        yield where, (f"{msg.DESCRIPTOR.name}.{field} is not UTF-8: \"{shown}\" (kept as bytes and printed as \\xHH "
                      "escapes; tools that read it as text may fail or change it)")
