"""Pretty-printer: onnx protobufs -> canonical onnxtext (one ``print_<message>`` method per message).

The output parses back to the same proto (``parse(to_text(m)) == m``), encodings included: tensors
stored in ``raw_data`` print as ``raw {...}`` (or a ``base64`` block when large), typed-field tensors as
``{...}``. Output is deterministic and idempotent. Options:

* ``width`` (100): wrap lists longer than this;
* ``indent`` ("  "): indentation unit;
* ``max_inline`` (256): the choice between decimal literals and a block for tensors stored in
  ``raw_data``: up to this many elements they print as ``raw {1.5, ...}``, above it as one
  ``base64 "..."`` block of the raw little-endian bytes (encoded and decoded in one C call, no
  per-element work). ``0`` forces blocks, ``None`` forces decimals. Typed-field tensors always print as
  ``{...}`` (their encoding is part of the proto), and raw bytes that do not fit the shape always print
  as a block;
* ``elide`` (False): print big tensors as one-line summaries (for reading: such text does not parse);
* ``style`` ("onnxtext"): ``"onnx"`` writes tensor data in the subset onnx's own parser reads (typed
  decimal lists, bit patterns for 16/8-bit floats, 0/1 for bools). It loses the raw_data encoding and is
  meant for interoperability with ``onnx.parser``.

The literal atoms (names, strings, element values) live in :mod:`.atoms`, line layout (when a list fits the
width, how it breaks) in :mod:`.layout`, generic records and pairs in :mod:`.records`, tensor constants
(``print_tensor``, blocks, sparse and elided data) in :mod:`.tensor_printer`.

Speed and memory: a big graph's plain nodes and small float initializers print straight from its
serialized bytes (:mod:`onnxtext.fastprint`, byte-identical; ``fastprint.ENABLED = False`` turns it off);
names are classified once per printer, float texts come from a per-type cache, proto fields are read once
each (every read is a C call). Big base64 blocks are laid out as placeholders and encoded from the tensors
a piece at a time once the layout is done (:func:`to_text_pieces`): ``to_text`` writes them into one string
of the text's final size (:meth:`.layout.TextPieces.join`: a weight-heavy model costs about its text in
memory while printing, not a copy per nesting level), and ``save`` / ``onnxtext print`` write them to the
file one by one without the whole text.
"""

from __future__ import annotations

import numpy as np
from onnx import (AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, SparseTensorProto,
                  TensorProto, TypeProto, ValueInfoProto)

from .. import dtypes
from . import fastprint, layout
from .records import RecordPrinter, annotation_fields, repeated_getter
from .tensor_printer import TensorPrinter
from ..schemas import element_type_attributes
from ..vocabulary import ATTR_TYPE_NAMES
from ..errors import OnnxTextError
from ..wireformat import has_unknown, unknown_messages
# the literal atoms (re-exported: other modules and tests import them from here)
from .atoms import (_IDENT, _QUOTED_WORDS, _SMALL, KEYWORDS, _dotted, _dtype_name, _float_token,  # noqa: F401
                       _format_floats_exact, _onnx_values, _op_name, float_texts, format_floats, format_values,
                       name, op_part, quote, typed_name, untyped_name, bare_name)

# ---------------------------------------------------------------------------------------------- printer
class Printer(TensorPrinter, RecordPrinter):
    """Prints protos as onnxtext. Methods return strings; nested blocks are indented by ``level``."""

    def __init__(self, width: int = 100, indent: str = "  ", max_inline: int | None = 256, elide: bool = False,
                 elide_threshold: int = 32, style: str = "onnxtext", brief: bool = False):
        self.width = width
        self.brief = brief  # hide metadata values and long doc strings (a reading view: it does not parse)
        self.hidden = {"metadata": 0, "doc": 0}  # what brief mode hid
        self.ind = indent
        self.max_inline = max_inline
        self.elide = elide
        self.elide_threshold = elide_threshold
        if style not in ("onnxtext", "onnx"):
            raise ValueError(f"unknown style {style!r}")
        self.onnx_style = style == "onnx"
        self._names = _NameCache()  # each value name is printed about twice
        self._ids = _IdCache()  # names in node statements: keyword-like names need no quotes there
        self._ops: dict[tuple, str] = {}  # (domain, op_type, overload) -> printed operator
        # Block deferral (set by to_text): big base64 blocks are replaced by a placeholder until the whole
        # text is laid out, then encoded a piece at a time (layout.TextPieces): the megabytes are not copied
        # at every nesting level, and no second copy of all weights is held at any time.
        self._blobs: list[tuple] | None = None  # (tensor, length of its raw_data, line indentation, chars per line)

    # ------------------------------------------------------------------ layout helpers
    # (layout.py places the items; ``lead`` is the column where ``open_`` starts, by default the level's
    # indentation: a list that follows other text on its line passes the length of that text)
    def _list(self, open_: str, items: list[str], close: str, level: int, force_multiline=False,
              lead: int | None = None) -> str:
        """``open items close`` on one line when it fits, else one item per line."""
        if not force_multiline:
            one = open_ + ", ".join(items) + close
            if layout.fits(len(self.ind) * level if lead is None else lead, one, self.width):
                return one
        return layout.one_per_line(open_, items, close, self.ind * level, self.ind * (level + 1))

    def _wrapped_values(self, open_: str, values: list[str], close: str, level: int, lead: int | None = None,
                        row: int = 0) -> str:
        """A literal list: one line when it fits, else a fixed number of values per line (whole rows of
        ``row`` values when a row fits), so that a changed value changes one line."""
        one = open_ + ", ".join(values) + close
        if layout.fits(len(self.ind) * level if lead is None else lead, one, self.width):
            return one
        return layout.fixed_rows(open_, values, close, self.ind * level, self.ind * (level + 1), self.width, row)

    def _filled(self, open_: str, items: list[str], close: str, level: int, lead: int | None = None) -> str:
        """One line when it fits, else as many items per line as fit (metadata, pairs)."""
        lead = len(self.ind) * level if lead is None else lead
        one = open_ + ", ".join(items) + close
        if layout.fits(lead, one, self.width) or not items:
            return one
        return layout.filled(open_, items, close, lead, self.ind * (level + 1), self.width)

    def _annotations(self, msg, level: int, skip=("doc_string",), doc=True, spec=None, nested=()) -> list[str]:
        """``/// doc`` lines and ``@field value`` lines for fields the main syntax does not show
        (``spec``: the precomputed ``annotation_fields`` of hot callers), then ``@unknown [...]`` for unknown
        fields of ``msg`` and of the messages inside its ``nested`` fields (:meth:`unknown_lines`)."""
        has_doc, fields = spec or annotation_fields(type(msg), skip)
        out = []
        if doc and has_doc and msg.HasField("doc_string"):  # an explicit "" prints as a bare ///
            out.extend(self.print_doc(msg.doc_string))
        for fd, field, repeated in fields:
            if (len(getattr(msg, field)) if repeated else msg.HasField(field)):
                out.append(self._annotation(msg, fd, level))
        return out + self.unknown_lines(msg, nested, level)

    def _annotation(self, msg, fd, level: int) -> str:
        """``@field value`` (in brief mode, metadata values are hidden and counted)."""
        if self.brief and fd.name == "metadata_props":
            n = len(msg.metadata_props)
            self.hidden["metadata"] += n
            return f"@metadata_props elided {{entries: {n}}}"
        return f"@{fd.name} " + self.print_datum(msg, fd, level, len(self.ind) * level + len(fd.name) + 2)

    def print_doc(self, doc: str) -> list[str]:
        """``///`` lines, or ``@doc_string "..."`` when a line would not survive as a comment (a CR, other
        controls, edge spaces)."""
        if self.brief and len(doc) > _BRIEF_DOC:
            self.hidden["doc"] += 1
            return [f"@doc_string elided {{characters: {len(doc)}}}"]
        if not self.doc_is_comment_safe(doc):
            return ["@doc_string " + quote(doc)]
        return ["///" + (" " + line if line else "") for line in doc.split("\n")]

    @staticmethod
    def doc_is_comment_safe(doc: str) -> bool:
        """A doc string can be written as /// lines when every line survives the round trip (not bytes: a .onnx
        file's doc string that is not UTF-8)."""
        return isinstance(doc, str) and not any(c in doc for c in "\r\x0b\x0c\x85\u2028\u2029") and not any(
            ord(c) < 0x20 and c not in "\n\t" for c in doc) and not any(line.startswith(" ") or line.endswith(
                (" ", "\t")) for line in doc.split("\n"))

    # ------------------------------------------------------------------ model
    def print_model(self, m: ModelProto, level: int = 0) -> str:
        parts = []
        header = []
        doc_as_comment = m.doc_string and self.doc_is_comment_safe(m.doc_string) and "\n" in m.doc_string
        for key in ("ir_version", "opset_import", "producer_name", "producer_version", "domain", "model_version",
                    "doc_string", "metadata_props", "configuration"):
            fd = m.DESCRIPTOR.fields_by_name[key]
            if key == "doc_string" and doc_as_comment:
                continue
            if (fd.is_repeated and len(getattr(m, key))) or (not fd.is_repeated and m.HasField(key)):
                header.append(f"{key}: " + self.print_datum(m, fd, level + 1))
        pre = self.print_doc(m.doc_string) if doc_as_comment else []
        if not m.HasField("graph"):
            pre.append("@graph unset")  # the syntax always has a graph
        pre += self.unknown_lines(m, ("training_info",), level, deep=False)
        if header or pre:
            parts.append("\n".join(pre + [self._list("<", header, ">", level, force_multiline=True)]))
        parts.append(self.print_graph(m.graph, level))
        for f in m.functions:
            parts.append(self.print_function(f, level))
        for t in m.training_info:
            parts.append(self.print_training_info(t, level))
        return "\n\n".join(parts) + "\n"

    def print_training_info(self, t, level: int = 0) -> str:
        pad = self.ind * (level + 1)
        lines = ["training_info {"]
        for key in ("initialization", "algorithm"):
            if t.HasField(key):
                lines.append(f"{pad}{key}: " + self.print_graph(getattr(t, key), level + 1))
        for key in ("initialization_binding", "update_binding"):
            if len(getattr(t, key)):
                lines.append(f"{pad}{key}: " + self.print_pairs(getattr(t, key), level + 1))
        lines.append(self.ind * level + "}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ graph
    def print_graph(self, g: GraphProto, level: int = 0) -> str:
        ann = self._annotations(g, level, skip=("doc_string", "node", "name", "initializer", "sparse_initializer",
                                                "input", "output", "value_info")) + _unset(g, "name")
        fast = fastprint.graph_parts(self, g, level)  # None: the reference methods below
        if fast:
            ins, outs, values = fast[0], fast[1], fast[2] + fast[3]
        else:
            ins = [self.print_value_info(v, level + 1) for v in g.input]
            outs = [self.print_value_info(v, level + 1) for v in g.output]
            values = [self.print_value_info(v, level + 1) for v in g.value_info]
            values += [self.print_initializer(t, level + 1) for t in g.initializer]
        values += [self.print_sparse_initializer(s, level + 1) for s in g.sparse_initializer]
        sig = self._signature(name(g.name) + " ", ins, outs, level)
        lines = ann + [sig]
        if values:
            lines.append(self._list("<", values, ">", level, force_multiline=len(values) > 1 or any(
                "\n" in v for v in values)))
        return _block(lines, fast[4]() if fast else self.print_nodes(g.node, level), self.ind * level, bool(values))

    def _signature(self, head: str, ins: list[str], outs: list[str], level: int) -> str:
        """``head(ins) => (outs)`` on one line when it fits, else both lists one entry per line."""
        one = head + "(" + ", ".join(ins) + ") => (" + ", ".join(outs) + ")"
        if layout.fits(len(self.ind) * level, one, self.width):
            return one
        pad, inner = self.ind * level, self.ind * (level + 1)
        return (head + layout.one_per_line("(", ins, ")", pad, inner) + " => " +
                layout.one_per_line("(", outs, ")", pad, inner))

    def print_nodes(self, nodes, level: int) -> str:
        if not nodes:
            return "{\n" + self.ind * level + "}"
        pad = self.ind * (level + 1)
        lines = ["{"]
        for n in nodes:
            text = self.print_node(n, level + 1)
            lines.append(pad + text)
        lines.append(self.ind * level + "}")
        return "\n".join(lines)

    def _name(self, n: str) -> str:
        """:func:`name`, memoized for this printer."""
        return self._names[n]

    def print_value_info(self, v: ValueInfoProto, level: int = 0) -> str:
        ann = self._annotations(v, level, skip=("doc_string", "name", "type"), nested=("type",)) + _unset(v, "name")
        text = self.print_type(v.type) + " " + typed_name(v.name) if v.HasField("type") else untyped_name(v.name)
        if (len(text) + len(self.ind) * level > self.width and v.type.HasField("tensor_type")
                and len(v.type.tensor_type.shape.dim)):
            text = self.print_type(v.type, level) + " " + typed_name(v.name)  # long dims: one per line
        return ("\n" + self.ind * level).join(ann + [text]) if ann else text

    # ------------------------------------------------------------------ types
    def print_type(self, tp: TypeProto, level: int | None = None) -> str:
        """A type; with ``level``, the dims of a tensor type's shape one per line (a shape too long for the
        width)."""
        if level is not None:
            tt = tp.tensor_type
            dims = self._dims(tt)
            den = ":" + quote(tp.denotation) if tp.HasField("denotation") else ""
            return (_dtype_name(tt.elem_type) + layout.one_per_line("[", dims, "]", self.ind * level,
                                                                   self.ind * (level + 1)) + den)
        which = tp.WhichOneof("value")
        den = ":" + quote(tp.denotation) if tp.HasField("denotation") else ""
        if which == "tensor_type":
            tt = tp.tensor_type
            if tt.elem_type not in _TYPE_NAME_OF or not tt.HasField("elem_type"):
                # `tensor`, `tensor[2, N]`, `tensor[]` (a rank-0 shape); `tensor(0)`: a number that is no type
                head = f"tensor({tt.elem_type})" if tt.HasField("elem_type") else "tensor"
                if tt.HasField("shape"):
                    return head + "[" + ", ".join(self._dims(tt)) + "]" + den
                return head + den
            return _dtype_name(tt.elem_type) + self.print_shape(tt) + den
        if which in ("sequence_type", "optional_type"):  # `seq()`: no element type
            inner = getattr(tp, which)
            word = "seq(" if which == "sequence_type" else "optional("
            return word + (self.print_type(inner.elem_type) if inner.HasField("elem_type") else "") + ")" + den
        if which == "map_type":
            mt = tp.map_type
            key = _TYPE_NAME_OF.get(mt.key_type) if mt.HasField("key_type") else None
            key = key or (str(mt.key_type) if mt.HasField("key_type") else "?")  # `map(0, float)`, `map(?)`
            return ("map(" + key +
                    (", " + self.print_type(mt.value_type) if mt.HasField("value_type") else "") + ")" + den)
        if which == "sparse_tensor_type":
            st = tp.sparse_tensor_type
            if st.elem_type not in _TYPE_NAME_OF or not st.HasField("elem_type"):  # `sparse_tensor(tensor(0)[N])`
                head = f"tensor({st.elem_type})" if st.HasField("elem_type") else "tensor"
                dims = "[" + ", ".join(self._dims(st)) + "]" if st.HasField("shape") else ""
                return "sparse_tensor(" + head + dims + ")" + den
            return "sparse_tensor(" + _dtype_name(st.elem_type) + self.print_shape(st) + ")" + den
        if which == "opaque_type":
            o = tp.opaque_type
            if o.domain:
                return f"opaque({_dotted(o.domain)}, {name(o.name)})" + den
            return (f"opaque({_dotted(o.name)})" if o.name else "opaque()") + den
        return "type()" + den

    def print_plain_type(self, tp: TypeProto) -> str:
        """:meth:`print_type` of a type holding no unknown fields (fastprint's value infos: a type with some
        raises, and its value prints through :meth:`print_value_info`, which writes them as ``@unknown``)."""
        for path, _ in unknown_messages(tp):
            raise OnnxTextError(f"unknown fields in {path or 'the type'}: print the value_info")
        return self.print_type(tp)

    def print_shape(self, tt) -> str:
        if not tt.HasField("shape"):
            return "[]"
        if not tt.shape.dim:
            return ""
        return "[" + ", ".join(self._dims(tt)) + "]"

    @staticmethod
    def _dims(tt) -> list[str]:
        dims = []
        for d in tt.shape.dim:
            w = d.WhichOneof("value")
            s = str(d.dim_value) if w == "dim_value" else bare_name(d.dim_param) if w == "dim_param" else "?"
            if d.HasField("denotation"):
                s += ":" + quote(d.denotation)
            dims.append(s)
        return dims

    # ------------------------------------------------------------------ nodes and attributes
    def print_node(self, n: NodeProto, level: int = 0) -> str:
        # The hottest method on big graphs: each proto field read is a C call, so each is read once, and
        # lists are joined through map() over C-level callables (no per-element Python frames).
        ann = None
        if any(map(len, _NODE_EXTRA_REPEATED(n))) or any(map(n.HasField, _NODE_EXTRA_SINGULAR)) or \
                has_unknown(n) or not n.op_type:
            ann = self._annotations(n, level, spec=_NODE_SPEC) + _unset(n, "op_type")
        names = self._ids.__getitem__
        nm = n.name
        outs = ", ".join(map(names, n.output))
        # field presence: an empty domain or overload that is set (True) prints as "".Op or Op:""
        key = (n.domain or n.HasField("domain"), n.op_type, n.overload or n.HasField("overload"))
        op = self._ops.get(key)
        if op is None:
            op = self._ops[key] = self._op_text(*key)
        attributes = n.attribute
        items = None
        if len(attributes):
            type_names = element_type_attributes(n.domain, key[1])
            items = [self.print_attribute(a, level + 1, type_names) for a in attributes]
            op += " <" + ", ".join(items) + "> "
        ins = ", ".join(map(names, n.input))
        if not nm and n.HasField("name"):
            nm = None  # an explicit empty name: `[]`
        if nm and outs:
            line = f"[{names(nm)}] {outs} = {op}({ins})"
        else:
            label = "[] " if nm is None else "[" + names(nm) + "] " if nm else ""
            line = f"{label}{outs + ' = ' if outs else '= '}{op}({ins})"
        if len(line) + len(self.ind) * level > self.width or "\n" in line:
            line = self._broken_node(n, level, items, nm)
        return ("\n" + self.ind * level).join(ann + [line]) if ann else line

    def _broken_node(self, n: NodeProto, level: int, items: list[str] | None, nm) -> str:
        """A node statement longer than the width: a long label on its own line, the outputs filled to the
        width (continued at the statement's own depth, so that indentation stays the bracket nesting that
        editors compute), the attributes one per line, the inputs filled to the width."""
        names = self._ids.__getitem__
        pad = len(self.ind) * level
        label = "[] " if nm is None else "[" + names(nm) + "] " if nm else ""
        outs = [names(o) for o in n.output]
        op = self._ops[(n.domain or n.HasField("domain"), n.op_type, n.overload or n.HasField("overload"))]
        if label and outs and pad + len(label) + len(outs[0]) + 3 > self.width:
            label = label[:-1] + "\n" + self.ind * level  # a long label on a line of its own
        label_end = len(label) - label.rfind("\n") - 1 if "\n" in label else pad + len(label)
        after = " = " + op + (" <" if items else "(")
        if not outs:
            head = "= "
        elif layout.fits(label_end, ", ".join(outs) + after, self.width):
            head = ", ".join(outs) + " = "
        else:
            head = layout.filled("", outs, after, label_end, self.ind * level, self.width)[:-len(after)] + " = "
        depth = level
        text = label + head + op
        last = len(text) - text.rfind("\n") - 1 if "\n" in text else pad + len(text)
        if items:
            text += " " + layout.one_per_line("<", items, ">", self.ind * depth, self.ind * (depth + 1)) + " "
            last = len(self.ind) * depth + 2
        return text + self._filled("(", [names(i) for i in n.input], ")", depth, last)

    def _op_text(self, domain, op_type: str, overload) -> str:
        """``domain.Op:overload``; ``domain``/``overload`` True: set to "" (printed ``"".Op``, ``Op:""``,
        except in onnx style, whose parser always sets the domain and reads no quoted one)."""
        if domain is True:
            text = op_part(op_type) if self.onnx_style else '"".' + op_part(op_type)
        else:
            text = _op_name(domain or "", op_type)
        if overload is True:
            return text + ':""'
        return text + (":" + name(overload) if overload else "")

    def print_attribute(self, a: AttributeProto, level: int = 0, type_names: frozenset = frozenset()) -> str:
        """``name = value``; attributes named in ``type_names`` (the node's operator documents them as element
        types, :func:`onnxtext.schemas.element_type_attributes`) print an INT value as a type name.

        Fields the value syntax does not show print as ``@field`` annotations: an attribute without a type
        (or UNDEFINED) prints the value it holds and ``@type unset``; a value field left unset prints its
        default and ``@f unset``."""
        ann = self.print_doc(a.doc_string) if a.doc_string or a.HasField("doc_string") else []
        t = a.type
        fields = a.ListFields()
        ref = bool(a.ref_attr_name)
        kind = t if ref or t in _ATTR_SHOWN else _held_kind(a)
        if len(fields) - len(ann[:1]) != (3 if t or not ref else 2) or kind != t or not a.HasField("name"):
            shown = _ATTR_SHOWN_REF if ref else _ATTR_SHOWN[kind]
            ann = ann + [f"@{fd.name} " + self.print_datum(a, fd, level) for fd, _ in fields
                         if fd.name not in shown]
            if kind != t:
                ann.append("@type " + ("UNDEFINED" if a.HasField("type") else "unset"))
            if not ref and kind in _SINGLE_FIELD and not a.HasField(_SINGLE_FIELD[kind]):
                ann.append(f"@{_SINGLE_FIELD[kind]} unset")
            ann += _unset(a, "name")
        ann += self.unknown_lines(a, _ATTR_TYPE_FIELDS if a.HasField("tp") or len(a.type_protos) else (), level)
        if ref:
            typ = f": {ATTR_TYPE_NAMES[t]}" if t else ""
            ref_name = a.ref_attr_name  # bytes when not UTF-8: quoted, as \xHH escapes
            return ("\n" + self.ind * level).join(ann + [f"{op_part(a.name)}{typ} = @{ref_name}" if isinstance(
                ref_name, str) and _IDENT.match(ref_name) else f"{op_part(a.name)}{typ} = @ {quote(ref_name)}"])
        lead = len(self.ind) * level + len(a.name) + 3  # the value's column (a `: type` aside)
        if a.name in type_names and not self.onnx_style:
            if t == AttributeProto.INT and a.i in _TYPE_NAME_OF:
                value, annotate = _TYPE_NAME_OF[a.i], False
            else:  # a bare `float` type_proto would read back as the INT: say what it is
                value, annotate = self.print_attribute_value(a, level, lead, kind)
                annotate = annotate or kind == AttributeProto.TYPE_PROTO
        else:
            value, annotate = self.print_attribute_value(a, level, lead, kind)
        typ = f": {ATTR_TYPE_NAMES[kind]}" if annotate else ""
        # After a doc comment the lexer cannot tell a keyword-like name from the keyword: quote it.
        return ("\n" + self.ind * level).join(ann + [f"{name(a.name) if ann else op_part(a.name)}{typ} = {value}"])

    def print_attribute_value(self, a: AttributeProto, level: int, lead: int | None = None, kind: int | None = None):
        """The value text, and whether it needs a ``: type`` annotation (empty lists); ``lead``: its column;
        ``kind``: the attribute type to print (default: its ``type``)."""
        A = AttributeProto
        t = a.type if kind is None else kind
        if t == A.FLOAT:
            text = format_floats(np.array([a.f], np.float32), dtypes.BY_NAME["float"])[0]
            return text, "0x" in text  # a hex bit pattern (NaN payload) is a float only when declared
        if t == A.INT:
            return str(a.i), False
        if t == A.STRING:
            return quote(a.s), False
        if t == A.TENSOR:
            return self.print_tensor(a.t, level, lead), False
        if t == A.GRAPH:
            return self.print_graph(a.g, level), False
        if t == A.SPARSE_TENSOR:
            return self.print_sparse_attr(a.sparse_tensor, level), False
        if t == A.TYPE_PROTO:
            return self.print_type(a.tp), False
        if t == A.FLOATS:
            items = format_floats(np.array(a.floats, np.float32), dtypes.BY_NAME["float"])
        elif t == A.INTS:
            items = [str(v) for v in a.ints]
        elif t == A.STRINGS:
            items = [quote(v) for v in a.strings]
        elif t == A.TENSORS:
            items = [self.print_tensor(v, level + 1) for v in a.tensors]
        elif t == A.GRAPHS:
            items = [self.print_graph(v, level + 1) for v in a.graphs]
        elif t == A.SPARSE_TENSORS:
            items = [self.print_sparse_attr(v, level + 1) for v in a.sparse_tensors]
        elif t == A.TYPE_PROTOS:
            items = [self.print_type(v) for v in a.type_protos]
        else:
            raise OnnxTextError(f"attribute {a.name!r} has no type and no reference; it cannot be printed")
        if t in (A.FLOATS, A.INTS, A.STRINGS):
            hexed = t == A.FLOATS and any("0x" in i for i in items)  # NaN payloads: see FLOAT above
            return self._wrapped_values("[", items, "]", level, lead), not items or hexed
        return self._list("[", items, "]", level, lead=lead), not items

    # ------------------------------------------------------------------ functions
    def print_function(self, f: FunctionProto, level: int = 0) -> str:
        doc_as_comment = self.doc_is_comment_safe(f.doc_string) and "\n" in f.doc_string
        header = []
        for key in ("domain", "opset_import", "overload", "doc_string", "metadata_props"):
            fd = f.DESCRIPTOR.fields_by_name[key]
            if key == "doc_string" and doc_as_comment:
                continue
            if (fd.is_repeated and len(getattr(f, key))) or (not fd.is_repeated and f.HasField(key)):
                header.append(f"{key}: " + self.print_datum(f, fd, level + 1))
        lines = self.print_doc(f.doc_string) if doc_as_comment else []
        lines += self.unknown_lines(f, (), level) + _unset(f, "name")
        if header:
            lines.append(self._list("<", header, ">", level))
        attrs = [op_part(a) for a in f.attribute] + [self.print_attribute(a, level + 1) for a in f.attribute_proto]
        sig = name(f.name)
        if attrs:
            sig += " " + self._list("<", attrs, ">", level)
        sig = self._signature(sig + " ", [untyped_name(i) for i in f.input], [untyped_name(o) for o in f.output],
                              level)
        lines.append(sig)
        values = [self.print_value_info(v, level + 1) for v in f.value_info]
        if values:
            lines.append(self._list("<", values, ">", level, force_multiline=len(values) > 1))
        return _block(lines, self.print_nodes(f.node, level), self.ind * level, bool(values))


# ---------------------------------------------------------------------------------------------- helpers
_NODE_SKIP = ("doc_string", "input", "output", "name", "op_type", "domain", "overload", "attribute")
_NODE_SPEC = annotation_fields(NodeProto, _NODE_SKIP)
_BRIEF_DOC = 60  # brief mode hides doc strings longer than this
#: element type enum -> its name, for attributes spelled as type names (`Cast <to = float>`)
_TYPE_NAME_OF = {dt.enum: dt.name for dt in dtypes.DTYPES}
# the fields an attribute's `name: type = value` shows, per type (others print as @field annotations)
_ATTR_SHOWN_REF = frozenset({"name", "type", "doc_string", "ref_attr_name"})
_ATTR_SHOWN = {t: frozenset({"name", "type", "doc_string", f}) for t, f in (
    (AttributeProto.FLOAT, "f"), (AttributeProto.INT, "i"), (AttributeProto.STRING, "s"), (AttributeProto.TENSOR, "t"),
    (AttributeProto.GRAPH, "g"), (AttributeProto.SPARSE_TENSOR, "sparse_tensor"), (AttributeProto.TYPE_PROTO, "tp"),
    (AttributeProto.FLOATS, "floats"), (AttributeProto.INTS, "ints"), (AttributeProto.STRINGS, "strings"),
    (AttributeProto.TENSORS, "tensors"), (AttributeProto.GRAPHS, "graphs"),
    (AttributeProto.SPARSE_TENSORS, "sparse_tensors"), (AttributeProto.TYPE_PROTOS, "type_protos"))}
_SINGLE_FIELD = {t: f for t, f in ((AttributeProto.FLOAT, "f"), (AttributeProto.INT, "i"), (AttributeProto.STRING, "s"),
                                    (AttributeProto.TENSOR, "t"), (AttributeProto.GRAPH, "g"),
                                    (AttributeProto.SPARSE_TENSOR, "sparse_tensor"), (AttributeProto.TYPE_PROTO, "tp"))}
_NODE_EXTRA_REPEATED = repeated_getter(_NODE_SPEC)


def _held_kind(a: AttributeProto) -> int:
    """The kind of value an attribute without a (known) type holds: its first value field that is set
    (INT when none is)."""
    for kind, fields in _ATTR_SHOWN.items():
        field = max(fields - {"name", "type", "doc_string"})
        value = getattr(a, field)
        if (len(value) if field in _LIST_FIELDS else a.HasField(field)):
            return kind
    return AttributeProto.INT


_ATTR_TYPE_FIELDS = ("tp", "type_protos")  # the attribute's messages without annotations of their own
_LIST_FIELDS = frozenset({"floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos"})
_NODE_EXTRA_SINGULAR = tuple(f for _, f, repeated in _NODE_SPEC[1] if not repeated) + ("doc_string",)


class _NameCache(dict):
    """name -> printed name; a miss computes :func:`name` (a C-level lookup per hit, no Python call)."""

    def __missing__(self, n: str) -> str:
        r = self[n] = name(n)
        return r


class _IdCache(dict):
    """name -> printed name in a node statement's label, outputs and inputs, where the grammar expects only
    names: a keyword-like name (``seq``, ``float``) stays bare, only non-identifiers are quoted."""

    def __missing__(self, n: str) -> str:
        r = self[n] = quote(n) if isinstance(n, bytes) else op_part(n)
        return r


def _unset(msg, field: str) -> list[str]:
    """``@field unset`` for a field the syntax always writes (a name) when the message leaves it unset."""
    return [] if msg.HasField(field) else [f"@{field} unset"]


def _block(lines: list[str], body: str, pad: str, value_list: bool) -> str:
    """Header lines then a ``{...}`` body. Fragments follow one convention: the first line is placed by
    the caller, continuation lines are already indented absolutely."""
    head = ("\n" + pad).join(lines)
    return head + ("\n" + pad if value_list else " ") + body


_PRINTERS = {
    ModelProto: "print_model", GraphProto: "print_graph", FunctionProto: "print_function", NodeProto: "print_node",
    TensorProto: "print_tensor", SparseTensorProto: "print_sparse_attr", TypeProto: "print_plain_type",
    ValueInfoProto: "print_value_info", AttributeProto: "print_attribute",
}


def to_text(proto, **options) -> str:
    """Print a ModelProto, GraphProto, FunctionProto, NodeProto, TensorProto, SparseTensorProto, TypeProto,
    ValueInfoProto or AttributeProto as onnxtext. See the module docstring for ``options``."""
    return to_text_pieces(proto, **options).join()


def to_text_pieces(proto, **options) -> layout.TextPieces:
    """The text of :func:`to_text` as consecutive pieces, for writing it out without holding all of it.

    The layout is made here (every error is raised before the first piece); big base64 blocks are encoded
    from their tensors' raw_data a piece at a time while the result is iterated (:class:`.layout.TextPieces`).
    """
    method = _PRINTERS.get(type(proto))
    if method is None:
        raise TypeError(f"to_text cannot print {type(proto).__name__}")
    printer = Printer(**options)
    printer._blobs = []
    text = getattr(printer, method)(proto)
    blobs, printer._blobs = printer._blobs, None
    parts = text.split("\x00") if blobs else [text]
    del text
    if len(parts) != 2 * len(blobs) + 1:  # a NUL of its own in the text (a doc comment): no deferral
        del parts
        blobs, printer.hidden = [], {"metadata": 0, "doc": 0}
        parts = [getattr(printer, method)(proto)]
    if not parts[-1].endswith("\n"):
        parts[-1] += "\n"
    if printer.hidden["metadata"] or printer.hidden["doc"]:
        parts[0] = (f"# brief: {printer.hidden['metadata']} metadata entries and {printer.hidden['doc']} doc "
                    "strings hidden (marked elided: this text does not parse; print without --brief for all of "
                    "it)\n" + parts[0])
    return layout.TextPieces(parts, blobs)
