"""Tensor rules: element type, value field, data size, external data, sparse tensors, and the float16 literal
heuristic (IR spec: Tensor Definition / Representation, External Tensor Data, Tensor Element Types)."""

from __future__ import annotations

from onnx import TensorProto

from .. import dtypes
from ..tensors import element_count
from . import rule

_TENSOR = "IR spec: Tensor Definition"
_EXTERNAL = "IR spec: External Tensor Data"
_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _name(t):
    return repr(t.name) if t.name else "(unnamed)"


def _dtype(t):
    try:
        return dtypes.from_enum(t.data_type)
    except KeyError:
        return None


@rule("tensor.data-type", "tensor", "IR spec: Tensor Element Types (data_type MUST be a defined element type)")
def data_type(ctx, t, path, _):
    if _dtype(t) is None:
        yield path, f"tensor {_name(t)} has undefined or unknown data_type {t.data_type}"


@rule("tensor.value-field", "tensor", _TENSOR + " (exactly one value field holds the data, the one of its type)")
def value_field(ctx, t, path, _):
    if t.data_location == TensorProto.EXTERNAL:
        return  # tensor.external covers these
    dt = _dtype(t)
    used = [f for f in _FIELDS if len(getattr(t, f))] + (["raw_data"] if t.HasField("raw_data") else [])
    if len(used) > 1:
        yield path, f"tensor {_name(t)} has data in several fields: {', '.join(used)}"
    elif not used and dt is not None and element_count(t) > 0:
        yield path, f"tensor {_name(t)} of shape {list(t.dims)} has no data"
    elif used and dt is not None and used[0] != "raw_data" and used[0] != dt.field:
        yield path, f"{dt.name} tensor {_name(t)} stores its data in {used[0]} (expected {dt.field} or raw_data)"
    elif used == ["raw_data"] and dt is not None and dt.kind == "string":
        yield path, f"string tensor {_name(t)} cannot use raw_data"


def _stored_count(t, dt):
    """How many elements the stored data holds, and a phrase for the message (None when not applicable)."""
    count = element_count(t)
    if t.HasField("raw_data"):
        need = -(-count * dt.bits // 8)
        return len(t.raw_data), need, "bytes of raw_data"
    values = getattr(t, dt.field)
    if not len(values):
        return None
    if dt.kind == "complex":
        return len(values), 2 * count, f"{dt.field} entries (two per complex element)"
    if dt.bits in (2, 4) and dt.field == "int32_data":
        return len(values), -(-count // dt.per_int32), f"int32_data entries ({dt.per_int32} elements each)"
    return len(values), count, f"{dt.field} entries"


@rule("tensor.size", "tensor", _TENSOR + " (the number of stored elements MUST equal the product of the dims)")
def data_size(ctx, t, path, _):
    dt = _dtype(t)
    if dt is None or t.data_location == TensorProto.EXTERNAL:
        return
    if any(d < 0 for d in t.dims):
        yield path, f"tensor {_name(t)} has a negative dimension in {list(t.dims)}"
        return
    got = _stored_count(t, dt)
    if got is not None and got[0] != got[1]:
        yield path, (f"tensor {_name(t)} of shape {list(t.dims)} ({element_count(t)} elements of {dt.name}) needs "
                     f"{got[1]} {got[2]}, it has {got[0]}")


def _code_range(dt) -> tuple[int, int]:
    """The int32_data values that stand for elements of ``dt`` (a type narrower than 32 bits)."""
    if dt.packed:
        return 0, 255  # one byte of packed elements
    if dt.name == "bool":
        return 0, 1
    if dt.kind == "int" and dt.name.startswith("int"):
        return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
    return 0, (1 << dt.bits) - 1  # unsigned integers, and bit patterns of narrow floats


@rule("tensor.codes", "tensor", _TENSOR + " (int32_data of a narrower type holds its values or bit patterns, "
      "in range)")
def stored_codes(ctx, t, path, _):
    dt = _dtype(t)
    if dt is None or dt.field != "int32_data" or dt.bits >= 32 or not len(t.int32_data):
        return
    lo, hi = _code_range(dt)
    bad = [v for v in t.int32_data if not lo <= v <= hi]
    if bad:
        yield path, (f"{dt.name} tensor {_name(t)} stores {len(bad)} int32_data value{'s' if len(bad) != 1 else ''} "
                     f"outside {lo} ... {hi} (first: {bad[0]}): readers keep only the low bits")


@rule("tensor.external", "tensor", _EXTERNAL + " (location present and relative inside the model directory, no "
      "value fields, offset/length non-negative integers)")
def external_data(ctx, t, path, _):
    if t.data_location != TensorProto.EXTERNAL:
        if len(t.external_data):
            yield path, f"tensor {_name(t)} has external_data entries but data_location is not EXTERNAL", "warning"
        return
    from ..errors import ExternalDataError
    from ..tensors import safe_external_path

    info = {}
    for e in t.external_data:
        if e.key in info:
            yield path, f"tensor {_name(t)}: external_data key {e.key!r} is given twice"
        info[e.key] = e.value
    unknown = sorted(map(str, set(info) - {"location", "offset", "length", "checksum", "basepath"}))  # bytes: not UTF-8
    if unknown:
        yield path, f"tensor {_name(t)}: unknown external_data keys {', '.join(unknown)}", "warning"
    if t.HasField("raw_data") or any(len(getattr(t, f)) for f in _FIELDS):
        yield path, f"tensor {_name(t)} has external data and also values in the model"
    if "location" not in info:
        yield path, f"tensor {_name(t)}: external data has no 'location'"
    else:
        try:
            resolved = safe_external_path(info["location"], ctx.base_dir)
        except ExternalDataError as e:
            yield path, f"tensor {_name(t)}: {e}"
            resolved = None
        import os

        if resolved and ctx.base_dir and not os.path.exists(resolved):
            yield path, f"tensor {_name(t)}: external data file {info['location']!r} not found", "warning"
    nums = {}
    for key in ("offset", "length"):
        if key in info:
            try:
                nums[key] = int(info[key])
                if nums[key] < 0:
                    raise ValueError
            except ValueError:
                yield path, f"tensor {_name(t)}: external data {key} {info[key]!r} is not a non-negative integer"
    dt = _dtype(t)
    if "length" in nums and dt is not None and dt.bits:
        need = -(-element_count(t) * dt.bits // 8)
        if nums["length"] != need:
            yield path, (f"tensor {_name(t)}: external data length {nums['length']} does not match shape "
                         f"{list(t.dims)} of {dt.name} ({need} bytes)")


@rule("tensor.sparse", "sparse", "IR spec: Tensor Definition / SparseTensorProto (values 1-D [NNZ]; indices int64 "
      "[NNZ] or [NNZ, rank], in range, ascending)")
def sparse_tensor(ctx, s, path, _):
    import numpy as np

    from ..tensors import to_array

    dims = list(s.dims)
    name = repr(s.values.name) if s.values.name else "(unnamed)"
    if len(s.values.dims) != 1:
        yield path, f"sparse tensor {name}: values must be 1-D, they have shape {list(s.values.dims)}"
        return
    nnz = s.values.dims[0]
    if s.indices.data_type != TensorProto.INT64:
        yield path, f"sparse tensor {name}: indices must be int64"
        return
    idims = list(s.indices.dims)
    if idims not in ([nnz], [nnz, len(dims)]):
        yield path, (f"sparse tensor {name}: indices have shape {idims}, expected [{nnz}] or [{nnz}, {len(dims)}] "
                     f"for {nnz} values of a rank-{len(dims)} tensor")
        return
    try:
        idx = to_array(s.indices, ctx.base_dir)
    except Exception:  # noqa: BLE001 - unreadable data is reported by the tensor rules
        return
    total = int(np.prod(dims)) if dims else 1
    if idx.ndim == 2:
        if idx.size and ((idx < 0).any() or (idx >= np.array(dims)).any()):
            yield path, f"sparse tensor {name}: an index is outside the shape {dims}"
            return
        flat = np.ravel_multi_index(tuple(idx.T), dims) if idx.size else idx.reshape(-1)
    else:
        flat = idx
        if flat.size and (flat.min() < 0 or flat.max() >= total):
            yield path, f"sparse tensor {name}: an index is outside [0, {total})"
            return
    if flat.size > 1 and (np.diff(flat) <= 0).any():
        yield path, f"sparse tensor {name}: indices are not in strictly ascending order"


def _bitpattern_value(dt, k: int) -> float:
    import numpy as np

    if dt.bits in (8, 16):
        return float(np.array(k, dtype=dt.uint_view).view(dt.np))
    return float(np.array(k, dtype=np.uint8).view(dt.np))


def implausible_bits(dt, k: int) -> bool:
    """True when a bare integer ``k`` read as a bit pattern of ``dt`` is almost surely meant as a value.

    The bit pattern of a small integer is a subnormal (exponent bits all zero) in every narrow float type, or a
    tiny normal number in bfloat16 (exponent bias 127): nobody writes those deliberately in decimal. Real bit
    pattern lists come from printers and denote ordinary values (1.0 is 15360 in float16, 56 in float8e4m3fn).
    """
    if k <= 0 or k >= (1 << dt.bits):
        return False
    v = abs(_bitpattern_value(dt, k))
    mant_bits = {"float16": 10, "bfloat16": 7, "float8e4m3fn": 3, "float8e4m3fnuz": 3, "float8e5m2": 2,
                 "float8e5m2fnuz": 2, "float4e2m1": 1, "float6e2m3": 3, "float6e3m2": 2}.get(dt.name)
    if mant_bits is None:  # float8e8m0: every pattern is a power of two, none subnormal
        return False
    exponent_zero = (k & ((1 << (dt.bits - 1)) - 1)) >> mant_bits == 0
    return exponent_zero or v < 1e-30


_BITPATTERN_ENUMS = frozenset(d.enum for d in dtypes.BY_NAME.values() if d.bitpattern)


def _has_bitpattern_tensors(m) -> bool:
    """Whether any tensor of the model (initializers, attributes, subgraphs, functions) has a float16-family
    element type: only then can the text hold such a literal."""
    def in_graph(g) -> bool:
        if any(t.data_type in _BITPATTERN_ENUMS for t in g.initializer):
            return True
        if any(s.values.data_type in _BITPATTERN_ENUMS for s in g.sparse_initializer):
            return True
        return in_nodes(g.node)

    def in_nodes(nodes) -> bool:
        for n in nodes:
            for a in n.attribute:
                if a.HasField("t") and a.t.data_type in _BITPATTERN_ENUMS:
                    return True
                if any(t.data_type in _BITPATTERN_ENUMS for t in a.tensors):
                    return True
                if a.HasField("sparse_tensor") and a.sparse_tensor.values.data_type in _BITPATTERN_ENUMS:
                    return True
                if any(in_graph(g) for g in ([a.g] if a.HasField("g") else []) + list(a.graphs)):
                    return True
        return False

    return in_graph(m.graph) or any(in_nodes(f.node) for f in m.functions) or any(
        in_graph(getattr(t, k)) for t in m.training_info for k in ("initialization", "algorithm"))


@rule("tensor.bitpattern-literal", "model", "IR spec: Tensor Element Types (float16, bfloat16 and float8 elements "
      "in int32_data are bit patterns; onnx syntax reads bare integers as bit patterns)", "warning")
def bitpattern_literal(ctx, m, path, _):
    if ctx.text is None or not _has_bitpattern_tensors(m):
        return  # no tensor of such a type: no need for the positions pass
    for lpath, tname, ints in ctx.spans.literals:
        dt = dtypes.BY_NAME.get(tname)
        if dt is None or not dt.bitpattern:
            continue
        bad = [t for t in ints if implausible_bits(dt, int(t))]
        if bad:
            t0 = bad[0]
            shown = ", ".join(str(t) for t in bad[:3]) + (", ..." if len(bad) > 3 else "")
            yield (lpath, f"{tname} literal {shown}: a bare integer is a bit pattern ({t0} means "
                          f"{_bitpattern_value(dt, int(t0)):.3g}); write {int(t0)}.0 for the value or "
                          f"{int(t0):#06x} for the bit pattern", "warning", (t0.line, t0.column))
