"""A fast path for the printer's two hot lists: a graph's nodes and its initializers.

On a graph of many small nodes the printer's cost is reading proto fields: every field read through the
protobuf Python API is a C call that builds a new object. This module serializes the GraphProto once and
reads the plain records straight from the wire bytes, in the way Python's json module pairs a fast scanner
with a reference one:

* a NODE record (GraphProto field 1) whose body is only input/output/name/op_type/domain strings in
  canonical order (at most 3 inputs, 1-2 outputs, single-byte lengths) prints from its bytes;
* an INITIALIZER record (field 5) that is a ``float`` tensor with single-byte dims, a name and a few
  ``float_data`` values or ``raw_data`` prints from its bytes, each exact 4-byte value mapped to text
  through a cache keyed by the bytes (no text is ever parsed back);
* every other record, and any record the fast path is unsure about (invalid UTF-8, NaN values, a body the
  pattern does not span exactly, ...), is printed by the reference method (``Printer.print_node`` /
  ``Printer.print_initializer``) on the proto element itself.

The output is the reference printer's, byte for byte (``tests/test_printer_fastpath.py`` proves it over
the corpus and generated models). ``ENABLED = False`` turns the path off; graphs with fewer than
``MIN_ELEMENTS`` nodes + initializers do not use it (serializing costs more than it saves), nor do graphs
holding big tensors (the serialized copy would add their size to the printer's peak memory).
"""

from __future__ import annotations

import re
import struct

from . import dtypes
from .literals import _QUOTED_WORDS, _op_name, float_texts, quote

ENABLED = True
MIN_ELEMENTS = 64
_BIG_TENSOR = 1024  # bytes

_F32 = dtypes.BY_NAME["float"]
_UNPACK_F32 = struct.Struct("<f").unpack


def _lengths(sizes) -> bytes:
    """A regex for one length-prefixed field body (single-byte length among ``sizes``, any bytes)."""
    return b"(?:" + b"|".join(re.escape(bytes([n])) + (b".{%d}" % n if n else b"") for n in sizes) + b")"


_PATTERNS: list = []  # [node, initializer], compiled on first use (about 50 ms: import time stays low)


def _patterns():
    if not _PATTERNS:
        s = _lengths(range(128))  # a string field with its length byte (captured with it: a cache key)
        f = _lengths(range(4, 128, 4))  # 1..31 float32 values
        # node record; groups: 1 length, 2-4 inputs, 5-6 outputs, 7 name, 8 op_type, 9 domain
        _PATTERNS.append(re.compile(rb"\x0a([\x00-\x7f])(?:\x0a(%s))?(?:\x0a(%s))?(?:\x0a(%s))?\x12(%s)"
                                    rb"(?:\x12(%s))?(?:\x1a(%s))?\x22(%s)(?:\x3a(%s))?" % ((s,) * 8), re.DOTALL))
        # initializer record; groups: 1 length, 2 dims (\x08 + a one-byte varint each), 3 float_data + 4 name
        # or 5 name + 6 raw_data (data_type \x10\x01: float)
        _PATTERNS.append(re.compile(rb"\x2a([\x00-\x7f])((?:\x08[\x00-\x7f])*)\x10\x01(?:\x22(%s)\x42(%s)|"
                                    rb"\x42(%s)\x4a(%s))" % (f, s, s, f), re.DOTALL))
    return _PATTERNS


_FLOATS: dict[bytes, str] = {}  # 4 little-endian bytes -> text (float_texts' text of that value)


def _float_text(b: bytes) -> str | None:
    """The text of a float32 given as 4 little-endian bytes (cached), None for NaN."""
    v = _UNPACK_F32(b)[0]
    if v != v:  # NaN: the reference formats the bits of the array, not a cached value
        return None
    if len(_FLOATS) > 65536:
        _FLOATS.clear()
    s = _FLOATS[b] = float_texts([v], _F32)[0]
    return s


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``."""
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


class _NotText(Exception):
    """A name or operator whose bytes are not UTF-8: the reference printer prints that element."""


class _Names(dict):
    """length-prefixed name bytes -> printed name (the printer's memoized ``name()`` on the decoded str);
    bytes that are not UTF-8 raise _NotText (the reference printer handles those)."""

    def __init__(self, names):
        super().__init__()
        self.names = names

    def __missing__(self, key: bytes):
        try:
            text = key[1:].decode("utf-8")
        except UnicodeDecodeError:
            raise _NotText from None
        r = self.names.get(text)
        if r is None:  # literals.name() and quote() inlined: a call less per distinct name
            r = self.names[text] = (text if text.isidentifier() and text.isascii() and text not in _QUOTED_WORDS
                                    else '"' + text + '"' if text.isprintable() and '"' not in text
                                    and "\\" not in text else quote(text))
        self[key] = r
        return r


class _Ops(dict):
    """(domain bytes or None, op_type bytes) -> printed operator (the printer's ``_ops`` memo)."""

    def __init__(self, printer):
        super().__init__()
        self.printer = printer

    def __missing__(self, key):
        dom, op = key
        try:
            d = dom[1:].decode("utf-8") if dom is not None else ""
            o = op[1:].decode("utf-8")
        except UnicodeDecodeError:
            raise _NotText from None
        ops = self.printer._ops
        r = ops.get((d, o, ""))
        if r is None:
            r = ops[(d, o, "")] = _op_name(d, o)
        self[key] = r
        return r


def graph_parts(printer, g, level: int):
    """(initializer texts, a function returning the nodes block) of ``g`` as ``Printer.print_graph`` lays
    them out, or None when the fast path does not apply (disabled, small graph, unexpected wire data).
    Reference methods run in the reference order (initializers now, nodes when the block is asked for), so
    even the first error raised is the same."""
    nn, ni = len(g.node), len(g.initializer)
    if not ENABLED or nn + ni < MIN_ELEMENTS or nn == 0:
        return None
    # Plain initializer records are under 130 bytes; a graph holding big weights would only cost a copy of
    # them in memory. A sample of initializers tells (ByteSize encodes: on the whole graph it costs as much
    # as serializing it).
    inits = g.initializer
    if any(inits[i].ByteSize() > _BIG_TENSOR for i in range(0, ni, max(1, ni // 32))):
        return None
    data = g.SerializeToString()
    return _walk(printer, g, level, data)


def _shape(dims: bytes) -> tuple[str, int]:
    """(``float[d, ...] `` head, element count) of a run of one-byte dims fields."""
    values = list(dims[1::2])
    count = 1
    for d in values:
        count *= d
    return ("float[" + ", ".join(map(str, values)) + "] " if values else "float "), count


def _float_list(blob: bytes) -> list[str] | None:
    """Texts of the float32 values of a length-prefixed blob; None if one is NaN."""
    texts = []
    for i in range(1, len(blob), 4):
        b = blob[i:i + 4]
        s = _FLOATS.get(b) or _float_text(b)
        if s is None:
            return None
        texts.append(s)
    return texts


def _walk(printer, g, level: int, data: bytes):
    """graph_parts from the top-level records of ``data``, record by record."""
    nn, ni = len(g.node), len(g.initializer)
    names, ops = _Names(printer._names), _Ops(printer)
    fast_inits = not printer.onnx_style and not printer.elide
    max_inline = printer.max_inline
    node_match, init_match = (p.match for p in _patterns())
    floats = _FLOATS
    ind = printer.ind
    pad = ind * (level + 1)
    init_room = printer.width - len(ind) * (level + 1)  # _wrapped_values' test at level + 1
    shapes: dict[bytes, tuple[str, int]] = {}
    lines = ["{"]
    inits = []
    later: list[tuple[int, int]] = []  # (line, node) printed by the reference method
    k_node = k_init = 0
    pos, total = 0, len(data)
    while pos < total and (k_node < nn or k_init < ni):
        tag = data[pos]
        length = data[pos + 1]
        if tag >= 0x80 or length >= 0x80:
            tag, start = _varint(data, pos)
            length, start = _varint(data, start)
        else:
            start = pos + 2
        if tag & 7 != 2:  # every GraphProto field is length-delimited: unknown wire data
            return None
        end = start + length
        if tag == 0x0A:
            line = None
            m = node_match(data, pos) if length < 0x80 else None
            if m is not None and m.end() == end:
                _, i1, i2, i3, o1, o2, nm, op, dom = m.groups()
                try:
                    ins = ("" if i1 is None else names[i1] if i2 is None else names[i1] + ", " + names[i2]
                           if i3 is None else names[i1] + ", " + names[i2] + ", " + names[i3])
                    outs = names[o1] if o2 is None else names[o1] + ", " + names[o2]
                    if nm is None or nm == b"\x00":  # no name, or "" (the reference tests the str)
                        line = f"{pad}{outs} = {ops[dom, op]}({ins})"
                    else:
                        line = f"{pad}[{names[nm]}] {outs} = {ops[dom, op]}({ins})"
                except _NotText:
                    line = None
            if line is None:  # printed by the reference in nodes(), after every initializer as it does
                later.append((len(lines), k_node))
            lines.append(line)
            k_node += 1
        elif tag == 0x2A:
            text = None
            m = init_match(data, pos) if fast_inits and length < 0x80 else None
            if m is not None and m.end() == end:
                _, dims, fd, nm1, nm2, raw = m.groups()
                shape = shapes.get(dims)
                if shape is None:
                    shape = shapes[dims] = _shape(dims)
                head, count = shape
                if fd is not None:
                    blob, open_, nm = fd, "{", nm1
                else:
                    blob, open_, nm = raw, "raw {", nm2
                    if len(raw) - 1 != 4 * count or (max_inline is not None and count > max_inline):
                        blob = None  # a base64 block: the reference prints it
                if blob is not None:
                    if len(blob) == 5:  # one value, the common case
                        s = floats.get(blob[1:]) or _float_text(blob[1:])
                        texts = None if s is None else (s,)
                    else:
                        texts = _float_list(blob)
                    if texts is not None:
                        try:
                            nt = names[nm]
                        except _NotText:
                            nt = None
                        if nt is not None:
                            body = open_ + ", ".join(texts) + "}"
                            if len(body) > init_room:
                                body = printer._wrapped_values(open_, list(texts), "}", level + 1)
                            text = head + nt + " = " + body
            if text is None:
                text = printer.print_initializer(g.initializer[k_init], level + 1)
            inits.append(text)
            k_init += 1
        pos = end
    if k_node != nn or k_init != ni or pos > total:
        return None
    lines.append(ind * level + "}")

    def nodes() -> str:
        for i, k in later:
            text = printer.print_node(g.node[k], level + 1)
            lines[i] = pad + (_indent_first_lines(text, pad) if "\n" in text else text)
        return "\n".join(lines)

    return inits, nodes


def _indent_first_lines(text: str, pad: str) -> str:
    from .printer import _indent_first_lines as f

    return f(text, pad)
