"""Unknown fields: protobuf wire data a message keeps but onnx.proto does not describe.

A binary written by a newer onnx, or damaged, can hold fields with numbers onnx.proto does not define, or
known numbers with the wrong wire type (a string where a number belongs), or a closed enum field with a
value outside the enum. Protobuf keeps all of these as the message's *unknown fields* and writes them back,
after the message's known fields, when the message is serialized. onnxtext keeps them too: the printer
writes them as ``@unknown [...]`` annotations on the message they belong to (see docs/syntax.md), the parser
merges them back, ``load`` warns (:class:`UnknownFieldsWarning`) and ``check`` reports them.

This module is the one home of wire-format facts, below both directions:

* :func:`has_unknown` / :func:`any_unknown`: does one message (resp. a message or anything inside it) hold
  unknown fields; :func:`unknown_bytes`: a message's own unknown fields, exactly as serialized;
  :func:`unknown_messages`: every message holding some, with its path;
* :func:`decode_fields`: unknown-field bytes as readable entries (field number, wire type, value), and
  :func:`encode_field`: an entry back to its bytes. An entry whose bytes are not the canonical encoding of
  its value (an overlong varint) stays ``("raw", bytes)``, so every entry re-encodes to the same bytes.
"""

from __future__ import annotations

import warnings

try:
    from google.protobuf.unknown_fields import UnknownFieldSet
except ImportError:  # protobuf < 4.25 (pyproject asks for more)
    UnknownFieldSet = None

#: wire type number -> the word the text uses for it
WIRE_NAMES = {0: "varint", 1: "fixed64", 2: "bytes", 3: "group", 5: "fixed32"}
WIRE_TYPES = {v: k for k, v in WIRE_NAMES.items()}


class UnknownFieldsWarning(UserWarning):
    """A loaded model holds fields onnx.proto does not describe (kept, printed as ``@unknown``)."""


def has_unknown(msg) -> bool:
    """Whether ``msg`` itself (not its sub-messages) holds unknown fields."""
    if UnknownFieldSet is None:
        return len(unknown_bytes(msg)) > 0
    return len(UnknownFieldSet(msg)) > 0


def unknown_bytes(msg) -> bytes:
    """The serialized unknown fields of ``msg`` itself, in their order: protobuf writes them after the known
    fields, so they are what the serialization has beyond a copy holding only the known fields."""
    full = msg.SerializeToString()
    known = type(msg)()
    wire = b""  # string fields holding bytes that are not UTF-8 (Python's protobuf sets those only this way)
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_STRING and any(isinstance(v, bytes) for v in (value if fd.is_repeated else [value])):
            for v in (value if fd.is_repeated else [value]):
                raw = v if isinstance(v, bytes) else v.encode("utf-8")
                wire += encode_field("bytes", fd.number, raw)
        elif fd.is_repeated:
            getattr(known, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(known, fd.name).CopyFrom(value)
        else:
            setattr(known, fd.name, value)
    known.MergeFromString(wire)
    head = known.SerializeToString()
    if not full.startswith(head):  # not the layout described above: nothing can be said exactly
        raise ValueError(f"cannot separate the unknown fields of a {msg.DESCRIPTOR.name}")
    return full[len(head):]


def _message_fields(msg):
    """(descriptor, value) of the set message-typed fields of ``msg``; a tensor's are read one by one, since
    ListFields would copy its raw_data."""
    if msg.DESCRIPTOR.name == "TensorProto":
        fds = msg.DESCRIPTOR.fields_by_name
        out = [(fds["external_data"], msg.external_data)] if len(msg.external_data) else []
        return out + ([(fds["segment"], msg.segment)] if msg.HasField("segment") else [])
    return [(fd, value) for fd, value in msg.ListFields() if fd.message_type is not None]


def _walk_has(msg) -> bool:
    if has_unknown(msg):
        return True
    for fd, value in _message_fields(msg):
        if fd.is_repeated:
            if any(_walk_has(v) for v in value):
                return True
        elif _walk_has(value):
            return True
    return False


def any_unknown(msg, size: int | None = None, data: bytes | None = None) -> bool:
    """Whether ``msg`` or any message inside it holds unknown fields. ``size``: about its serialized size,
    when the caller knows it; ``data``: the bytes ``msg`` was just decoded from, when the caller has them.
    Two exact ways, the cheaper one chosen: a walk over the messages (its cost grows with their number), or a
    copy without unknown fields compared by serialized size (it grows with the bytes)."""
    graph = getattr(msg, "graph", None)
    elements = 1 if graph is None else 1 + len(graph.node) + len(graph.initializer) + len(graph.value_info)
    if data is not None:
        # benchmarks/load_speed.py; on the real corpus the walk wins above ~5,000 bytes per graph element
        return _walk_has(msg) if elements * 5000 < len(data) else _decoded_differs(msg, data)
    full = msg.ByteSize() if size is None else None
    if elements * 500 < (size if size is not None else full):  # ~5 us per message walked, ~10 ns per byte copied
        return _walk_has(msg)
    copy = type(msg)()
    copy.CopyFrom(msg)
    copy.DiscardUnknownFields()
    return copy.ByteSize() != (msg.ByteSize() if full is None else full)


def _decoded_differs(msg, data: bytes) -> bool:
    """:func:`any_unknown` of ``msg`` decoded from ``data``, by a second decoding (cheaper than CopyFrom) with
    its unknown fields dropped. When that serializes back to ``data`` exactly, ``data`` is the serialization
    of a message holding only known fields, which decodes to no unknown field: none, and ``msg.ByteSize()``
    (another pass over every message) is not needed. Otherwise the sizes with and without them are compared."""
    copy = type(msg)()
    copy.ParseFromString(data)
    copy.DiscardUnknownFields()
    known = copy.SerializeToString()
    if known == data:
        return False
    return len(known) != msg.ByteSize()


def unknown_messages(msg, path: str = ""):
    """(path, message) of every message holding unknown fields, ``msg`` included; paths as the checker
    writes them (``graph.node[3].attribute[0]``)."""
    if has_unknown(msg):
        yield path, msg
    for fd, value in _message_fields(msg):
        sub = f"{path}.{fd.name}" if path else fd.name
        if fd.is_repeated:
            for i, v in enumerate(value):
                yield from unknown_messages(v, f"{sub}[{i}]")
        else:
            yield from unknown_messages(value, sub)


def warn_unknown(model, source: str, size: int | None = None, data: bytes | None = None) -> None:
    """Warn (once per call) when ``model`` holds unknown fields, naming how many messages and where.
    ``data``: the bytes ``model`` was just decoded from, if any (see :func:`any_unknown`)."""
    if not any_unknown(model, size, data):
        return
    where = [p or "the model" for p, _ in unknown_messages(model)]
    shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    warnings.warn(UnknownFieldsWarning(
        f"{source}: {len(where)} message{'s' if len(where) != 1 else ''} hold fields onnx.proto does not describe "
        f"(unknown field numbers or wrong wire types) in {shown}: kept, and printed as @unknown annotations; "
        "`onnxtext check` lists them"), stacklevel=3)


# ---------------------------------------------------------------------------------------------- entries
def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if not b & 0x80:
            return value, pos


def _put_varint(value: int) -> bytes:
    if value < 128:  # one or two bytes (tags, most lengths) without the loop
        return bytes((value,))
    if value < 16384:
        return bytes((value & 127 | 128, value >> 7))
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


put_varint = _put_varint  # protobuf's base-128 encoding of a tag or a length (the parser's fast path uses it too)


def _field_end(data: bytes, pos: int, wire: int, number: int) -> tuple[int, object]:
    """(end of the value starting at ``pos``, the value) for one field of wire type ``wire``."""
    if wire == 0:
        value, end = _varint(data, pos)
        return end, value
    if wire == 1:
        if pos + 8 > len(data):
            raise ValueError("truncated fixed64")
        return pos + 8, int.from_bytes(data[pos:pos + 8], "little")
    if wire == 5:
        if pos + 4 > len(data):
            raise ValueError("truncated fixed32")
        return pos + 4, int.from_bytes(data[pos:pos + 4], "little")
    if wire == 2:
        n, start = _varint(data, pos)
        if start + n > len(data):
            raise ValueError("truncated length-delimited field")
        return start + n, data[start:start + n]
    if wire == 3:  # a group: fields until the matching end-group tag
        start = pos
        while True:
            tag, after = _varint(data, pos)
            if tag & 7 == 4:
                if tag >> 3 != number:
                    raise ValueError("mismatched end of group")
                return after, data[start:pos]
            pos, _ = _field_end(data, after, tag & 7, tag >> 3)
    raise ValueError(f"wire type {wire}")


def decode_fields(data: bytes) -> list[tuple]:
    """Unknown-field bytes -> entries ``(wire name, number, value)`` (value: int for varint and fixed,
    bytes for bytes and group contents), or ``("raw", None, bytes)`` for a field whose bytes are not the
    canonical encoding of its value. ``encode_field`` of each entry gives back its exact bytes."""
    out, pos = [], 0
    while pos < len(data):
        start = pos
        tag, after = _varint(data, pos)
        wire, number = tag & 7, tag >> 3
        pos, value = _field_end(data, after, wire, number)
        entry = (WIRE_NAMES[wire], number, value)
        out.append(entry if encode_field(*entry) == data[start:pos] else ("raw", None, data[start:pos]))
    return out


def encode_field(wire: str, number: int | None, value) -> bytes:
    """The bytes of one entry (see :func:`decode_fields`); ValueError for values the wire type cannot hold."""
    if wire == "raw":
        return bytes(value)
    if not isinstance(number, int) or not 1 <= number < 1 << 29:
        raise ValueError(f"field number {number} is outside 1 ... {(1 << 29) - 1}")
    w = WIRE_TYPES[wire]
    tag = _put_varint(number << 3 | w)
    if w == 2:
        return tag + _put_varint(len(value)) + bytes(value)
    if w == 3:
        return tag + bytes(value) + _put_varint(number << 3 | 4)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"a {wire} value is an integer")
    bits = {0: 64, 1: 64, 5: 32}[w]
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{value} does not fit a {wire} ({bits} bits, unsigned)")
    if w == 0:
        return tag + _put_varint(value)
    return tag + value.to_bytes(bits // 8, "little")
