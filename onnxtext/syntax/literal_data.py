"""Literals and tensor data: the values of tensor constants and initializers, turned into protos.

Used by the parser's :mod:`onnxtext.builder` (the Lark transformer) and the fast path
(:mod:`onnxtext.fastparse`); the TensorProto <-> numpy encoding itself is :mod:`onnxtext.tensors`.

* string literals: :func:`unescape` (STRING token -> bytes) and :func:`_text` (bytes -> a proto string);
* hexadecimal literals are :class:`Bits` (the bit pattern of an element, not its value);
* the right-hand side of a tensor constant is a :class:`TensorData` (``{...}``, ``raw {...}``, a base64 or
  hex block, external data, an elided marker or sparse data), made into a proto by :func:`build_tensor`
  or :func:`build_sparse` once the element type is known.

Errors are :class:`onnxtext.errors.ParseError` at the position of the ``where`` object given (a token or
a :class:`onnxtext.builder.Name`), when it has one.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys

import numpy as np
from onnx import SparseTensorProto, TensorProto, TypeProto

from .. import dtypes, tensors
from ..errors import ParseError
from .raw_strings import set_text, text_or_raw

# binascii's strict mode (3.11+) accepts exactly what b64decode(validate=True) accepts
_STRICT_BASE64 = sys.version_info >= (3, 11)


class Bits(int):
    """A hexadecimal literal: the bit pattern of an element, not its value."""


class NegativeZero(int):
    """The integer literal ``-0``: 0 as an integer, -0.0 as a float (onnx's parser reads ``float {-0}``,
    which onnx's printer writes for -0.0, as -0.0)."""

    def __float__(self) -> float:
        return -0.0


NEGATIVE_ZERO = NegativeZero(0)


def int_literal(tok: str) -> int:
    """The value of an INT token (``-?[0-9]+``), keeping the sign of ``-0`` for float tensors."""
    v = int(tok)
    return NEGATIVE_ZERO if not v and tok[0] == "-" else v


class TensorData:
    """The right-hand side of a tensor constant, before the element type is applied."""

    __slots__ = ("kind", "values", "extra")

    def __init__(self, kind, values, extra=None):
        self.kind = kind
        self.values = values
        self.extra = extra


_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\", '"': b'"', "'": b"'"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


class EscapedBytes(bytes):
    """The bytes of a string literal written with escapes, which remember where the literal stands, so that an
    error found later (``"\\xff"`` as a name: not UTF-8 in a text field, :func:`_text`) points at it."""


def unescape(token: str) -> bytes:
    """The bytes of a STRING token (quotes removed, escapes decoded). A ParseError at the culprit when an
    escape names no character (``\\U00110000``) or the text holds a lone surrogate (``str`` from Python,
    not UTF-8)."""
    body = token[1:-1]
    if "\\" not in body:
        try:
            return body.encode("utf-8")
        except UnicodeEncodeError as e:
            raise _escape_error(token, 1 + e.start, 1, f"a lone surrogate U+{ord(body[e.start]):04X} in a string "
                                "is not a character (the text must be valid UTF-8)") from None
    out = []
    pos = 0
    for m in _ESCAPE_RE.finditer(body):
        out.append(body[pos:m.start()])
        e = m.group(1)
        if e[0] == "x" and len(e) == 3:
            out.append(bytes([int(e[1:], 16)]))
        elif e[0] in "uU" and len(e) > 1:
            code = int(e[1:], 16)
            if code > 0x10FFFF:
                raise _escape_error(token, 1 + m.start(), len(m.group(0)), f"escape \\{e} is out of range: "
                                    "Unicode ends at \\U0010FFFF", hint="write bytes as \\xHH escapes")
            out.append(chr(code).encode("utf-8", "surrogatepass"))
        else:
            out.append(_ESCAPES.get(e, e))
        pos = m.end()
    out.append(body[pos:])
    try:
        result = EscapedBytes(b"".join(p if type(p) is bytes else p.encode("utf-8") for p in out))
    except UnicodeEncodeError:
        m = _SURROGATE.search(body)
        raise _escape_error(token, 1 + m.start(), 1, f"a lone surrogate U+{ord(m.group()):04X} in a string is not "
                            "a character (the text must be valid UTF-8)") from None
    result.line, result.column = getattr(token, "line", None), getattr(token, "column", None)
    return result


def _escape_error(token, offset: int, width: int, message: str, hint: str | None = None) -> ParseError:
    """A ParseError at character ``offset`` of a STRING token (which may span lines), when it has a position."""
    line, column = _pos(token)
    if line is not None and column is not None:
        breaks = token.count("\n", 0, offset)
        line += breaks
        column = column + offset if not breaks else offset - token.rfind("\n", 0, offset)
    return ParseError(message, line=line, column=column, hint=hint,
                      end_column=None if column is None else column + width)


def _text(value, where=None) -> str:
    """Decode bytes to str for proto string fields; raise a ParseError when not UTF-8 (at ``where``, or at
    the string literal the bytes came from)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            at = where if _pos(where)[0] is not None else value
            raise _err(f"{where or 'this string'} must be valid UTF-8 (it is a text field)", at,
                       hint="\\xHH escapes give raw bytes; write a character as itself or as \\uHHHH") from None
    return str(value)


def _pos(obj):
    return getattr(obj, "line", None), getattr(obj, "column", None)


def _err(message, at=None, hint=None):
    line, col = _pos(at)
    return ParseError(message, line=line, column=col, hint=hint)



# ---------------------------------------------------------------------------------------------- byte blocks
def decode_base64(tok: str) -> TensorData:
    """``base64 "..."``: the block's bytes (whitespace inside the string is ignored)."""
    body = tok[1:-1]
    if "\\" not in body and body.isascii() and _STRICT_BASE64:
        try:  # the printer's one-line block: decoded in one call, without the copies below
            return TensorData("bytes", binascii.a2b_base64(body, strict_mode=True))
        except binascii.Error:
            pass  # line breaks or an error: the general way decides
    s = unescape(tok)
    try:
        return TensorData("bytes", base64.b64decode(b"".join(s.split()), validate=True))
    except (binascii.Error, ValueError):
        raise _err("invalid base64 block", tok) from None


def decode_hex(tok: str) -> TensorData:
    """``hex "..."``: the block's bytes (whitespace inside the string is ignored)."""
    s = unescape(tok)
    try:
        return TensorData("bytes", bytes.fromhex(b"".join(s.split()).decode("ascii")))
    except ValueError:
        raise _err("invalid hex block", tok) from None


# ---------------------------------------------------------------------------------------------- tensors
def literals_to_array(values, dt: dtypes.DType, where=None) -> np.ndarray:
    """Literal values of a tensor constant -> flat array of ``dt`` (bit-pattern rules applied)."""
    if dt.kind == "string":
        bad = [v for v in values if not isinstance(v, bytes)]
        if bad:
            raise _err(f"string tensor expects string literals, got {bad[0]!r}", where)
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    if dt.kind == "bool":
        out = []
        for v in values:
            if isinstance(v, bool):
                out.append(v)
            elif isinstance(v, int) and v in (0, 1):
                out.append(bool(v))
            else:
                raise _err(f"bool tensor expects true, false, 0 or 1, got {v!r}", where)
        return np.array(out, dtype=np.bool_)
    if dt.kind == "complex":
        if values and not any(isinstance(v, complex) for v in values):
            if len(values) % 2:
                raise _err("a complex tensor given as real numbers needs (real, imaginary) pairs", where)
            values = [complex(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        return np.array([complex(v) for v in values], dtype=dt.np)
    if dt.kind == "int":
        out = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(f"{dt.name} tensor expects integers, got {_show(v)}", where)
            out.append(int(v))
        try:
            if dt.packed:
                arr = np.array(out, dtype=np.int64)
                lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.name.startswith("int") else \
                    (0, (1 << dt.bits) - 1)
                if arr.size and (arr.min() < lo or arr.max() > hi):
                    raise OverflowError
                return arr.astype(dt.np)
            return np.array(out, dtype=dt.np)
        except OverflowError:
            raise _err(f"integer literal out of range for {dt.name}", where) from None
    # floating point: ints are values for float/double, bit patterns for the narrow types (onnx rule)
    if all(isinstance(v, float) for v in values):
        return np.array(values, dtype=np.float64).astype(dt.np)
    uint = np.dtype(f"uint{max(8, dt.bits if dt.bits in (8, 16, 32, 64) else 8)}")
    out = np.empty(len(values), dtype=dt.np)
    for i, v in enumerate(values):
        if isinstance(v, Bits) or (dt.bitpattern and isinstance(v, int) and not isinstance(v, bool)):
            limit = 1 << dt.bits
            if not 0 <= v < limit:
                raise _err(f"bit pattern {v:#x} does not fit a {dt.bits}-bit {dt.name}", where)
            if dt.bits in (8, 16, 32, 64):
                out[i] = np.array(v, dtype=uint).view(dt.np)
            else:
                out[i] = np.array(v, dtype=np.uint8).view(dt.np)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[i] = np.array(float(v), dtype=np.float64).astype(dt.np)
        else:
            raise _err(f"{dt.name} tensor expects numbers, got {_show(v)}", where)
    return out


def _show(v):
    if isinstance(v, bytes):
        return "a string"
    if isinstance(v, complex):
        return "a complex pair"
    return repr(v)


def _called(name) -> str:
    """How an error names a tensor: ``tensor w``, or ``a tensor`` for an unnamed constant (in an attribute)."""
    return f"tensor {name}" if name else "a tensor"


def build_tensor(type_proto: TypeProto, name, data: TensorData, where=None) -> TensorProto:
    """A TensorProto from a declared tensor type, a name and its data."""
    if not type_proto.HasField("tensor_type"):
        raise _err("a tensor constant needs a tensor type such as float[2,3]", where)
    tt = type_proto.tensor_type
    t = TensorProto()
    try:
        dt = dtypes.from_enum(tt.elem_type)
    except KeyError:
        raise _err("a tensor constant needs an element type", where) from None
    t.data_type = dt.enum
    if not tt.HasField("shape"):
        raise _err(f"{_called(name)} needs a shape with numeric dimensions (write {dt.name} for a scalar, "
                   f"{dt.name}[3] for a vector)", where)
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            raise _err(f"{_called(name)} needs numeric dimensions, not {d.dim_param or '?'}", where)
        t.dims.append(d.dim_value)
    if name is not None:
        set_text(t, "name", name)
    count = tensors.element_count(t)
    kind = data.kind
    if kind in ("typed", "raw"):
        arr = literals_to_array(data.values, dt, where)
        if arr.size != count:
            raise _err(f"{_called(name)} of shape {list(t.dims)} needs {count} element"
                       f"{'s' if count != 1 else ''}, the literal has {arr.size}", where)
        if kind == "typed" or dt.kind == "string":
            if kind == "raw":
                raise _err("string tensors cannot use raw encoding", where)
            tensors.set_typed(t, arr, dt)
        else:
            t.raw_data = tensors.raw_bytes(arr, dt)
    elif kind == "bytes":
        if dt.kind == "string":
            raise _err("string tensors cannot use a byte block", where)
        need = -(-count * dt.bits // 8)
        if len(data.values) != need:
            raise _err(f"{_called(name)} of shape {list(t.dims)} needs {need} bytes of {dt.name} data, "
                       f"the block has {len(data.values)}", where)
        t.raw_data = data.values
    elif kind == "external":
        t.data_location = TensorProto.EXTERNAL
        for k, v in data.values:
            e = t.external_data.add()
            set_text(e, "key", text_or_raw(k))
            set_text(e, "value", text_or_raw(v) if isinstance(v, (bytes, str)) else str(v))
    elif kind == "elided":
        what = f"tensor {str(name)!r}" if name else "an unnamed tensor"
        raise _err(f"{what} was elided for reading (printed with --elide); its values are not in the text",
                   where if name else data.extra, hint="print the model without --elide to get a parseable text")
    else:
        raise _err(f"unexpected {kind} data for a dense tensor", where)
    return t


def build_sparse(type_proto: TypeProto, name, data: TensorData, where=None) -> SparseTensorProto:
    if data.kind != "sparse":
        raise _err("a sparse tensor needs sparse(values, indices) data", where)
    s = SparseTensorProto()
    tt = type_proto.sparse_tensor_type if type_proto.HasField("sparse_tensor_type") else type_proto.tensor_type
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            raise _err("a sparse tensor needs numeric dimensions", where)
        s.dims.append(d.dim_value)
    s.values.CopyFrom(data.values)
    s.indices.CopyFrom(data.extra)
    if name and not s.values.name:
        set_text(s.values, "name", name)
    return s

