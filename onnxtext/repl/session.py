"""The REPL's state and statement execution, independent of any terminal (tests drive it directly).

A :class:`Session` holds the model being built (a ModelProto: graph inputs, nodes, marked outputs,
model-local functions, opset imports) and a value environment (name -> value). A node statement is
validated (names defined, operator known at the imported opset, attributes, input types), then run
eagerly: a one-node model whose inputs are the environment's values is evaluated, and only on success
is the node appended to the model. Every failure leaves the model and the environment unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import onnx

from .. import schemas
from ..errors import OnnxTextError, ParseError
from . import statements
from .values import describe, format_value, random_value, type_string, value_type

GRAPH_NAME = "repl"
_UNDEFINED = re.compile(r"graph 'repl_step': value '(.*)' is used but never defined")
SOURCE_NAME = "<repl>"


@dataclass
class Reply:
    """What a statement shows: ``text`` (may be empty), ``ok`` False for errors, ``quit`` to end."""

    text: str = ""
    ok: bool = True
    quit: bool = False


def _refuse_non_utf8(proto, where: str) -> None:
    """The session works with text names: a string that is not UTF-8 (``"\\xff"``, bytes) is refused."""
    from ..non_utf8 import find

    for path, _, _, _, value in find(proto):
        shown = value.decode("utf-8", "backslashreplace")
        raise StatementError(f"{where} holds a string that is not UTF-8 ({path}: \"{shown}\"): the REPL takes text "
                             "names and strings (print, compile and check keep such bytes)")


class StatementError(Exception):
    """A user mistake in a statement: shown inline, nothing changes."""


def new_model() -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.ir_version = onnx.IR_VERSION
    m.producer_name = "onnxtext repl"
    m.graph.name = GRAPH_NAME
    m.opset_import.add(domain="", version=onnx.defs.onnx_opset_version())
    return m


class Session:
    """Model under construction + value environment + undo history. ``execute(text) -> Reply``."""

    def __init__(self, *, seed: int | None = 0, width: int = 100):
        self.rng = np.random.default_rng(seed)
        self.width = width
        self.model = new_model()
        self.env: dict = {}
        self._undo: list[dict] = []
        self._types: dict | None = None  # value name -> inferred TypeProto (symbolic dims), None: recompute
        from .commands import COMMANDS

        self._commands = COMMANDS

    # ------------------------------------------------------------------------------------ queries
    @property
    def opsets(self) -> dict[str, int]:
        return {schemas.canonical_domain(o.domain): o.version for o in self.model.opset_import}

    def defined(self) -> list[str]:
        """Every value name of the main graph, in definition order."""
        g = self.model.graph
        names = [i.name for i in g.input] + [t.name for t in g.initializer]
        names += [o for n in g.node for o in n.output if o]
        return list(dict.fromkeys(names))

    def functions(self) -> dict[tuple[str, str], onnx.FunctionProto]:
        return {(f.domain, f.name): f for f in self.model.functions}

    def types(self) -> dict:
        """Value name -> type inferred from the model (``float[B, 3]``, not the sample's ``float[2, 3]``)."""
        if self._types is None:
            from ..checker import infer_types

            try:
                self._types = infer_types(self.model)
            except Exception:  # noqa: BLE001 - inference is a help: without it values show their samples
                self._types = {}
        return self._types

    def _infer_node(self, node: onnx.NodeProto) -> dict:
        """The inferred types of a new node's outputs, from the types so far and the constant values.

        Raises StatementError when the inputs' types do not fit the operator, in the checker's words
        (``MatMul: inner dimensions differ: x is float[N, 4], W is float[3, 2]``)."""
        from ..checker.inference import infer_node, inputs_text, reason
        from ..tensors import from_array

        types = self.types()
        # constant values help (Reshape's shape); sample values do not: they are not the symbolic truth
        constants = {t.name for t in self.model.graph.initializer}
        constants.update(n.output[0] for n in self.model.graph.node if n.op_type == "Constant" and n.output)
        data = {}
        for n in node.input:
            v = self.env.get(n)
            if n in constants and isinstance(v, np.ndarray) and v.dtype == np.int64 and v.size <= 1024:
                data[n] = from_array(v, n)
        functions = {(f.domain, f.name, f.overload): f for f in self.model.functions}
        try:
            return infer_node(node, types, data, {schemas.canonical_domain(o.domain): o.version
                                                  for o in self.model.opset_import} | self.opsets,
                              list(self.model.opset_import), self.model.ir_version, functions) or {}
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as e:
            why = reason(e, node.op_type)
            if why:
                raise StatementError(f"{_op(node)}: {why}: {inputs_text(node, types)}") from None
            return {}
        except Exception:  # noqa: BLE001 - inference only adds the symbolic view; the run decides
            return {}

    # ------------------------------------------------------------------------------------ undo
    def snapshot(self) -> None:
        """Remember the state before a change (cheap: lengths and small copies; models are append-only)."""
        g = self.model.graph
        self._undo.append({
            "model": self.model, "node": len(g.node), "input": len(g.input), "output": len(g.output),
            "functions": [_copy(f) for f in self.model.functions],
            "opsets": [(o.domain, o.version) for o in self.model.opset_import], "env": dict(self.env)})

    def undo(self) -> bool:
        if not self._undo:
            return False
        s = self._undo.pop()
        self._types = None
        self.model = s["model"]
        g = self.model.graph
        for field in ("node", "input", "output"):
            del getattr(g, field)[s[field]:]
        del self.model.functions[:]
        self.model.functions.extend(s["functions"])
        del self.model.opset_import[:]
        for domain, version in s["opsets"]:
            self.model.opset_import.add(domain=domain, version=version)
        self.env = s["env"]
        return True

    # ------------------------------------------------------------------------------------ statements
    def execute(self, text: str) -> Reply:
        """Run one statement (node, function, pasted model, bare value name or ``:command``)."""
        try:
            k = statements.kind(text)
            if k == "empty":
                return Reply()
            if k == "command":
                return self._command(statements.strip_blank(text).strip())
            if k == "name":
                return self.show_value(statements.bare_name(text))
            return self._code(text)
        except ParseError as e:
            return Reply(e.format(SOURCE_NAME), ok=False)
        except (StatementError, OnnxTextError) as e:
            return Reply(f"error: {e}", ok=False)

    def _command(self, line: str) -> Reply:
        name, _, arg = line[1:].partition(" ")
        cmd = self._commands.get(name)
        if cmd is None:
            near = schemas.suggest(name, self._commands)
            hint = f" (did you mean :{near}?)" if near else ""
            raise StatementError(f"unknown command :{name}{hint}; :help lists the commands")
        return cmd(self, arg.strip())

    def show_value(self, name: str) -> Reply:
        if name in self.env:
            return Reply(format_value(name, self.env[name], self.width))
        raise StatementError(self._unknown(name))

    def _code(self, text: str) -> Reply:
        import onnxtext

        proto = onnxtext.parse(text, filename=SOURCE_NAME)
        _refuse_non_utf8(proto, "the statement")
        if isinstance(proto, onnx.NodeProto):
            return self.add_node(proto)
        if isinstance(proto, onnx.GraphProto):
            # `name (x) => (y) {...}` reads as a graph and a function alike; in the REPL it defines a function
            proto = onnxtext.parse_function(text, filename=SOURCE_NAME)
        if isinstance(proto, onnx.FunctionProto):
            return self.add_function(proto)
        return self.adopt(proto, "the pasted model")

    # ------------------------------------------------------------------------------------ nodes
    def add_node(self, node: onnx.NodeProto) -> Reply:
        self.snapshot()  # validation may import an opset: undone with the rest on failure
        try:
            notes = self._validate(node)
            inferred = self._infer_node(node)
            values = self._run(node)
        except BaseException:
            self.undo()
            raise
        self.model.graph.node.append(node)
        shown = []
        for name, value in zip(node.output, values):
            if name:
                self.env[name] = value
                shown.append(format_value(name, value, self.width))
                note = _inferred_note(inferred.get(name), value)
                if note:
                    shown.append(note)
        types = self.types()
        for name in node.output:
            if name and name in inferred:
                types[name] = inferred[name]
        return Reply("\n".join(notes + shown))

    def _unknown(self, name: str) -> str:
        near = schemas.suggest(name, self.defined())
        return f"unknown value {name!r}" + (f" (did you mean {near!r}?)" if near else "")

    def _validate(self, node: onnx.NodeProto) -> list[str]:
        """Raise StatementError naming the culprit; returns notes (e.g. an opset imported on the way)."""
        defined = set(self.defined())
        for name in node.input:
            if name and name not in defined:
                raise StatementError(self._unknown(name))
            if name and name not in self.env:
                raise StatementError(f"value {name!r} has no computed value (the model could not be run "
                                     f"up to it); see the error shown when it was loaded")
        for name in node.output:
            if name in defined:
                raise StatementError(f"{name!r} is already defined (every value is assigned once); "
                                     "use another name, or :undo")
        if len([o for o in node.output if o]) != len({o for o in node.output if o}):
            raise StatementError("the same output name appears twice")
        domain = schemas.canonical_domain(node.domain)
        if (node.domain, node.op_type) in self.functions():
            return []
        notes = []
        if domain not in self.opsets:
            if domain not in schemas.known_domains():
                raise StatementError(f"unknown operator {_op(node)!r}: domain {node.domain!r} is neither a "
                                     "known opset nor the domain of a function defined here")
            version = schemas.newest_version(domain)
            self.model.opset_import.add(domain=domain, version=version)
            notes.append(f"(imported opset {domain} {version})")
        s = schemas.schema(domain, node.op_type, self.opsets[domain])
        if s is None:
            since = schemas.introduced_in(domain, node.op_type)
            if since is not None:
                raise StatementError(f"{_op(node)} needs opset {since} of {domain or 'ai.onnx'}, this model "
                                     f"imports {self.opsets[domain]} (:opset {domain or 'ai.onnx'} {since})")
            near = schemas.suggest(node.op_type, [op for (d, op) in schemas.all_schemas() if d == domain]
                                   + [f for (d, f) in self.functions() if d == node.domain])
            raise StatementError(f"unknown operator {_op(node)!r}" + (f" (did you mean {near!r}?)" if near else ""))
        self._check_attributes(node, s)
        problem = schemas.type_errors(s, node, {n: type_string(self.env[n]) for n in node.input if n in self.env})
        if problem:
            raise StatementError(problem)
        return notes

    def _check_attributes(self, node, s) -> None:
        given = {a.name for a in node.attribute}
        for a in node.attribute:
            if a.name not in s.attributes and not a.ref_attr_name:
                near = schemas.suggest(a.name, s.attributes)
                raise StatementError(f"{node.op_type} has no attribute {a.name!r}"
                                     + (f" (did you mean {near!r}?)" if near else
                                        f"; its attributes: {', '.join(s.attributes) or 'none'}"))
            want = int(s.attributes[a.name].type) if a.name in s.attributes else 0
            if want and a.type and a.type != want:  # a kernel would fail on it with a Python TypeError
                names = {v: k.lower() for k, v in onnx.AttributeProto.AttributeType.items()}
                example = " (an element type: to = float, or its number: to = 1)" if a.name in ("to", "dtype") \
                    else ""
                raise StatementError(f"attribute {a.name!r} of {node.op_type} must be {names[want]}, not "
                                     f"{names.get(a.type, a.type)}{example}")
        for name, a in s.attributes.items():
            if a.required and name not in given:
                raise StatementError(f"{node.op_type} needs attribute {name!r} "
                                     f"({schemas.signature(s).split('  ')[0]})")

    def _run(self, node: onnx.NodeProto) -> list:
        """Evaluate ``node`` alone: a model whose inputs are all current values and whose outputs are its."""
        import onnxtext

        m = onnx.ModelProto()
        m.ir_version = self.model.ir_version
        m.opset_import.extend(self.model.opset_import)
        m.functions.extend(self.model.functions)
        g = m.graph
        g.name = "repl_step"
        g.input.extend(onnx.ValueInfoProto(name=n) for n in self.env)
        g.node.append(node)
        g.output.extend(onnx.ValueInfoProto(name=o) for o in node.output if o)
        try:
            results = onnxtext.Evaluator(m).run(None, dict(self.env))
        except KeyboardInterrupt:
            raise StatementError(f"{_op(node)} interrupted") from None
        except OnnxTextError as e:
            m = _UNDEFINED.search(str(e))
            if m:  # a name read by a subgraph attribute: the step model's name means nothing to the user
                raise StatementError(self._unknown(m.group(1)) + f" (read inside a {_op(node)} subgraph)") from None
            raise StatementError(f"{_op(node)} failed: {_strip_node_prefix(str(e))}") from None
        except Exception as e:  # noqa: BLE001 - a kernel bug must not end the session
            raise StatementError(f"{_op(node)} failed: {type(e).__name__}: {e}") from None
        out = iter(results)
        return [next(out) if o else None for o in node.output]

    # ------------------------------------------------------------------------------------ functions
    def add_function(self, f: onnx.FunctionProto) -> Reply:
        if not f.domain:
            f.domain = "local"
        self.snapshot()
        kept = [x for x in self.model.functions if (x.domain, x.name) != (f.domain, f.name)]
        replaced = len(kept) != len(self.model.functions)
        del self.model.functions[:]
        self.model.functions.extend(kept + [f])
        if f.domain not in self.opsets:
            self.model.opset_import.add(domain=f.domain, version=1)
        if not f.opset_import:
            f.opset_import.extend(o for o in self.model.opset_import if o.domain != f.domain)
        call = f"{', '.join(f.output)} = {f.domain}.{f.name}({', '.join(f.input)})"
        return Reply(f"function {f.domain}.{f.name} {'replaced' if replaced else 'defined'}; call it as: {call}")

    # ------------------------------------------------------------------------------------ inputs, outputs
    def declare_input(self, vi: onnx.ValueInfoProto, value=None) -> Reply:
        """Add graph input ``vi`` (or give an existing input a new sample value) and show its value."""
        existing = {i.name: i for i in self.model.graph.input}
        if vi.name not in existing and not vi.HasField("type"):
            raise StatementError(f"give the input a type, e.g. :input float[2] {vi.name}")
        if value is None:
            tp = vi.type if vi.HasField("type") else existing.get(vi.name, vi).type
            try:
                value = random_value(tp, self.rng, vi.name)
            except (ValueError, KeyError) as e:
                raise StatementError(str(e)) from None
        if vi.name in existing:
            return self._resample(vi.name, value)
        if vi.name in self.defined():
            raise StatementError(f"{vi.name!r} is already defined by a node; inputs need a new name")
        self.snapshot()
        self.model.graph.input.append(vi)
        self._types = None
        self.env[vi.name] = value
        return Reply(format_value(vi.name, value, self.width))

    def _resample(self, name: str, value) -> Reply:
        env = dict(self.env)
        env[name] = value
        problem = self.recompute(env)
        self.snapshot()
        self.env = env
        text = format_value(name, value, self.width)
        return Reply(text + (f"\nnote: {problem}" if problem else ""))

    def recompute(self, env: dict) -> str | None:
        """Run the whole graph again from the inputs and initializers in ``env``, updating ``env``.

        Returns a message when the model cannot be run (the values computed so far are kept).
        """
        import onnxtext

        g = self.model.graph
        names = [o for n in g.node for o in n.output if o]
        if not names:
            return None
        m = onnx.ModelProto()
        m.CopyFrom(self.model)
        del m.graph.output[:]
        m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
        feeds = {i.name: env[i.name] for i in g.input if i.name in env
                 and i.name not in {t.name for t in g.initializer}}
        try:
            ev = onnxtext.Evaluator(m)
            env.update(zip(names, ev.run(names, feeds)))
        except Exception as e:  # noqa: BLE001 - reported to the user; the session goes on
            return f"the model could not be run: {_strip_node_prefix(str(e))}"
        return None

    def mark_outputs(self, names: list[str]) -> Reply:
        defined = set(self.defined())
        for name in names:
            if name not in defined:
                raise StatementError(self._unknown(name))
        current = {o.name for o in self.model.graph.output}
        new = [n for n in dict.fromkeys(names) if n not in current]
        if not new:
            return Reply(f"already outputs: {', '.join(names)}")
        self.snapshot()
        self.model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in new)
        return Reply("outputs: " + ", ".join(o.name for o in self.model.graph.output))

    # ------------------------------------------------------------------------------------ whole models
    def adopt(self, model: onnx.ModelProto, where: str, samples: dict | None = None) -> Reply:
        """Continue from ``model``: its inputs get ``samples`` or random values, then the graph is run."""
        import onnxtext

        _refuse_non_utf8(model, where)
        env: dict = {}
        notes = []
        g = model.graph
        inits = {t.name for t in g.initializer}
        if g.initializer:
            try:
                env.update(zip(sorted(inits), onnxtext.Evaluator(_initializers_only(model)).run(sorted(inits), {})))
            except Exception as e:  # noqa: BLE001
                notes.append(f"note: initializers could not be decoded: {e}")
        for vi in g.input:
            if vi.name in inits:
                continue
            if samples and vi.name in samples:
                env[vi.name] = samples[vi.name]
                continue
            try:
                env[vi.name] = random_value(vi.type, self.rng, vi.name)
            except (ValueError, KeyError) as e:
                notes.append(f"note: input {vi.name!r} has no sample value: {e}")
        self.snapshot()
        self.model = model
        self._types = None
        if not model.graph.name:
            model.graph.name = GRAPH_NAME
        problem = self.recompute(env)
        self.env = env
        if problem:
            notes.append(f"note: {problem}")
        summary = (f"loaded {where}: {len(g.input) - len(inits)} inputs, {len(g.node)} nodes, "
                   f"{len(g.output)} outputs, {len(model.functions)} functions")
        inputs = [f"  {vi.name}: {describe(env[vi.name])}" for vi in g.input if vi.name in env
                  and vi.name not in inits]
        return Reply("\n".join([summary, *inputs, *notes]))

    def finished_model(self) -> onnx.ModelProto:
        """The model as it would be saved: outputs default to the values no node consumes, typed."""
        m = onnx.ModelProto()
        m.CopyFrom(self.model)
        g = m.graph
        if not g.output:
            used = {i for n in g.node for i in n.input}
            leaves = [o for n in g.node for o in n.output if o and o not in used]
            g.output.extend(onnx.ValueInfoProto(name=n) for n in leaves)
        symbolic = any(not d.HasField("dim_value") for i in g.input for d in i.type.tensor_type.shape.dim)
        self._types = None  # the whole-model pass propagates shapes through Shape/Reshape chains
        types = self.types()
        for out in g.output:
            if out.HasField("type"):
                continue
            if out.name in types:  # inferred from the inputs' declared types: float[B, 3], symbols kept
                out.type.CopyFrom(types[out.name])
                continue
            if out.name not in self.env:
                continue
            tp = value_type(self.env[out.name])
            if tp is None:
                continue
            if symbolic and tp.HasField("tensor_type"):
                # sample shapes are not the model's shapes when inputs have symbolic dimensions
                for d in tp.tensor_type.shape.dim:
                    d.Clear()
            out.type.CopyFrom(tp)
        return m


def _inferred_note(tp, value) -> str | None:
    """``  type: float[B, 3]`` when the inferred type says more than the sample value (symbolic sizes)."""
    if tp is None or not isinstance(value, np.ndarray) or tp.WhichOneof("value") != "tensor_type":
        return None
    dims = tp.tensor_type.shape.dim
    if not tp.tensor_type.HasField("shape") or not any(d.HasField("dim_param") for d in dims):
        return None
    from ..checker.inference import type_text

    return f"  type: {type_text(tp)} (inferred; this sample is {list(value.shape)})"


def _copy(msg):
    new = type(msg)()
    new.CopyFrom(msg)
    return new


def _op(node: onnx.NodeProto) -> str:
    return f"{node.domain}.{node.op_type}" if schemas.canonical_domain(node.domain) else node.op_type


def _strip_node_prefix(msg: str) -> str:
    # the evaluator names the node by its index in the one-node step model, which means nothing here
    if msg.startswith("node #0 (") and "): " in msg:
        return msg.split("): ", 1)[1]
    return msg


def _initializers_only(model: onnx.ModelProto) -> onnx.ModelProto:
    """A model whose outputs are ``model``'s initializers: the evaluator decodes them for us."""
    m = onnx.ModelProto()
    m.ir_version = model.ir_version
    m.opset_import.extend(model.opset_import)
    m.graph.name = "initializers"
    m.graph.initializer.extend(model.graph.initializer)
    m.graph.output.extend(onnx.ValueInfoProto(name=t.name) for t in model.graph.initializer)
    return m
