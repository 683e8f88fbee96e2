"""The accelerated parser: a regex scanner for the common forms of the syntax, checked against Lark.

Python's ``json`` pairs a fast scanner with a reference one; this module is onnxtext's fast scanner. The
Lark grammar (``grammar/onnxtext.lark``) stays the definition of the syntax and the parser of record:

* :func:`parse` reads a whole model, graph or function text when every construct in it is one this module
  fully understands, and returns the proto; otherwise it returns ``None`` and the caller parses the text
  with Lark. It never raises: any surprise - an unknown form, a syntax error, a semantic error the builder
  reports, a value protobuf refuses - abandons the fast path, so every error message, line and column
  comes from the Lark parse.
* Protos are made by the same :mod:`onnxtext.builder` methods the Lark transformer calls, with the same
  children, except for plain node statements and small tensors, built in bulk by code mirroring
  ``Builder.node`` / ``build_tensor`` exactly.
* Node statements (the bulk of big models) are matched by one regular expression each; the rest of the
  text is read by a small recursive scanner with one method per grammar rule. The patterns and the
  token conversions live in :mod:`onnxtext._fastlex`.

Tokens are matched with the lexer's own patterns (``grammar/lexical.lark``) tried in the order Lark's
contextual lexer tries them in the same parser state (``SPECIAL``, ``HEX``, ``FLOAT``, ``INT``); where a
keyword could take the place of a name (``tensor``, ``raw``, data types...), the scanner gives up rather
than guess. ``tests/test_fastparse.py`` proves the two paths equal on the whole corpus and on fuzzed texts.
"""

from __future__ import annotations

from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto

from .. import dtypes
from ..wireformat import put_varint

from . import builder as _b
from .fastlex import (WS_CHARS, FailedAt, Fallback, _ANNOT_RE, _B, _DTYPE_RE, _IDENT_RE, _NAME_RE, _NODE_RE,
                      _KEYWORDS, _NUMBER_RE, _RAW_TENSOR_ATTR_RE, _attrs, _ids,
                      _name, _quoted)
from .fastmetadata import apply_annotations
from .fastvalues import ValueScanner, plain_values, raw_data, skip_middle
from .statement import parse_node_at

#: Set to False to send every text to Lark (tests and benchmarks also pass ``fast=False`` to the parse API).
ENABLED = True


def parse(text: str, start: str):
    """The proto for ``text`` read as ``start`` ("model", "graph" or "function"), or None to use Lark."""
    result = scan(text, start)
    return None if isinstance(result, FailedAt) else result


def scan(text: str, start: str):
    """The proto for ``text`` read as ``start``; or a :class:`FailedAt` when a statement at the text's outermost
    level could not be read (the caller can find the error there, :func:`.statement.locate_error`); or None."""
    if not ENABLED or start not in ("model", "graph", "function") or not isinstance(text, str):
        return None
    try:
        scanner = _Scanner(text)
        result = scanner.graph(top=True) if start == "graph" else getattr(scanner, start)()
        p = scanner.ws()
        if p != len(text):
            return FailedAt(p, scanner.skips)  # something after the text's last statement
        return result
    except FailedAt as e:
        return e
    except Exception:  # noqa: BLE001 - Fallback, or any error the builder/protobuf raise: Lark reports it
        return None


def skim_statements(text: str, pos: int) -> int:
    """Where error recovery (:mod:`.recovery`) can resume parsing after resynchronising at ``pos`` in a list
    of node statements: the start of the last statement the fast scanner reads from ``pos`` on before one it
    cannot read or the end of the list, or ``pos``. The statements before it are complete (syntax errors, if
    any, are further on), so the LALR automaton can go on from there in the state it has at ``pos``."""
    scanner = _Scanner(text)
    scanner.pos = pos
    try:
        scanner.node_list(GraphProto().node, top=True, opened=True)
        starts = scanner.starts  # the list ended: its last statement is complete
    except Exception:  # noqa: BLE001 - the last statement started is the one that cannot be read
        starts = scanner.starts[:-1]
    return starts[-1] if starts else pos


class _Scanner(ValueScanner):
    """The whole scanner: :class:`ValueScanner` plus node statements, graphs, functions and models."""

    def __init__(self, text: str):
        super().__init__(text)
        self._attr_lists: dict = {}  # attribute list text -> AttributeProtos (attrs_of)
        self._simple_attrs: dict = {}  # (list text, domain, op_type) -> AttributeProtos of a one-regex statement
        self._ops: dict = {}  # `domain.Op` text -> (domain, op_type)

    # ------------------------------------------------------------------ nodes
    def node_list(self, into, top: bool = False, opened: bool = False) -> None:
        """Node statements up to the closing brace, added to the repeated field ``into``. A statement this
        scanner does not fully understand is parsed alone by the Lark grammar (:mod:`.statement`).

        ``top``: the main graph's or a function's list: a statement that cannot be read at all raises
        :class:`FailedAt` there, and a list read completely adds the span of its middle statements to
        ``self.skips``."""
        if not opened:
            self.lit("{")
        s, match, add = self.s, _NODE_RE.match, into.add
        pos = self.pos
        starts = self.starts = [] if top else None  # where each statement starts
        while True:
            m = match(s, pos)
            start, count = pos, len(into)
            try:
                if m is None:
                    self.pos = pos
                    p = start = self.ws()
                    if s.startswith("}", p):
                        self.pos = p + 1
                        if top:
                            self.skips.extend(skip_middle(starts))
                        return
                    if top:
                        starts.append(start)
                    ann = self.annotations()
                    m = match(s, self.pos)
                    if m is None:  # tensor/graph attributes, comments inside the statement...
                        into.append(self.node_general(ann))
                        pos = self.pos
                        continue
                    apply_annotations(self.node(m, add), ann)
                else:
                    if top:
                        starts.append(start)
                    self.node(m, add)
                pos = m.end()
            except Exception:  # noqa: BLE001 - Fallback, or a builder/protobuf error: try the slower readings
                del into[count:]
                try:
                    into.append(self.statement(start, general=m is not None))
                except Exception:  # noqa: BLE001 - not a statement: the text's error is most likely here
                    if not top:
                        raise
                    raise FailedAt(start, self.skips + skip_middle(starts[:-1])) from None
                pos = self.pos

    def statement(self, start: int, general: bool) -> NodeProto:
        """The node statement at ``start`` that the one-regex path gave up on: read rule by rule
        (``general``), else parsed alone by the Lark grammar."""
        if general:
            self.pos = start
            try:
                return self.node_general(self.annotations())
            except Fallback:
                pass
        node, self.pos = parse_node_at(self.s, start)
        return node

    def node(self, m, add) -> NodeProto:
        """Add the NodeProto of a matched statement, exactly as Builder.node makes it."""
        label, label_name, outs, op, overload, attrs1, ins, attrs2 = m.groups()
        if "." in op:
            domain_op = self._ops.get(op)
            if domain_op is None:
                parts = [_name(x) for x in _NAME_RE.findall(op)]
                # a dot inside one quoted name ("Re.u") is no domain
                domain_op = self._ops[op] = (".".join(parts[:-1]), parts[-1]) if len(parts) > 1 else (None, parts[0])
            domain, op_type = domain_op
        else:  # no prefix: the domain field stays unset, as Builder.node leaves it
            domain, op_type = None, (op if op[0] != '"' else _quoted(op))
        attrs = None
        if attrs1 is not None or attrs2 is not None:
            if attrs1 is not None and attrs2 is not None:
                raise Fallback  # the builder's error: Lark reports it
            group = 6 if attrs1 is not None else 8
            key = (attrs1 if group == 6 else attrs2, domain, op_type)
            attrs = self._simple_attrs.get(key)  # lists repeat (axis = 0, perm = [0, 2, 1, 3]...): read once
            if attrs is None:
                try:
                    protos = _attrs(key[0], domain, op_type)
                except Fallback:
                    protos = self.attrs_of(m.start(group) - 1, m.end(group) + 1)
                # kept serialized, as the node's attribute fields: merged into each node (cheaper than copying)
                attrs = self._simple_attrs[key] = b"".join(
                    b"*" + put_varint(len(a)) + a for a in (p.SerializeToString() for p in protos))
        # one output name (most statements) without the id-list reading
        if outs and "," not in outs and '"' not in outs:
            output = [outs]
        elif outs[:1] == '"' and outs.find('"', 1) == len(outs) - 1 and "\\" not in outs:
            output = [outs[1:-1]]  # one quoted name (a comma in it is part of it)
        else:
            output = _ids(outs)
        if label is None and domain is None and attrs is None:  # only the fields that are set: add() is faster
            n = add(input=_ids(ins), output=output, op_type=op_type)
        else:
            kw = {"input": _ids(ins), "output": output, "op_type": op_type}
            if domain is not None:
                kw["domain"] = domain
            if label is not None:
                kw["name"] = "" if label_name is None else (
                    label_name if label_name[0] != '"' else
                    label_name[1:-1] if "\\" not in label_name else _quoted(label_name))
            n = add(**kw)
            if attrs is not None:
                n.MergeFromString(attrs)  # NodeProto.attribute is field 5: each one tagged b"*"
        if overload is not None:
            n.overload = _name(overload)
        return n

    def attrs_of(self, begin: int, end: int) -> list:
        """The AttributeProtos of the attribute list ``self.s[begin:end]`` (``<...>``) that the one-regex reading
        cannot split (tensor literals), read by :meth:`attr_list` once per distinct text (exported models repeat
        ``Constant <value = int64[1] = raw {0}>`` hundreds of times); the list is copied by ``add``."""
        key = self.s[begin:end]
        attrs = self._attr_lists.get(key)
        if attrs is None:
            m = _RAW_TENSOR_ATTR_RE.fullmatch(key)
            attrs = None if m is None else self.raw_tensor_attr(*m.groups())
            if attrs is not None:
                self._attr_lists[key] = attrs
                return attrs
            pending = _b._type_named_attributes()
            before = len(pending)
            self.pos = begin
            attrs = self.attr_list()
            if self.pos != end or len(pending) != before:  # type names: Builder.node's decision (node_general)
                for a in attrs:
                    pending.pop(id(a), None)
                raise Fallback
            self._attr_lists[key] = attrs
        return attrs

    def raw_tensor_attr(self, name: str, dtype: str, dims_text, tensor_name, body: str):
        """``[AttributeProto]`` of ``<name = dtype[dims] tensor_name? = raw {numbers}>`` (int64, int32, float, double)
        exactly as Builder.attr and build_tensor make it (the same numpy conversions), or None: the reading of record
        decides."""
        if tensor_name is not None:
            if tensor_name[0] == '"':
                tensor_name = _quoted(tensor_name)
            elif tensor_name in _KEYWORDS:
                return None  # `raw` or a type name: the grammar decides
        dims = []
        if dims_text is not None:  # (no brackets: a scalar; `[]` is the builder's error)
            for d in dims_text.split(","):
                d = d.strip(WS_CHARS)
                if not d:
                    return None
                dims.append(int(d))
        count = 1
        for d in dims:
            count *= d
        dt = dtypes.BY_NAME[dtype]
        vals = self.values(body)
        if len(vals) != count or not plain_values(dt, vals):
            return None
        t = TensorProto(data_type=dt.enum, dims=dims, raw_data=raw_data(dt, vals))
        if tensor_name is not None:  # a written name, even "", is set (as build_tensor does)
            t.name = tensor_name
        return [AttributeProto(name=name, type=AttributeProto.TENSOR, t=t)]

    def id_list(self, close: str) -> list:
        items = []
        while True:
            p = self.ws()
            cur = self.name(keywords_ok=True) if _NAME_RE.match(self.s, p) else None
            if self.opt(","):
                items.append(cur)
                continue
            items.append(cur)
            if not self.peek(close):
                raise Fallback
            return _B.id_list(items)

    def node_general(self, ann) -> NodeProto:
        """A node statement read rule by rule (tensor and graph attributes, comments anywhere)."""
        label = None
        if self.opt("["):
            label = "" if self.peek("]") else self.name(keywords_ok=True)
            self.lit("]")
        outputs = self.id_list("=")
        self.lit("=")
        path = [self.name(keywords_ok=True)]
        while self.opt("."):
            path.append(self.name(keywords_ok=True))
        overload = self.name(keywords_ok=True) if self.opt(":") else None
        attrs1 = self.attr_list() if self.peek("<") else None
        self.lit("(")
        inputs = self.id_list(")")
        self.lit(")")
        attrs2 = self.attr_list() if self.peek("<") else None
        domain = ".".join(path[:-1]) if len(path) > 1 else None  # no prefix: unset, as Builder.op_ref
        return _B.node([ann, label, outputs, (domain, path[-1], overload), attrs1, inputs, attrs2])

    def attr_list(self, function: bool = False) -> list:
        """``<name = value, ...>``; a function's list (``function``) also has bare attribute names."""
        self.lit("<")
        out = []
        if function and self.opt(">"):
            return out
        while True:
            ann = self.annotations()
            name = self.name(keywords_ok=not function)
            if function and ann is None and not (self.peek("=") or self.peek(":")):
                out.append(name)
                if not self.sep(">"):
                    return out
                continue
            declared = _B.attr_type([self.match(_IDENT_RE)]) if self.opt(":") else None
            self.lit("=")
            if self.opt("["):
                items = []
                if not self.opt("]"):
                    while True:
                        items.append(self.single_value())
                        if not self.sep("]"):
                            break
                value = ("list", items)
            else:
                value = self.single_value()
            out.append(_B.attr([ann, name, declared, value]))
            if not self.sep(">"):
                return out

    def single_value(self):
        """An attribute value: number, string, @ref, tensor constant, tensor type or graph."""
        s, p = self.s, self.ws()
        c = s[p:p + 1]
        if c == '"':
            return self.string()
        if c == "@":
            ref = self.match(_ANNOT_RE)
            if not s.startswith((",", ">", "]"), self.ws()):
                raise Fallback  # '@field datum' annotations of a value: Lark
            return _b.Ref(ref[1:])
        if _NUMBER_RE.match(s, p):
            return self.number()
        dense = _DTYPE_RE.match(s, p) is not None
        if dense or self.type_starts():
            tp = self.type()
            p = self.ws()
            if s.startswith((",", ">", "]"), p):
                return tp
            if not dense:
                raise Fallback  # sparse_tensor(...) constants: Lark
            name = None
            word = _IDENT_RE.match(s, p)
            if (s[p:p + 1] == '"' or word) and (word is None or word.group() not in ("raw", "base64", "hex")):
                name = self.name()
            self.opt("=")
            return _B.tensor_constant([None, tp, name, self.tensor_data()])
        if c == "/":
            raise Fallback  # annotated values: Lark
        return self.graph()

    # ------------------------------------------------------------------ graphs, functions, models
    def graph(self, wrap=None, top: bool = False):
        """A GraphProto; with ``wrap`` (a function of the graph's skeleton returning its ModelProto), the
        model, whose graph then receives the initializers and nodes in place (no copy of the weights)."""
        ann = self.annotations()
        name = self.name()
        inputs = self.value_list("(", ")")
        self.lit("=>")
        outputs = self.value_list("(", ")")
        # the builder makes the graph; values and nodes follow in order (each field keeps its order)
        g = outer = _B.graph([ann, name, inputs, outputs, None, []])
        if wrap is not None:
            outer = wrap(g)
            g = outer.graph
        if self.peek("<"):
            self.value_list("<", ">", into=g, top=top)
        self.node_list(g.node, top=top)
        return outer

    def header(self):
        self.lit("<")
        entries = []
        if self.opt(">"):
            return entries
        while True:
            key = self.match(_IDENT_RE)
            self.lit(":")
            entries.append((key, self.datum(), key))
            if not self.sep(">"):
                return entries

    def fn_io(self) -> list:
        self.lit("(")
        out = []
        if self.opt(")"):
            return out
        while True:
            tp = self.type() if self.type_starts() else None
            out.append((tp, self.name()))
            if not self.sep(")"):
                return out

    def function(self):
        ann = self.annotations()
        header = self.header() if self.peek("<") else None
        name = self.name()
        attrs = self.attr_list(function=True) if self.peek("<") else None
        ins = self.fn_io()
        self.lit("=>")
        outs = self.fn_io()
        values = self.value_list("<", ">", top=True) if self.peek("<") else None
        try:
            f = _B.function([ann, header, name, attrs, ins, outs, values, []])
        except Exception:  # noqa: BLE001 - Lark checks the function when it reduces it, after its statements:
            self.node_list(FunctionProto().node, top=True)  # a syntax error in them is the first error
            raise
        self.node_list(f.node, top=True)
        return f

    def model(self):
        ann = self.annotations()
        header = self.header() if self.peek("<") else None
        if header is None and ann is not None:
            raise Fallback  # annotations of the model or of the graph: the grammar decides, not us
        # Builder.model copies the graph it is given: give it the skeleton, fill its copy in place
        refused = []

        def wrap(g):
            try:
                return _B.model([ann, header, g])
            except Exception as e:  # noqa: BLE001 - Lark checks the header when it reduces the model, at the very
                refused.append(e)  # end: a syntax error anywhere after it is the first error
                return ModelProto(graph=g)

        m = self.graph(wrap=wrap, top=True)
        while self.ws() < len(self.s):
            start = self.pos
            try:
                m.functions.append(self.function())  # as Builder.model does with the functions after the graph
            except FailedAt:
                raise
            except Exception:  # noqa: BLE001 - training_info, a form left to Lark, or the text's error
                raise FailedAt(start, list(self.skips)) from None
        if refused:
            raise refused[0]
        return m
