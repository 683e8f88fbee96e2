"""Generic data of the printed text: header entries, ``@field value`` annotations, ``{field: value}`` records
and ``["key": "value"]`` pairs, printed by reflection over the message's fields.

:class:`RecordPrinter` is a base of :class:`onnxtext.printing.printer.Printer` (it uses its layout helpers
``_list`` and ``_filled``); the parser reads these forms with :func:`onnxtext.syntax.field_values.assign`.
"""

from __future__ import annotations

import operator

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
        field print as ``[{field: value}, ...]`` records, which keep field presence."""
        if not self.onnx_style and not all(len(e.ListFields()) == 2 for e in entries):
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
        return self._list("{", items, "}", level)

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

