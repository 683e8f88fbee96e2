"""Source positions: the one walk of a text's parse tree that maps proto paths to where they are written.

How it works: the text is parsed a second time with the same grammar but without the Builder transformer
(:func:`plain_tree`, a lark tree of tokens; or, for ``fmt``, :func:`located_parse`, whose parser also records
every tree's span, ``propagate_positions``, and reports the ``#`` / ``//`` comments its lexer skips). The tree
has exactly the shape of the proto the builder made: a ``graph`` tree holds the input list, output list,
``<...>`` value list and node list in order; the i-th ``node`` tree of a node list is ``node[i]`` of that
graph; an ``attr`` tree whose value is a ``graph`` is the attribute's ``g``; the i-th ``function`` after the
main graph is ``functions[i]``. One walk (:class:`_Walker`) gives:

* :attr:`SpanMap.table`: checker path (``graph.node[3].attribute[body].g.node[0].input[1]``) -> (line,
  column) of the element's first token, for diagnostics (``check``, the language server, ``run``'s errors,
  ``view``). A path that is not in the table takes the position of its nearest located ancestor
  (:meth:`SpanMap.locate`: ``...node[3].attribute[alpha].t`` -> the attribute);
* :attr:`SpanMap.roots`: a tree of :class:`Element` (path, parent, character offsets of start, head and end)
  for every element a comment can belong to, containers included (a graph's ``<...>`` value list, its
  ``{...}`` node block, a node's attribute list, the lines of a multi-line tensor literal), for ``fmt``
  (located trees only);
* :attr:`SpanMap.data`: path -> the tree of each written tensor literal and attribute value (the author's
  number spellings and line breaks, which ``fmt`` keeps: :mod:`onnxtext.syntax.trivia`);
* :attr:`SpanMap.literals`: the bare integer tokens of typed ``{...}`` literals (the checker's bit-pattern
  rule) and :attr:`SpanMap.comments`: the comment tokens.

The cost is one extra parse of the text, paid only by the tools that need positions; the last text's tree
is kept (:func:`plain_tree`), so the language server's index and the checker share one parse.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field

from lark import Token, Tree

_PARENT = re.compile(r"(\.[^.\[\]]*|\[[^\[\]]*\])$")
#: start symbol -> the path of its root element (a bare function or node is located as in a model)
ROOT_PATHS = {"model": "", "graph": "graph", "function": "functions[0]", "node": "graph.node[0]"}


@dataclass(eq=False)
class Element:
    """A located piece of the text: its path, and offsets of its first character (``///`` and ``@``
    annotations included), its first token after the annotations (``head``) and just past its end."""

    path: str
    parent: Element | None
    start: int
    head: int
    end: int
    children: list = field(default_factory=list)


class SpanMap:
    """What a text says where: checker path -> (line, column), the element tree, written values, comments."""

    def __init__(self, table: dict | None = None, literals: list | None = None, roots: list | None = None,
                 data: dict | None = None, comments: list | None = None):
        self.table = table or {}
        #: (path, element type name, INT tokens) of every ``{...}`` tensor literal (for the bit-pattern rule)
        self.literals = literals or []
        self.roots: list[Element] = roots or []
        #: path -> ("tensor", tensor_type tree, data tree) | ("attr", value tree) of the values written
        self.data: dict = data or {}
        self.comments: list = comments or []

    @classmethod
    def from_text(cls, text: str, start: str | None = None, located: bool = False) -> SpanMap:
        """The positions of ``text`` (``start``: its kind, else the first that parses); empty when it does
        not parse. The table alone by default (from :func:`plain_tree`'s parse, shared with the language
        server); ``located``: also the element tree and the comments (a parse that records every tree's
        span, about 1.4x slower), for ``fmt``."""
        if located:
            tree, start, comments = located_parse(text, start)
        else:
            tree, found = plain_tree(text)
            start, comments = (found if start in (None, found) else None), []
            if start is None:
                tree = None
        if tree is None:
            return cls()
        w = _Walker()
        {"model": w.model, "graph": w.graph, "function": w.function, "node": w.node}[start](
            tree, ROOT_PATHS[start], None)
        return cls(w.table, w.literals, w.roots, w.data, comments)

    def locate(self, path: str):
        """(line, column) of ``path`` or of its nearest located ancestor; (None, None) without text."""
        p = path
        while p:
            pos = self.table.get(p)
            if pos is not None:
                return pos
            m = _PARENT.search(p)
            if not m or m.start() == 0:
                break
            p = p[:m.start()]
        return self.table.get(p) or self.table.get("", (None, None))


# ------------------------------------------------------------------------------------------- parsing

_parser = None
_sink = threading.local()  # where the lexer callback puts COMMENT tokens during one parse


def _collect(tok):
    comments = getattr(_sink, "comments", None)
    if comments is not None:
        comments.append(tok)
    return tok


def _get_parser():
    global _parser
    if _parser is None:
        import lark

        from .grammar import START_SYMBOLS, _cache_file, grammar_path

        # The builder's grammar, plus positions on every tree and a callback on the ignored COMMENT
        # terminal; positions change lark's cached tables, so they get their own cache file.
        _parser = lark.Lark.open(grammar_path(), parser="lalr", lexer="contextual", start=START_SYMBOLS,
                                 maybe_placeholders=True, propagate_positions=True,
                                 cache=_cache_file("positions"), lexer_callbacks={"COMMENT": _collect})
    return _parser


@functools.lru_cache(maxsize=1)
def located_parse(text: str, start: str | None = None):
    """(lark tree with positions, start symbol, comment tokens in text order) of ``text``, or
    (None, None, []) when it does not parse (as ``start``, or as any kind of text when ``start`` is None).

    The last result is kept (callers must not modify the tree): ``fmt`` locates the canonical text once for
    its spellings and once for its comments."""
    for s in (start,) if start else ("model", "graph", "function", "node"):
        _sink.comments = []
        try:
            tree = _get_parser().parse(text, start=s)
        except Exception:  # noqa: BLE001 - not this kind of text; try the next start symbol
            continue
        else:
            unique = {c.start_pos: c for c in _sink.comments}  # a token is reported once, but be sure
            return tree, s, [unique[k] for k in sorted(unique)]
        finally:
            _sink.comments = None
    return None, None, []


@functools.lru_cache(maxsize=1)
def plain_tree(text: str):
    """(plain lark tree, start symbol) of ``text``, or (None, None) when it parses as no kind of text.

    The last text's tree is kept: the language server indexes the very text it then checks, and the two
    share this parse (callers must not modify the tree).
    """
    from .grammar import get_parser

    for start in ("model", "graph", "function", "node"):
        try:
            return get_parser().parse(text, start=start), start
        except Exception:  # noqa: BLE001 - not this kind of text; try the next start symbol
            continue
    return None, None


def first_token(t):
    """The first token (in text order) of a tree, skipping leading annotations and placeholders."""
    if isinstance(t, Token):
        return t
    if t is None:
        return None
    for c in t.children:
        if isinstance(c, Tree) and c.data == "annotations":
            continue
        tok = first_token(c)
        if tok is not None:
            return tok
    return None


def _name(t) -> str:
    """The proto name of an ``ident`` / ``quoted_name`` tree."""
    from .literal_data import unescape

    tok = t.children[0]
    if t.data == "quoted_name":
        return unescape(tok).decode("utf-8", "replace")
    return str(tok)


def _entries(lst):
    return [c for c in (lst.children if lst is not None else []) if isinstance(c, Tree)]


def _offsets(c):
    """(start, end) offsets of a tree or token."""
    if isinstance(c, Token):
        return c.start_pos, c.end_pos
    return c.meta.start_pos, c.meta.end_pos


# ------------------------------------------------------------------------------------------- the walk

class _Walker:
    """Walks a positioned parse tree into the table, the element tree, the written values and literals."""

    def __init__(self):
        self.roots: list[Element] = []
        self.table: dict = {}
        self.data: dict = {}
        self.literals: list = []

    def put(self, path: str, t):
        """A table entry only: ``path`` at the first token of ``t`` (the first entry for a path wins)."""
        tok = first_token(t)
        if tok is not None:
            self.table.setdefault(path, (tok.line, tok.column))

    def add(self, path: str, tree, parent: Element | None, table: bool = True) -> Element | None:
        """An element for ``tree`` (and a table entry unless ``table`` is False); None for an empty tree."""
        if table:
            self.put(path, tree)
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

    def tensor(self, path: str, type_tree, data, parent: Element | None):
        """A written tensor: its literal (bit-pattern rule), its value (trivia) and its lines (comments)."""
        if not isinstance(type_tree, Tree) or type_tree.data != "tensor_type" or not isinstance(data, Tree):
            return
        if data.data in ("typed_data", "raw_data"):
            self.data.setdefault(path, ("tensor", type_tree, data))
            self.rows(path, data, parent)
        if data.data == "typed_data":
            ints = [c.children[0] for c in data.children if isinstance(c, Tree) and c.data == "int_value"]
            if ints:
                self.literals.append((path, str(type_tree.children[0]), ints))

    def rows(self, path: str, data, parent: Element | None):
        """Each line of a multi-line literal is an element ``path.element[k]`` (k: its first element)."""
        items = [c for c in data.children if c is not None]
        if parent is None or not items or getattr(data.meta, "empty", True) or \
                data.meta.line == data.meta.end_line:
            return
        line, row = None, None
        for k, c in enumerate(items):
            start, end = _offsets(c)
            c_line = c.line if isinstance(c, Token) else c.meta.line
            if c_line != line:
                line = c_line
                row = Element(f"{path}.element[{k}]", parent, start, start, end)
                parent.children.append(row)
            else:
                row.end = end

    # -------------------------------------------------------------------------------- model
    def model(self, t, path, parent):
        m = self.add(path, t, parent)
        ann, header, graph = t.children[:3]
        if header is not None:
            h = self.add("header", header, m, table=False)
            for entry in _entries(header):
                key = str(entry.children[0])
                self.add(key, entry, h)
                self.header_items(key, entry.children[1])
        self.graph(graph, "graph", m)
        fi = ti = 0
        for item in t.children[3:]:
            if item.data == "function":
                self.function(item, f"functions[{fi}]", m)
                fi += 1
            elif item.data == "training_info":
                tpath = f"training_info[{ti}]"
                te = self.add(tpath, item, m)
                for f in item.children:
                    fpath = f"{tpath}.{f.children[0]}"
                    fe = self.add(fpath, f, te)
                    if f.data == "training_graph":
                        self.graph(f.children[1], fpath, fe)
                ti += 1

    def header_items(self, key, datum):
        """Positions of the items of list-valued header entries: ``configuration[i]``, ``opset_import[domain]``."""
        if not isinstance(datum, Tree):
            return
        if datum.data == "list":
            for i, item in enumerate(c for c in datum.children if c is not None):
                self.put(f"{key}[{i}]", item)
        elif datum.data == "pairs":
            from .literal_data import unescape

            for pair in datum.children:
                if isinstance(pair, Tree):
                    self.put(f"{key}[{unescape(pair.children[0]).decode('utf-8', 'replace')}]", pair)

    # -------------------------------------------------------------------------------- graph
    def graph(self, t, path, parent):
        ann, name, inputs, outputs, values, nodes = t.children
        g = self.add(path, t, parent)
        for e in _entries(inputs):
            n = _name(e.children[2])
            ie = self.add(f"{path}.input[{n}]", e, g)
            if e.children[3] is not None:
                self.put(f"{path}.initializer[{n}]", e)
                self.tensor(f"{path}.initializer[{n}]", e.children[1], e.children[3], ie)
        for e in _entries(outputs):
            self.add(f"{path}.output[{_name(e.children[2])}]", e, g)
        if values is not None:
            vl = self.add(path + ".values", values, g, table=False)
            for e in _entries(values):
                n = _name(e.children[2])
                if e.children[3] is None:
                    key = "value_info"
                elif isinstance(e.children[1], Tree) and e.children[1].data == "sparse_type":
                    key = "sparse_initializer"
                else:
                    key = "initializer"
                ve = self.add(f"{path}.{key}[{n}]", e, vl)
                self.tensor(f"{path}.{key}[{n}]", e.children[1], e.children[3], ve)
        self.nodes(nodes, path, g)

    def nodes(self, t, path, parent):
        nl = self.add(path + ".nodes", t, parent, table=False)
        for i, n in enumerate(_entries(t)):
            self.node(n, f"{path}.node[{i}]", nl)

    def node(self, t, path, parent):
        ann, label, outs, op, attrs1, ins, attrs2 = t.children
        n = self.add(path, t, parent)
        self.put(path + ".op_type", op)
        for key, lst in (("output", outs), ("input", ins)):
            if lst is None:
                continue
            for j, item in enumerate(lst.children):
                if isinstance(item, Tree):
                    self.put(f"{path}.{key}[{j}]", item)
        # attributes before and after the inputs print as one list: both lists get the same path
        for attrs in (attrs1, attrs2):
            if attrs is not None:
                al = self.add(path + ".attrs", attrs, n, table=False)
                for a in _entries(attrs):
                    self.attr(a, path, al)

    def attr(self, a, owner, parent, key="attribute"):
        ann, name, _type, value = a.children
        path = f"{owner}.{key}[{_name(name)}]"
        ae = self.add(path, a, parent)
        if not isinstance(value, Tree):
            return
        if value.data == "graph_value":
            self.graph(value.children[0], path + ".g", ae)
        elif value.data == "value_list_attr":
            self.data.setdefault(path, ("attr", value))
            for k, v in enumerate(value.children):
                if isinstance(v, Tree) and v.data == "graph_value":
                    self.graph(v.children[0], f"{path}.graphs[{k}]", ae)
                elif isinstance(v, Tree) and v.data == "tensor_constant":
                    self.tensor(f"{path}.tensors[{k}]", v.children[1], v.children[3], ae)
        elif value.data in ("tensor_constant", "sparse_constant"):
            self.put(path + (".t" if value.data == "tensor_constant" else ".sparse_tensor"), value)
            if value.data == "tensor_constant":
                self.tensor(path + ".t", value.children[1], value.children[3], ae)
        elif value.data in ("int_value", "float_value", "hex_value"):
            self.data.setdefault(path, ("attr", value))

    # -------------------------------------------------------------------------------- functions
    def function(self, t, path, parent):
        ann, header, name, attrs, ins, outs, values, nodes = t.children
        self.put(path, name)  # a function is located at its name
        f = self.add(path, t, parent, table=False)
        if header is not None:
            h = self.add(path + ".header", header, f, table=False)
            for entry in _entries(header):
                self.add(f"{path}.header.{entry.children[0]}", entry, h, table=False)
        if attrs is not None:
            al = self.add(path + ".attrs", attrs, f, table=False)
            for a in _entries(attrs):
                if a.data == "attr":
                    self.attr(a, path, al, key="attribute_proto")
                else:
                    self.add(f"{path}.attribute[{_name(a.children[0])}]", a, al)
        for key, lst in (("input", ins), ("output", outs)):
            for e in _entries(lst):
                self.add(f"{path}.{key}[{_name(e.children[1])}]", e, f)
                if e.children[0] is not None:
                    self.put(f"{path}.value_info[{_name(e.children[1])}]", e)
        if values is not None:
            vl = self.add(path + ".values", values, f, table=False)
            for e in _entries(values):
                self.add(f"{path}.value_info[{_name(e.children[2])}]", e, vl)
        self.nodes(nodes, path, f)
