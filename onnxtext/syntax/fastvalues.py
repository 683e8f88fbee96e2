"""The fast scanner's reading of tokens, data, annotations, types, tensors and value lists.

:class:`ValueScanner` holds the part of the accelerated parser (:mod:`onnxtext.syntax.fastparse`) below the
statements: one method per grammar rule for ``datum``, annotations, types, dims, tensor data and the
value lists of signatures and initializers, with the bulk shortcuts for small tensors and byte blocks.
Every method returns exactly what the builder's rule would return for the same text, or raises
:class:`~onnxtext.syntax.fastlex.Fallback`. :mod:`.fastparse` adds node statements, graphs, functions and
models on top of it.
"""

from __future__ import annotations

import struct

import numpy as np
from lark import Token
from onnx import TensorShapeProto, TypeProto

from .. import tensors
from . import builder as _b
from .fastlex import (FailedAt, Fallback, _ALL_FLOATS, _ALL_INTS, _ANNOT_RE, _B, _COMPOUND, _DOC_RE, _DTYPE_RE, _ENTRY_RE,
                      _F32_MAX, _IDENT_RE, _INF, _INT_RE, _KEYWORDS, _NAME_RE, _NUMBER_RE, _SKIP, _STRING_RE,
                      _base64, _name, _number, _quoted, _tensor_info)
from .fastmetadata import MetadataReader, apply_annotations


def plain_values(dt, vals: list) -> bool:
    """Whether the literals ``vals`` of a tensor of element type ``dt`` (float, double, or an integer type of at most
    64 bits) convert as build_tensor converts them with no rule of its own: float tokens only for float/double
    (ints and bit patterns follow its rules), ints in the type's range for integers (numpy refuses the others)."""
    if dt.kind == "float":
        if dt.enum != 1:
            return all(type(v) is float for v in vals)
        for v in vals:
            if type(v) is not float or (not -_F32_MAX <= v <= _F32_MAX and v == v and abs(v) != _INF):
                return False  # numpy warns when it overflows a float32: leave that to the builder
        return True
    low, high = (0, 1 << dt.bits) if dt.name.startswith("u") else (-(1 << (dt.bits - 1)), 1 << (dt.bits - 1))
    for v in vals:
        if type(v) is not int or not low <= v < high:
            return False
    return True


# little-endian struct codes whose packing of in-range ints / Python floats is byte for byte numpy's raw bytes
_STRUCT_CODES = {"int64": "q", "int32": "i", "int16": "h", "uint16": "H", "int8": "b", "uint8": "B", "double": "d"}


def raw_data(dt, vals: list) -> bytes:
    """The raw_data build_tensor makes of ``raw {vals}`` (:func:`plain_values`): the same bytes as its numpy
    conversions (struct packs integers and doubles exactly so; float32 rounding stays numpy's)."""
    code = _STRUCT_CODES.get(dt.name)
    if code is not None:
        return struct.pack(f"<{len(vals)}{code}", *vals)
    arr = np.array(vals, dtype=np.int64 if dt.kind == "int" else np.float64).astype(dt.np)
    return tensors.raw_bytes(arr, dt)


class _Emitter:
    """A list-like sink for value_list that adds each entry to a graph at once: a value_info, or an
    initializer made by the builder or in place from its keyword arguments (small tensors, byte blocks)."""

    def __init__(self, scanner, graph):
        self.scanner, self.graph, self.add_init = scanner, graph, graph.initializer.add

    def append(self, e) -> None:
        if type(e) is not dict:
            if e.data is None and e.annotations is not None:  # a value_info entry, annotated in place
                _b._graph_value_entry(self.graph, _b.ValueEntry(None, e.type, e.name, None))
                apply_annotations(self.graph.value_info[-1], e.annotations)
                return
            kw = self.scanner.block_tensor(e)
            if kw is None:
                _b._graph_value_entry(self.graph, e)
                return
            e = kw
        self.add_init(**e)


_SKIP_START = frozenset(" \t\f\r\n#/")  # the characters a WS or COMMENT token starts with


def skip_middle(starts: list) -> list:
    """The span from the second item to the last one of a list whose items start at ``starts``: left out, the
    list's tokens still take the LALR automaton where all of them do (the first item makes it a non-empty list,
    the last one is the real predecessor of what follows)."""
    if len(starts) < 3:
        return []
    return [(starts[1], starts[-1])]


class ValueScanner:
    """A recursive scanner over ``text`` for the rules below statements; ``Fallback`` otherwise."""

    def __init__(self, text: str):
        self.s = text
        self.pos = 0
        self._types: dict = {}  # type text -> TypeProto (the same text gives an equal TypeProto)
        self._info: dict = {}  # type text -> (DType, dims, element count) of a dense numeric tensor, or ()
        self._literals: dict = {}  # literal text -> value
        self._small: dict = {}  # (type text, literal text, raw) -> small_tensor's arguments without the name, or False
        self.metadata = MetadataReader(text)  # @metadata_props blocks, read in one step
        #: spans of the outermost lists' middle items, read completely (see FailedAt)
        self.skips: list = []

    # ------------------------------------------------------------------ tokens
    def ws(self) -> int:
        p = self.pos
        if self.s[p:p + 1] not in _SKIP_START:  # most tokens follow another at once: no regex call
            return p
        self.pos = p = _SKIP.match(self.s, p).end()
        return p

    def peek(self, ch: str) -> bool:
        return self.s.startswith(ch, self.ws())

    def opt(self, ch: str) -> bool:
        if self.s.startswith(ch, self.ws()):
            self.pos += len(ch)
            return True
        return False

    def lit(self, ch: str) -> None:
        if not self.opt(ch):
            raise Fallback

    def match(self, regex):
        m = regex.match(self.s, self.ws())
        if m is None:
            raise Fallback
        self.pos = m.end()
        return m.group()

    def end(self) -> None:
        if self.ws() != len(self.s):
            raise Fallback

    def name(self, keywords_ok: bool = False) -> str:
        """IDENT or STRING; a keyword-like IDENT gives up unless no keyword can stand there."""
        tok = self.match(_NAME_RE)
        if tok[0] == '"':
            return _quoted(tok)
        if not keywords_ok and tok in _KEYWORDS:
            raise Fallback
        return tok

    def string(self) -> bytes:
        return _b.unescape(self.string_token())

    def string_token(self) -> str:
        """A STRING token; long ones without escapes are found with str.find (regex loops cost ~20x)."""
        s, p = self.s, self.ws()
        if s.startswith('"', p):
            j = s.find('"', p + 1)
            if j > 0 and s.find("\\", p + 1, j) < 0:
                self.pos = j + 1
                return s[p:j + 1]
        return self.match(_STRING_RE)

    def number(self):
        m = _NUMBER_RE.match(self.s, self.ws())
        if m is None:
            raise Fallback
        self.pos = m.end()
        return _number(m.group())

    def sep(self, close: str) -> bool:
        """After an item of ``item ("," item)* ","? close``: True when the list goes on."""
        if self.opt(","):
            return not self.opt(close)
        self.lit(close)
        return False

    # ------------------------------------------------------------------ data and annotations
    def datum(self):
        s, p = self.s, self.ws()
        c = s[p:p + 1]
        if c == '"':
            return self.string()
        if c == "[":
            self.pos += 1
            if self.opt("]"):
                return []
            if self.peek('"'):
                items = _b.Pairs()
                while True:
                    key = self.string()
                    self.lit(":")
                    items.append((key, self.datum()))
                    if not self.sep("]"):
                        return items
            items = []
            while True:
                items.append(self.datum())
                if not self.sep("]"):
                    return items
        if c == "{":
            self.pos += 1
            rec = _b.Record()
            if self.opt("}"):
                return rec
            while True:
                key = self.match(_IDENT_RE)
                self.lit(":")
                rec.append((key, self.datum()))
                if not self.sep("}"):
                    return rec
        m = _IDENT_RE.match(s, p)
        if m is not None and _NUMBER_RE.match(s, p) is None:
            self.pos = m.end()
            word = m.group()
            if word in ("true", "false"):
                return word == "true"
            return word
        return self.number()

    def annotations(self):
        """``/// doc`` lines and ``@field datum`` annotations, or None."""
        out = None
        while True:
            p = self.ws()
            if self.s.startswith("///", p):
                text = self.match(_DOC_RE)[3:]
                item = ("doc", text[1:] if text.startswith(" ") else text)
            elif self.s.startswith("@", p):
                block = self.metadata.block(p) if self.s.startswith("@metadata_props", p) else None
                if block is not None:
                    item = ("set", "metadata_props", block[0])
                    self.pos = block[1]
                else:
                    field = self.match(_ANNOT_RE)[1:]
                    item = ("set", field, self.datum())
            else:
                return out
            if out is None:
                out = []
            out.append(item)

    # ------------------------------------------------------------------ types
    def type_starts(self) -> bool:
        """Whether a type begins here (a data type, or seq/optional/map/sparse_tensor and '(')."""
        p = self.ws()
        if _DTYPE_RE.match(self.s, p):
            return True
        m = _IDENT_RE.match(self.s, p)
        return m is not None and m.group() in _COMPOUND and self.s.startswith("(", _SKIP.match(self.s, m.end()).end())

    def type(self) -> TypeProto:
        p = self.ws()
        m = _DTYPE_RE.match(self.s, p)
        if m is None:
            word = _IDENT_RE.match(self.s, p)
            if word is None or word.group() not in _COMPOUND:
                raise Fallback  # opaque(...), tensor: Lark
            self.pos = word.end()
            word = word.group()
            self.lit("(")
            if word == "type":  # type(): a value whose type is unknown (subgraph outputs of exports)
                self.lit(")")
                return _B.empty_type([self.denotation()])
            if word == "map":  # the builder reads the key as the grammar's token (DTYPE, or INT/'?': Lark)
                key = Token("DTYPE", self.match(_DTYPE_RE))
                self.lit(",")
                args = [key, self.type()]
            else:
                args = [self.type()]
            self.lit(")")
            return getattr(_B, _COMPOUND[word])(args + [self.denotation()])
        end = self.pos = m.end()
        shape = None
        if self.opt("["):
            shape = []
            if not self.opt("]"):
                while True:
                    shape.append(self.dim())
                    if self.opt(","):
                        continue
                    self.lit("]")
                    break
            end = self.pos
        den = self.denotation()
        if den is not None:
            end = self.pos
        key = self.s[p:end]  # the type's text, as _ENTRY_RE's first group sees it
        tp = self._types.get(key)
        if tp is None:  # the builder's tensor_type; the same type text gives an equal TypeProto
            tp = self._types[key] = _B.tensor_type([m.group(), shape, den])
        return tp

    def dim(self):
        d = TensorShapeProto.Dimension()
        p = self.ws()
        m = _INT_RE.match(self.s, p) if self.s[p:p + 1] in "-0123456789" else None
        if m is not None:
            self.pos = m.end()
            value = int(m.group())
            if not -(1 << 63) <= value < 1 << 63:
                raise Fallback  # the Lark path reports it at the dimension
            d.dim_value = value
        elif self.opt("?"):
            pass
        else:
            tok = self.match(_NAME_RE)
            d.dim_param = _b._text(_b.unescape(tok)) if tok[0] == '"' else tok
        den = self.denotation()
        if den is not None:
            d.denotation = den
        return d

    def denotation(self):
        if self.opt(":"):
            return _b._text(self.string())
        return None

    # ------------------------------------------------------------------ tensors
    def tensor_data(self):
        s, p = self.s, self.ws()
        if s.startswith("{", p):
            self.pos += 1
            return _b.TensorData("typed", self.literals())
        word = _IDENT_RE.match(s, p)
        word = word.group() if word else ""
        if word in ("raw", "base64", "hex"):
            self.pos = p + len(word)
            if word == "raw":
                self.lit("{")
                return _b.TensorData("raw", self.literals())
            tok = self.string_token()
            if word == "base64":
                return _base64(tok)
            return _B.hex_data([tok])
        raise Fallback  # external, elided and sparse data: Lark

    def literals(self) -> list:
        """The literals of ``{...}`` after the brace (numbers, strings, true/false; no complex pairs)."""
        s, p = self.s, self.pos
        j = s.find("}", p)
        if j > 0:
            body = s[p:j]
            if '"' not in body and "(" not in body and "#" not in body and "/" not in body:
                self.pos = j + 1
                return self.values(body)  # numbers and true/false only: split in bulk
        out = []
        if self.opt("}"):
            return out
        while True:
            p = self.ws()
            c = self.s[p:p + 1]
            if c == '"':
                out.append(self.string())
            elif c in ("t", "f") and _IDENT_RE.match(self.s, p).group() in ("true", "false"):
                out.append(self.match(_IDENT_RE) == "true")
            else:
                out.append(self.number())
            if not self.sep("}"):
                return out

    # ------------------------------------------------------------------ values
    def value_entry(self) -> _b.ValueEntry:
        ann = self.annotations()
        tp = self.type() if self.type_starts() else None
        name = self.name()
        data = self.tensor_data() if self.opt("=") else None
        return _b.ValueEntry(ann, tp, name, data)

    def value_list(self, open_: str, close: str, into=None, top: bool = False) -> list:
        """The ValueEntry objects of ``( ... )`` or ``< ... >``; with a graph ``into``, each entry goes to it
        as soon as it is read (a weight's decoded bytes are not all held at once) and the list is empty.

        ``top``: a list at the text's outermost level (the main graph's or a function's ``<...>``): an entry
        that cannot be read raises :class:`FailedAt` there, and a list read completely adds the span of its
        middle entries to ``self.skips`` (see :func:`skip_middle`)."""
        self.lit(open_)
        out = []
        small_tensors = into is not None
        if small_tensors:
            out = _Emitter(self, into)
        if self.opt(close):
            return out
        starts = [] if top else None  # where each entry starts
        try:
            self._entries(out, close, small_tensors, starts)
        except Exception:
            if not top:
                raise
            raise FailedAt(starts[-1], self.skips + skip_middle(starts[:-1])) from None
        if top:
            self.skips.extend(skip_middle(starts))
        return out

    def _entries(self, out, close: str, small_tensors: bool, starts) -> None:
        s, match, types, small = self.s, _ENTRY_RE.match, self._types, self.small_tensor
        add_init = out.add_init if small_tensors else None
        while True:
            start = self.pos
            if starts is not None:
                starts.append(start)
            ann = None
            m = match(s, start)
            if m is None and s.startswith("@", self.ws()):  # annotated entries (dynamo exports' value_info)
                ann = self.annotations()
                m = match(s, self.pos)
            if m is not None:
                key, name, raw, data, b64, after = m.groups()
                tp = types.get(key)
                if tp is None:  # a type text not seen yet (dynamo exports: a shape per value): read it once
                    self.pos = m.start(1)
                    try:
                        self.type()  # caches the TypeProto under the type's text, when that is all of `key`
                    except Fallback:
                        pass
                    tp = types.get(key)
                if b64 is not None and tp is not None and name not in _KEYWORDS:  # a weight: its block decoded
                    self.pos = m.end()
                    out.append(_b.ValueEntry(ann, tp, _quoted(name) if name[0] == '"' else name,
                                             _base64(self.string_token())))
                    if not self.sep(close):
                        return
                    continue
                if (after == "," or after == close) and tp is not None and name not in _KEYWORDS:
                    if name[0] == '"':
                        name = _quoted(name)
                    if data is None:
                        out.append(_b.ValueEntry(ann, tp, name, None))
                    else:
                        kw = small(key, name, data, raw is not None) if small_tensors and ann is None else None
                        if kw is not None:
                            add_init(**kw)
                        else:
                            out.append(_b.ValueEntry(ann, tp, name, _b.TensorData("typed" if raw is None else "raw",
                                                                                  self.values(data))))
                    self.pos = m.end()
                    if after == close:
                        return
                    continue
            self.pos = start  # the rule-by-rule reading, from the entry's start
            if self.opt(close):  # after a trailing comma
                return
            out.append(self.value_entry())
            if not self.sep(close):
                return

    def values(self, data: str) -> list:
        """The literals of a ``{...}`` body (numbers and true/false only); Fallback on anything else."""
        if "," not in data:  # one literal (most small tensors), or none
            x = data.strip(" \t\f\r\n")
            if not x:
                return []
            v = self._literals.get(x)
            if v is None:
                v = self._literals[x] = (x == "true") if x in ("true", "false") else _number(x)
            return [v]
        pieces = [x.strip(" \t\f\r\n") for x in data.split(",")]
        if pieces[-1] == "":
            pieces.pop()  # trailing comma (or an empty body)
        if len(pieces) > 16:  # a long list: all FLOAT or all INT tokens convert in one pass, no cache
            if _ALL_FLOATS.fullmatch(data):
                return list(map(float, pieces))
            if _ALL_INTS.fullmatch(data):
                return list(map(_b.int_literal, pieces)) if "-0" in data else list(map(int, pieces))
            return [(x == "true") if x in ("true", "false") else _number(x) for x in pieces]
        cache = self._literals  # short lists repeat: the same few literals over and over
        out = []
        for x in pieces:
            v = cache.get(x)
            if v is None:
                if x in ("true", "false"):
                    v = x == "true"
                else:
                    v = _number(x)  # Fallback for an empty piece or anything else
                cache[x] = v
            out.append(v)
        return out

    def small_tensor(self, key: str, name: str, data: str, raw: bool = False):
        """TensorProto keyword arguments equal to build_tensor's result for a float/double/int64 tensor of
        plain literals (``= {...}``, or ``= raw {...}`` with ``raw``), or None (the builder then makes it).
        The same type and literal text (``float[1] c = {0.5}`` in thousands of entries) is read once per parse."""
        base = self._small.get((key, data, raw))
        if base is None:
            base = self._small[(key, data, raw)] = self._small_tensor(key, data, raw)
        if not base:
            return None
        kw = base.copy()
        if name is not None:  # a written name, even "", is set (as build_tensor does)
            kw["name"] = name
        return kw

    def _small_tensor(self, key: str, data: str, raw: bool):
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _tensor_info(self._types[key])
        if not info:
            return False
        dt, dims, count = info
        vals = self.values(data)
        if len(vals) != count or not plain_values(dt, vals):
            return False
        if raw:
            return {"data_type": dt.enum, "dims": dims, "raw_data": raw_data(dt, vals)}
        return {"data_type": dt.enum, "dims": dims, dt.field: vals}

    def block_tensor(self, e):
        """TensorProto keyword arguments for an initializer given as a byte block (base64/hex), exactly as
        build_tensor makes it, or None. Built in place by the caller: the bytes are copied once, not twice."""
        if e.annotations or e.data is None or e.data.kind != "bytes" or e.type is None:
            return None
        info = _tensor_info(e.type, any_dtype=True)
        if not info:
            return None
        dt, dims, count = info
        if dt.kind == "string" or len(e.data.values) != -(-count * dt.bits // 8):
            return None  # the builder's errors
        kw = {"data_type": dt.enum, "dims": dims, "raw_data": e.data.values}
        if e.name is not None:  # a written name, even "", is set (as build_tensor does)
            kw["name"] = e.name
        return kw
