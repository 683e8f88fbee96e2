"""``onnxtext info FILE``: a summary of a model: IR version, opsets, producer, model version, the graph's
inputs and outputs with their types, node counts and an operator histogram, parameters and bytes per element
type.

``model_version`` is shown as MAJOR.MINOR.PATCH when it uses the SemVer encoding of the ONNX versioning rules
(Versioning: the top two bytes are MAJOR, the next two MINOR, the low four PATCH; the top four bytes are non-zero
exactly when SemVer is used), else as the plain number.
"""

from __future__ import annotations

import collections
import json
import sys

HELP = "summary of a model: IR version, opsets, sizes"


def add_arguments(p):
    p.add_argument("file", help="model file (.onnx or onnxtext)")
    p.add_argument("--format", choices=("text", "json"), default="text")


def decode_model_version(v: int) -> str:
    """``model_version`` as text: ``1.2.345`` for the SemVer encoding 0x0001000200000159, else ``str(v)``."""
    if v >> 32:
        return f"{(v >> 48) & 0xFFFF}.{(v >> 32) & 0xFFFF}.{v & 0xFFFFFFFF}"
    return str(v)


def read_model(path: str):
    """A ModelProto from a binary or text file (ParseError / ModelFileError on bad input)."""
    from ..checker import _as_model
    from ..io import read_model_source
    from ..syntax.parser import parse

    source = read_model_source(path)
    return _as_model(parse(source, filename=path)) if isinstance(source, str) else source


def summary(model) -> dict:
    """The facts ``info`` prints, as a dict."""
    from .. import dtypes
    from ..tensors import element_count

    nodes = collections.Counter()

    def count(g):
        for n in g.node:
            nodes[_shown(n.domain or "ai.onnx") + "." + _shown(n.op_type)] += 1
            for a in n.attribute:
                for sg in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    count(sg)

    count(model.graph)
    params = collections.Counter()
    size = collections.Counter()
    tensors = list(model.graph.initializer) + [s.values for s in model.graph.sparse_initializer]
    for t in tensors:
        dt = dtypes.BY_ENUM.get(t.data_type)
        name = dt.name if dt else f"type{t.data_type}"
        n = element_count(t)
        params[name] += n
        if dt is not None and dt.kind == "string":
            size[name] += sum(len(s) for s in t.string_data)
        elif dt is not None:
            size[name] += -(-n * dt.bits // 8)
    inits = {t.name for t in model.graph.initializer}
    return {
        "ir_version": model.ir_version,
        "inputs": {_shown(v.name): _type_text(v) for v in model.graph.input if v.name not in inits},
        "outputs": {_shown(v.name): _type_text(v) for v in model.graph.output},
        "opset_import": {_shown(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "producer": " ".join(_shown(x) for x in (model.producer_name, model.producer_version) if x),
        "model_version": decode_model_version(model.model_version) if model.model_version else "",
        "nodes": sum(nodes.values()),
        "ops": dict(sorted(nodes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "functions": len(model.functions),
        "initializers": len(tensors),
        "parameters": dict(params),
        "bytes": dict(size),
    }


def _shown(s) -> str:
    """A string field as text: one that is not UTF-8 (bytes, from a damaged binary) with \\xHH escapes."""
    return s if isinstance(s, str) else s.decode("utf-8", "backslashreplace")


def _type_text(value_info) -> str:
    from ..checker.inference import type_text

    return type_text(value_info.type if value_info.HasField("type") else None)


def run(args) -> int:
    s = summary(read_model(args.file))
    if args.format == "json":
        json.dump(s, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    w = sys.stdout.write
    w(f"file:          {args.file}\n")
    w(f"ir_version:    {s['ir_version']}\n")
    w("opsets:        " + ", ".join(f"{d} {v}" for d, v in s["opset_import"].items()) + "\n")
    if s["producer"]:
        w(f"producer:      {s['producer']}\n")
    if s["model_version"]:
        w(f"model_version: {s['model_version']}\n")
    for key in ("inputs", "outputs"):
        w(f"{key}:" + ("" if s[key] else f"{'none':>{15 - len(key)}}") + "\n")
        for name, tp in s[key].items():
            w(f"  {tp} {name}\n")
    w(f"nodes:         {s['nodes']} ({len(s['ops'])} distinct ops; subgraphs included)\n")
    width = max((len(op) for op in s["ops"]), default=0)
    for op, n in s["ops"].items():
        w(f"  {op:<{width}} {n:>7,}\n")
    if s["functions"]:
        w(f"functions:     {s['functions']}\n")
    w(f"initializers:  {s['initializers']}\n")
    if s["parameters"]:
        w("parameters:\n")
        for name in sorted(s["parameters"], key=lambda k: -s["bytes"].get(k, 0)):
            w(f"  {name:<14} {s['parameters'][name]:>14,} elements {s['bytes'].get(name, 0):>16,} bytes\n")
        w(f"  {'total':<14} {sum(s['parameters'].values()):>14,} elements {sum(s['bytes'].values()):>16,} bytes\n")
    return 0
