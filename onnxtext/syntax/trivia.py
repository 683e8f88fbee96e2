"""What ``fmt`` keeps of the author's text beyond comments: number spellings and the lines of tensor literals.

The canonical text is the printer's; the author's choices are read from the source as a side table keyed by
proto path (tomlkit keeps trivia the same way): :class:`~onnxtext.syntax.positions.SpanMap` ``data`` gives,
for every written tensor literal and attribute value, the tree of the source and of the canonical text at the
same path. :func:`keep_author_choices` then edits the canonical text:

* a number keeps the author's spelling (``0.70710678``, ``1e-5``, ``Infinity``) where the canonical text has
  another spelling of the same stored value at the same place: the same path, the same element index, the
  same bits once converted to the element type by the parser's own conversion, and for an attribute the same
  kind of token (``1`` is an INT attribute, ``1.0`` a FLOAT one). A changed value gets the canonical text;
* a tensor literal the author broke over several lines keeps one line per source line (each at the literal's
  indentation, ``{`` and ``}`` on lines of their own), when the element count is still the same and every
  line fits the width. A literal written on one line gets the canonical layout.

An edit that would make a line longer than the width (and longer than the canonical line was) is dropped:
the canonical form stands there. Everything else (names, layout outside literals) is canonical.
"""

from __future__ import annotations

import bisect

from lark import Token, Tree

_NUMBERS = ("int_value", "float_value", "hex_value")
_INDENT = "  "


def _number_tokens(items) -> list:
    """The number tokens of literal items, in text order (complex literals give two)."""
    out = []
    for c in items:
        if isinstance(c, Tree):
            if c.data in _NUMBERS:
                out.append(c.children[0])
            elif c.data == "complex_literal":
                out.extend(p.children[0] for p in c.children if isinstance(p, Tree) and p.data in _NUMBERS)
    return out


def _items(data) -> list:
    return [c for c in data.children if c is not None]


def _value(tok):
    """A number token's value as the builder reads it."""
    from .literal_data import Bits

    if tok.type == "INT":
        return int(tok)
    if tok.type == "HEX":
        return Bits(int(tok, 16))
    return float(tok)


def _bits(tokens, dt):
    """The stored bytes of each token's value as an element of ``dt`` (the parser's own conversion)."""
    from .literal_data import literals_to_array

    arr = literals_to_array([_value(t) for t in tokens], dt)
    return [arr[i:i + 1].tobytes() for i in range(len(tokens))]


def _spellings(src_tokens, can_tokens, dt, same_kind: bool) -> list[tuple]:
    """(start, end, author text) for each canonical token the author spelled differently with the same
    stored bits in ``dt``; [] when the two lists do not correspond."""
    if len(src_tokens) != len(can_tokens) or dt is None:
        return []
    if same_kind and any(s.type != c.type for s, c in zip(src_tokens, can_tokens)):
        return []
    differ = [i for i, (s, c) in enumerate(zip(src_tokens, can_tokens)) if str(s) != str(c)]
    if not differ:
        return []
    try:
        src_bits = _bits([src_tokens[i] for i in differ], dt)
        can_bits = _bits([can_tokens[i] for i in differ], dt)
    except Exception:  # noqa: BLE001 - a value the type cannot hold: no spelling is kept
        return []
    return [(can_tokens[i].start_pos, can_tokens[i].end_pos, str(src_tokens[i]))
            for i, a, b in zip(differ, src_bits, can_bits) if a == b]


def _element_type(type_tree):
    """The element type of a tensor literal's numbers (a complex type's parts are float or double)."""
    from .. import dtypes

    dt = dtypes.BY_NAME.get(str(type_tree.children[0]))
    if dt is not None and dt.kind == "complex":
        return dtypes.BY_NAME["float" if dt.name == "complex64" else "double"]
    return dt


def _attribute_type(tokens):
    """The type an attribute's numbers are stored in: INT(S) as int64, FLOAT(S) as float32 (None: mixed)."""
    from .. import dtypes

    kinds = {t.type for t in tokens}
    return dtypes.BY_NAME["int64"] if kinds == {"INT"} else dtypes.BY_NAME["float"] if "INT" not in kinds else None


def _splice(text: str, start: int, edits) -> str:
    """``text`` (which starts at offset ``start`` of the canonical text) with ``edits`` applied."""
    out, pos = [], start
    for a, b, new in edits:
        out.append(text[pos - start:a - start])
        out.append(new)
        pos = b
    out.append(text[pos - start:])
    return "".join(out)


class _Unit:
    """The edits of one written value: token spellings, and possibly a new layout of its whole literal."""

    def __init__(self, spellings: list, rows: tuple | None = None):
        self.spellings = spellings
        self.rows = rows  # (start, end, new literal text) or None

    def edits(self, with_rows: bool) -> list:
        if with_rows and self.rows is not None:
            return [self.rows]
        return self.spellings

    def span(self):
        edits = ([self.rows] if self.rows else []) + self.spellings
        return min(e[0] for e in edits), max(e[1] for e in edits)


def _row_layout(canonical: str, src_data, can_data, spellings, line_start: int) -> tuple | None:
    """(start, end, text) laying out the canonical literal ``can_data`` in the rows of the source literal
    ``src_data`` (both with the same items), or None when the source literal is on one line or the literal
    is not the last thing on its canonical line (a node statement or a signature, which the printer lays
    out as a whole; the lone entry of a one-line ``<...>`` value list is put on a line of its own)."""
    src_items, can_items = _items(src_data), _items(can_data)
    if not src_items or len(src_items) != len(can_items) or src_data.meta.line == src_data.meta.end_line:
        return None
    if any(not isinstance(c, Token) and getattr(c.meta, "empty", True) for c in src_items + can_items):
        return None
    rows: list[list[str]] = []
    line = None
    by_start = {a: (b, new) for a, b, new in spellings}
    for s, c in zip(src_items, can_items):
        s_line = s.line if isinstance(s, Token) else s.meta.line
        a, b = (c.start_pos, c.end_pos) if isinstance(c, Token) else (c.meta.start_pos, c.meta.end_pos)
        inner_edits = [(x, by_start[x][0], by_start[x][1]) for x in sorted(by_start) if a <= x < b]
        text = _splice(canonical[a:b], a, inner_edits)
        if s_line != line:
            rows.append([])
            line = s_line
        rows[-1].append(text)
    start, end = can_data.meta.start_pos, can_data.meta.end_pos
    first_line = canonical[line_start:start]
    line_end = canonical.find("\n", end)
    rest = canonical[end:line_end if line_end >= 0 else len(canonical)]
    indent = first_line[:len(first_line) - len(first_line.lstrip(" "))]
    opener = first_line[len(indent):]
    lone_entry = opener.startswith("<") and rest == ">"  # the only entry of a one-line value list
    if rest not in ("", ",") and not lone_entry:
        return None  # inside a statement or signature the printer lays out as a whole: its layout stands
    if lone_entry:  # a multi-line entry: the list goes one entry per line, as the printer writes it
        indent += _INDENT
    inner = indent + _INDENT
    body = (",\n" + inner).join(", ".join(r) for r in rows)
    literal = ("raw {" if can_data.data == "raw_data" else "{") + f"\n{inner}{body}\n{indent}}}"
    if lone_entry:
        outer = indent[:-len(_INDENT)]
        return line_start + len(outer), end + 1, f"<\n{indent}{opener[1:]}{literal}\n{outer}>"
    return start, end, literal


def _line_starts(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


def keep_author_choices(source, canonical: str, can_spans, width: int) -> str:
    """``canonical`` with the author's number spellings and literal lines from ``source`` (both
    :class:`~onnxtext.syntax.positions.SpanMap`; ``can_spans`` is the canonical text's)."""
    if not source.data:
        return canonical
    line_starts = _line_starts(canonical)
    units = []
    for path, can in can_spans.data.items():
        src = source.data.get(path)
        if src is None or src[0] != can[0]:
            continue
        if can[0] == "attr":
            s_val, c_val = src[1], can[1]
            if s_val.data != c_val.data:
                continue
            s_items = [s_val] if s_val.data in _NUMBERS else _items(s_val)
            c_items = [c_val] if c_val.data in _NUMBERS else _items(c_val)
            s_tokens, c_tokens = _number_tokens(s_items), _number_tokens(c_items)
            spellings = _spellings(s_tokens, c_tokens, _attribute_type(c_tokens), same_kind=True)
            if spellings:
                units.append(_Unit(spellings))
            continue
        s_data, c_data = src[2], can[2]
        if s_data.data != c_data.data or len(_items(s_data)) != len(_items(c_data)):
            continue
        spellings = _spellings(_number_tokens(_items(s_data)), _number_tokens(_items(c_data)),
                               _element_type(can[1]), same_kind=False)
        line_start = line_starts[bisect.bisect_right(line_starts, c_data.meta.start_pos) - 1]
        rows = _row_layout(canonical, s_data, c_data, spellings, line_start)
        if rows is not None and canonical[rows[0]:rows[1]] == rows[2]:
            rows = None
        if spellings or rows:
            units.append(_Unit(spellings, rows))
    if not units:
        return canonical
    units.sort(key=lambda u: u.span())
    # units whose lines overlap are decided together: their lines must fit the width
    groups: list[list[_Unit]] = []
    last_line = -1
    for u in units:
        a, b = u.span()
        first, last = (bisect.bisect_right(line_starts, x) - 1 for x in (a, b))
        if groups and first <= last_line:
            groups[-1].append(u)
            last_line = max(last_line, last)
        else:
            groups.append([u])
            last_line = last
    out, pos = [], 0
    for group in groups:
        a = min(u.span()[0] for u in group)
        b = max(u.span()[1] for u in group)
        lo = line_starts[bisect.bisect_right(line_starts, a) - 1]
        hi = canonical.find("\n", b)
        hi = len(canonical) if hi < 0 else hi
        old = canonical[lo:hi]
        limit = max([width] + [len(x) for x in old.split("\n")])
        chosen = old
        for with_rows in (True, False):
            edits = sorted(e for u in group for e in u.edits(with_rows))
            new = _splice(old, lo, edits)
            if all(len(x) <= limit for x in new.split("\n")):
                chosen = new
                break
        out.append(canonical[pos:lo])
        out.append(chosen)
        pos = hi
    out.append(canonical[pos:])
    return "".join(out)
