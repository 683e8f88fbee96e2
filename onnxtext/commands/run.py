"""``onnxtext run MODEL [--input NAME=VALUE ...] [--random [--dim SYM=N ...]] [--seed N] [--trace] [--dump DIR]
[--compare onnxruntime|reference [--rtol R] [--atol A]] [--output-dir DIR] [--engine E]``.

Runs a model (binary or text) with the embedded evaluator and prints each output as
``name: dtype[shape]`` followed by its values (elided when large). An input value is a ``.npy`` file,
a ``.pb`` file (TensorProto, or SequenceProto/OptionalProto/MapProto by the input's declared type),
or a literal in JSON style (``x=[1,2,3]``, ``n=5``) cast to the input's declared element type.

``--random`` fills the inputs not given with random values of the declared type and shape. Symbolic
dimensions take their size from ``--dim SYM=N``; the ones not given get distinct sizes in order of
first appearance, starting at :data:`FIRST_SYMBOL_SIZE` (3, 4, 5...: never 1, so broadcasting and
masking mistakes show, and never two symbols alike, so swapped axes show); dimensions with neither a
size nor a name get :data:`UNNAMED_SIZE`.

Debugging (see docs/evaluator.md, "Debugging a run"): ``--trace`` prints every node's outputs (shape,
dtype, min/max/mean, NaN/Inf counts) with the node's text line; ``--dump DIR`` saves every value as
``.npy`` (index in ``DIR/index.json``); ``--compare ENGINE`` runs onnxruntime (or onnx.reference, an
oracle) on the same inputs, compares every intermediate value and reports the first node whose
outputs diverge. An evaluator error names the node and, for a model from text, its file and line.
"""

from __future__ import annotations

import json
import os

import numpy as np

HELP = "run a model with the embedded evaluator"

#: size of the first symbolic dimension --random meets without a --dim (the next symbols get 4, 5, ...)
FIRST_SYMBOL_SIZE = 3
#: size of dimensions that have neither a value nor a name
UNNAMED_SIZE = 3


def add_arguments(p):
    p.add_argument("model", help="model file (.onnx or onnxtext)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                   help="an input: NAME=FILE.npy, NAME=FILE.pb or NAME=LITERAL (JSON number or list); repeatable")
    p.add_argument("--random", action="store_true", help="random values for the inputs not given")
    p.add_argument("--dim", action="append", default=[], metavar="SYM=N",
                   help="size of symbolic dimension SYM for --random (default: 3, 4, 5... per symbol); repeatable")
    p.add_argument("--seed", type=int, default=None, help="seed for --random and for random operators")
    p.add_argument("--output-dir", metavar="DIR", help="also save each output there (NAME.npy, or NAME.pb)")
    p.add_argument("--engine", choices=("numpy", "onnxruntime"), default="numpy",
                   help="numpy (embedded evaluator, default) or onnxruntime (if installed)")
    p.add_argument("--trace", action="store_true",
                   help="print every node's outputs (shape, dtype, min/max/mean, NaN/Inf) with its text line")
    p.add_argument("--dump", metavar="DIR", help="save every value of the run as DIR/NAME.npy (index.json lists them)")
    p.add_argument("--compare", choices=("onnxruntime", "reference"),
                   help="run this engine on the same inputs and report the first node whose outputs differ")
    p.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance for --compare (default 1e-4)")
    p.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance for --compare (default 1e-5)")


def run(args) -> int:
    from ..errors import EvalError, OnnxTextError
    from ..evaluator import Evaluator
    from ..evaluator.debugging import SourceLines

    if not os.path.exists(args.model):
        raise OnnxTextError(f"{args.model}: no such file")
    debugging = args.trace or args.dump or args.compare
    if debugging and args.engine != "numpy":
        raise OnnxTextError("--trace, --dump and --compare run the embedded evaluator; drop --engine")
    lines = SourceLines(args.model)  # (the text is parsed for positions only if a line is needed)
    try:
        ev = Evaluator(args.model, seed=args.seed, engine=args.engine, **({"optimize": 0} if debugging else {}))
    except EvalError as e:
        refuse_invalid_graph(lines)  # an invalid graph: the checker's messages and lines say best what is wrong
        raise EvalError(located(e, lines)) from None
    try:
        feeds = make_feeds(ev, args)
        matched = True
        if debugging:
            outputs, matched = _debug_run(ev, feeds, args, lines)
        else:
            outputs = ev.run(None, feeds)
    except EvalError as e:
        raise EvalError(located(e, lines)) from None
    from ..non_utf8 import shown

    names = [shown(n) for n in ev.output_names]  # a name that is not UTF-8 (bytes): as \xHH text
    for name, value in zip(names, outputs):
        print(format_value(name, value))
    if args.output_dir:
        save_outputs(args.output_dir, names, outputs)
    return 0 if matched else 1


#: the checker rules whose violations make a graph impossible to run as written (onnxruntime refuses them)
GRAPH_RULES = {"graph.ssa", "graph.topological", "graph.undefined", "graph.output-produced"}


def refuse_invalid_graph(lines) -> None:
    """For a model from text the Evaluator refused: raise the checker's diagnostics (file, line) when the
    graph assigns a value twice, uses one before (or without) defining it, or leaves an output unproduced."""
    from ..checker import check
    from ..errors import OnnxTextError

    text = lines.text()
    if text is None:
        return
    errors = [d for d in check(text, filename=lines.file, rules=GRAPH_RULES) if d.severity == "error"]
    if errors:
        raise OnnxTextError("\n".join(str(d) for d in errors) +
                            f"\nthe graph is invalid, so it was not run ({len(errors)} error"
                            f"{'s' if len(errors) > 1 else ''}; onnxtext check {lines.file} lists every problem)")


def located(error, lines) -> str:
    """The error's message, prefixed with ``file:line:`` of its node when the model came from text."""
    where = lines.where(getattr(error, "path", None))
    return f"{where}: {error}" if where else str(error)


def make_feeds(ev, args) -> dict:
    """The feeds of ``--input`` and ``--random`` (with ``--dim`` sizes), every model input covered."""
    from ..errors import OnnxTextError

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
        sizes = dim_sizes(args.dim, [types[n] for n in ev.input_names])
        rng = np.random.default_rng(args.seed)
        for name in missing:
            feeds[name] = random_value(name, types[name], rng, sizes)
    elif missing:
        raise OnnxTextError("missing inputs: " + ", ".join(f"{n} ({describe_type(types[n])})" for n in missing) +
                            "; give them with --input NAME=VALUE, or use --random")
    elif args.dim:
        raise OnnxTextError("--dim sizes symbolic dimensions of --random inputs; every input was given")
    return feeds


def dim_sizes(items, input_types) -> dict:
    """{symbol: size} from ``--dim SYM=N`` items, plus distinct defaults for the other symbols."""
    from ..errors import OnnxTextError

    sizes = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            size = int(value)
        except ValueError:
            size = -1
        if not sep or not name or size < 0:
            raise OnnxTextError(f"--dim {item!r}: expected SYMBOL=SIZE with a size >= 0")
        sizes[name] = size
    symbols = [d.dim_param for tp in input_types if tp.WhichOneof("value") == "tensor_type"
               for d in tp.tensor_type.shape.dim if d.dim_param and not d.HasField("dim_value")]
    unknown = sorted(set(sizes) - set(symbols))
    if unknown:
        raise OnnxTextError(f"--dim {unknown[0]}: no input has a dimension named {unknown[0]!r}"
                            + (f" (symbols: {', '.join(dict.fromkeys(symbols))})" if symbols else ""))
    used = set(sizes.values())
    next_size = FIRST_SYMBOL_SIZE
    for sym in symbols:
        if sym not in sizes:
            while next_size in used:
                next_size += 1
            sizes[sym] = next_size
            used.add(next_size)
    return sizes


# ---------------------------------------------------------------------------------------------- debugging
def _debug_run(ev, feeds, args, lines):
    """--trace / --dump / --compare: run node by node, print what was asked.

    Returns (graph outputs, False when --compare found a difference)."""
    from ..evaluator import debugging

    dump = _Dump(args.dump) if args.dump else None
    if dump:
        for name, value in feeds.items():
            dump.save(name, value)

    def on_node(record):
        if args.trace:
            print(trace_line(record, lines))
        if dump and debugging.is_main_graph(record.path):
            for name, value in record.outputs.items():
                dump.save(name, value)

    if args.compare:
        cmp = debugging.compare(ev, feeds, args.compare, rtol=args.rtol, atol=args.atol, callback=on_node)
        outputs = cmp.graph_outputs
        print(comparison_report(cmp, lines))
        matched = cmp.matches
    else:
        outputs, _ = debugging.trace_run(ev, feeds, on_node)
        matched = True
    if dump:
        dump.write_index()
    return outputs, matched


def trace_line(record, lines) -> str:
    """``file:line  path  Op 'name'`` then one indented line per output with its summary."""
    from ..evaluator.debugging import summarize

    node = record.node
    op = f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
    where = lines.where(record.path)
    head = f"{where}  " if where else ""
    head += f"{record.path}  {op}" + (f" {node.name!r}" if node.name else "")
    body = [f"    {name}: {summarize(value).text()}" for name, value in record.outputs.items()]
    return "\n".join([head] + body)


def comparison_report(cmp, lines) -> str:
    """The result of --compare: values compared, and the first diverging node with its line and differences."""
    engine = {"reference": "onnx.reference"}.get(cmp.engine, cmp.engine)
    head = (f"compared {cmp.compared} values of {len(cmp.nodes)} nodes with {engine} "
            f"(rtol {cmp.rtol:g}, atol {cmp.atol:g})")
    if cmp.first_divergence is None:
        bad = [v for v in cmp.outputs if not v.matches]
        if not bad:
            return head + ": all match"
        return head + ": outputs differ\n" + "\n".join("    " + v.text(engine) for v in bad)
    nc = cmp.first_divergence
    node = nc.node
    where = lines.where(nc.path)
    op = f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
    out = [head + ": first divergence at",
           f"  {where + '  ' if where else ''}{nc.path}  {op}" + (f" {node.name!r}" if node.name else "")]
    out += ["    " + v.text(engine) for v in nc.values if not v.matches]
    later = sum(1 for n in cmp.nodes if not n.matches) - 1
    if later:
        out.append(f"  ({later} later node{'s' if later > 1 else ''} differ too, possibly as a consequence)")
    return "\n".join(out)


class _Dump:
    """``--dump DIR``: each value under a file-safe name unique case-insensitively; ``index`` maps names to files."""

    def __init__(self, directory: str):
        self.directory = directory
        self.index: dict[str, str] = {}
        self._used = {"index.json"}
        os.makedirs(directory, exist_ok=True)

    def save(self, name: str, value) -> None:
        from ..non_utf8 import shown

        name = shown(name)  # a name that is not UTF-8 (bytes): as \xHH text
        base = ("".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "value")[:120]
        ext = ".npy" if isinstance(value, np.ndarray) and value.dtype != object else ".pb"
        candidate, n = base + ext, 1
        while candidate.lower() in self._used:
            n += 1
            candidate = f"{base}__{n}{ext}"
        self._used.add(candidate.lower())
        _save_value(os.path.join(self.directory, candidate), name, value)
        self.index[name] = candidate

    def write_index(self) -> None:
        with open(os.path.join(self.directory, "index.json"), "w", encoding="utf-8") as f:
            json.dump(self.index, f, indent=1)


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


def random_value(name: str, tp, rng, sizes: dict | None = None):
    """A random value for an input of type ``tp`` (tensors only); ``sizes`` maps symbols to sizes."""
    from .. import dtypes
    from ..errors import OnnxTextError

    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.elem_type:
        raise OnnxTextError(f"--random: cannot make up a value for {name} ({describe_type(tp)}); "
                            "give it with --input")
    tt = tp.tensor_type
    sizes = sizes or {}
    shape = tuple(d.dim_value if d.HasField("dim_value") else sizes.get(d.dim_param, UNNAMED_SIZE)
                  for d in tt.shape.dim)
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
    os.makedirs(directory, exist_ok=True)
    for name, value in zip(names, values):
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "output"
        plain = isinstance(value, np.ndarray) and value.dtype != object
        _save_value(os.path.join(directory, safe + (".npy" if plain else ".pb")), name, value)


def _save_value(path: str, name: str, value) -> None:
    """A tensor as .npy; strings, sequences, maps and optionals as the matching protobuf (.pb)."""
    from onnx import numpy_helper

    from .. import tensors
    from ..errors import OnnxTextError

    try:
        if isinstance(value, np.ndarray) and value.dtype != object:
            np.save(path, value, allow_pickle=False)
            return
        if isinstance(value, np.ndarray):
            msg = tensors.from_array(value, name)
        elif isinstance(value, list):
            msg = numpy_helper.from_list(value, name)
        elif isinstance(value, dict):
            msg = numpy_helper.from_dict(value, name)
        else:
            msg = numpy_helper.from_optional(value, name)
        with open(path, "wb") as f:
            f.write(msg.SerializeToString())
    except OSError as e:
        raise OnnxTextError(f"cannot write {name} to {path}: {e.strerror}") from None
