"""The REPL's ``:commands``. Each is ``function(session, argument_text) -> Reply``; COMMANDS maps names.

Commands that change the model take a snapshot first, so ``:undo`` reverts them like statements.
"""

from __future__ import annotations

import os
import re
import shlex

import numpy as np
import onnx

from .. import schemas
from .session import SOURCE_NAME, Reply, Session, StatementError, new_model
from .values import describe

HELP = """\
Statements (the onnxtext syntax):
  y = Relu(x)                          add a node; it runs at once and its outputs are shown
  c = Constant<value = float[3] {1.5, -2.0, 3.0}>()
  a, b = Split<axis = 0>(x, sizes)      several outputs; attributes in <...>
  f (x) => (y) { y = Neg(x) }          define a function (domain "local" unless given); call: local.f(x)
  y                                    show a value
  Unfinished input ({, (, < or a string left open) continues on the next line; Ctrl-C cancels it.
Commands:
  :input TYPE NAME [= {values}]        declare a graph input with a sample value (random when omitted);
                                       for an existing input, give it a new sample: :input NAME = {...}
  :output NAME...                      mark graph outputs (default: values no node consumes)
  :show                                the model so far, as text
  :values                              the values in scope with their types and shapes
  :save FILE                           save as .onnxtext (text) or .onnx (binary)
  :load FILE                           continue from a model; its inputs get random sample values
  :undo  :reset                        undo the last change / start over
  :opset DOMAIN VERSION                import an opset version (DOMAIN "" or ai.onnx for the default one)
  :doc OP                              operator documentation
  :check                               diagnostics of the model so far
  :help  :quit                         this text / leave (also Ctrl-D)
Tab completes operators, attributes, values, types, commands and file paths."""


def cmd_help(session: Session, arg: str) -> Reply:
    return Reply(HELP)


def cmd_show(session: Session, arg: str) -> Reply:
    import onnxtext

    return Reply(onnxtext.to_text(session.finished_model(), width=session.width).rstrip("\n"))


def cmd_values(session: Session, arg: str) -> Reply:
    if not session.env:
        return Reply("no values yet")
    width = max(len(n) for n in session.env)
    return Reply("\n".join(f"{n.ljust(width)}  {describe(v)}" for n, v in session.env.items()))


def _path(arg: str, what: str) -> str:
    try:
        parts = shlex.split(arg)
    except ValueError as e:
        raise StatementError(f"{what}: {e}") from None
    if len(parts) != 1:
        raise StatementError(f"usage: {what} FILE")
    return os.path.expanduser(parts[0])


def cmd_save(session: Session, arg: str) -> Reply:
    path = _path(arg, ":save")
    model = session.finished_model()
    import onnxtext

    save = getattr(onnxtext, "save", None) if _has_module("onnxtext.io") else None
    try:
        if save is not None:
            save(model, path)
        else:  # before onnxtext.io existed: same formats, written atomically
            data = model.SerializeToString() if path.endswith((".onnx", ".pb")) else onnxtext.to_text(model)
            _atomic_write(path, data)
    except OSError as e:
        raise StatementError(f"{path}: cannot write: {e.strerror or e}") from None
    outs = ", ".join(o.name for o in model.graph.output) or "none"
    return Reply(f"saved {path} ({len(model.graph.node)} nodes; outputs: {outs})")


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _atomic_write(path: str, data) -> None:
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".onnxtext-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cmd_load(session: Session, arg: str) -> Reply:
    path = _path(arg, ":load")
    return session.adopt(load_model(path), path)


def load_model(path: str) -> onnx.ModelProto:
    """A model from a text or binary file (onnxtext.load when available)."""
    import onnxtext

    if _has_module("onnxtext.io"):
        return onnxtext.load(path)
    try:
        data = open(path, "rb").read()
    except OSError as e:
        raise StatementError(f"{path}: cannot read: {e.strerror}") from None
    if path.endswith((".onnx", ".pb")):
        return onnx.load_from_string(data)
    return onnxtext.parse_model(data.decode("utf-8"), filename=path)


def cmd_undo(session: Session, arg: str) -> Reply:
    if not session.undo():
        return Reply("nothing to undo")
    g = session.model.graph
    return Reply(f"undone ({len(g.input)} inputs, {len(g.node)} nodes)")


def cmd_reset(session: Session, arg: str) -> Reply:
    session.snapshot()
    session.model = new_model()
    session.env = {}
    return Reply("new model (:undo brings the old one back)")


def cmd_opset(session: Session, arg: str) -> Reply:
    parts = arg.split()
    if not parts:
        return Reply("\n".join(f"{d or 'ai.onnx'} {v}" for d, v in session.opsets.items()))
    if len(parts) != 2 or not parts[1].isdigit():
        raise StatementError("usage: :opset DOMAIN VERSION (e.g. :opset ai.onnx 18)")
    domain = schemas.canonical_domain(parts[0].strip('"\'').replace("default", ""))
    version = int(parts[1])
    if domain == "" and version > onnx.defs.onnx_opset_version():
        raise StatementError(f"the newest ai.onnx opset is {onnx.defs.onnx_opset_version()}")
    session.snapshot()
    kept = [o for o in session.model.opset_import if schemas.canonical_domain(o.domain) != domain]
    del session.model.opset_import[:]
    session.model.opset_import.extend(kept)
    session.model.opset_import.add(domain=domain, version=version)
    note = " (nodes already in the model are not re-checked)" if session.model.graph.node else ""
    return Reply(f"opset {domain or 'ai.onnx'} {version}{note}")


def cmd_doc(session: Session, arg: str) -> Reply:
    name = arg.strip()
    if not name:
        raise StatementError("usage: :doc OP (e.g. :doc Relu)")
    import onnxtext

    domain, _, op = name.rpartition(".")
    for (fdomain, fname), f in session.functions().items():
        if fname == op and (not domain or fdomain == domain):
            return Reply(onnxtext.to_text(f).rstrip("\n"))
    domain = schemas.canonical_domain(domain)
    version = session.opsets.get(domain) or (schemas.newest_version(domain)
                                             if domain in schemas.known_domains() else 0)
    s = schemas.schema(domain, op, version) or (
        schemas.all_schemas().get((domain, op), [None])[-1])
    if s is None:
        near = schemas.suggest(op, [o for (d, o) in schemas.all_schemas() if d == domain])
        raise StatementError(f"unknown operator {name!r}" + (f" (did you mean {near!r}?)" if near else ""))
    return Reply(schemas.doc(s))


def cmd_check(session: Session, arg: str) -> Reply:
    if not _has_module("onnxtext.checker"):
        return Reply("the checker is not available in this version (onnxtext.checker is missing)", ok=False)
    import onnxtext

    try:
        # checking the text of :show makes the diagnostics' line numbers point into what :show prints
        diagnostics = onnxtext.check(onnxtext.to_text(session.finished_model(), width=session.width))
    except Exception as e:  # noqa: BLE001 - a checker bug must not end the session
        return Reply(f"the checker failed: {type(e).__name__}: {e}", ok=False)
    if not diagnostics:
        return Reply("no problems found")
    errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"]
    summary = f"{len(errors)} errors, {len(diagnostics) - len(errors)} warnings (lines refer to :show)"
    return Reply("\n".join([*(str(d) for d in diagnostics), summary]), ok=not errors)


def cmd_input(session: Session, arg: str) -> Reply:
    """``:input [TYPE] NAME [= DATA]``: the declaration is parsed as a graph input by the real parser."""
    if not arg:
        raise StatementError("usage: :input TYPE NAME [= {values}] (e.g. :input float[2, 3] x)")
    import onnxtext

    existing = {i.name: i for i in session.model.graph.input}
    head = arg.split("=", 1)[0].split()
    if len(head) == 1 and head[0] in existing:
        # a new sample for a declared input: reuse its declared type, symbolic sizes made concrete
        g = _parse_sample(session, existing[head[0]], arg)
    else:
        g = _parse_input(arg)
    if len(g.input) != 1:
        raise StatementError("declare one input at a time")
    vi = g.input[0]
    value = None
    if g.initializer:
        value = onnxtext.Evaluator(_value_model(g)).run([vi.name], {})[0]
    return session.declare_input(vi, value)


_HAS = re.compile(r"the literal has (\d+)")


def _parse_sample(session: Session, vi: onnx.ValueInfoProto, arg: str) -> onnx.GraphProto:
    """``:input x = {...}`` for an input declared ``float[N, 3] x``: the values need numeric sizes. Symbols
    take the current sample's sizes; when the count differs and one symbol is left, it takes what fits."""
    import onnxtext

    tp = onnx.TypeProto()
    tp.CopyFrom(vi.type)
    dims = tp.tensor_type.shape.dim if tp.WhichOneof("value") == "tensor_type" else []
    symbolic = [k for k, d in enumerate(dims) if not d.HasField("dim_value")]
    sample = session.env.get(vi.name)
    for k in symbolic:
        size = sample.shape[k] if isinstance(sample, np.ndarray) and sample.ndim == len(dims) else 1
        dims[k].Clear()
        dims[k].dim_value = size
    try:
        return _parse_input(onnxtext.to_text(tp).strip() + " " + arg)
    except onnxtext.ParseError as e:
        found = _HAS.search(e.message)
        known = int(np.prod([d.dim_value for k, d in enumerate(dims) if k not in symbolic[-1:]]))
        if found is None or len(symbolic) != 1 or not known or int(found.group(1)) % known:
            if symbolic:
                shape = onnxtext.to_text(vi.type).strip()
                raise StatementError(f"{vi.name!r} is {shape}: give the sample's sizes, e.g. :input "
                                     f"{onnxtext.to_text(tp).strip()} {arg}") from None
            raise
        dims[symbolic[0]].dim_value = int(found.group(1)) // known
        return _parse_input(onnxtext.to_text(tp).strip() + " " + arg)


def _parse_input(arg: str) -> onnx.GraphProto:
    import onnxtext

    prefix = f"{_INPUT_GRAPH} ("
    try:
        return onnxtext.parse_graph(f"{prefix}{arg}) => () {{}}", filename=SOURCE_NAME)
    except onnxtext.ParseError as e:
        # point into what the user typed, not into the wrapper graph
        line = f":input {arg}"
        shift = len(":input ") - len(prefix)
        column = max(1, (e.column or len(prefix) + 1) + shift) if e.line == 1 else None
        raise onnxtext.ParseError(e.message, line=1, column=column or len(line) + 1, hint=e.hint, source=line,
                                  filename=SOURCE_NAME) from None


_INPUT_GRAPH = "repl_input"


def _value_model(g: onnx.GraphProto) -> onnx.ModelProto:
    m = new_model()
    m.graph.initializer.extend(g.initializer)
    m.graph.output.extend(onnx.ValueInfoProto(name=t.name) for t in g.initializer)
    return m


def cmd_output(session: Session, arg: str) -> Reply:
    names = [n for n in arg.replace(",", " ").split() if n]
    if not names:
        outs = ", ".join(o.name for o in session.model.graph.output)
        return Reply(f"outputs: {outs}" if outs else "no outputs marked (saved models use the values no node "
                     "consumes)")
    return session.mark_outputs(names)


def cmd_quit(session: Session, arg: str) -> Reply:
    return Reply(quit=True)


COMMANDS = {
    "help": cmd_help, "show": cmd_show, "values": cmd_values, "save": cmd_save, "load": cmd_load,
    "undo": cmd_undo, "reset": cmd_reset, "opset": cmd_opset, "doc": cmd_doc, "check": cmd_check,
    "input": cmd_input, "output": cmd_output, "quit": cmd_quit, "q": cmd_quit, "exit": cmd_quit,
}
