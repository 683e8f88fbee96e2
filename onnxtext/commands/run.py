"""``onnxtext run MODEL [--input NAME=VALUE ...] [--random] [--seed N] [--output-dir DIR] [--engine E]``.

Runs a model (binary or text) with the embedded evaluator and prints each output as
``name: dtype[shape]`` followed by its values (elided when large). An input value is a ``.npy`` file,
a ``.pb`` file (TensorProto, or SequenceProto/OptionalProto/MapProto by the input's declared type),
or a literal in JSON style (``x=[1,2,3]``, ``n=5``) cast to the input's declared element type.
``--random`` fills the inputs not given with random values of the declared type and shape
(symbolic or unknown dimensions become 1).
"""

from __future__ import annotations

import json
import os

import numpy as np

HELP = "run a model with the embedded evaluator"


def add_arguments(p):
    p.add_argument("model", help="model file (.onnx or onnxtext)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                   help="an input: NAME=FILE.npy, NAME=FILE.pb or NAME=LITERAL (JSON number or list); repeatable")
    p.add_argument("--random", action="store_true", help="random values for the inputs not given")
    p.add_argument("--seed", type=int, default=None, help="seed for --random and for random operators")
    p.add_argument("--output-dir", metavar="DIR", help="also save each output there (NAME.npy, or NAME.pb)")
    p.add_argument("--engine", choices=("numpy", "onnxruntime"), default="numpy",
                   help="numpy (embedded evaluator, default) or onnxruntime (if installed)")


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..evaluator import Evaluator

    if not os.path.exists(args.model):
        raise OnnxTextError(f"{args.model}: no such file")
    ev = Evaluator(args.model, seed=args.seed, engine=args.engine)
    types = {i.name: i.type for i in ev.model.graph.input}
    feeds = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise OnnxTextError(f"--input {item!r}: expected NAME=VALUE")
        if name not in types:
            raise OnnxTextError(f"--input {name}: the model has no input {name!r} "
                                f"(inputs: {', '.join(ev.input_names) or 'none'})")
        feeds[name] = read_value(name, value, types[name])
    missing = [n for n in ev.input_names if n not in feeds]
    if missing and args.random:
        rng = np.random.default_rng(args.seed)
        for name in missing:
            feeds[name] = random_value(name, types[name], rng)
    elif missing:
        raise OnnxTextError("missing inputs: " + ", ".join(f"{n} ({describe_type(types[n])})" for n in missing) +
                            "; give them with --input NAME=VALUE, or use --random")
    outputs = ev.run(None, feeds)
    for name, value in zip(ev.output_names, outputs):
        print(format_value(name, value))
    if args.output_dir:
        save_outputs(args.output_dir, ev.output_names, outputs)
    return 0


# ---------------------------------------------------------------------------------------------- inputs
def describe_type(tp) -> str:
    from .. import dtypes

    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        tt = tp.tensor_type
        elem = dtypes.from_enum(tt.elem_type).name if tt.elem_type else "?"
        if not tt.HasField("shape"):
            return elem
        dims = [str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in tt.shape.dim]
        return f"{elem}[{', '.join(dims)}]"
    if kind == "sequence_type":
        return f"seq({describe_type(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({describe_type(tp.optional_type.elem_type)})"
    return kind or "?"


def read_value(name: str, text: str, tp):
    """The value of ``--input name=text`` for an input of type ``tp``."""
    from .. import dtypes
    from ..errors import OnnxTextError

    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise OnnxTextError(f"--input {name}: cannot read {text}: {e}") from None
    if text.endswith(".pb"):
        return _read_pb(name, text, tp)
    try:
        literal = json.loads(text)
    except json.JSONDecodeError:
        raise OnnxTextError(f"--input {name}: {text!r} is neither a .npy/.pb file nor a JSON number or list") \
            from None
    kind = tp.WhichOneof("value")
    if kind != "tensor_type":
        raise OnnxTextError(f"--input {name}: literals are only accepted for tensor inputs, not {kind}")
    elem = tp.tensor_type.elem_type
    try:
        return np.asarray(literal, dtype=dtypes.np_dtype(elem) if elem else None)
    except (ValueError, TypeError, OverflowError) as e:
        raise OnnxTextError(f"--input {name}: {text!r} does not fit {describe_type(tp)}: {e}") from None


def _read_pb(name, path, tp):
    import onnx
    from onnx import numpy_helper

    from .. import tensors
    from ..errors import OnnxTextError

    try:
        data = open(path, "rb").read()
        kind = tp.WhichOneof("value")
        if kind == "sequence_type":
            msg = onnx.SequenceProto()
            msg.ParseFromString(data)
            return [tensors.to_array(t) for t in msg.tensor_values]
        if kind == "optional_type":
            msg = onnx.OptionalProto()
            msg.ParseFromString(data)
            return numpy_helper.to_optional(msg)
        if kind == "map_type":
            msg = onnx.MapProto()
            msg.ParseFromString(data)
            return numpy_helper.to_dict(msg)
        t = onnx.TensorProto()
        t.ParseFromString(data)
        return tensors.to_array(t, os.path.dirname(os.path.abspath(path)))
    except OSError as e:
        raise OnnxTextError(f"--input {name}: cannot read {path}: {e.strerror}") from None
    except Exception as e:  # noqa: BLE001 - protobuf decode errors
        raise OnnxTextError(f"--input {name}: {path} is not a valid protobuf value: {e}") from None


def random_value(name: str, tp, rng):
    """A random value for an input of type ``tp`` (tensors only)."""
    from .. import dtypes
    from ..errors import OnnxTextError

    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.elem_type:
        raise OnnxTextError(f"--random: cannot make up a value for {name} ({describe_type(tp)}); "
                            "give it with --input")
    tt = tp.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim)
    dt = dtypes.from_enum(tt.elem_type)
    if dt.kind == "float":
        return rng.standard_normal(shape).astype(dt.np)
    if dt.kind == "complex":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt.np)
    if dt.kind == "bool":
        return rng.random(shape) < 0.5
    if dt.kind == "string":
        return np.array([f"s{i}" for i in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    low, high = (0, 4) if dt.bits <= 4 else (0, 10)
    return rng.integers(low, high, size=shape).astype(dt.np)


# ---------------------------------------------------------------------------------------------- outputs
def format_value(name: str, value) -> str:
    """``name: dtype[shape]`` and the values, numpy-style, elided beyond 100 elements."""
    if value is None:
        return f"{name}: optional (empty)"
    if isinstance(value, list):
        head = f"{name}: sequence of {len(value)}"
        return "\n".join([head] + ["  " + format_value(f"[{i}]", v).replace("\n", "\n  ")
                                   for i, v in enumerate(value)])
    if isinstance(value, dict):
        return f"{name}: map of {len(value)}\n{value!r}"
    arr = np.asarray(value)
    from .. import dtypes

    body = np.array2string(arr, threshold=100, edgeitems=3, max_line_width=100)
    return f"{name}: {dtypes.array_type_text(arr)}\n{body}"


def save_outputs(directory: str, names, values) -> None:
    from onnx import numpy_helper

    from .. import tensors
    from ..errors import OnnxTextError

    os.makedirs(directory, exist_ok=True)
    for name, value in zip(names, values):
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "output"
        try:
            if isinstance(value, np.ndarray) and value.dtype != object:
                np.save(os.path.join(directory, safe + ".npy"), value, allow_pickle=False)
                continue
            if isinstance(value, np.ndarray):
                msg = tensors.from_array(value, name)
            elif isinstance(value, list):
                msg = numpy_helper.from_list(value, name)
            elif isinstance(value, dict):
                msg = numpy_helper.from_dict(value, name)
            else:
                msg = numpy_helper.from_optional(value, name)
            with open(os.path.join(directory, safe + ".pb"), "wb") as f:
                f.write(msg.SerializeToString())
        except OSError as e:
            raise OnnxTextError(f"--output-dir: cannot write {name}: {e.strerror}") from None
