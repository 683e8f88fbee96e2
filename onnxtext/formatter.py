"""Canonical formatting of onnxtext source that keeps what the author chose (``onnxtext fmt``).

The canonical form is the printer's output (``to_text(parse(text))``). On top of it ``fmt`` keeps the
author's number spellings and tensor literal lines (:mod:`onnxtext.syntax.trivia`), the ``#`` and ``//``
comments (which the grammar ignores) and the alignment of runs of end-of-line comments:

1. The source's positions come from :class:`onnxtext.syntax.positions.SpanMap` (the one walk of the parse
   tree, shared with the checker and the language server): *elements* (model, header entries, graphs, their
   inputs, outputs, ``<...>`` values and node block, nodes, attribute lists, attributes, nested graphs,
   functions, training_info, ``@field`` annotations, the lines of multi-line tensor literals), each with a
   path that names it independently of its layout (``graph.node[1].attribute[body].g.node[0]``), a start
   (its first character, ``///`` doc lines included), a head (its first token after annotations) and an end;
   and the comment tokens.
2. The canonical text (with the author's spellings and literal lines) is located the same way.
3. Each comment is attached in the source, then placed at the same path in the canonical text:

   - an own-line comment precedes the next element that starts after it inside the innermost element
     containing it, and goes on its own line just above the canonical line where that element starts;
     when nothing follows inside that element (a comment at the end of a block, a list or a tensor
     literal), it goes just above the element's closing line (the ``}``, ``>`` or ``},``);
   - a comment after code on its line attaches to the outermost element whose head is on that line
     (else to the outermost element ending on it, else it is treated as an own-line comment) and is
     appended to the canonical line of that head (or end);
   - comments before everything stay at the top, comments after everything at the bottom.

   An own-line comment is indented like the line below it, one step more when that line closes a
   block. A canonical line that would receive several trailing comments (the source spread the element
   over several lines) gets them as own-line comments above it, in source order, so nothing merges.
4. A run of end-of-line comments the author aligned (two or more consecutive lines, comments starting at
   one column) is aligned again where its comments land on consecutive lines: at the author's column when
   the code still ends two spaces before it, else two spaces after the longest code line.

Placement depends only on paths and on the canonical text, so formatting is idempotent, comments
included. ``///`` doc comments are part of the proto (doc_string) and are printed by the printer.

Safety: the result is parsed again and must give the same proto as the source (else the canonical
spellings are tried, and if that fails too :func:`format_text` raises instead of returning text that would
change the model).
"""

from __future__ import annotations

import bisect

from .errors import OnnxTextError
from .syntax.positions import Element, SpanMap

#: proto class name -> grammar start symbol
_KINDS = {"ModelProto": "model", "GraphProto": "graph", "FunctionProto": "function", "NodeProto": "node"}

#: a canonical line starting with one of these closes a block: comments above it are indented one step more
_CLOSERS = ("}", ">", "]", ")")


def _flatten(roots):
    out, stack = [], list(reversed(roots))
    while stack:
        e = stack.pop()
        out.append(e)
        stack.extend(reversed(e.children))
    return out  # pre-order: a parent comes before its children


class _Lines:
    """Offset -> 0-based line number."""

    def __init__(self, text: str):
        self.starts = [0]
        i = text.find("\n")
        while i >= 0:
            self.starts.append(i + 1)
            i = text.find("\n", i + 1)

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1


# ------------------------------------------------------------------------------------------- placement

class _Source:
    """The source's elements, indexed for the attachment queries."""

    def __init__(self, text: str, roots: list[Element], comments: list):
        self.text = text
        self.comments = comments
        self.lines = _Lines(text)
        self.roots = roots
        flat = _flatten(roots)
        # sorted by start, the outermost first on ties (a stable sort of the pre-order keeps parents first)
        self.by_start = sorted(flat, key=lambda e: e.start)
        self.starts = [e.start for e in self.by_start]
        self._child_starts: dict[int, list[int]] = {}  # id(children list) -> their starts, for bisect
        self.heads_on: dict[int, list[Element]] = {}
        self.ends_on: dict[int, list[Element]] = {}
        for e in flat:
            self.heads_on.setdefault(self.lines.of(e.head), []).append(e)
            self.ends_on.setdefault(self.lines.of(e.end - 1), []).append(e)

    def aligned_runs(self) -> dict:
        """comment offset -> (run id, column) for each trailing comment of a run: two or more consecutive
        lines ending in comments that start at one column (the author aligned them)."""
        runs, prev = {}, None  # prev: (line, column, run members)
        for tok in self.comments:
            line = self.lines.of(tok.start_pos)
            column = tok.start_pos - self.lines.starts[line]
            if not self.text[self.lines.starts[line]:tok.start_pos].strip():
                prev = None  # an own-line comment ends a run
                continue
            if prev is not None and prev[0] == line - 1 and prev[1] == column:
                prev[2].append(tok)
                prev = (line, column, prev[2])
            else:
                prev = (line, column, [tok])
            if len(prev[2]) == 2:
                runs[prev[2][0].start_pos] = (prev[2][0].start_pos, column)
            if len(prev[2]) >= 2:
                runs[tok.start_pos] = (prev[2][0].start_pos, column)
        return runs

    def container(self, pos: int) -> Element | None:
        """The innermost element whose span contains ``pos``."""
        found, level = None, self.roots
        while True:
            starts = self._child_starts.get(id(level))
            if starts is None:
                starts = self._child_starts[id(level)] = [c.start for c in level]
            i = bisect.bisect_right(starts, pos) - 1
            if i < 0 or not (level[i].start < pos < level[i].end):
                return found
            found = level[i]
            level = found.children

    def attach(self, comment) -> tuple[str, Element | None]:
        """Where a comment belongs: ("start" | "head" | "end" | "close", element); element None at the edges."""
        pos = comment.start_pos
        line = self.lines.of(pos)
        before = self.text[self.lines.starts[line]:pos]
        if before.strip():  # code before it on its line: a trailing comment
            heads = self.heads_on.get(line)
            if heads:
                return "head", min(heads, key=lambda e: e.head)  # min() keeps the first (outermost) on ties
            ends = self.ends_on.get(line)
            if ends:
                return "end", min(ends, key=lambda e: e.start)
        c = self.container(pos)
        i = bisect.bisect_right(self.starts, pos)
        if i < len(self.by_start) and (c is None or self.by_start[i].start < c.end):
            return "start", self.by_start[i]
        return "close", c  # None: after everything


def _align(out: list[str], trailed: dict, runs: dict):
    """Align again the trailing comments of each source run (:meth:`_Source.aligned_runs`) that land on
    consecutive output lines: at the author's column when the code still ends two spaces before it, else
    two spaces after the longest code line of the run."""
    by_run: dict[int, list[int]] = {}
    for i, (_, _, tok) in trailed.items():
        run = runs.get(tok.start_pos)
        if run is not None:
            by_run.setdefault(run[0], []).append(i)
    for rid, lines in by_run.items():
        column = runs[trailed[lines[0]][2].start_pos][1]
        lines.sort()
        groups = [[lines[0]]]
        for i in lines[1:]:
            if i == groups[-1][-1] + 1:
                groups[-1].append(i)
            else:
                groups.append([i])
        for group in groups:
            if len(group) < 2:
                continue
            code_end = max(len(trailed[i][0]) for i in group) + 2
            col = column if column >= code_end else code_end
            for i in group:
                code, comment, _ = trailed[i]
                out[i] = code + " " * (col - len(code)) + comment


def _place(source: _Source, comments, canonical: str, can_roots: list[Element]) -> str:
    table: dict[str, Element] = {}
    for e in _flatten(can_roots):
        table.setdefault(e.path, e)
    lines = canonical.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    can_lines = _Lines(canonical)
    per_line: dict[int, list[tuple[str, str]]] = {}  # line -> [(kind "above" | "trailing", text)] in order
    at_end: list[str] = []
    for tok in comments:
        text = str(tok).rstrip()
        kind, e = source.attach(tok)
        while e is not None and e.path not in table:  # not in the canonical text: its nearest ancestor
            e = e.parent
        if e is None:
            if kind == "close":  # after everything
                at_end.append(text)
            else:  # before everything
                per_line.setdefault(0, []).append(("above", text, tok))
            continue
        ce = table[e.path]
        if kind == "start":
            per_line.setdefault(can_lines.of(ce.start), []).append(("above", text, tok))
        elif kind == "close":
            per_line.setdefault(can_lines.of(ce.end - 1), []).append(("above", text, tok))
        else:
            where = ce.head if kind == "head" else ce.end - 1
            per_line.setdefault(can_lines.of(where), []).append(("trailing", text, tok))

    out = []
    trailed: dict[int, tuple] = {}  # output line -> (code, comment, its source token) for each trailing comment
    for i, line in enumerate(lines):
        entries = per_line.get(i)
        if not entries:
            out.append(line)
            continue
        trailing = [t for k, t, _ in entries if k == "trailing"]
        if len(trailing) == 1 and entries[-1][0] == "trailing":
            above, suffix = [t for k, t, _ in entries[:-1]], "  " + trailing[0]
        else:  # several trailing comments for one line, or one followed by others: all above, in order
            above, suffix = [t for k, t, _ in entries], ""
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith(_CLOSERS):
            indent += "  "
        out.extend(indent + t for t in above)
        if suffix:
            trailed[len(out)] = (line, trailing[0], entries[-1][2])
        out.append(line + suffix)
    _align(out, trailed, source.aligned_runs())
    out.extend(at_end)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------- API

def format_text(text: str, *, filename: str | None = None, width: int = 100) -> str:
    """The canonical form of onnxtext ``text`` (any kind: model, graph, function, node), with its comments,
    number spellings, tensor literal lines and aligned comments kept.

    Raises :class:`onnxtext.ParseError` (with ``filename``, line and column) on bad input, and
    :class:`onnxtext.OnnxTextError` if the result would not parse back to the same proto.
    """
    from .printing.printer import to_text
    from .syntax.parser import parse
    from .syntax.trivia import keep_author_choices

    proto = parse(text, filename=filename)
    canonical = to_text(proto, width=width)
    expected = proto.SerializeToString(deterministic=True)

    def same(result: str) -> bool:
        return parse(result, filename=filename).SerializeToString(deterministic=True) == expected

    if canonical == text:
        return text
    start = _KINDS[type(proto).__name__]
    source = SpanMap.from_text(text, start, located=True)
    kept = canonical
    if source.data:
        kept = keep_author_choices(source, canonical, SpanMap.from_text(canonical, start, located=True), width)
    for base in dict.fromkeys((kept, canonical)):  # the author's spellings, else (a bug) the canonical ones
        result = base
        if source.comments:
            placed = SpanMap.from_text(base, start, located=True)
            result = _place(_Source(text, source.roots, source.comments), source.comments, base, placed.roots)
        if same(result):
            return result
    raise OnnxTextError(f"{filename or '<text>'}: formatting would change the model (a bug in onnxtext; "
                        "please report it with this file); nothing was written")
