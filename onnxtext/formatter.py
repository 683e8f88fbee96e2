"""Canonical formatting of onnxtext source that keeps its ``#`` and ``//`` comments (``onnxtext fmt``).

The canonical form is the printer's output (``to_text(parse(text))``); the grammar ignores comments, so
they are carried over by position:

1. The source is parsed a second time into a plain lark tree (no builder) whose lexer reports every
   ``COMMENT`` token, and the tree is walked into *elements*: model, header entries, graphs, their inputs,
   outputs, ``<...>`` values and node block, nodes, attribute lists, attributes, nested graphs, functions,
   training_info, ``@field`` annotations. Each element has a path that names it independently of its layout
   (``graph.node[1].attribute[body].g.node[0]``), a start (its first character, ``///`` doc lines included),
   a head (its first token after annotations) and an end.
2. The canonical text is parsed the same way, giving the position of every path there.
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

Placement depends only on paths and on the canonical text, so formatting is idempotent, comments
included. ``///`` doc comments are part of the proto (doc_string) and are printed by the printer.

Safety: the result is parsed again and must give the same proto as the source, else
:func:`format_text` raises instead of returning text that would change the model.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

from .errors import OnnxTextError

#: proto class name -> grammar start symbol and root path
_KINDS = {"ModelProto": ("model", ""), "GraphProto": ("graph", "graph"),
          "FunctionProto": ("function", "function"), "NodeProto": ("node", "node")}

#: a canonical line starting with one of these closes a block: comments above it are indented one step more
_CLOSERS = ("}", ">", "]", ")")

_tree_parser = None
_sink = threading.local()  # where the lexer callback puts COMMENT tokens during one parse


def _collect(tok):
    comments = getattr(_sink, "comments", None)
    if comments is not None:
        comments.append(tok)
    return tok


def _parse_tree(text: str, start: str):
    """A plain lark tree with positions, and the COMMENT tokens the lexer skipped."""
    global _tree_parser
    if _tree_parser is None:
        import lark

        from .syntax.grammar import START_SYMBOLS, _cache_file, grammar_path

        # The builder's grammar, plus positions on every tree and a callback on the ignored COMMENT
        # terminal; positions change lark's cached tables, so they get their own cache file.
        _tree_parser = lark.Lark.open(grammar_path(), parser="lalr", lexer="contextual", start=START_SYMBOLS,
                                      maybe_placeholders=True, propagate_positions=True,
                                      cache=_cache_file("positions"),
                                      lexer_callbacks={"COMMENT": _collect})
    _sink.comments = []
    try:
        tree = _tree_parser.parse(text, start=start)
        comments = _sink.comments
    finally:
        _sink.comments = None
    unique = {c.start_pos: c for c in comments}  # a token is reported once, but be sure
    return tree, [unique[k] for k in sorted(unique)]


# ------------------------------------------------------------------------------------------- elements

@dataclass(eq=False)
class Element:
    """A located piece of the text that a comment can be attached to."""

    path: str
    parent: Element | None
    start: int  # offset of the first character, /// and @ annotations included
    head: int  # offset of the first token after the annotations
    end: int  # offset just past the last character
    children: list = field(default_factory=list)


def _name(t) -> str:
    """The proto name of an ``ident`` / ``quoted_name`` tree."""
    from .syntax.literal_data import unescape

    tok = t.children[0]
    if t.data == "quoted_name":
        return unescape(tok).decode("utf-8", "replace")
    return str(tok)


def _entries(lst):
    from lark import Tree

    return [c for c in (lst.children if lst is not None else []) if isinstance(c, Tree)]


class _Walker:
    """Walks a plain parse tree into a tree of Elements (the same shapes as checker/spans.py)."""

    def __init__(self):
        self.roots: list[Element] = []

    def add(self, path: str, tree, parent: Element | None) -> Element | None:
        from lark import Tree

        from .syntax.positions import first_token

        meta = tree.meta
        if getattr(meta, "empty", True):
            return None
        head = meta.start_pos  # may be an anonymous token ('<', '{') that the tree does not hold
        ann = tree.children[0] if tree.children else None
        if isinstance(ann, Tree) and ann.data == "annotations":
            tok = first_token(tree)  # the first token after the annotations
            head = tok.start_pos if tok is not None else head
        e = Element(path, parent, meta.start_pos, head, meta.end_pos)
        (parent.children if parent is not None else self.roots).append(e)
        if isinstance(ann, Tree) and ann.data == "annotations":
            # '@field value' lines are elements too (so a comment can trail one); '///' lines belong to e
            for a in ann.children:
                if isinstance(a, Tree) and a.data == "annotation" and not getattr(a.meta, "empty", True):
                    e.children.append(Element(f"{path}.{a.children[0]}", e, a.meta.start_pos,
                                              a.meta.start_pos, a.meta.end_pos))
        return e

    def model(self, t, path, parent):
        m = self.add(path, t, parent)
        ann, header, graph = t.children[:3]
        if header is not None:
            self.header(header, "header", m)
        self.graph(graph, "graph", m)
        fi = ti = 0
        for item in t.children[3:]:
            if item.data == "function":
                self.function(item, f"functions[{fi}]", m)
                fi += 1
            elif item.data == "training_info":
                te = self.add(f"training_info[{ti}]", item, m)
                for f in item.children:
                    fe = self.add(f"{te.path}.{f.children[0]}", f, te)
                    if f.data == "training_graph":
                        self.graph(f.children[1], f"{fe.path}.graph", fe)
                ti += 1

    def header(self, t, path, parent):
        h = self.add(path, t, parent)
        for entry in _entries(t):
            self.add(f"{path}.{entry.children[0]}", entry, h)

    def values(self, t, path, parent, name_index=2):
        if t is None:
            return
        v = self.add(path + ".values", t, parent)
        for e in _entries(t):
            self.add(f"{path}.value[{_name(e.children[name_index])}]", e, v)

    def nodes(self, t, path, parent):
        nl = self.add(path + ".nodes", t, parent)
        for i, n in enumerate(_entries(t)):
            self.node(n, f"{path}.node[{i}]", nl)

    def graph(self, t, path, parent):
        ann, name, inputs, outputs, values, nodes = t.children
        g = self.add(path, t, parent)
        for key, lst in (("input", inputs), ("output", outputs)):
            for e in _entries(lst):
                self.add(f"{path}.{key}[{_name(e.children[2])}]", e, g)
        self.values(values, path, g)
        self.nodes(nodes, path, g)

    def node(self, t, path, parent):
        ann, label, outs, op, attrs1, ins, attrs2 = t.children
        n = self.add(path, t, parent)
        # attributes before and after the inputs print as one list: both lists get the same path
        for attrs in (attrs1, attrs2):
            if attrs is not None:
                al = self.add(path + ".attrs", attrs, n)
                for a in _entries(attrs):
                    self.attr(a, path, al)

    def attr(self, a, owner, parent):
        from lark import Tree

        ann, name, _type, value = a.children
        path = f"{owner}.attribute[{_name(name)}]"
        ae = self.add(path, a, parent)
        if not isinstance(value, Tree):
            return
        if value.data == "graph_value":
            self.graph(value.children[0], path + ".g", ae)
        elif value.data == "value_list_attr":
            for k, v in enumerate(value.children):
                if isinstance(v, Tree) and v.data == "graph_value":
                    self.graph(v.children[0], f"{path}.graphs[{k}]", ae)

    def function(self, t, path, parent):
        ann, header, name, attrs, ins, outs, values, nodes = t.children
        f = self.add(path, t, parent)
        if header is not None:
            self.header(header, path + ".header", f)
        if attrs is not None:
            al = self.add(path + ".attrs", attrs, f)
            for a in _entries(attrs):
                n = _name(a.children[1] if a.data == "attr" else a.children[0])
                self.add(f"{path}.attribute[{n}]", a, al)
        for key, lst in (("input", ins), ("output", outs)):
            for e in _entries(lst):
                self.add(f"{path}.{key}[{_name(e.children[1])}]", e, f)
        self.values(values, path, f)
        self.nodes(nodes, path, f)


def _elements(tree, start: str, root: str) -> list[Element]:
    w = _Walker()
    {"model": w.model, "graph": w.graph, "function": w.function, "node": w.node}[start](tree, root, None)
    return w.roots


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

    def __init__(self, text: str, roots: list[Element]):
        self.text = text
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
                per_line.setdefault(0, []).append(("above", text))
            continue
        ce = table[e.path]
        if kind == "start":
            per_line.setdefault(can_lines.of(ce.start), []).append(("above", text))
        elif kind == "close":
            per_line.setdefault(can_lines.of(ce.end - 1), []).append(("above", text))
        else:
            where = ce.head if kind == "head" else ce.end - 1
            per_line.setdefault(can_lines.of(where), []).append(("trailing", text))

    out = []
    for i, line in enumerate(lines):
        entries = per_line.get(i)
        if not entries:
            out.append(line)
            continue
        trailing = [t for k, t in entries if k == "trailing"]
        if len(trailing) == 1 and entries[-1][0] == "trailing":
            above, suffix = [t for k, t in entries[:-1]], "  " + trailing[0]
        else:  # several trailing comments for one line, or one followed by others: all above, in order
            above, suffix = [t for k, t in entries], ""
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith(_CLOSERS):
            indent += "  "
        out.extend(indent + t for t in above)
        out.append(line + suffix)
    out.extend(at_end)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------- API

def _might_have_comments(text: str) -> bool:
    return "#" in text or "//" in text.replace("///", "")


def format_text(text: str, *, filename: str | None = None, width: int = 100) -> str:
    """The canonical form of onnxtext ``text`` (any kind: model, graph, function, node), comments kept.

    Raises :class:`onnxtext.ParseError` (with ``filename``, line and column) on bad input, and
    :class:`onnxtext.OnnxTextError` if the result would not parse back to the same proto.
    """
    from .syntax.parser import parse
    from .printing.printer import to_text

    proto = parse(text, filename=filename)
    canonical = to_text(proto, width=width)
    result = canonical
    if _might_have_comments(text):
        start, root = _KINDS[type(proto).__name__]
        tree, comments = _parse_tree(text, start)
        if comments:
            source = _Source(text, _elements(tree, start, root))
            can_tree, _ = _parse_tree(canonical, start)
            result = _place(source, comments, canonical, _elements(can_tree, start, root))
    again = parse(result, filename=filename)
    if again.SerializeToString(deterministic=True) != proto.SerializeToString(deterministic=True):
        raise OnnxTextError(f"{filename or '<text>'}: formatting would change the model (a bug in onnxtext; "
                            "please report it with this file); nothing was written")
    return result
