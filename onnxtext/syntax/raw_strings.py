"""String fields holding bytes that are not UTF-8: kept as bytes from the text to the proto.

onnx.proto's ``string`` fields (names, op_type, domain, doc_string, dim_param, metadata keys and values, ...) are
proto2 strings, which protobuf does not check on the wire: a .onnx file can hold bytes in them that are not
UTF-8, and Python's protobuf (upb) loads it, keeps the bytes and returns them as ``bytes`` when such a field is
read. The printer writes them as ``"\\xHH"`` escapes. Reading the text back, protobuf refuses to *set* a string
field from anything but valid UTF-8 (``str``, or ``bytes`` it decodes), so these helpers set such a field at the
wire level instead: ``msg.MergeFromString(<tag><length><bytes>)``. Merging a length-delimited field replaces a
singular field and appends to a repeated one, so elements are set one by one, in order, and the message ends up
holding exactly the bytes of the binary it was printed from.

In the builder, a string literal whose bytes are not UTF-8 is a :class:`RawText` (``bytes`` that remember their
position), made by :func:`text_or_raw`; every other value stays a ``str``. Reading the field back gives the same
``bytes`` (upb), so names compare equal by their bytes: a value named by such bytes is still connected to its
readers, in the builder's checks as in the checker.
"""

from __future__ import annotations

from ..wireformat import encode_field


class RawText(bytes):
    """The bytes of a string literal that are not UTF-8, set into a proto string field as they are. Has the
    ``line`` and ``column`` of the literal when known (errors point at it)."""

    line = column = None


def text_or_raw(value, where=None):
    """A proto string field's value from a literal's bytes: the ``str`` when the bytes are UTF-8, else a
    :class:`RawText` with the position of ``where`` (or of the literal the bytes came from)."""
    if not isinstance(value, bytes) or isinstance(value, RawText):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raw = RawText(value)
        at = where if getattr(where, "line", None) is not None else value
        raw.line, raw.column = getattr(at, "line", None), getattr(at, "column", None)
        return raw


def join_raw(separator: str, parts):
    """``separator.join(parts)`` where some parts may be :class:`RawText` (a dotted domain): bytes when any is."""
    if not any(isinstance(p, bytes) for p in parts):
        return separator.join(parts)
    return text_or_raw(separator.encode().join(p if isinstance(p, bytes) else p.encode("utf-8") for p in parts))


def _field_bytes(msg, field: str, value: bytes) -> bytes:
    return encode_field("bytes", msg.DESCRIPTOR.fields_by_name[field].number, value)


def set_text(msg, field: str, value) -> None:
    """``msg.field = value`` for a singular string field; a :class:`RawText` (any ``bytes`` not UTF-8) is
    merged as wire bytes (the last occurrence of a singular field wins: it replaces what was set)."""
    try:
        setattr(msg, field, value)
    except ValueError:  # UnicodeDecodeError: bytes that are not UTF-8
        if not isinstance(value, bytes):
            raise
        msg.MergeFromString(_field_bytes(msg, field, value))


def extend_texts(msg, field: str, values) -> None:
    """``msg.field.extend(values)`` for a repeated string field, in order, with :class:`RawText` elements
    merged as wire bytes (a merged element of a repeated field is appended)."""
    target = getattr(msg, field)
    try:
        target.extend(values)  # all or nothing: protobuf checks every element before appending any
        return
    except ValueError:
        if not any(isinstance(v, bytes) for v in values):
            raise
    for v in values:
        if isinstance(v, bytes):
            try:
                target.append(v)
            except ValueError:
                msg.MergeFromString(_field_bytes(msg, field, v))
        else:
            target.append(v)


def append_text(msg, field: str, value) -> None:
    """``msg.field.append(value)`` for a repeated string field (see :func:`extend_texts`)."""
    try:
        getattr(msg, field).append(value)
    except ValueError:
        if not isinstance(value, bytes):
            raise
        msg.MergeFromString(_field_bytes(msg, field, value))
