"""Unknown fields: wire data onnx.proto does not describe (an unknown field number, a known field with the wrong
wire type, a closed enum value outside the enum). Protobuf keeps them, onnxtext prints them as ``@unknown``
annotations (:mod:`onnxtext.wireformat`); no runtime reads them, so a model holding any is reported."""

from __future__ import annotations

from ..wireformat import any_unknown, decode_fields, has_unknown, unknown_bytes
from . import rule

#: repeated fields whose elements the checker's paths name by their name (``graph.input[x]``), not by index
_NAMED = frozenset({"input", "output", "value_info", "initializer", "attribute", "sparse_initializer"})


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
                key = getattr(v, "name", None) if fd.name in _NAMED and fd.message_type.name != "SparseTensorProto" \
                    else None
                yield from _messages(v, f"{sub}[{key if key else i}]")
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
