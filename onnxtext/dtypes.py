"""THE element-type table: text name <-> TensorProto enum <-> numpy dtype <-> storage rules.

Every other module (parser, printer, tensors, evaluator, checker, editor generators) reads element
types from here; nothing else keeps its own copy of these facts.

Columns of :class:`DType`:

* ``name``      the text name used by the syntax (``float``, ``bfloat16``, ``int4``...), as onnx's parser.
* ``enum``      the ``TensorProto.DataType`` value.
* ``np``        the numpy (or ml_dtypes) dtype of a decoded element.
* ``field``     the typed ``TensorProto`` field that holds elements when ``raw_data`` is not used.
* ``bits``      bits per element in ``raw_data`` (packed types: 2, 4 or 6).
* ``kind``      literal rule: ``float`` (decimal floats; bare integers in bit-pattern types are bit patterns),
                ``int``, ``bool``, ``complex``, ``string``.
* ``bitpattern`` True when the typed field stores the element's bit pattern (float16, bfloat16, float8...,
                float4, float6) instead of its value.
* ``ir_version`` the IR version that introduced the type (IR spec / onnx VERSION_TABLE).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    enum: int
    np: np.dtype
    field: str
    bits: int
    kind: str
    bitpattern: bool
    ir_version: int

    @property
    def packed(self) -> bool:
        """True for sub-byte types whose raw_data packs several elements per byte."""
        return self.bits < 8

    @property
    def per_int32(self) -> int:
        """How many elements one ``int32_data`` entry holds (2 for 4-bit, 4 for 2-bit types)."""
        return 8 // self.bits if self.bits in (2, 4) else 1

    @property
    def uint_view(self):
        """Unsigned integer dtype with the element's byte width (for bit-pattern views), or None."""
        if self.bits in (8, 16, 32, 64) and self.kind in ("float", "int", "bool"):
            return np.dtype(f"uint{self.bits}")
        return None


def _dt(name, enum, npdt, field, bits, kind, bitpattern=False, ir=3):
    return DType(name, enum, np.dtype(npdt), field, bits, kind, bitpattern, ir)


#: All 28 element types, in enum order.
DTYPES: tuple[DType, ...] = (
    _dt("float", 1, np.float32, "float_data", 32, "float"),
    _dt("uint8", 2, np.uint8, "int32_data", 8, "int"),
    _dt("int8", 3, np.int8, "int32_data", 8, "int"),
    _dt("uint16", 4, np.uint16, "int32_data", 16, "int"),
    _dt("int16", 5, np.int16, "int32_data", 16, "int"),
    _dt("int32", 6, np.int32, "int32_data", 32, "int"),
    _dt("int64", 7, np.int64, "int64_data", 64, "int"),
    _dt("string", 8, object, "string_data", 0, "string"),
    _dt("bool", 9, np.bool_, "int32_data", 8, "bool"),
    _dt("float16", 10, np.float16, "int32_data", 16, "float", True),
    _dt("double", 11, np.float64, "double_data", 64, "float"),
    _dt("uint32", 12, np.uint32, "uint64_data", 32, "int"),
    _dt("uint64", 13, np.uint64, "uint64_data", 64, "int"),
    _dt("complex64", 14, np.complex64, "float_data", 64, "complex"),
    _dt("complex128", 15, np.complex128, "double_data", 128, "complex"),
    _dt("bfloat16", 16, ml_dtypes.bfloat16, "int32_data", 16, "float", True, 4),
    _dt("float8e4m3fn", 17, ml_dtypes.float8_e4m3fn, "int32_data", 8, "float", True, 9),
    _dt("float8e4m3fnuz", 18, ml_dtypes.float8_e4m3fnuz, "int32_data", 8, "float", True, 9),
    _dt("float8e5m2", 19, ml_dtypes.float8_e5m2, "int32_data", 8, "float", True, 9),
    _dt("float8e5m2fnuz", 20, ml_dtypes.float8_e5m2fnuz, "int32_data", 8, "float", True, 9),
    _dt("uint4", 21, ml_dtypes.uint4, "int32_data", 4, "int", False, 10),
    _dt("int4", 22, ml_dtypes.int4, "int32_data", 4, "int", False, 10),
    _dt("float4e2m1", 23, ml_dtypes.float4_e2m1fn, "int32_data", 4, "float", True, 11),
    _dt("float8e8m0", 24, ml_dtypes.float8_e8m0fnu, "int32_data", 8, "float", True, 12),
    _dt("uint2", 25, ml_dtypes.uint2, "int32_data", 2, "int", False, 13),
    _dt("int2", 26, ml_dtypes.int2, "int32_data", 2, "int", False, 13),
    _dt("float6e2m3", 27, ml_dtypes.float6_e2m3fn, "int32_data", 6, "float", True, 14),
    _dt("float6e3m2", 28, ml_dtypes.float6_e3m2fn, "int32_data", 6, "float", True, 14),
)

BY_NAME: dict[str, DType] = {d.name: d for d in DTYPES}
BY_ENUM: dict[int, DType] = {d.enum: d for d in DTYPES}
BY_NP: dict[np.dtype, DType] = {}
for _d in DTYPES:
    BY_NP.setdefault(_d.np, _d)

#: Text names of all element types (for grammars, editors, completion, hints).
NAMES: tuple[str, ...] = tuple(d.name for d in DTYPES)


def from_enum(enum: int) -> DType:
    """The DType of a TensorProto.DataType value; KeyError for UNDEFINED or unknown values."""
    return BY_ENUM[enum]


def from_name(name: str) -> DType:
    return BY_NAME[name]


def from_numpy(dtype) -> DType:
    """The DType of a numpy dtype (str/bytes/object arrays are ONNX strings)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return BY_NAME["string"]
    return BY_NP[dtype]


def array_type_text(arr: np.ndarray) -> str:
    """``float[2, 3]``: an array's element type (its onnxtext name, else numpy's) and shape."""
    try:
        name = from_numpy(arr.dtype).name
    except KeyError:
        name = str(arr.dtype)
    return f"{name}[{', '.join(str(d) for d in arr.shape)}]"


def np_dtype(enum: int) -> np.dtype:
    """numpy dtype for a TensorProto.DataType value."""
    return BY_ENUM[enum].np
