"""Values in the REPL: showing them, describing their ONNX type, and making random sample inputs.

A value is what the evaluator produces: a numpy array (tensor), a list (sequence), None (empty
optional) or a dict (map). Tensors are shown in the text syntax itself (``float[3] y = {1.5, 0.0, 3.0}``)
by encoding them as a TensorProto and printing it with ``onnxtext.to_text``; big ones are elided to a
one-line summary plus their first elements, so a huge intermediate never floods the terminal.
"""

from __future__ import annotations

import numpy as np
import onnx

from .. import dtypes

#: Tensors with more elements than this are shown as a summary and their first elements.
ELIDE_OVER = 64
#: How many leading elements of an elided tensor are shown.
PREVIEW = 8
#: Size of a symbolic or unknown dimension in a random sample input (``:input float[N] x``).
SYMBOLIC_DIM = 2


def _encode(arr: np.ndarray, name: str | None) -> onnx.TensorProto:
    # onnxtext.tensors owns encoding (every element type, sub-byte packing); typed fields print as `{...}`
    from ..tensors import from_array

    return from_array(arr, name, raw=False)


def format_value(name: str, value, width: int = 100) -> str:
    """``value`` as text: a tensor constant in the onnxtext syntax, or a sequence/optional/map of them."""
    if value is None:
        return f"{name} = <empty optional>"
    if isinstance(value, dict):
        items = ", ".join(f"{k!r}: {_short(v)}" for k, v in list(value.items())[:PREVIEW])
        more = ", ..." if len(value) > PREVIEW else ""
        return f"{name} = map {{{items}{more}}}  ({len(value)} entries)"
    if isinstance(value, (list, tuple)):
        lines = [f"{name} = seq of {len(value)}:"]
        for i, v in enumerate(value[:PREVIEW]):
            lines.append("  " + format_value(f"{name}[{i}]", v, width).replace("\n", "\n  "))
        if len(value) > PREVIEW:
            lines.append(f"  ... {len(value) - PREVIEW} more")
        return "\n".join(lines)
    return _format_tensor(name, np.asarray(value), width)


def _short(v) -> str:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    return repr(v)


def _format_tensor(name: str, arr: np.ndarray, width: int) -> str:
    import onnxtext

    try:
        if arr.size <= ELIDE_OVER:
            return onnxtext.to_text(_encode(arr, name), width=width).rstrip("\n")
        head = onnxtext.to_text(_encode(arr, name), elide=True, elide_threshold=ELIDE_OVER).rstrip("\n")
        first = onnxtext.to_text(_encode(arr.reshape(-1)[:PREVIEW], None), width=width).rstrip("\n")
        return f"{head}\n  first {PREVIEW}: {first.split(' = ', 1)[-1]}"
    except Exception as e:  # noqa: BLE001 - never lose a computed value because the printer failed on it
        return f"{name} = {type_string(arr)} {list(arr.shape)} (not printable as text: {e})\n{arr!r}"


def type_string(value) -> str | None:
    """The ONNX type string of a value (``tensor(float)``, ``seq(tensor(int64))``...), None when unknown."""
    if value is None:
        return None
    if isinstance(value, dict):
        if not value:
            return None
        k, v = next(iter(value.items()))
        key = "string" if isinstance(k, str) else "int64"
        inner = type_string(v)
        return f"map({key},{inner})" if inner else None
    if isinstance(value, (list, tuple)):
        inner = type_string(value[0]) if value else None
        return f"seq({inner})" if inner else None
    try:
        dt = dtypes.from_numpy(np.asarray(value).dtype)
    except KeyError:
        return None
    return f"tensor({dt.name if dt.name not in _ONNX_NAMES else _ONNX_NAMES[dt.name]})"


# onnx's type strings spell a few element types differently from the text syntax
_ONNX_NAMES = {name: onnx.TensorProto.DataType.Name(d.enum).lower() for name, d in dtypes.BY_NAME.items()
               if onnx.TensorProto.DataType.Name(d.enum).lower() != name}


def describe(value) -> str:
    """A short type-and-shape description, e.g. ``float[2, 3]``."""
    if value is None:
        return "empty optional"
    if isinstance(value, dict):
        return f"map of {len(value)}"
    if isinstance(value, (list, tuple)):
        return f"seq of {len(value)}"
    return dtypes.array_type_text(np.asarray(value))


def value_type(value) -> onnx.TypeProto | None:
    """A TypeProto for a value (element type and concrete shape), used for graph output declarations."""
    if isinstance(value, np.ndarray):
        try:
            dt = dtypes.from_numpy(value.dtype)
        except KeyError:
            return None
        tp = onnx.TypeProto()
        tp.tensor_type.elem_type = dt.enum
        shape = tp.tensor_type.shape
        for d in value.shape:
            shape.dim.add().dim_value = int(d)
        return tp
    if isinstance(value, list) and value:
        inner = value_type(value[0])
        if inner is None:
            return None
        tp = onnx.TypeProto()
        tp.sequence_type.elem_type.CopyFrom(inner)
        return tp
    return None


def random_value(tp: onnx.TypeProto, rng: np.random.Generator, what: str = "input"):
    """A random sample value of type ``tp`` (small integers, normal floats rounded to 2 digits)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        tt = tp.tensor_type
        if not tt.elem_type:
            raise ValueError(f"{what} has no element type; declare it, e.g. float[2] {what}")
        dt = dtypes.from_enum(tt.elem_type)
        shape = tuple(d.dim_value if d.HasField("dim_value") else SYMBOLIC_DIM for d in tt.shape.dim)
        return random_array(dt, shape, rng)
    if kind == "sequence_type":
        return [random_value(tp.sequence_type.elem_type, rng, what)]
    if kind == "optional_type":
        return random_value(tp.optional_type.elem_type, rng, what)
    raise ValueError(f"cannot make a random sample of {what}'s type; give a value with `= ...`")


def random_array(dt: dtypes.DType, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if dt.kind == "string":
        flat = np.array([f"s{i}" for i in range(int(np.prod(shape, dtype=np.int64)))], dtype=object)
        return flat.reshape(shape)
    if dt.kind == "bool":
        return rng.random(shape) < 0.5
    if dt.kind == "int":
        import ml_dtypes

        info = ml_dtypes.iinfo(dt.np)
        return rng.integers(max(info.min, 0), min(int(info.max), 9) + 1, size=shape).astype(dt.np)
    if dt.kind == "complex":
        return (np.round(rng.standard_normal(shape), 2) + 1j * np.round(rng.standard_normal(shape), 2)).astype(dt.np)
    # narrow floats (float8, float4...) round the sample to their own grid
    return np.round(rng.standard_normal(shape), 2).astype(dt.np)
