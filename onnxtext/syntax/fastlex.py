"""Tokens and statement pieces of the fast parser (syntax/fastparse.py, fastvalues.py): patterns, conversions.

The patterns are those of ``grammar/lexical.lark``, tried in the order Lark's contextual lexer tries them
(``SPECIAL``, ``HEX``, ``FLOAT``, ``INT``). Every function here either returns exactly what the builder's
rule would return for the same text, or raises :class:`Fallback` (the text goes to Lark).
"""

from __future__ import annotations

import binascii
import re

from onnx import AttributeProto, TypeProto

from . import builder as _b
from .literal_data import _STRICT_BASE64, decode_base64
from .. import dtypes
from ..schemas import element_type_attributes

# ------------------------------------------------------------------------------------------ lexical patterns
# Quantifiers are possessive (*+): a token is the longest match, as in Lark's lexer, so giving characters back
# can never help, and without it a failed statement match backtracks through every split of a long name
# (a 20,000-character identifier before an error took seconds; now one step).
WS_CHARS = " \t\f\r\n"  # WS of lexical.lark (not Python's \s, which also matches \v and Unicode spaces)
_W = r"[ \t\f\r\n]*+"  # WS of lexical.lark (not Python's \s, which also matches \v and Unicode spaces)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*+"
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'  # lexical.lark's STRING, unrolled (same language, no backtracking)
_NAME = f"(?:{_IDENT}|{_STRING})"
_INT = r"-?[0-9]+"
_FLOAT = r"-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"
_HEX = r"0[xX][0-9a-fA-F]+"
_SPECIAL = r"-?(?i:infinity|inf|nan)(?![A-Za-z0-9_])"
_DTYPE = "(?:" + "|".join(sorted(dtypes.NAMES, key=len, reverse=True)) + r")(?![A-Za-z0-9_])"
_NUMBER = f"(?:{_SPECIAL}|{_HEX}|{_FLOAT}|{_INT})"  # Lark's order: priority 3, 2, then the longer pattern

_SKIP = re.compile(r"(?:[ \t\f\r\n]+|#[^\r\n]*|//(?!/)[^\r\n]*)*")  # WS and COMMENT (not /// DOC)
_NAME_RE = re.compile(_NAME, re.S)
_IDENT_RE = re.compile(_IDENT)
_STRING_RE = re.compile(_STRING, re.S)
_DTYPE_RE = re.compile(_DTYPE)
_NUMBER_RE = re.compile(f"(?P<s>{_SPECIAL})|(?P<h>{_HEX})|(?P<f>{_FLOAT})|(?P<i>{_INT})")
_DOC_RE = re.compile(r"///[^\r\n]*")
_ANNOT_RE = re.compile(r"@[A-Za-z_][A-Za-z0-9_]*")
_IDS = f"((?:{_NAME})?(?:{_W},{_W}(?:{_NAME})?)*)"
_ID_TOKEN = re.compile(f"{_NAME}|,|[ \t\f\r\n]+", re.S)
# runs of plain characters are matched possessively (++): they cannot hold a quote or bracket, so nothing
# after them could want them back, and a long attribute list costs one step per run, not per character
# (a tensor literal of plain numbers, as in `Constant <value = int64[1] = raw {0}>`, is one more kind of run: such
# lists are read by the scanner's attr_list once per distinct text, fastparse._Scanner.attrs_of)
_SIMPLE_ATTRS = (f"<((?:[^<>{{}}()\"\\[\\]#/]++|{_STRING}|\\[(?:[^<>{{}}()\"\\[\\]#/]++|{_STRING})*\\]"
                 f"|\\{{[^<>{{}}()\"\\[\\]#/]*+\\}})*)>")

# One plain node statement: [label] outputs = domain.Op:overload <attrs> (inputs) <attrs>
_NODE_RE = re.compile(
    f"{_W}(\\[{_W}({_NAME})?{_W}\\]{_W})?"  # 1: label present, 2: its name
    f"{_IDS}{_W}={_W}"  # 3: outputs
    f"({_NAME}(?:{_W}\\.{_W}{_NAME})*)(?:{_W}:{_W}({_NAME}))?{_W}"  # 4: op path, 5: overload
    f"(?:{_SIMPLE_ATTRS}{_W})?"  # 6: attributes before the inputs
    f"\\({_W}{_IDS}{_W}\\)"  # 7: inputs
    f"(?:{_W}{_SIMPLE_ATTRS})?(?!{_W}<)", re.S)  # 8: attributes after the inputs (not complex ones)
_SCALAR = f"(?:{_NUMBER}|{_STRING}|@[A-Za-z_][A-Za-z0-9_]*)"
_ATTR_RE = re.compile(
    f"{_W}({_NAME}){_W}(?::{_W}({_IDENT}){_W})?={_W}"  # 1: name, 2: declared type
    f"({_SCALAR}|{_DTYPE}|\\[{_W}(?:{_SCALAR}(?:{_W},{_W}{_SCALAR})*(?:{_W},)?)?{_W}\\]){_W}(,|\\Z)", re.S)  # 3, 4
_SCALAR_ONLY = re.compile(_SCALAR, re.S)
_ALL_INT_LIST = re.compile(f"\\[{_W}{_INT}(?:{_W},{_W}{_INT})*{_W},?{_W}\\]")
_DECIMAL = f"(?:{_SPECIAL}|{_FLOAT}|{_INT})(?![xX0-9])"  # no HEX: a hex literal is a bit pattern (Bits)
_ALL_NUMBER_LIST = re.compile(f"\\[{_W}{_DECIMAL}(?:{_W},{_W}{_DECIMAL})*{_W},?{_W}\\]")
_INT_RE = re.compile(_INT)
# A value entry in its plain form: type name (= raw? {numbers})? followed by ',' or the closing bracket
# (or `= base64 "`: the block itself is found with str.find, a regular expression would walk it character by character)
_ENTRY_RE = re.compile(f"{_W}({_DTYPE}(?:{_W}\\[(?:[^\\[\\]\"<>{{}}()=#/:]++|{_STRING})*+\\])?){_W}({_NAME}){_W}"
                       f"(?:={_W}(?:(raw{_W})?\\{{([^{{}}\"()#/]*)\\}}{_W}|(base64){_W}(?=\"))|)([,>)])?", re.S)
# An ``@metadata_props`` block of plain ``"key": "value"`` pairs (most of a dynamo export's text), read in one step
_PAIR = f"{_STRING}{_W}:{_W}{_STRING}"
_META_RE = re.compile(f"@metadata_props{_W}\\[{_W}({_PAIR}(?:{_W},{_W}{_PAIR})*+)(?:{_W},)?{_W}\\]", re.S)
# `<value = int64[1] = raw {0}>`: a Constant's only attribute, a small raw tensor (hundreds in exported models),
# maybe named (`float[16] "bn.w" = raw {...}`)
_RAW_TENSOR_ATTR_RE = re.compile(f"<{_W}({_IDENT}){_W}={_W}(int64|int32|float|double)(?:{_W}\\[([0-9 \t\f\r\n,]*)\\])?"
                                 f"(?:{_W}({_NAME}))?(?:{_W}=)?{_W}raw{_W}\\{{([^{{}}\"()#/]*)\\}}{_W}>", re.S)
_META_HEAD_RE = re.compile(f"@metadata_props{_W}\\[{_W}")
_COMPOUND = {"seq": "seq_type", "optional": "optional_type", "map": "map_type", "sparse_tensor": "sparse_type",
             "type": "empty_type"}
# A whole {...} body of FLOAT (or INT) tokens: Lark lexes each piece as that one terminal
_ALL_FLOATS = re.compile(f"{_W}{_FLOAT}{_W}(?:,{_W}{_FLOAT}{_W})*,?{_W}")
_ALL_INTS = re.compile(f"{_W}{_INT}{_W}(?:,{_W}{_INT}{_W})*,?{_W}")
_F32_MAX = 3.4028234663852886e38
_INF = float("inf")

# Words that are keywords in some parser state: where one could stand for a name, the scanner gives up.
_KEYWORDS = frozenset(dtypes.NAMES) | {"seq", "map", "optional", "sparse_tensor", "opaque", "tensor", "type",
                                       "raw", "base64", "hex", "elided", "sparse", "true", "false",
                                       "training_info", "inf", "nan", "infinity"}


# element types whose plain literals the scanner stores itself (fastvalues.small_tensor: the typed field build_tensor
# fills with the same numbers: float_data, double_data, int64_data, int32_data for the narrow integers)
_SMALL_TENSOR_TYPES = frozenset(("float", "double", "int64", "int32", "int16", "uint16", "int8", "uint8"))


def _tensor_info(tp: TypeProto, any_dtype: bool = False):
    """(DType, dims, count) when a tensor of type ``tp`` may take a shortcut (dense, numeric dims), else ()."""
    if not tp.HasField("tensor_type"):
        return ()
    tt = tp.tensor_type
    dt = dtypes.BY_ENUM.get(tt.elem_type)
    if dt is None or not (any_dtype or dt.name in _SMALL_TENSOR_TYPES) or tp.denotation or not tt.HasField("shape"):
        return ()
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.denotation or d.dim_value < 0:
            return ()
        dims.append(d.dim_value)
    count = 1
    for d in dims:
        count *= d
    return dt, dims, count


class Fallback(Exception):
    """The fast path does not handle this text (or the text has an error): parse it with Lark."""


class FailedAt(Fallback):
    """The fast path stopped at a statement of the text's outermost level (a node statement of the main graph or
    of a function, an initializer entry, a model item, the end) that the accelerated reading, then the Lark
    grammar on that statement alone, could not read: most likely the text's first error is there.

    ``pos`` is where the statement starts; ``skips`` are (begin, end) spans before it that hold only complete
    statements or entries of a list of which the first one is kept, so the tokens of the text without them
    bring the LALR automaton to the state it has at ``pos`` (:func:`onnxtext.syntax.statement.locate_error`).
    """

    def __init__(self, pos: int, skips: list):
        super().__init__(pos)
        self.pos, self.skips = pos, skips


_B = _b.Builder()


def _quoted(tok: str) -> str:
    """The proto string of a quoted name token (the builder's quoted_name rule)."""
    if "\\" not in tok:
        return tok[1:-1]
    return _b._text(_b.unescape(tok), "a name")


def _name(tok: str) -> str:
    return _quoted(tok) if tok[0] == '"' else tok


def _ids(text: str) -> list:
    """An id_list's names: Builder.id_list applied to the items (None for a missing item)."""
    if '"' not in text:  # plain names (the common case, fast): no quotes, so no escapes and no quoted commas
        if "," not in text:
            return [text] if text else []
        items = [x.strip(" \t\f\r\n") or None for x in text.split(",")]
        return items if None not in items else _B.id_list(items)
    if "\\" not in text:
        if text[0] == '"' and text[-1] == '"':
            parts = text.split('"')  # no escapes: the quotes are the names' bounds
            if len(parts) == 3:
                return [parts[1]]  # one quoted name (a comma in it is part of it)
            names = parts[1::2]
            if text == '"' + '", "'.join(names) + '"':
                return names  # quoted names only, separated as the printer does
            for sep in parts[2:-1:2]:
                if sep.strip(WS_CHARS) != ",":
                    break  # a plain name or an empty item between them
            else:
                return names  # quoted names only, over several lines
        items = []  # split on commas, unless a piece shows a comma inside a quoted name
        for x in text.split(","):
            x = x.strip(" \t\f\r\n")
            if not x:
                items.append(None)
            elif x[0] == '"':
                if x.find('"', 1) != len(x) - 1:
                    break
                items.append(x[1:-1])
            elif '"' in x:
                break
            else:
                items.append(x)
        else:
            return items if None not in items else _B.id_list(items)
    items, cur = [], None
    for m in _ID_TOKEN.finditer(text):
        tok = m.group()
        if tok == ",":
            items.append(cur)
            cur = None
        elif tok[0] not in " \t\f\r\n":
            cur = _quoted(tok) if tok[0] == '"' else tok
    items.append(cur)
    return _B.id_list(items)


def _base64(tok: str):
    """The builder's base64_data for a STRING token: ``decode_base64``'s bytes, with fewer copies of the block.

    The builder strips a wrapped block's whitespace with ``split`` and ``join`` and checks and decodes the rest:
    five copies of the block at once (the biggest weight's block is 11 MB in resnet50's text). Here one pass of
    ``bytes.translate`` removes the same whitespace (``bytes.split``'s) and the quotes, and binascii's strict
    decoder takes the rest, as the builder's one-line case does; anything it refuses goes to the builder."""
    if _STRICT_BASE64 and tok.isascii() and "\\" not in tok:
        data = tok.encode("ascii").translate(None, b' \t\n\r\x0b\x0c"')  # the quotes hold no quote: no escapes
        try:
            return _b.TensorData("bytes", binascii.a2b_base64(data, strict_mode=True))
        except binascii.Error:
            pass  # the builder decides (and reports the error)
    return decode_base64(tok)


def _number(tok: str):
    m = _NUMBER_RE.fullmatch(tok)
    if m is None:
        raise Fallback
    kind = m.lastgroup
    if kind == "i":
        return _b.int_literal(tok)
    if kind == "h":
        return _b.Bits(int(tok, 16))
    return float(tok)


def _scalar(tok: str):
    """An attribute value token -> the builder's value (number, bytes or Ref)."""
    c = tok[0]
    if c == '"':
        return _b.unescape(tok)
    if c == "@":
        return _b.Ref(tok[1:])
    return _number(tok)


_TYPE_NAMES = frozenset(dtypes.NAMES)


def _type_name_attr(name: str, value: str, domain, op_type: str) -> AttributeProto:
    """``name = float``: what Builder.attr and Builder.node make of a bare element type name. An attribute the
    operator's schema documents as an element type gets the INT enum, any other a TYPE_PROTO (a scalar tensor
    type, as ``float`` means in a signature)."""
    elem = dtypes.BY_NAME[value].enum
    if name in element_type_attributes(domain or "", op_type):
        return AttributeProto(name=name, type=AttributeProto.INT, i=elem)
    tp = TypeProto()
    tp.tensor_type.elem_type = elem
    tp.tensor_type.shape.SetInParent()  # no brackets: a scalar (rank 0), as Builder.tensor_type makes it
    return AttributeProto(name=name, type=AttributeProto.TYPE_PROTO, tp=tp)


_LIST_HEAD_RE = re.compile(f"{_W}({_NAME}){_W}={_W}\\[", re.S)
_LIST_TAIL_RE = re.compile(f"{_W}(?:,|\\Z)")


def _list_attr(text: str, head):
    """(AttributeProto, end) of the list attribute whose ``name = [`` is ``head``, when it holds only decimal
    numbers or only plain strings, exactly as Builder.attr makes it; else None (the general reading decides).
    A number list is checked by one regular expression, a string list by splitting it at its quotes."""
    start = head.end() - 1
    j = text.find("]", start)
    tail = _LIST_TAIL_RE.match(text, j + 1) if j > 0 else None
    if tail is None:
        return None
    value = text[start:j + 1]
    if '"' not in value:
        if not _ALL_NUMBER_LIST.fullmatch(value):
            return None
        # ints when every item is an INT token, else floats (an INT among FLOATs is its value as a float)
        body = value[1:-1].rstrip(WS_CHARS)
        toks = (body[:-1] if body.endswith(",") else body).split(",")  # int()/float() skip the blanks
        if "." in value or "e" in value or "E" in value or "n" in value or "N" in value:  # FLOAT or SPECIAL
            a = AttributeProto(name=_name(head.group(1)), type=AttributeProto.FLOATS)
            a.floats.extend(map(float, toks))
        else:
            a = AttributeProto(name=_name(head.group(1)), type=AttributeProto.INTS)
            a.ints.extend(map(int, toks))
        return a, tail.end()
    if "\\" in value:
        return None
    parts = value[1:-1].split('"')  # no escapes: the quotes are the strings' bounds
    if len(parts) < 3 or not len(parts) & 1 or parts[0].strip(WS_CHARS) or parts[-1].strip(WS_CHARS) not in ("", ","):
        return None
    for sep in parts[2:-1:2]:
        if sep.strip(WS_CHARS) != ",":
            return None
    try:
        strings = [c.encode("utf-8") for c in parts[1::2]]
    except UnicodeEncodeError:  # a lone surrogate: the builder's error
        return None
    a = AttributeProto(name=_name(head.group(1)), type=AttributeProto.STRINGS)
    a.strings.extend(strings)
    return a, tail.end()


def _attrs(text: str, domain, op_type: str) -> list:
    """The AttributeProtos of a simple ``<...>`` list (numbers, strings, @refs, flat lists of them, and element
    type names such as ``to = float``) of a node of operator ``domain.op_type``."""
    out, pos, n = [], 0, len(text)
    while pos < n:
        h = _LIST_HEAD_RE.match(text, pos)
        if h is not None:  # `name = [...]`: long lists (tree ensembles) without a regular expression over them
            listed = _list_attr(text, h)
            if listed is not None:
                out.append(listed[0])
                pos = listed[1]
                continue
        m = _ATTR_RE.match(text, pos)
        if m is None:
            raise Fallback
        name, declared, value = m.group(1), m.group(2), m.group(3)
        if declared is None and value in _TYPE_NAMES:
            out.append(_type_name_attr(_name(name), value, domain, op_type))
            pos = m.end()
            if m.group(4) == "" and pos < n:
                raise Fallback
            continue
        if value[0] == "[" and declared is None and _ALL_NUMBER_LIST.fullmatch(value):
            # a plain list of decimal numbers (tree ensembles hold tens of thousands): what Builder.attr makes,
            # ints when every item is an INT, else floats (an INT among FLOATs is its value as a float)
            body = value[1:-1].rstrip(" \t\f\r\n")
            toks = (body[:-1] if body.endswith(",") else body).split(",")  # int()/float() skip the blanks
            if _ALL_INT_LIST.fullmatch(value):
                a = AttributeProto(name=_name(name), type=AttributeProto.INTS)
                a.ints.extend(map(int, toks))
            else:
                a = AttributeProto(name=_name(name), type=AttributeProto.FLOATS)
                a.floats.extend(map(float, toks))
            out.append(a)
            pos = m.end()
            if m.group(4) == "" and pos < n:
                raise Fallback
            continue
        if value[0] == "[":  # validated by _ATTR_RE: its scalars are the tokens findall meets
            v = ("list", [_scalar(tok) for tok in _SCALAR_ONLY.findall(value)])
        else:
            number = _NUMBER_RE.fullmatch(value) if declared is None else None
            if number is not None and number.lastgroup != "h":  # INT, FLOAT, SPECIAL: what Builder.attr sets
                kind = number.lastgroup
                out.append(AttributeProto(name=_name(name), type=AttributeProto.INT, i=int(value)) if kind == "i" else
                           AttributeProto(name=_name(name), type=AttributeProto.FLOAT, f=float(value)))
                pos = m.end()
                if m.group(4) == "" and pos < n:
                    raise Fallback
                continue
            v = _scalar(value)
        out.append(_B.attr([None, _name(name), None if declared is None else _B.attr_type([declared]), v]))
        pos = m.end()
        if m.group(4) == "" and pos < n:
            raise Fallback
    if not out:
        raise Fallback  # '<>' is a syntax error
    return out


