"""What the language server knows about one document's text: names, scopes, nodes, outline and folds.

The text is parsed once with the plain grammar (``syntax.grammar.get_parser()``: a lark tree with token
positions, no protos), and the tree is walked into a :class:`DocumentIndex`:

* **scopes**: the main graph, each subgraph (an attribute's graph, with its enclosing graph as parent), each
  model-local function and each training graph. A scope has the value names it defines (graph inputs,
  initializers, node outputs; for functions the formal inputs) and a checker-style ``path`` (``graph``,
  ``graph.node[3].attribute[body].g``, ``functions[0]``) that locates its proto in the parsed model.
* **occurrences**: every name token with its range, whether it defines or uses a value, a function or a
  function attribute (``@alpha``), and the scope it appears in. A use resolves to the nearest definition
  along the scope chain, so an inner scope that reuses an outer name (shadowing) gets its own definition.
* **nodes**: operator reference, domain, attribute name tokens and the node's scope (for hover/completion),
  plus the checker path of each node.
* **symbols** (outline) and **folds** (graphs, functions, header, multi-line literals and lists).

Positions are kept as lark gives them (1-based line and column, code points); :mod:`.convert` turns them
into LSP ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from ..syntax.literal_data import unescape


@dataclass
class Span:
    """A text range: 1-based start line/column, end line/column exclusive (as lark tokens give them)."""

    line: int
    column: int
    end_line: int
    end_column: int

    def contains(self, line: int, column: int) -> bool:
        return (self.line, self.column) <= (line, column) <= (self.end_line, self.end_column)


def token_span(tok: Token) -> Span:
    return Span(tok.line, tok.column, tok.end_line, tok.end_column)


@dataclass
class Scope:
    kind: str  # "graph" or "function"
    name: str
    path: str  # checker path of the graph / function proto
    parent: Scope | None = None
    span: Span | None = None
    defs: dict = field(default_factory=dict)  # value name -> Occurrence that defines it (first one wins)
    function: str | None = None  # for function scopes: "domain.name"

    def resolve(self, name: str):
        s = self
        while s is not None:
            if name in s.defs:
                return s.defs[name]
            s = s.parent
        return None


@dataclass
class Occurrence:
    """One name token: a value (graph value), a function, or a function attribute reference."""

    name: str
    kind: str  # "value", "function", "fattr"
    span: Span
    scope: Scope
    role: str  # "input", "initializer", "output" (node output), "param", "use", "graph-output", "value_info",
    #            "function", "call", "attr", "attr-ref", "call-attr" (an attribute set by a call of a
    #            model-local function: it names the function's attribute)
    quoted: bool = False
    detail: str = ""  # declared type text, when the occurrence declares one
    function: str = ""  # for "call-attr": the "domain.name" of the local function called

    @property
    def defines(self) -> bool:
        return self.role in ("input", "initializer", "output", "param", "function", "attr")


@dataclass
class NodeInfo:
    op: str  # op_type
    domain: str
    op_span: Span  # the whole op reference (domain.Op:overload)
    span: Span  # first to last token of the node statement
    scope: Scope
    path: str  # checker path, e.g. graph.node[3]
    attributes: list = field(default_factory=list)  # (name, Span)
    label: str = ""


@dataclass
class Symbol:
    name: str
    kind: str  # "graph", "function", "initializer", "input", "output", "node", "header"
    span: Span
    selection: Span
    detail: str = ""
    children: list = field(default_factory=list)


@dataclass
class DocumentIndex:
    occurrences: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    scopes: list = field(default_factory=list)
    symbols: list = field(default_factory=list)
    folds: list = field(default_factory=list)  # (start line, end line, kind) 1-based
    functions: dict = field(default_factory=dict)  # "domain.name" -> Occurrence of its definition
    opsets: dict = field(default_factory=dict)  # model opset imports, domain -> version

    def at(self, line: int, column: int):
        """The occurrence under (line, column), 1-based, or None."""
        for occ in self.occurrences:
            if occ.span.contains(line, column):
                return occ
        return None

    def node_at(self, line: int, column: int):
        best = None
        for n in self.nodes:
            if n.span.contains(line, column) and (best is None or n.span.line >= best.span.line):
                best = n
        return best

    def scope_at(self, line: int, column: int):
        best = None
        for s in self.scopes:
            if s.span is not None and s.span.contains(line, column):
                if best is None or (s.span.line, s.span.column) >= (best.span.line, best.span.column):
                    best = s
        return best or (self.scopes[0] if self.scopes else None)

    def definition(self, occ: Occurrence):
        """The occurrence that defines what ``occ`` names (itself when it is a definition), or None."""
        if occ.defines:
            return occ
        if occ.kind == "value":
            return occ.scope.resolve(occ.name)
        if occ.kind == "function":
            return self.functions.get(occ.name)
        if occ.kind == "fattr":
            scope = occ.scope
            if occ.role == "call-attr":
                f = self.functions.get(occ.function)
                scope = f.scope if f is not None else None
            return scope.defs.get("@" + occ.name) if scope is not None else None
        return None

    def references(self, occ: Occurrence, include_declaration: bool = True) -> list:
        """Every occurrence naming the same definition as ``occ`` (in text order)."""
        target = self.definition(occ)
        if target is None:
            same = [o for o in self.occurrences if o.kind == occ.kind and o.name == occ.name
                    and (occ.kind == "function" or o.scope is occ.scope)]
        else:
            same = [o for o in self.occurrences if o.kind == occ.kind and o.name == occ.name
                    and self.definition(o) is target]
        if not include_declaration:
            same = [o for o in same if o is not target]
        return same


# --------------------------------------------------------------------------------------------- building


def parse_tree(text: str):
    """(tree, start symbol) for ``text``, or (None, None) when it does not parse as any kind of text.

    The parse is :func:`onnxtext.syntax.positions.plain_tree`'s, which the checker's spans reuse for the
    same text: analysing a document parses it into a tree once."""
    from ..syntax.positions import plain_tree

    return plain_tree(text)


def build_index(text: str) -> DocumentIndex | None:
    """The index of ``text``, or None when it does not parse."""
    tree, start = parse_tree(text)
    if tree is None:
        return None
    idx = DocumentIndex()
    _Walker(idx, text).run(tree, start)
    for node in idx.nodes:  # attributes set by calls of local functions name the function's attributes
        key = f"{node.domain}.{node.op}"
        if key in idx.functions:
            idx.occurrences += [Occurrence(name, "fattr", span, node.scope, "call-attr", function=key)
                                for name, span in node.attributes]
    idx.occurrences.sort(key=lambda o: (o.span.line, o.span.column))
    return idx


def _tokens(t):
    if isinstance(t, Token):
        yield t
    elif isinstance(t, Tree):
        for c in t.children:
            yield from _tokens(c)


def _edge_token(t, last: bool):
    """The first (or last) token of a tree, descending one child per level (children may be None)."""
    while isinstance(t, Tree):
        for c in (reversed(t.children) if last else t.children):
            if c is not None and (isinstance(c, Token) or _edge_token(c, last) is not None):
                t = c
                break
        else:
            return None
    return t if isinstance(t, Token) else None


def tree_span(t) -> Span | None:
    a, b = _edge_token(t, False), _edge_token(t, True)
    if a is None or b is None:
        return None
    return Span(a.line, a.column, b.end_line, b.end_column)


def _name(t):
    """(name, token, quoted) of an ``ident`` / ``quoted_name`` tree."""
    tok = t.children[0]
    if t.data == "quoted_name":
        return unescape(tok).decode("utf-8", "replace"), tok, True
    return str(tok), tok, False


def _entries(lst):
    return [c for c in (lst.children if isinstance(lst, Tree) else []) if isinstance(c, Tree)]


def _header_value(header, key):
    if not isinstance(header, Tree):
        return None
    for entry in header.children:
        if isinstance(entry, Tree) and str(entry.children[0]) == key:
            return entry.children[1]
    return None


def _opsets(header) -> dict:
    out = {}
    pairs = _header_value(header, "opset_import")
    for pair in _entries(pairs):
        if pair.data == "pair" and len(pair.children) >= 2 and isinstance(pair.children[1], Tree):
            dom = unescape(pair.children[0]).decode("utf-8", "replace")
            try:
                out[dom] = int(str(pair.children[1].children[0]))
            except (ValueError, IndexError):
                pass
    return out


class _Walker:
    def __init__(self, idx: DocumentIndex, text: str):
        self.idx = idx
        self.text = text

    def type_text(self, type_tree, name_tree) -> str:
        """The declared type as written: from the type's first token up to the name."""
        toks = list(_tokens(type_tree))
        if not toks or not isinstance(name_tree, Tree):
            return ""
        return self.text[toks[0].start_pos:_name(name_tree)[1].start_pos].strip()

    def fold(self, t, kind="region"):
        sp = tree_span(t)
        if sp is not None and sp.end_line > sp.line:
            self.idx.folds.append((sp.line, sp.end_line, kind))

    def occ(self, name_tree, kind, scope, role, detail=""):
        name, tok, quoted = _name(name_tree)
        if not name and role in ("use", "output"):  # "" is a missing optional input or output: no value
            return None
        o = Occurrence(name, kind, token_span(tok), scope, role, quoted, detail)
        self.idx.occurrences.append(o)
        if role in ("input", "initializer", "output", "param"):
            scope.defs.setdefault(name, o)
        return o

    def run(self, tree, start):
        if start == "model":
            self.model(tree)
        elif start == "graph":
            self.graph(tree, "graph", None)
        elif start == "function":
            self.function(tree, "functions[0]")
        else:
            scope = Scope("graph", "", "graph", span=tree_span(tree))
            self.idx.scopes.append(scope)
            self.node(tree, "graph.node[0]", scope, [])

    def model(self, tree):
        ann, header, graph = tree.children[:3]
        if isinstance(header, Tree):
            self.idx.opsets = _opsets(header)
            self.fold(header, "imports")
            sp = tree_span(header)
            if sp is not None:
                self.idx.symbols.append(Symbol("header", "header", sp, Span(sp.line, sp.column, sp.line,
                                                                              sp.column + 1)))
            meta = _header_value(header, "metadata_props")
            if meta is not None:
                self.fold(meta)
        main = self.graph(graph, "graph", None)
        fi = ti = 0
        for item in tree.children[3:]:
            if not isinstance(item, Tree):
                continue
            if item.data == "function":
                self.function(item, f"functions[{fi}]")
                fi += 1
            elif item.data == "training_info":
                self.fold(item)
                for f in item.children:
                    if isinstance(f, Tree) and f.data == "training_graph":
                        key = str(f.children[0])
                        self.graph(f.children[1], f"training_info[{ti}].{key}", main)
                ti += 1

    def graph(self, tree, path, parent, symbols=None):
        ann, name, inputs, outputs, values, nodes = tree.children
        gname = _name(name)[0] if isinstance(name, Tree) else ""
        scope = Scope("graph", gname, path, parent, tree_span(tree))
        self.idx.scopes.append(scope)
        self.fold(tree)
        sym = Symbol(gname or "graph", "graph", scope.span,
                     token_span(_name(name)[1]) if isinstance(name, Tree) else scope.span)
        (symbols if symbols is not None else self.idx.symbols).append(sym)
        for e in _entries(inputs):
            role = "initializer" if e.children[3] is not None else "input"
            o = self.occ(e.children[2], "value", scope, role, self.type_text(e.children[1], e.children[2]))
            sym.children.append(Symbol(o.name, role, tree_span(e), o.span, o.detail))
            if e.children[3] is not None:
                self.fold(e.children[3])
        for e in _entries(values):
            if e.children[3] is None:
                self.occ(e.children[2], "value", scope, "value_info", self.type_text(e.children[1], e.children[2]))
            else:
                o = self.occ(e.children[2], "value", scope, "initializer", self.type_text(e.children[1], e.children[2]))
                sym.children.append(Symbol(o.name, "initializer", tree_span(e), o.span, o.detail))
                self.fold(e.children[3])
        if isinstance(values, Tree):
            self.fold(values)
        for i, n in enumerate(_entries(nodes)):
            self.node(n, f"{path}.node[{i}]", scope, sym.children)
        for e in _entries(outputs):
            o = self.occ(e.children[2], "value", scope, "graph-output", self.type_text(e.children[1], e.children[2]))
            sym.children.append(Symbol(o.name, "output", tree_span(e), o.span, o.detail))
        return scope

    def node(self, tree, path, scope, symbols):
        ann, label, outs, op, attrs1, ins, attrs2 = tree.children
        parts = [c for c in op.children if isinstance(c, Tree) and c.data in ("ident", "quoted_name")]
        names = [_name(p)[0] for p in parts]
        op_type, domain = names[-1], ".".join(names[:-1])
        op_span = tree_span(op)
        span = tree_span(tree)
        info = NodeInfo(op_type, domain, op_span, span, scope, path,
                        label=_name(label.children[0])[0]
                        if isinstance(label, Tree) and isinstance(label.children[0], Tree) else "")
        self.idx.nodes.append(info)
        fname = f"{domain}.{op_type}"
        if parts:
            name, last, quoted = _name(parts[-1])  # the span is the name's: rename keeps the domain
            call = Occurrence(fname, "function", token_span(last), scope, "call", quoted)
            self.idx.occurrences.append(call)
        for lst in (ins,):
            for item in (lst.children if isinstance(lst, Tree) else []):
                if isinstance(item, Tree):
                    self.occ(item, "value", scope, "use")
        out_names = []
        for item in (outs.children if isinstance(outs, Tree) else []):
            if isinstance(item, Tree):
                o = self.occ(item, "value", scope, "output")
                out_names.append(o.name if o is not None else '""')
        shown = ", ".join(out_names) or "()"
        symbols.append(Symbol(f"{shown} = {fname.lstrip('.')}", "node", span, op_span, info.label))
        for attrs in (attrs1, attrs2):
            for a in _entries(attrs):
                self.attribute(a, path, scope, info)

    def attribute(self, a, owner, scope, info):
        ann, name, _type, value = a.children
        aname, tok, _ = _name(name)
        info.attributes.append((aname, token_span(tok)))
        path = f"{owner}.attribute[{aname}]"
        self.value_refs(value, scope)
        if not isinstance(value, Tree):
            return
        if value.data == "graph_value":
            self.graph(value.children[0], path + ".g", scope, [])
        elif value.data == "value_list_attr":
            k = 0
            for v in value.children:
                if isinstance(v, Tree) and v.data == "graph_value":
                    self.graph(v.children[0], f"{path}.graphs[{k}]", scope, [])
                k += 1
            self.fold(value)
        elif value.data == "tensor_constant":
            self.fold(value)

    def value_refs(self, value, scope):
        """``@alpha`` references to a function's attributes inside an attribute value."""
        if isinstance(value, Tree) and value.data == "attr_ref":
            tok = value.children[0]
            ref = str(tok)
            if ref.startswith("@") and len(ref) > 1:
                self.idx.occurrences.append(Occurrence(ref[1:].strip(), "fattr", token_span(tok),
                                                       scope, "attr-ref"))

    def function(self, tree, path):
        ann, header, name, attrs, ins, outs, values, nodes = tree.children
        domain = ""
        dom = _header_value(header, "domain")
        if isinstance(dom, Tree):
            domain = unescape(dom.children[0]).decode("utf-8", "replace")
        fname, tok, quoted = _name(name)
        key = f"{domain}.{fname}"
        scope = Scope("function", fname, path, None, tree_span(tree), function=key)
        self.idx.scopes.append(scope)
        end = tree_span(tree)
        if end is not None and end.end_line > tok.line:  # from the name: the header above stays visible
            self.idx.folds.append((tok.line, end.end_line, "region"))
        definition = Occurrence(key, "function", token_span(tok), scope, "function", quoted)
        self.idx.occurrences.append(definition)
        self.idx.functions.setdefault(key, definition)
        sym = Symbol(fname, "function", scope.span, token_span(tok), domain)
        self.idx.symbols.append(sym)
        for a in _entries(attrs):
            name_tree = a.children[0] if a.data == "fn_attr_name" else a.children[1]
            aname, atok, aq = _name(name_tree)
            o = Occurrence(aname, "fattr", token_span(atok), scope, "attr", aq)
            self.idx.occurrences.append(o)
            scope.defs.setdefault("@" + aname, o)
        for e in _entries(ins):
            o = self.occ(e.children[1], "value", scope, "param", self.type_text(e.children[0], e.children[1]))
            sym.children.append(Symbol(o.name, "input", tree_span(e), o.span, o.detail))
        for e in _entries(values):
            self.occ(e.children[2], "value", scope, "value_info", self.type_text(e.children[1], e.children[2]))
        for i, n in enumerate(_entries(nodes)):
            self.node(n, f"{path}.node[{i}]", scope, sym.children)
        for e in _entries(outs):
            o = self.occ(e.children[1], "value", scope, "graph-output", self.type_text(e.children[0], e.children[1]))
            sym.children.append(Symbol(o.name, "output", tree_span(e), o.span, o.detail))
