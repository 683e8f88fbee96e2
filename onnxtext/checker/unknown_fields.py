"""Wire data a runtime does not read as onnx.proto says: unknown fields (an unknown field number, a known field
with the wrong wire type, a closed enum value outside the enum), which protobuf keeps and onnxtext prints as
``@unknown`` annotations (:mod:`onnxtext.wireformat`), and string fields holding bytes that are not UTF-8 (proto2
does not check them; protobuf returns them as ``bytes``, onnxtext prints them as ``"\\xHH"`` escapes and sets
them back through wire bytes, :mod:`onnxtext.syntax.raw_strings`). A model holding either is reported."""

from __future__ import annotations

from ..non_utf8 import NAMED as _NAMED, find, path_key, shown
from ..wireformat import any_unknown, decode_fields, has_unknown, unknown_bytes
from . import rule


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
                key = path_key(v, i) if fd.name in _NAMED and fd.message_type.name != "SparseTensorProto" else i
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
        described = ", ".join(_describe(msg, wire, number) for wire, number, _ in entries[:4])
        more = f" and {len(entries) - 4} more" if len(entries) > 4 else ""
        yield where, (f"{msg.DESCRIPTOR.name} holds {len(entries)} field{'s' if len(entries) != 1 else ''} onnx.proto "
                      f"does not describe: {described}{more} (kept as @unknown; no runtime reads them)")


@rule("proto.invalid-utf8", "model", "IR spec: strings are UTF-8 (onnx.proto's string fields; proto2 does not check "
      "them, so a file can hold other bytes)")
def invalid_utf8(ctx, m, path, _):
    for where, msg, field, _, value in find(m):
        text = shown(value[:60]) + ("..." if len(value) > 60 else "")
        yield where, (f"{msg.DESCRIPTOR.name}.{field} is not UTF-8: \"{text}\" (kept as bytes and printed as \\xHH "
                      "escapes; tools that read it as text may fail or change it)")
