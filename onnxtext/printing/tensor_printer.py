"""Tensor constants as text: ``float[2] w = {...}``, ``raw {...}``, ``base64`` blocks, external references,
sparse tensors, elided summaries (one ``print_<message>`` each for TensorProto and SparseTensorProto).

:class:`TensorPrinter` is a base of :class:`onnxtext.printing.printer.Printer` (it uses its layout helpers and
name caches); the parser reads these forms with :func:`onnxtext.syntax.literal_data.build_tensor`.
"""

from __future__ import annotations

import binascii
import hashlib
import math
import operator
import warnings

import numpy as np
from onnx import SparseTensorProto, TensorProto

from .. import dtypes, tensors
from ..errors import OnnxTextError
from . import layout
from ..wireformat import has_unknown
from .atoms import (_dtype_name, _float_token, _onnx_values, _SMALL, float_texts, format_floats, format_values,
                    name, quote)
from .atoms import typed_name
from .records import annotation_fields, repeated_getter

_TENSOR_SKIP = ("doc_string", "name", "dims", "data_type", "raw_data", "external_data", "float_data", "int32_data",
                "string_data", "int64_data", "double_data", "uint64_data", "data_location")
#: Element types whose typed field holds the element values unchanged (no bit patterns, no narrowing).
_PLAIN_TYPED = frozenset({"float", "double", "int32", "int64", "uint64"})
#: Widths above which to_text does not defer base64 blocks (the placeholder is width + 3 characters).
_MAX_DEFER_WIDTH = 1 << 16
_TENSOR_SPEC = annotation_fields(TensorProto, _TENSOR_SKIP)
_TENSOR_EXTRA_REPEATED = repeated_getter(_TENSOR_SPEC)
# singular fields that make tensor_annotations print something (data_location: when it is not implied)
_TENSOR_PRESENCE = tuple(f for _, f, repeated in _TENSOR_SPEC[1] if not repeated) + ("data_location", "doc_string")


_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
_TYPED_GETTER = operator.attrgetter(*_TYPED_FIELDS)
_FLOAT_FIELDS = {"float_data": dtypes.BY_NAME["float"], "double_data": dtypes.BY_NAME["double"]}


def stored_as_written(t: TensorProto, dt, dims, raw: bytes | None) -> bool:
    """Whether the usual forms (``{...}``, ``raw {...}``, a block, external pairs) give back exactly the data
    fields of ``t`` (``dt``: its element type or None, ``raw``: its raw_data or None): one field of the type,
    holding what the dims ask for. Otherwise the printer writes ``unchecked {...}``."""
    if dt is None or any(d < 0 for d in dims):
        return False
    counts = tuple(map(len, _TYPED_GETTER(t)))
    if len(t.external_data) or t.data_location == TensorProto.EXTERNAL:
        return raw is None and not any(counts) and t.HasField("data_location") and all(
            len(e.ListFields()) == 2 and not has_unknown(e) for e in t.external_data)
    count = math.prod(dims)
    if raw is not None:
        return not any(counts) and dt.kind != "string" and len(raw) == -(-count * dt.bits // 8)
    field = _TYPED_FIELDS.index(dt.field)
    if any(n for i, n in enumerate(counts) if i != field):
        return False
    if dt.kind == "string" or dt.name in _PLAIN_TYPED:
        return counts[field] == count
    values = getattr(t, dt.field)  # narrow types: stored codes must be the ones their values re-encode to
    try:
        arr = tensors.decode_typed(t, dt, count)
    except ValueError:
        return False
    if arr.size != count:
        return False
    again = TensorProto()
    tensors.set_typed(again, arr, dt)
    return np.array_equal(np.asarray(getattr(again, dt.field)), np.asarray(values))


def _sparse_head(s: SparseTensorProto) -> str:
    """``float[5]`` of ``sparse_tensor(float[5])``: the values' element type (the parser takes the values' own
    type from the values, so an undefined one, which the values print as ``tensor``, shows as float) and dims."""
    dt = dtypes.BY_ENUM.get(s.values.data_type)
    return (dt.name if dt is not None else "float") + "[" + ", ".join(str(d) for d in s.dims) + "]"


def _literals_keep(raw: bytes, dt, count: int) -> bool:
    """Whether decimal literals give back ``raw`` byte for byte: bools stored as 0/1, sub-byte types with zero
    padding bits (other bytes print as a block)."""
    if dt.name == "bool":
        return not raw.translate(None, b"\x00\x01")
    if dt.packed and count * dt.bits % 8:
        return raw[-1] >> (count * dt.bits % 8) == 0
    return True


class TensorPrinter:
    """``print_tensor`` and friends (a base of :class:`onnxtext.printing.printer.Printer`)."""

    def print_initializer(self, t: TensorProto, level: int) -> str:
        return self._tensor_constant(t, level, True)

    def print_sparse_initializer(self, s: SparseTensorProto, level: int) -> str:
        ann = self._annotations(s, level, skip=("values", "indices", "dims"))
        return ("\n" + self.ind * level).join(ann + [f"sparse_tensor({_sparse_head(s)}) {name(s.values.name)} = " +
                                self.print_sparse_data(s, level)])

    def print_sparse_data(self, s: SparseTensorProto, level: int) -> str:
        return ("sparse(" + self.print_tensor(s.values, level + 1) + ", " + self.print_tensor(s.indices, level + 1)
                + ")")

    # ------------------------------------------------------------------ tensors
    def tensor_annotations(self, t: TensorProto, level: int, unchecked: bool = False) -> list[str]:
        out = self._annotations(t, level, spec=_TENSOR_SPEC)
        # external data sets data_location (the builder does too); an explicit DEFAULT is printed; unchecked
        # data sets nothing
        if t.HasField("data_location") and (unchecked or not (len(t.external_data)
                                                             and t.data_location == TensorProto.EXTERNAL)):
            out.append(f"@data_location {TensorProto.DataLocation.Name(t.data_location)}")
        return out

    def print_tensor_type(self, t: TensorProto) -> str:
        dims = t.dims
        return _dtype_name(t.data_type) + ("[" + ", ".join(map(str, dims)) + "]" if len(dims) else "")

    def print_tensor(self, t: TensorProto, level: int = 0, lead: int | None = None) -> str:
        """A tensor constant: ``float[2] name = {...}`` (name omitted when empty); ``lead``: its column."""
        return self._tensor_constant(t, level, False, lead)

    def _tensor_constant(self, t: TensorProto, level: int, initializer: bool, lead: int | None = None) -> str:
        # hot on graphs with many small constants: each proto field is read once
        enum, dims = t.data_type, t.dims
        dt = dtypes.BY_ENUM.get(enum)
        raw = t.raw_data if t.HasField("raw_data") else None  # one access: each one copies the bytes
        unchecked = not self.onnx_style and not stored_as_written(t, dt, dims, raw)
        ann = None
        if any(map(len, _TENSOR_EXTRA_REPEATED(t))) or any(map(t.HasField, _TENSOR_PRESENCE)) or \
                has_unknown(t) or unchecked or (initializer and not t.HasField("name")):
            ann = self.tensor_annotations(t, level, unchecked)
            if initializer and not t.HasField("name"):
                ann.append("@name unset")  # an initializer always prints a name
        if dt is None and self.onnx_style:
            raise OnnxTextError(f"unknown element type {enum}")
        typ = dt.name if dt is not None else "tensor"  # no element type: `tensor` (unchecked data)
        head = typ + "[" + ", ".join(map(str, dims)) + "]" if len(dims) else typ
        nm = t.name
        if initializer or nm or (t.HasField("name") and not self.onnx_style):  # a set "" name prints as ""
            head += " " + typed_name(nm)
        if ann or lead is None:
            lead = len(self.ind) * level
        if unchecked:
            data = self.print_unchecked(t, level, dt, raw, lead + len(head) + 3)
        else:
            data = self.print_tensor_data(t, level, dt, math.prod(dims), lead + len(head) + 3, raw)
        text = head + " = " + data
        return ("\n" + self.ind * level).join(ann + [text]) if ann else text

    def print_unchecked(self, t: TensorProto, level: int, dt, raw: bytes | None, lead: int) -> str:
        """``unchecked {float_data: [...], raw_data: base64 "..."}``: the data fields as they are stored, for a
        tensor whose data the usual syntax cannot carry (it does not fit the element type and shape, sits in
        several fields, or has no element type). The parser sets them unchecked; ``check`` reports them."""
        items = []
        if dt is None and t.HasField("data_type"):
            items.append(f"data_type: {t.data_type}")
        for field, values in zip(_TYPED_FIELDS, _TYPED_GETTER(t)):
            if not len(values):
                continue
            if field in ("float_data", "double_data"):
                texts = format_floats(np.array(values, _FLOAT_FIELDS[field].np), _FLOAT_FIELDS[field])
            elif field == "string_data":
                texts = [quote(v) for v in values]
            else:
                texts = [str(v) for v in values]
            items.append(f"{field}: " + self._wrapped_values("[", texts, "]", level + 1, lead + len(field) + 13))
        if raw is not None:
            items.append("raw_data: " + self.print_block(raw, t, level + 1, lead + 21))
        if len(t.external_data):
            items.append("external_data: " + self.print_pairs(t.external_data, level + 1))
        return "unchecked " + self._list("{", items, "}", level, lead=lead + 10)

    def print_tensor_data(self, t: TensorProto, level: int, dt=None, count: int | None = None,
                          lead: int | None = None, raw: bytes | None = None) -> str:
        """The data part of a tensor constant: ``{...}`` (typed fields), ``raw {...}`` or a ``base64`` block
        (raw_data; the block above ``max_inline`` elements or when the bytes do not fit the shape).
        ``dt`` and ``count``: the element type and count when the caller has them; ``lead``: the column
        where the data starts. Long literals break into lines of a fixed number of elements (whole rows of
        the last dimension when one fits), blocks into lines of a fixed number of bytes. ``raw``: the
        raw_data bytes when the caller has read them."""
        if len(t.external_data) or t.data_location == TensorProto.EXTERNAL:
            return self.print_pairs(t.external_data, level, lead)
        if dt is None:
            dt = dtypes.BY_ENUM.get(t.data_type)
            if dt is None:
                raise OnnxTextError(f"tensor {t.name!r} has no element type (data_type {t.data_type})")
        if count is None:
            count = tensors.element_count(t)
        if self.elide and count > self.elide_threshold:
            return self.print_elided(t, dt)
        dims = t.dims
        row = dims[-1] if len(dims) > 1 else 0
        if self.onnx_style and dt.kind != "string":
            return self._wrapped_values("{", _onnx_values(tensors.to_array(t), dt), "}", level, lead, row)
        if dt.kind != "string" and (raw is not None or t.HasField("raw_data")):
            raw = t.raw_data if raw is None else raw  # one access: each one copies the bytes
            if len(raw) != -(-count * dt.bits // 8) or (self.max_inline is not None and count > self.max_inline) \
                    or not _literals_keep(raw, dt, count):
                return self.print_block(raw, t, level, lead)
            arr = tensors.to_array(t)
            return self._wrapped_values("raw {", format_values(arr, dt), "}", level, lead, row)
        if dt.name in _PLAIN_TYPED:
            # the typed field holds the elements themselves: format them without a numpy round trip
            values = getattr(t, dt.field)
            if len(values) <= _SMALL:
                texts = float_texts(values, dt) if dt.kind == "float" else [str(v) for v in values]
                if texts is not None:
                    return self._wrapped_values("{", texts, "}", level, lead, row)
        arr = tensors.decode_typed(t, dt, count)
        return self._wrapped_values("{", format_values(arr, dt), "}", level, lead, row)

    def print_block(self, raw: bytes, source: TensorProto | None = None, level: int = 0,
                    lead: int | None = None) -> str:
        """``base64 "..."``: the raw little-endian bytes (one C call each way, no per-element work), on
        the line when it fits, else as lines of a fixed number of bytes at the next level's indentation.
        ``source``: the tensor holding ``raw``, which to_text may re-read when it assembles the text."""
        lead = len(self.ind) * level if lead is None else lead
        n_encoded = 4 * -(-len(raw) // 3)
        if lead + 9 + n_encoded <= self.width:
            return 'base64 "' + binascii.b2a_base64(raw, newline=False).decode("ascii") + '"'
        inner = self.ind * (level + 1)
        per_line = layout.block_chars(inner, self.width)
        if source is not None and self._blobs is not None and self.width <= _MAX_DEFER_WIDTH:
            # a placeholder longer than the width, holding a line break, takes the block's place: every
            # layout decision (which only asks whether a text fits the width on one line) comes out the same
            self._blobs.append((source, len(raw), inner, per_line))
            return 'base64 "\x00\n' + str(len(self._blobs) - 1).rjust(self.width + 1) + '\x00"'
        encoded = binascii.b2a_base64(raw, newline=False)
        return 'base64 "' + layout.block_lines(encoded, inner, per_line) + '"'

    def print_elided(self, t: TensorProto, dt) -> str:
        digest = hashlib.sha256(t.SerializeToString()).hexdigest()[:12]
        fields = [f"sha256: {quote(digest)}"]
        if t.data_location == TensorProto.EXTERNAL or dt.kind not in ("float", "int"):
            return "elided {" + ", ".join(fields) + "}"  # the printer never opens data files
        try:
            arr = tensors.to_array(t)
        except OnnxTextError:  # data that does not fit the shape: the digest alone still identifies it
            arr = None
        if arr is not None and arr.size:
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN tensors: nan statistics
                a = arr.astype(np.float64)
                fields = [f"min: {_float_token(f'{float(np.nanmin(a)):.4g}')}",
                          f"max: {_float_token(f'{float(np.nanmax(a)):.4g}')}",
                          f"mean: {_float_token(f'{float(np.nanmean(a)):.4g}')}"] + fields
        return "elided {" + ", ".join(fields) + "}"


    def print_sparse_attr(self, s: SparseTensorProto, level: int) -> str:
        ann = self.unknown_lines(s, (), level)
        text = f"sparse_tensor({_sparse_head(s)}) = " + self.print_sparse_data(s, level)
        return ("\n" + self.ind * level).join(ann + [text]) if ann else text

