"""A fast path for the printer's hot lists: a graph's nodes, initializers and value infos, decoded in bulk.

On a graph of many small nodes the printer's cost is per element: every field read through the protobuf
Python API is a C call that builds a new object, and even a lean loop over the serialized records costs
microseconds of bytecode per record. This module does no per-record Python for plain records. It
serializes the GraphProto once and decodes the wire bytes with numpy, column by column over all records at
once, in the way Python's json module pairs a fast scanner with a reference one:

1. ``_records``: one tight loop finds the top-level records (the only sequential step: each record's
   position depends on the previous one's length).
2. ``_fields``: the fields of every node (initializer) record are walked in lock-step, field ``j`` of all
   records in one vectorized step, giving tag, content position and length (or varint value) matrices.
3. Plain records are recognized by vectorized tests (canonical field order, field counts, one-byte lengths,
   character classes of the names from prefix sums over the whole buffer, keywords through an 8-byte key):

   * a NODE record whose body is only input/output/name/op_type/attribute/domain fields, at most
     ``I_MAX`` inputs, ``O_MAX`` outputs and ``A_MAX`` attributes (none a graph), names of printable ASCII
     without quotes or backslashes, an identifier op_type; the attributes' text is printed by the
     reference methods once per distinct run of attribute bytes (it depends on nothing else);
   * an INITIALIZER record with one-byte dims, a name and at most 124 bytes of values: ``float_data``, or
     ``raw_data`` of exactly the shape's element count of float, double, int32 or int64 (shape constants),
     no NaN, fitting one line; each distinct value is formatted once;
   * an INPUT, OUTPUT or VALUE_INFO record of a name and a type (no doc string or metadata), the type's
     text printed by the reference once per distinct type bytes.

4. The output is assembled as a list of segments (start, length) into one pool holding the wire bytes and
   the literal texts (separators with their quotes, shapes, float texts), and gathered by one numpy
   fancy-index: name bytes are copied straight from the wire, never decoded one by one.

Every other record is printed by the reference method (``Printer.print_node`` /
``print_initializer`` / ``print_value_info``) on the proto element itself, in the reference order
(value_info and initializers when the graph asks for them, nodes when the block is asked for), so even the
first error raised is the same. The
output is the reference printer's, byte for byte (``tests/test_printer_fastpath.py`` proves it over the
corpus, generated models and edge cases). ``ENABLED = False`` turns the path off; graphs with fewer than
``MIN_ELEMENTS`` nodes + initializers do not use it (its fixed cost exceeds the saving), nor do graphs
holding big tensors (the serialized copy would add their size to the printer's peak memory).
"""

from __future__ import annotations

import numpy as np

from onnx import AttributeProto, NodeProto, TypeProto

from . import wirecolumns as _wire
from .. import dtypes
from ..schemas import element_type_attributes
from .atoms import _QUOTED_WORDS, _op_name, format_values

ENABLED = True
MIN_ELEMENTS = 64
_BIG_TENSOR = 1024  # bytes
I_MAX, O_MAX, A_MAX = 6, 3, 8  # inputs, outputs, attributes of a node the fast path prints
D_MAX = 8  # dims of an initializer the fast path prints
V_MAX = 31  # values of an initializer the fast path prints (one-byte length: 124 bytes)
CHUNK = 1 << 15  # records decoded together (bounds the column matrices: about 10 MB)

_F32 = dtypes.BY_NAME["float"]
_MISSING = object()
_GRAPH_KINDS = (AttributeProto.GRAPH, AttributeProto.GRAPHS)
_I = _wire.INDEX  # a graph the fast path prints is under 1 GiB (checked)

# byte -> class weight: 1 where a byte cannot appear unescaped in a quoted name (controls, non-ASCII, '"',
# '\'), plus 128 where it cannot continue an ASCII identifier (a field's sum of weights, under 128 bytes
# long, holds both counts: the non-plain count below bit 7, the non-identifier count from bit 7)
_CLASS = bytes((0 if 0x20 <= b < 0x7F and b not in b'"\\' else 1) | (0 if chr(b).isalnum() and b < 0x80 or b == 0x5F
                                                                     else 128) for b in range(256))
_ID_START = np.array([chr(b).isalpha() and b < 0x80 or b == 0x5F for b in range(256)])

# field tag byte -> rank in the canonical field order (0: a field the fast path does not print; 9: none)
_NODE_CODE = np.zeros(256, np.int8)
_NODE_CODE[[0, 0x0A, 0x12, 0x1A, 0x22, 0x2A, 0x3A]] = [9, 1, 2, 3, 4, 5, 6]  # -, input, output, name, op_type,
# attribute, domain
_VI_CODE = np.zeros(256, np.int8)
_VI_CODE[[0, 0x0A, 0x12]] = [9, 1, 2]  # -, name, type
# data_type -> bytes per element of the types whose raw_data the fast path prints (0: the reference prints)
_RAW_TYPES = [dtypes.BY_NAME[t] for t in ("float", "double", "int32", "int64")]
_ITEMSIZE = np.zeros(32, np.int64)
_TYPE_SLOT = np.zeros(32, np.int64)  # data_type -> index in _RAW_TYPES (a 2-bit part of the head key)
for _i, _dt in enumerate(_RAW_TYPES):
    _ITEMSIZE[_dt.enum], _TYPE_SLOT[_dt.enum] = _dt.bits // 8, _i
_INIT_CODE = np.zeros(256, np.int8)
_INIT_CODE[[0, 0x08, 0x10, 0x22, 0x42, 0x4A]] = [9, 1, 2, 3, 4, 5]  # -, dims, data_type, float_data, name, raw

# (first byte, length) pairs of the words that print quoted: identifiers outside it are no keyword
_KEYWORD_MAX = max(map(len, _QUOTED_WORDS))
_KEYWORD_SHAPE = np.zeros((256, _KEYWORD_MAX + 2), bool)
for _w in _QUOTED_WORDS:
    _KEYWORD_SHAPE[ord(_w[0]), len(_w)] = True


def graph_parts(printer, g, level: int):
    """(input texts, output texts, value_info texts, initializer texts, a function returning the nodes
    block) of ``g`` as ``Printer.print_graph`` lays them out, or None when the fast path does not apply (disabled, small
    graph, unexpected wire data)."""
    nn, ni, nv = len(g.node), len(g.initializer), len(g.value_info)
    if not ENABLED or nn + ni + nv + len(g.input) < MIN_ELEMENTS or nn == 0:
        return None
    # Plain initializer records are under 130 bytes; a graph holding big weights would only cost a copy of
    # them in memory. A sample of initializers tells (ByteSize encodes: on the whole graph it costs as much
    # as serializing it).
    inits = g.initializer
    if any(inits[i].ByteSize() > _BIG_TENSOR for i in range(0, ni, max(1, ni // 32))):
        return None
    data = g.SerializeToString()
    if len(data) >= 1 << 30:
        return None
    recs = _wire.records(data, (0x0A, 0x2A, 0x6A, 0x5A, 0x62))  # node, initializer, value_info, input, output
    counts = (nn, ni, nv, len(g.input), len(g.output))
    if recs is None or any(len(r[0]) != c for r, c in zip(recs, counts)):
        return None
    return _Bulk(printer, g, level, data, recs).parts()


class _Bulk:
    """One graph's nodes, initializers and value infos, decoded column-wise from its serialized bytes."""

    def __init__(self, printer, g, level, data: bytes, recs):
        self.printer, self.g, self.level, self.data = printer, g, level, data
        self.d = np.frombuffer(data, np.uint8)
        self.node_recs, self.init_recs, self.vi_recs, self.in_recs, self.out_recs = recs
        self.pool = _wire.Pool(len(data))
        self.pad = printer.ind * (level + 1)
        self._attr_memo, self._type_memo = {}, {}
        # Prefix sums of the byte class weights over the whole buffer (a field's counts are two lookups).
        # uint16 wraps, but a field has fewer than 128 bytes, so the difference of two sums modulo 2**16 is
        # exact (at most 127 * 129).
        self._counts = np.zeros(len(data) + 1, np.uint16)
        np.cumsum(np.frombuffer(data.translate(_CLASS), np.uint8), dtype=np.uint16, out=self._counts[1:])

    def _classes(self, s: np.ndarray, n: np.ndarray):
        """(plain, identifier, keyword) for string fields at ``s`` of length ``n`` (< 128): plain when the
        bytes can print between quotes unescaped, identifier when ASCII ``[A-Za-z_][A-Za-z0-9_]*``, keyword
        when one of the words that print quoted."""
        # a field decoded past the end of the buffer (wire data the column decoder misread) is neither: its
        # record then goes to the reference printer
        inside = s + n < len(self._counts)
        diff = self._counts[np.where(inside, s + n, 0)] - self._counts[np.where(inside, s, 0)]
        plain = ((diff & 0x7F) == 0) & inside
        first = self.d[np.minimum(s, len(self.d) - 1)]
        ident = (n > 0) & _ID_START[first] & ((diff >> 7) == 0) & inside
        keyword = np.zeros(len(s), bool)
        cand = np.flatnonzero(ident & _KEYWORD_SHAPE[first, np.minimum(n, _KEYWORD_MAX + 1)])
        for i in cand.tolist():  # rare: a Python look settles them
            keyword[i] = self.data[s[i]:s[i] + n[i]].decode("ascii") in _QUOTED_WORDS
        return plain, ident, keyword

    def _names(self, s: np.ndarray, n: np.ndarray):
        """(plain, quoted) for name fields: plain when the fast path can print the name, quoted when it
        prints between quotes (``literals.name``: all but identifiers that are no keyword)."""
        plain, ident, keyword = self._classes(s, n)
        return plain & ~keyword, ~ident  # keyword-like names (rare) are quoted by position: the reference

    def parts(self):
        g, vi = self.g, self._vi_chunk
        # the reference order: inputs, outputs, value_info, initializers, then nodes when asked
        ins = self._chunked(self.in_recs, lambda s, e, r: vi(s, e, r, g.input))
        outs = self._chunked(self.out_recs, lambda s, e, r: vi(s, e, r, g.output))
        value_infos = self._chunked(self.vi_recs, lambda s, e, r: vi(s, e, r, g.value_info))
        inits = self._chunked(self.init_recs, self._init_chunk)
        return ins, outs, value_infos, inits, self._nodes

    @staticmethod
    def _chunked(recs, chunk_fn) -> list[str]:
        starts, ends = recs
        out = []
        for a in range(0, len(starts), CHUNK):
            out += chunk_fn(starts[a:a + CHUNK], ends[a:a + CHUNK], a)
        return out

    # ------------------------------------------------------------------ value_info
    def _vi_chunk(self, starts, ends, row0: int, infos) -> list[str]:
        """The texts of the ValueInfoProto entries ``infos[row0...]`` (graph inputs, outputs or value_info)
        whose records are [starts, ends): a name and a type, the type's text printed by the reference once
        per distinct type bytes."""
        printer, pool = self.printer, self.pool
        n = len(starts)
        tags, pos, lens, ok = _wire.fields(self.d, starts, ends, 3)
        code = _VI_CODE[tags]
        cnt = _wire.counts(code, 10)
        ok &= (cnt[:, 0] == 0) & _wire.ascending(code)
        has_name, has_type = cnt[:, 1], cnt[:, 2]
        ok &= (has_name <= 1) & (has_type <= 1)
        name_s, name_n = pos[:, 0], np.where(has_name == 1, lens[:, 0], 0)
        type_s, type_n = _wire.column(pos, has_name), _wire.column(lens, has_name)
        plain, quoted = self._names(name_s, name_n)
        ok &= plain
        type_start, type_len = np.zeros(n, _I), np.zeros(n, _I)
        memo = self._type_memo
        rows = np.flatnonzero(ok & (has_type == 1))
        for i, s, k in zip(rows.tolist(), type_s[rows].tolist(), type_n[rows].tolist()):
            key = self.data[s:s + k]
            hit = memo.get(key, _MISSING)
            if hit is _MISSING:
                try:
                    hit = pool.add(printer.print_plain_type(TypeProto.FromString(key)) + " ")
                except Exception:  # noqa: BLE001 - the reference method meets it again, in the reference order
                    hit = None
                memo[key] = hit
            if hit is None:
                ok[i] = False
            else:
                type_start[i], type_len[i] = hit
        q_start, q_len = pool.table(["", '"', "\n", '"\n'])
        q = quoted.astype(np.int64)
        seg_start = np.stack([type_start, q_start[q], name_s, q_start[2 + q]], 1).astype(_I)
        seg_len = np.stack([type_len, q_len[q], name_n, q_len[2 + q]], 1).astype(_I)
        # within the width (the reference breaks a long shape)
        ok &= seg_len.sum(1) - 1 + len(printer.ind) * (self.level + 1) <= printer.width
        seg_len[~ok] = 0
        fast = self._text(starts, ends, seg_start, seg_len).split("\n")
        if ok.all():  # the common case: every line fast (the last split item is the empty tail)
            return fast[:n]
        out = [None] * n
        for i, text in zip(np.flatnonzero(ok).tolist(), fast):
            out[i] = text
        for i in np.flatnonzero(~ok).tolist():
            out[i] = printer.print_value_info(infos[row0 + i], self.level + 1)
        return out

    # ------------------------------------------------------------------ nodes
    def _nodes(self) -> str:
        starts, ends = self.node_recs
        body = "".join(self._node_chunk(starts[a:a + CHUNK], ends[a:a + CHUNK], a)
                       for a in range(0, len(starts), CHUNK))
        return "{\n" + body + self.printer.ind * self.level + "}"

    def _node_chunk(self, starts, ends, row0: int) -> str:
        """The lines of the nodes ``row0...`` whose records are [starts, ends), each ending in a newline."""
        printer, pool, pad = self.printer, self.pool, self.pad
        n = len(starts)
        tags, pos, lens, ok = _wire.fields(self.d, starts, ends, I_MAX + O_MAX + A_MAX + 3)
        # the field codes up to the last column any record reaches (beyond it all are 9: none)
        code = _NODE_CODE[tags[:, :_wire.used_columns(tags)]]
        cnt = _wire.counts(code, 10)
        ok &= (cnt[:, 0] == 0) & _wire.ascending(code)
        n_in, n_out = cnt[:, 1], cnt[:, 2]
        has_name, n_op, n_attr = cnt[:, 3] == 1, cnt[:, 4], cnt[:, 5]
        has_dom = cnt[:, 6] == 1
        ok &= (n_in <= I_MAX) & (n_out >= 1) & (n_out <= O_MAX) & (n_op == 1)
        # as many output and input columns as the chunk's fast nodes use (at least one each)
        o_max = max(1, int(np.where(ok, n_out, 0).max(initial=0)))
        i_max = max(1, int(np.where(ok, n_in, 0).max(initial=0)))
        # the name fields, in print order: name, outputs, inputs (absent ones have length 0, not printed)
        width = 1 + o_max + i_max
        cols = np.empty((n, width), _I)
        cols[:, 0] = n_in + n_out
        cols[:, 1:1 + o_max] = n_in[:, None] + np.arange(o_max)
        cols[:, 1 + o_max:] = np.arange(i_max)
        present = np.empty((n, width), bool)
        present[:, 0] = has_name
        present[:, 1:1 + o_max] = n_out[:, None] > np.arange(o_max)
        present[:, 1 + o_max:] = n_in[:, None] > np.arange(i_max)
        flat = self._flat(pos, cols)
        fs, fl = pos.ravel()[flat], np.where(present, lens.ravel()[flat], 0)
        plain, ident, _ = self._classes(fs.ravel(), fl.ravel())
        quoted = ~ident  # in a node statement keyword-like names print bare (Printer._ids)
        ok &= (plain.reshape(n, -1) | ~present).all(1)
        q = (quoted.reshape(n, -1) & present).astype(_I)
        named = has_name  # a name field, even empty, prints in brackets (`[]`: field presence)
        q[:, 0] &= fl[:, 0] > 0  # ... and an empty one without quotes
        op_col = n_in + n_out + has_name
        op_s, op_n = _wire.column(pos, op_col), _wire.column(lens, op_col)
        ok &= self._classes(op_s, op_n)[1]  # an identifier (keywords need no quotes after '=')
        attr_start = attr_len = np.zeros(n, _I)
        dom_col = op_col + 1 + n_attr
        dom_s, dom_n = _wire.column(pos, dom_col), np.where(has_dom, _wire.column(lens, dom_col), 0)
        if (n_attr > 0).any():
            attr_start, attr_len, attr_ok = self._attributes(pos, lens, op_col, n_attr, ok, (op_s, op_n, dom_s, dom_n))
            ok &= attr_ok
        dom_start = dom_len = np.zeros(n, _I)
        if has_dom.any():
            dom_start, dom_len, dom_ok = self._domains(dom_s, dom_n, has_dom & ok)
            ok &= dom_ok

        # glue segments: the separator before each name field, with the quotes of the names on either side
        g_start, g_len = pool.table([('"' if pre else "") + core + ('"' if post else "")
                                     for core in (pad + "[", "] ", pad, ", ", " = ", "(", ")\n", "()\n")
                                     for pre in (0, 1) for post in (0, 1)])
        PAD_BRACKET, CLOSE, PAD, COMMA, EQ, OPEN, END, EMPTY_END = (4 * i for i in range(8))
        core = np.full((n, width), COMMA, _I)
        core[:, 0] = PAD_BRACKET
        core[:, 1] = np.where(named, CLOSE, PAD)
        core[:, 1 + o_max] = OPEN
        pre = np.zeros((n, width), _I)
        pre[:, 1:] = q[:, :-1]
        pre[:, 1] &= named
        pre[:, 1 + o_max] = 0
        shown = present.copy()
        shown[:, 0] = named
        glue = core + 2 * pre + q
        seg_start = np.zeros((n, 2 * width + 5), _I)
        seg_len = np.zeros_like(seg_start)
        mid = 2 * (1 + o_max)  # the columns of " = ", domain, op_type, attributes
        for part, glue_cols, name_cols in ((slice(0, 1 + o_max), slice(0, mid, 2), slice(1, mid, 2)),
                                            (slice(1 + o_max, width), slice(mid + 4, -1, 2), slice(mid + 5, -1, 2))):
            seg_start[:, glue_cols] = g_start[glue[:, part]]
            seg_len[:, glue_cols] = np.where(shown[:, part], g_len[glue[:, part]], 0)
            seg_start[:, name_cols] = fs[:, part]
            seg_len[:, name_cols] = np.where(shown[:, part], fl[:, part], 0)
        rows = np.arange(n)
        last_out = q[rows, np.clip(n_out, 1, o_max)]
        seg_start[:, mid], seg_len[:, mid] = g_start[EQ + 2 * last_out], g_len[EQ + 2 * last_out]
        seg_start[:, mid + 1], seg_len[:, mid + 1] = dom_start, dom_len
        seg_start[:, mid + 2], seg_len[:, mid + 2] = op_s, op_n
        seg_start[:, mid + 3], seg_len[:, mid + 3] = attr_start, attr_len
        end = np.where(n_in > 0, END + 2 * q[rows, o_max + np.clip(n_in, 1, i_max)], EMPTY_END)
        seg_start[:, -1], seg_len[:, -1] = g_start[end], g_len[end]

        # one line within the width, as the reference decides (longer statements break: the reference)
        ok &= seg_len.sum(1) - 1 <= printer.width
        slow = np.flatnonzero(~ok)
        if len(slow):  # the reference method's text, as one segment of its row
            seg_len[slow] = 0
            nodes = self.g.node
            for i in slow.tolist():
                text = printer.print_node(nodes[row0 + i], self.level + 1)
                text = pad + text + "\n"
                seg_start[i, 0], seg_len[i, 0] = pool.add(text)
        return self._text(starts, ends, seg_start, seg_len)

    def _attributes(self, pos, lens, op_col, n_attr, ok, op):
        """(starts, lengths, ok) of each node's `` <attributes> `` text, printed by the reference methods once
        per distinct run of attribute bytes (the text depends on nothing else but, for the attributes spelled
        as type names, the operator: ``op`` holds the op_type and domain columns). Nodes with graph
        attributes, or whose attributes the reference cannot print, stay with the reference method."""
        data, level = self.data, self.level + 1
        first = op_col + 1
        begin = _wire.column(pos, first) - 2  # the first attribute's tag
        last = first + np.maximum(n_attr, 1) - 1
        end = _wire.column(pos, last) + _wire.column(lens, last)
        start, length, good = np.zeros(len(ok), _I), np.zeros(len(ok), _I), np.ones(len(ok), bool)
        memo = self._attr_memo
        rows = np.flatnonzero((n_attr > 0) & ok)
        op_s, op_n, dom_s, dom_n = (column[rows].tolist() for column in op)
        for i, b, e, os_, on, ds, dn in zip(rows.tolist(), begin[rows].tolist(), end[rows].tolist(), op_s, op_n,
                                           dom_s, dom_n):
            key = (data[b:e], data[os_:os_ + on], data[ds:ds + dn])
            hit = memo.get(key, _MISSING)
            if hit is _MISSING:
                hit = memo[key] = self._attribute_text(key, level)
            if hit is None:
                good[i] = False
            else:
                start[i], length[i] = hit
        return start, length, good

    def _attribute_text(self, key: tuple, level: int):
        """Pool segment of `` <...> `` for the attribute records of ``key`` (records, op_type, domain bytes)
        as ``Printer.print_node`` prints them at ``level``, or None (graph attributes, or an error: the
        reference raises it in order)."""
        printer = self.printer
        try:
            attrs = NodeProto.FromString(key[0]).attribute
            if any(a.type in _GRAPH_KINDS or a.HasField("g") or len(a.graphs) for a in attrs):
                return None
            type_names = element_type_attributes(key[2].decode("utf-8"), key[1].decode("utf-8"))
            items = [printer.print_attribute(a, level + 1, type_names) for a in attrs]
            text = "<" + ", ".join(items) + ">"  # as print_node joins them when the line fits the width
            if "\n" in text:
                return None
        except Exception:  # noqa: BLE001 - the reference method meets it again, in the reference order
            return None
        return self.pool.add(" " + text + " ")

    @staticmethod
    def _flat(matrix: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Indexes into ``matrix.ravel()`` of matrix[i, cols[i, j]] (cols clipped into range)."""
        n, k = matrix.shape
        return np.arange(0, n * k, k)[:, None] + np.clip(cols, 0, k - 1)

    def _domains(self, s, n, rows):
        """(prefix starts, prefix lengths, ok) of the ``domain.`` prefix of each node in ``rows`` (those with
        a domain field; per distinct domain)."""
        start, length, good = np.zeros(len(s), _I), np.zeros(len(s), _I), np.ones(len(s), bool)
        memo = {}
        for i in np.flatnonzero(rows).tolist():
            key = self.data[s[i]:s[i] + n[i]]
            hit = memo.get(key)
            if hit is None:
                try:  # "domain." as the reference prints it (a set empty domain: `"".`)
                    prefix = self.printer._op_text(key.decode("utf-8") or True, "A", None)[:-1]
                except UnicodeDecodeError:
                    prefix = None
                hit = memo[key] = self.pool.add(prefix) if prefix is not None else None
            if hit is None:
                good[i] = False
            else:
                start[i], length[i] = hit
        return start, length, good

    def _text(self, starts, ends, seg_start, seg_len) -> str:
        """The text of the segments of a chunk whose records are [starts, ends): gathered from the chunk's
        bytes followed by the pool (not the whole buffer: a chunk copies only its own bytes)."""
        lo, hi = int(starts[0]) - 2, int(ends[-1])  # the first record's tag: a record has 2+ header bytes
        base = len(self.data)
        source = np.frombuffer(self.data[lo:hi] + b"".join(self.pool.parts), np.uint8)
        seg_start = np.where(seg_start >= base, seg_start - (base - (hi - lo)), seg_start - lo)
        return _wire.gather(source, seg_start.ravel(), seg_len.ravel())

    # ------------------------------------------------------------------ initializers
    def _init_chunk(self, starts, ends, row0: int) -> list[str]:
        """The texts of the initializers ``row0...`` whose records are [starts, ends)."""
        printer, pool = self.printer, self.pool
        n = len(starts)
        tags, pos, lens, ok = _wire.fields(self.d, starts, ends, D_MAX + 3)
        code = _INIT_CODE[tags]
        cnt = _wire.counts(code, 10)
        ok &= (cnt[:, 0] == 0) & _wire.ascending(code)
        if printer.onnx_style or printer.elide:
            ok[:] = False
        nd = cnt[:, 1]
        n_fd, n_raw = cnt[:, 3], cnt[:, 5]
        ok &= (cnt[:, 2] == 1) & (cnt[:, 4] == 1) & (n_fd + n_raw == 1)
        raw = n_raw == 1
        dtype = np.minimum(_wire.column(lens, nd), len(_ITEMSIZE) - 1)  # the data_type field's value
        size = _ITEMSIZE[dtype]
        ok &= (size > 0) & (raw | (dtype == _F32.enum))  # typed values: float_data only
        size = np.maximum(size, 1)
        name_col = nd + 1 + (~raw)
        val_col = np.where(raw, nd + 2, nd + 1)
        name_s, name_n = _wire.column(pos, name_col), _wire.column(lens, name_col)
        val_s, val_n = _wire.column(pos, val_col), _wire.column(lens, val_col)
        dims = np.where(code == 1, lens, 0)
        count = np.where(code == 1, lens, 1).prod(1, dtype=np.int64)
        ok &= (val_n % size == 0) & (val_n <= 4 * V_MAX)
        nv = val_n // size
        if printer.max_inline is not None:
            ok &= ~raw | (count <= printer.max_inline)
        ok &= nv == count  # typed values too: a count that does not fit the dims prints unchecked (reference)
        plain, quoted = self._names(name_s, name_n)
        ok &= plain

        # the values, element type by element type: each distinct bit pattern formatted once
        nv = np.where(ok, nv, 0)
        total = int(nv.sum())
        first = np.cumsum(nv) - nv
        rows = np.repeat(np.arange(n), nv)
        k = np.arange(total) - np.repeat(first, nv)
        at = val_s[rows] + size[rows] * k
        v_start, v_len = np.zeros(total, _I), np.zeros(total, _I)
        for enum in np.unique(dtype[rows]).tolist():
            dt = dtypes.BY_ENUM[enum]
            sel = np.flatnonzero(dtype[rows] == enum)
            bits = self.d[at[sel, None] + np.arange(dt.bits // 8)].view(dt.uint_view)[:, 0]
            if dt.kind == "float":
                nan = np.isnan(bits.view(dt.np))
                ok[rows[sel[nan]]] = False  # NaN payloads: the reference prints their bits
                bits = np.where(nan, 0, bits)
            uniq, inverse = np.unique(bits, return_inverse=True)
            t_start, t_len = pool.table(format_values(uniq.view(dt.np), dt))
            v_start[sel], v_len[sel] = t_start[inverse.ravel()], t_len[inverse.ravel()]

        # one line each; longer ones wrap in the reference
        csum = np.concatenate([[0], np.cumsum(v_len)])
        sums = csum[first + nv] - csum[first]
        body_len = np.where(raw, 5, 1) + sums + 2 * np.maximum(nv - 1, 0) + 1
        ok &= body_len <= printer.width - len(printer.ind) * (self.level + 1)

        # segments: head with quote, name, " = {" with quote, values with separators, "}\n"
        # the head "type[dims] ", per distinct (data_type, dims): 4 bits of rank, 7 bits a dim, 2 the type
        shifts = 7 * np.arange(D_MAX) + 4
        key = np.where(ok, nd + (_TYPE_SLOT[dtype] << 60), 0) + (
            np.where(ok[:, None], dims[:, :D_MAX], 0).astype(np.int64) << shifts).sum(1)
        heads, head_of = np.unique(key, return_inverse=True)
        head_texts = []
        for h in heads.tolist():
            ds = [(h >> int(j)) & 0x7F for j in shifts[:h & 0xF]]
            tname = _RAW_TYPES[h >> 60].name
            head_texts.append(tname + "[" + ", ".join(map(str, ds)) + "] " if ds else tname + " ")
        h_start, h_len = pool.table([h + q for h in head_texts for q in ("", '"')])
        hq = 2 * head_of.ravel() + quoted
        e_start, e_len = pool.table([q + " = " + o for o in ("{", "raw {") for q in ("", '"')])
        eq = 2 * raw + quoted
        c_start, c_len = pool.table([", ", "}\n"])
        vmax = int(nv.max()) if n else 0
        seg_start = np.zeros((n, 4 + 2 * vmax), _I)
        seg_len = np.zeros_like(seg_start)
        seg_start[:, 0], seg_len[:, 0] = h_start[hq], h_len[hq]
        seg_start[:, 1], seg_len[:, 1] = name_s, name_n
        seg_start[:, 2], seg_len[:, 2] = e_start[eq], e_len[eq]
        seg_start[rows, 3 + 2 * k], seg_len[rows, 3 + 2 * k] = v_start, v_len
        sep = k > 0
        seg_start[rows[sep], 2 + 2 * k[sep]], seg_len[rows[sep], 2 + 2 * k[sep]] = c_start[0], c_len[0]
        seg_start[:, -1], seg_len[:, -1] = c_start[1], c_len[1]
        ok &= seg_len.sum(1) - 1 + len(printer.ind) * (self.level + 1) <= printer.width  # the reference's fit
        seg_len[~ok] = 0

        fast = self._text(starts, ends, seg_start, seg_len).split("\n")
        if ok.all():  # the common case: every line fast (the last split item is the empty tail)
            return fast[:n]
        out = [None] * n
        good = np.flatnonzero(ok).tolist()
        for i, text in zip(good, fast):
            out[i] = text
        inits = self.g.initializer
        for i in np.flatnonzero(~ok).tolist():
            out[i] = printer.print_initializer(inits[row0 + i], self.level + 1)
        return out
