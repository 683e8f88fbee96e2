"""Generic data of the printed text: header entries, ``@field value`` annotations, ``{field: value}`` records
and ``["key": "value"]`` pairs, printed by reflection over the message's fields; and a message's unknown
fields as ``@unknown [{number: 9, varint: 1}, ...]`` (records: an ``unknown:`` field), see
:mod:`onnxtext.wireformat`.

:class:`RecordPrinter` is a base of :class:`onnxtext.printing.printer.Printer` (it uses its layout helpers
``_list`` and ``_filled``); the parser reads these forms with :func:`onnxtext.syntax.field_values.assign`.
"""

from __future__ import annotations

import binascii
import operator

from .. import wireformat
from .atoms import _float_token, quote


class RecordPrinter:
    """``print_datum`` / ``print_pairs`` / ``print_record`` for messages without a syntax of their own."""

    # ------------------------------------------------------------------ generic data (annotations, headers)
    def print_datum(self, msg, fd, level: int, lead: int | None = None) -> str:
        value = getattr(msg, fd.name)
        if fd.is_repeated:
            if fd.message_type is not None:
                mt = fd.message_type.name
                if mt in ("StringStringEntryProto", "OperatorSetIdProto"):
                    return self.print_pairs(value, level, lead)
                return self._list("[", [self.print_record(v, level + 1) for v in value], "]", level, lead=lead)
            return self._filled("[", [self._scalar(fd, v) for v in value], "]", level, lead)
        if fd.message_type is not None:
            return self.print_record(value, level)
        return self._scalar(fd, value)

    def print_pairs(self, entries, level: int, lead: int | None = None) -> str:
        """``["key": "value", ...]`` (StringStringEntryProto, OperatorSetIdProto); entries with an unset
        field or unknown fields print as ``[{field: value}, ...]`` records, which keep both."""
        if not self.onnx_style and not all(len(e.ListFields()) == 2 and not wireformat.has_unknown(e)
                                           for e in entries):
            return self._list("[", [self.print_record(e, level + 1) for e in entries], "]", level)
        items = []
        for e in entries:
            if e.DESCRIPTOR.name == "OperatorSetIdProto":
                items.append(f"{quote(e.domain)}: {e.version}")
            else:
                items.append(f"{quote(e.key)}: {quote(e.value)}")
        return self._filled("[", items, "]", level, lead)

    def print_record(self, msg, level: int) -> str:
        items = []
        for fd in msg.DESCRIPTOR.fields:
            if (fd.is_repeated and len(getattr(msg, fd.name))) or (not fd.is_repeated and msg.HasField(fd.name)):
                items.append(f"{fd.name}: " + self.print_datum(msg, fd, level + 1))
        if wireformat.has_unknown(msg):
            items.append("unknown: " + self.print_unknown(wireformat.unknown_bytes(msg), level + 1))
        return self._list("{", items, "}", level)

    # ------------------------------------------------------------------ unknown fields
    def unknown_lines(self, msg, nested=(), level: int = 0, deep: bool = True) -> list[str]:
        """``@unknown [...]`` for the unknown fields of ``msg`` and of the messages inside its ``nested``
        fields, which have no annotations of their own (types, shapes, dimensions): their entries name the
        path from ``msg`` (``at: "type.tensor_type"``). ``deep=False``: the nested messages' own unknown
        fields only (training_info, whose graphs and binding records carry theirs). Empty when none."""
        entries = []
        if wireformat.has_unknown(msg):
            entries += self._unknown_entries(wireformat.unknown_bytes(msg), None, level + 1)
        for field in nested:
            fd = msg.DESCRIPTOR.fields_by_name[field]
            values = getattr(msg, field)
            if fd.is_repeated:
                subs = [(f"{field}[{i}]", v) for i, v in enumerate(values)]
            else:
                subs = [(field, values)] if msg.HasField(field) else []
            for base, sub in subs:
                if not deep:
                    if wireformat.has_unknown(sub):
                        entries += self._unknown_entries(wireformat.unknown_bytes(sub), base, level + 1)
                    continue
                if not self._holds_unknown(sub):
                    continue
                for path, inner in wireformat.unknown_messages(sub, base):
                    entries += self._unknown_entries(wireformat.unknown_bytes(inner), path, level + 1)
        if not entries:
            return []
        return ["@unknown " + self._list("[", entries, "]", level, lead=len(self.ind) * level + 9)]

    def _holds_unknown(self, sub) -> bool:
        """:func:`wireformat.any_unknown` of a small message (a type), memoized by its bytes for this printer:
        the same few types recur on most values."""
        memo = self.__dict__.setdefault("_unknown_memo", {})
        key = sub.SerializeToString()
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = wireformat.any_unknown(sub, len(key))
        return hit

    def print_unknown(self, data: bytes, level: int) -> str:
        """A message's unknown-field bytes as a list of entries (the ``unknown:`` field of a record)."""
        return self._list("[", self._unknown_entries(data, None, level + 1), "]", level)

    def _unknown_entries(self, data: bytes, path: str | None, level: int) -> list[str]:
        out = []
        at = f"at: {quote(path)}, " if path is not None else ""
        for wire, number, value in wireformat.decode_fields(data):
            if wire == "raw":
                text = f"raw: hex {quote(binascii.hexlify(value, ' ').decode('ascii'))}"
            elif wire in ("bytes", "group"):
                text = f"number: {number}, {wire}: {self._unknown_blob(value, level)}"
            elif wire == "varint":
                text = f"number: {number}, varint: {value}"
            else:
                text = f"number: {number}, {wire}: {value:#0{10 if wire == 'fixed32' else 18}x}"
            out.append("{" + at + text + "}")
        return out

    def _unknown_blob(self, value: bytes, level: int) -> str:
        """Short or text-like bytes as a string literal, others as a base64 block."""
        if len(value) <= 64 or _mostly_text(value):
            return quote(value)
        return self.print_block(value, None, level)

    def _scalar(self, fd, v) -> str:
        if fd.type == fd.TYPE_ENUM:
            ev = fd.enum_type.values_by_number.get(v)
            return ev.name if ev is not None else str(v)
        if fd.type in (fd.TYPE_STRING, fd.TYPE_BYTES):
            return quote(v)
        if fd.type == fd.TYPE_BOOL:
            return "true" if v else "false"
        if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
            return _float_token(repr(float(v)))
        return str(v)


_FIELDS: dict = {}


def annotation_fields(cls, skip: tuple):
    """(has a doc_string field, (descriptor, name, repeated) of the fields outside ``skip`` in declaration
    order) of a message class, cached: walking the descriptor for every node and tensor of a big graph
    costs more than printing them."""
    key = (cls, skip)
    r = _FIELDS.get(key)
    if r is None:
        desc = cls.DESCRIPTOR
        r = _FIELDS[key] = ("doc_string" in desc.fields_by_name,
                            tuple((fd, fd.name, fd.is_repeated) for fd in desc.fields if fd.name not in skip))
    return r


def repeated_getter(spec):
    """A callable returning the tuple of the repeated fields in ``spec`` of a message (one C call when
    there are two or more): print_node's test for "anything to annotate"."""
    fields = [f for _, f, repeated in spec[1] if repeated]
    if len(fields) >= 2:
        return operator.attrgetter(*fields)
    return (lambda msg: (getattr(msg, fields[0]),)) if fields else (lambda msg: ())



def _mostly_text(value: bytes) -> bool:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.isprintable()
