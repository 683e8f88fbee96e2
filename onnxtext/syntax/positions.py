"""Source positions for checker diagnostics, recovered from the text without the builder's help.

How it works: the text is parsed a second time with the same grammar but without the Builder transformer
(``onnxtext._grammar.get_parser()`` returns a plain lark tree). The tree has exactly the shape of the proto
the builder made: a ``graph`` tree holds the input list, output list, ``<...>`` value list and node list in
order; the i-th ``node`` tree of a node list is ``node[i]`` of that graph; an ``attr`` tree whose value is a
``graph`` is the attribute's ``g``; the i-th ``function`` after the main graph is ``functions[i]``. Walking
the tree builds a table from checker paths (``graph.node[3].attribute[body].g.node[0].input[1]``) to the
(line, column) of the first token of that element. A diagnostic whose exact path is not in the table takes
the position of its nearest ancestor that is (``...node[3].attribute[alpha].t`` -> the attribute).

The cost is one extra parse of the text, paid only by ``check`` (and shared with the language server's index
through :func:`plain_tree`); nothing changes in the parse path.
"""

from __future__ import annotations

import functools
import re

from lark import Token, Tree

_PARENT = re.compile(r"(\.[^.\[\]]*|\[[^\[\]]*\])$")


class SpanMap:
    """Checker path -> (line, column)."""

    def __init__(self, table: dict | None = None, literals: list | None = None):
        self.table = table or {}
        #: (path, element type name, INT tokens) of every ``{...}`` tensor literal (for the bit-pattern rule)
        self.literals = literals or []

    @classmethod
    def from_text(cls, text: str) -> SpanMap:
        tree, start = plain_tree(text)
        if tree is None:
            return cls()
        prefix = {"model": "", "graph": "graph", "function": "functions[0]", "node": "graph.node[0]"}[start]
        table: dict = {}
        {"model": _model, "graph": _graph, "function": _function, "node": _node}[start](tree, prefix, table)
        return cls(table, table.pop("@literals", []))

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


def _pos(t):
    tok = first_token(t)
    return (tok.line, tok.column) if tok is not None else None


def _literal(table, path, type_tree, data):
    """Remember the bare integer tokens of a typed ``{...}`` literal of a tensor at ``path``."""
    if isinstance(type_tree, Tree) and type_tree.data == "tensor_type" and isinstance(data, Tree) \
            and data.data == "typed_data":
        ints = [c.children[0] for c in data.children if isinstance(c, Tree) and c.data == "int_value"]
        if ints:
            table.setdefault("@literals", []).append((path, str(type_tree.children[0]), ints))


def _put(table, path, t):
    pos = _pos(t)
    if pos is not None:
        table.setdefault(path, pos)


def _name(t) -> str:
    """The proto name of an ``ident`` / ``quoted_name`` tree."""
    from .literal_data import unescape

    tok = t.children[0]
    if t.data == "quoted_name":
        return unescape(tok).decode("utf-8", "replace")
    return str(tok)


def _model(tree, prefix, table):
    _put(table, "", tree)
    ann, header, graph = tree.children[:3]
    if header is not None:
        for entry in header.children:
            if isinstance(entry, Tree):
                key = str(entry.children[0])
                _put(table, key, entry)
                _header_items(table, key, entry.children[1])
    _graph(graph, "graph", table)
    fi = ti = 0
    for item in tree.children[3:]:
        if item.data == "function":
            _function(item, f"functions[{fi}]", table)
            fi += 1
        elif item.data == "training_info":
            path = f"training_info[{ti}]"
            _put(table, path, item)
            for f in item.children:
                key = str(f.children[0])
                _put(table, f"{path}.{key}", f)
                if f.data == "training_graph":
                    _graph(f.children[1], f"{path}.{key}", table)
            ti += 1


def _header_items(table, key, datum):
    """Positions of the items of list-valued header entries: ``configuration[i]``, ``opset_import[domain]``."""
    if not isinstance(datum, Tree):
        return
    if datum.data == "list":
        for i, item in enumerate(c for c in datum.children if c is not None):
            _put(table, f"{key}[{i}]", item)
    elif datum.data == "pairs":
        from .literal_data import unescape

        for pair in datum.children:
            if isinstance(pair, Tree):
                _put(table, f"{key}[{unescape(pair.children[0]).decode('utf-8', 'replace')}]", pair)


def _entries(lst):
    return [c for c in (lst.children if lst is not None else []) if isinstance(c, Tree)]


def _graph(tree, path, table):
    ann, name, inputs, outputs, values, nodes = tree.children
    _put(table, path, tree)
    for e in _entries(inputs):
        n = _name(e.children[2])
        _put(table, f"{path}.input[{n}]", e)
        if e.children[3] is not None:
            _put(table, f"{path}.initializer[{n}]", e)
            _literal(table, f"{path}.initializer[{n}]", e.children[1], e.children[3])
    for e in _entries(outputs):
        _put(table, f"{path}.output[{_name(e.children[2])}]", e)
    for e in _entries(values):
        n = _name(e.children[2])
        if e.children[3] is None:
            key = "value_info"
        elif isinstance(e.children[1], Tree) and e.children[1].data == "sparse_type":
            key = "sparse_initializer"
        else:
            key = "initializer"
        _put(table, f"{path}.{key}[{n}]", e)
        _literal(table, f"{path}.{key}[{n}]", e.children[1], e.children[3])
    _node_list(nodes, path, table)


def _node_list(nodes, path, table):
    for i, n in enumerate(_entries(nodes)):
        _node(n, f"{path}.node[{i}]", table)


def _node(tree, path, table):
    ann, label, outs, op, attrs1, ins, attrs2 = tree.children
    _put(table, path, tree)
    _put(table, path + ".op_type", op)
    for key, lst in (("output", outs), ("input", ins)):
        if lst is None:
            continue
        for j, item in enumerate(lst.children):
            if isinstance(item, Tree):
                _put(table, f"{path}.{key}[{j}]", item)
    for attrs in (attrs1, attrs2):
        for a in _entries(attrs):
            _attr(a, path, table)


def _attr(a, owner, table):
    ann, name, _type, value = a.children
    path = f"{owner}.attribute[{_name(name)}]"
    _put(table, path, a)
    if not isinstance(value, Tree):
        return
    if value.data == "graph_value":
        _graph(value.children[0], path + ".g", table)
    elif value.data == "value_list_attr":
        k = 0
        for v in value.children:
            if isinstance(v, Tree) and v.data == "graph_value":
                _graph(v.children[0], f"{path}.graphs[{k}]", table)
            k += 1
    elif value.data in ("tensor_constant", "sparse_constant"):
        _put(table, path + (".t" if value.data == "tensor_constant" else ".sparse_tensor"), value)
        if value.data == "tensor_constant":
            _literal(table, path + ".t", value.children[1], value.children[3])


def _function(tree, path, table):
    ann, header, name, attrs, ins, outs, values, nodes = tree.children
    _put(table, path, name)
    for a in _entries(attrs):
        if a.data == "attr":
            _put(table, f"{path}.attribute_proto[{_name(a.children[1])}]", a)
        else:
            _put(table, f"{path}.attribute[{_name(a.children[0])}]", a)
    for key, lst in (("input", ins), ("output", outs)):
        for e in _entries(lst):
            _put(table, f"{path}.{key}[{_name(e.children[1])}]", e)
            if e.children[0] is not None:
                _put(table, f"{path}.value_info[{_name(e.children[1])}]", e)
    for e in _entries(values):
        _put(table, f"{path}.value_info[{_name(e.children[2])}]", e)
    _node_list(nodes, path, table)
