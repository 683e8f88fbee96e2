"""Literal atoms of the printed text: names, quoted strings, operator names and element values.

Everything here formats one token (or a list of element tokens) and knows nothing of message layout;
:mod:`onnxtext.printer` composes these into statements and blocks. Floats print as the shortest decimal
that reads back to the same bits in the element's own type (NaN payloads as hex bit patterns), through a
per-type cache because big graphs repeat the same few constants.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np

from .. import dtypes
from ..errors import OnnxTextError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Words the grammar treats as keywords somewhere: names spelled like them are quoted.
KEYWORDS = frozenset(dtypes.NAMES) | {
    "seq", "map", "optional", "sparse_tensor", "opaque", "tensor", "type", "raw", "base64", "hex", "elided", "unchecked",
    "sparse", "true", "false", "training_info", "inf", "infinity", "nan"}
#: Words that start tensor data: right after a type (``float[2] raw`` could be data) only these need quotes,
#: so a typed value's name is quoted only for them (tests/test_fmt.py checks every word in every position).
DATA_WORDS = frozenset({"raw", "base64", "hex", "elided", "sparse", "unchecked"})
#: ...and every spelling of the special floats (the lexer reads them in any case).
_QUOTED_WORDS = KEYWORDS | {"".join(chars) for word in ("inf", "nan", "infinity")
                            for chars in itertools.product(*[(c, c.upper()) for c in word])}
_PLAIN_BYTES = re.compile(rb'[^"\\\x00-\x1f\x7f-\xff]*\Z')


def quote(data) -> str:
    """A string literal for text or bytes (escapes quotes, backslashes, controls and invalid UTF-8)."""
    if isinstance(data, str):
        # printable text (no controls, no surrogates) needs no escapes but for quotes and backslashes
        if data.isprintable() and '"' not in data and "\\" not in data:
            return '"' + data + '"'
        data = data.encode("utf-8", "surrogatepass")
    elif _PLAIN_BYTES.match(data):
        return '"' + data.decode("ascii") + '"'
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    out = ['"']
    if text is not None:
        for ch in text:
            o = ord(ch)
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ch == "\r":
                out.append("\\r")
            elif o < 0x20 or o == 0x7F or 0xD800 <= o <= 0xDFFF:
                out.append(f"\\x{o:02x}" if o < 0x80 else f"\\u{o:04x}")
            else:
                out.append(ch)
    else:
        for b in data:
            if b == 0x22:
                out.append('\\"')
            elif b == 0x5C:
                out.append("\\\\")
            elif b == 0x0A:
                out.append("\\n")
            elif 0x20 <= b < 0x7F:
                out.append(chr(b))
            else:
                out.append(f"\\x{b:02x}")
    out.append('"')
    return "".join(out)


def name(n: str) -> str:
    """A name as an identifier when it is one (and not a keyword), else quoted."""
    # str methods are C calls, cheaper than a regex: an ASCII identifier is [A-Za-z_][A-Za-z0-9_]*
    if isinstance(n, bytes):  # a .onnx file's string field that is not valid UTF-8: show its bytes (\xHH)
        return quote(n)
    return n if n.isidentifier() and n.isascii() and n not in _QUOTED_WORDS else quote(n)


def typed_name(n: str) -> str:
    """A name right after a type (typed inputs, outputs, value_info, initializers): ``float[N] seq``."""
    if isinstance(n, bytes):
        return quote(n)
    return n if n.isidentifier() and n.isascii() and n not in DATA_WORDS else quote(n)


#: Words that start a type: where a type could stand instead of a name (an untyped value, a function's
#: input or output) only these need quotes.
TYPE_WORDS = frozenset(dtypes.NAMES) | {"seq", "map", "optional", "sparse_tensor", "opaque", "tensor", "type"}


def untyped_name(n: str) -> str:
    """A name where a type could stand instead (``<seq_len>``, a function's ``(raw, nan)``)."""
    if isinstance(n, bytes):
        return quote(n)
    return n if n.isidentifier() and n.isascii() and n not in TYPE_WORDS else quote(n)


def bare_name(n: str) -> str:
    """A name where only a name can stand (a shape's dim_param): quoted only when it is no identifier."""
    return quote(n) if isinstance(n, bytes) else op_part(n)


def op_part(n: str) -> str:
    """An operator or domain part: after '=' only names are possible, so keywords need no quotes."""
    if isinstance(n, bytes):  # a .onnx file's string field that is not valid UTF-8: show its bytes (\xHH)
        return quote(n)
    return n if _IDENT.match(n) else quote(n)


def format_floats(arr: np.ndarray, dt: dtypes.DType) -> list[str]:
    """Shortest decimal text of each element that reads back to the same bits in its own type.

    Elements whose bits a decimal cannot reproduce (NaN payloads) print as hex bit patterns.
    """
    flat = np.ascontiguousarray(arr).ravel()
    if flat.size <= _SMALL:
        texts = float_texts(flat.tolist(), dt)
        if texts is not None:
            return texts
    return _format_floats_exact(flat, dt)


#: Up to this many elements, floats are formatted one by one through the cache (no numpy round trip).
_SMALL = 64
_FLOAT_TEXTS: dict[int, dict] = {}


def float_texts(values, dt: dtypes.DType) -> list[str] | None:
    """Texts of exact ``dt`` element values given as Python floats, through a per-type cache.

    A non-NaN element has one encoding per value (zeros keyed by their sign), so its text depends on the
    value alone and each distinct value goes through :func:`_format_floats_exact` once. NaN payloads need
    the bits, which Python floats do not keep: None then, and the caller formats the array.
    """
    cache = _FLOAT_TEXTS.get(dt.enum)
    if cache is None or len(cache) > 65536:
        cache = _FLOAT_TEXTS[dt.enum] = {}
    out = []
    for v in values:
        s = cache.get(v)
        if s is None:
            if v != v:
                return None
            key = v if v else ("-0" if math.copysign(1.0, v) < 0 else "+0")
            s = cache.get(key)
            if s is None:
                s = cache[key] = _format_floats_exact(np.array([v], dt.np), dt)[0]
        out.append(s)
    return out


def _format_floats_exact(flat: np.ndarray, dt: dtypes.DType) -> list[str]:
    if flat.size == 0:
        return []
    if dt.np == np.float64:
        texts = [repr(x) for x in flat.tolist()]
    elif dt.np in (np.dtype(np.float32), np.dtype(np.float16)):
        texts = [str(x) for x in flat]  # numpy prints the shortest repr in the element's own type
    else:
        with np.errstate(invalid="ignore"):  # NaN bit patterns widen to NaN: expected, not a warning
            wide = flat.astype(np.float64)
        texts = [_shortest_narrow(v, dt) for v in wide.tolist()]
    texts = [_float_token(t) for t in texts]
    # read the texts back as the parser does (float() keeps the sign of -nan) and compare bits
    back = np.array([float(t) for t in texts], dtype=np.float64)
    want_bits = _bits(flat, dt)
    got_bits = _bits(back.astype(dt.np), dt)
    bad = np.nonzero(want_bits != got_bits)[0]
    for i in bad.tolist():
        texts[i] = f"0x{int(want_bits[i]):0{max(1, -(-dt.bits // 4))}x}"
    return texts


def _bits(arr, dt):
    if dt.bits in (8, 16, 32, 64):
        return np.ascontiguousarray(arr, dt.np).view(dt.uint_view)
    return np.ascontiguousarray(arr, dt.np).view(np.uint8) & ((1 << dt.bits) - 1)


_SHORT: dict = {}


def _shortest_narrow(v: float, dt) -> str:
    key = (dt.enum, v if v == v else "nan", np.signbit(v))
    s = _SHORT.get(key)
    if s is None:
        if v != v:
            s = "-nan" if np.signbit(v) else "nan"
        elif v in (float("inf"), float("-inf")):
            s = "inf" if v > 0 else "-inf"
        else:
            target = np.array(v, np.float64).astype(dt.np)
            s = repr(v)
            for p in range(1, 18):
                cand = f"{v:.{p}g}"
                if np.array([float(cand)], np.float64).astype(dt.np).tobytes() == target.reshape(1).tobytes():
                    s = cand
                    break
        _SHORT[key] = s
    return s


def _float_token(t: str) -> str:
    """Make sure a float's text reads as a float (has '.', an exponent, or is inf/nan)."""
    if t in ("inf", "-inf", "nan", "-nan"):
        return t
    if "e" in t or "E" in t:
        mant, _, exp = t.partition("e")
        return mant + "e" + exp.lstrip("+")
    if "." not in t:
        return t + ".0"
    return t


def format_values(arr: np.ndarray, dt: dtypes.DType) -> list[str]:
    """Element literals of a tensor in the syntax's literal rules."""
    flat = np.asarray(arr).ravel()
    k = dt.kind
    if k == "string":
        return [quote(v if isinstance(v, bytes) else str(v).encode("utf-8")) for v in flat]
    if k == "bool":
        return ["true" if v else "false" for v in flat.tolist()]
    if k == "int":
        return [str(v) for v in flat.astype(np.int64 if dt.name != "uint64" else np.uint64).tolist()]
    if k == "complex":
        part = dtypes.BY_NAME["float" if dt.name == "complex64" else "double"]
        re_ = format_floats(flat.real.copy(), part)
        im = format_floats(flat.imag.copy(), part)
        return [f"({a}, {b})" for a, b in zip(re_, im)]
    return format_floats(flat, dt)


def _onnx_values(arr, dt) -> list[str]:
    """Literals as onnx's parser reads them: bit patterns for 16/8-bit floats, flat complex, 0/1 bools."""
    flat = np.asarray(arr).ravel()
    if dt.bitpattern and dt.bits in (8, 16):
        return [str(v) for v in flat.view(dt.uint_view).tolist()]
    if dt.kind == "bool":
        return ["1" if v else "0" for v in flat.tolist()]
    if dt.kind == "complex":
        part = dtypes.BY_NAME["float" if dt.name == "complex64" else "double"]
        pairs = np.empty(flat.size * 2, part.np)
        pairs[0::2], pairs[1::2] = flat.real, flat.imag
        return format_floats(pairs, part)
    if dt.packed or dt.bits == 6:
        raise OnnxTextError(f"onnx's parser cannot read {dt.name} tensors")
    return format_values(flat, dt)


def _dtype_name(enum: int) -> str:
    try:
        return dtypes.from_enum(enum).name
    except KeyError:
        raise OnnxTextError(f"unknown element type {enum}") from None


def _dotted(s: str) -> str:
    if isinstance(s, bytes):
        return quote(s)
    parts = s.split(".")
    if all(name(p) == p for p in parts):
        return s
    return quote(s)


def _op_name(domain: str, op: str) -> str:
    if not domain:
        return op_part(op)
    parts = [] if isinstance(domain, bytes) else domain.split(".")
    dom = domain if parts and all(_IDENT.match(p) for p in parts) else quote(domain)
    return dom + "." + op_part(op)
