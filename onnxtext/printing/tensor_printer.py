"""Tensor constants as text: ``float[2] w = {...}``, ``raw {...}``, ``base64`` blocks, external references,
sparse tensors, elided summaries (one ``print_<message>`` each for TensorProto and SparseTensorProto).

:class:`TensorPrinter` is a base of :class:`onnxtext.printing.printer.Printer` (it uses its layout helpers and
name caches); the parser reads these forms with :func:`onnxtext.syntax.literal_data.build_tensor`.
"""

from __future__ import annotations

import binascii
import hashlib
import math
import warnings

import numpy as np
from onnx import SparseTensorProto, TensorProto

from .. import dtypes, tensors
from ..errors import OnnxTextError
from . import layout
from .atoms import _dtype_name, _float_token, _onnx_values, _SMALL, float_texts, format_values, name, quote
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


class TensorPrinter:
    """``print_tensor`` and friends (a base of :class:`onnxtext.printing.printer.Printer`)."""

    def print_initializer(self, t: TensorProto, level: int) -> str:
        return self._tensor_constant(t, level, True)

    def print_sparse_initializer(self, s: SparseTensorProto, level: int) -> str:
        ann = self._annotations(s, level, skip=("values", "indices", "dims"))
        dt = _dtype_name(s.values.data_type)
        dims = "[" + ", ".join(str(d) for d in s.dims) + "]"
        return ("\n" + self.ind * level).join(ann + [f"sparse_tensor({dt}{dims}) {name(s.values.name)} = " +
                                self.print_sparse_data(s, level)])

    def print_sparse_data(self, s: SparseTensorProto, level: int) -> str:
        return ("sparse(" + self.print_tensor(s.values, level + 1) + ", " + self.print_tensor(s.indices, level + 1)
                + ")")

    # ------------------------------------------------------------------ tensors
    def tensor_annotations(self, t: TensorProto, level: int) -> list[str]:
        out = self._annotations(t, level, spec=_TENSOR_SPEC)
        # external data sets data_location (the builder does too); an explicit DEFAULT is printed
        if t.HasField("data_location") and not (len(t.external_data) and t.data_location == TensorProto.EXTERNAL):
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
        ann = None
        if any(map(len, _TENSOR_EXTRA_REPEATED(t))) or any(map(t.HasField, _TENSOR_PRESENCE)):
            ann = self.tensor_annotations(t, level)
        enum, dims = t.data_type, t.dims
        dt = dtypes.BY_ENUM.get(enum)
        if dt is None:
            raise OnnxTextError(f"unknown element type {enum}")
        head = dt.name + "[" + ", ".join(map(str, dims)) + "]" if len(dims) else dt.name
        nm = t.name
        if initializer or nm or (t.HasField("name") and not self.onnx_style):  # a set "" name prints as ""
            head += " " + typed_name(nm)
        if ann or lead is None:
            lead = len(self.ind) * level
        text = head + " = " + self.print_tensor_data(t, level, dt, math.prod(dims), lead + len(head) + 3)
        return ("\n" + self.ind * level).join(ann + [text]) if ann else text

    def print_tensor_data(self, t: TensorProto, level: int, dt=None, count: int | None = None,
                          lead: int | None = None) -> str:
        """The data part of a tensor constant: ``{...}`` (typed fields), ``raw {...}`` or a ``base64`` block
        (raw_data; the block above ``max_inline`` elements or when the bytes do not fit the shape).
        ``dt`` and ``count``: the element type and count when the caller has them; ``lead``: the column
        where the data starts. Long literals break into lines of a fixed number of elements (whole rows of
        the last dimension when one fits), blocks into lines of a fixed number of bytes."""
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
        if dt.kind != "string" and t.HasField("raw_data"):
            raw = t.raw_data  # one access: each one copies the bytes
            if len(raw) != -(-count * dt.bits // 8) or (self.max_inline is not None and count > self.max_inline):
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
        return 'base64 "' + layout.block_lines(encoded, inner, per_line).decode("ascii") + '"'

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
        dt = _dtype_name(s.values.data_type)
        dims = "[" + ", ".join(str(d) for d in s.dims) + "]"
        return f"sparse_tensor({dt}{dims}) = " + self.print_sparse_data(s, level)

