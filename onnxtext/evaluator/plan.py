"""Prepared execution plans: everything about a graph that does not depend on the feeds, done once.

A :class:`GraphPlan` is built once per graph (main graph, subgraph of If/Loop/Scan, function body)
and run many times. Preparing a plan resolves each node's kernel for the imported opset, converts its
attributes and fills schema defaults, decodes initializers, folds nodes that depend only on constants
(initializers, Constant nodes and what is computed from them), rewrites the step list with the
optimizer's rules (:mod:`.optimizer`, at the Evaluator's level, minus the disabled rules), replaces
the kernels that have a prepared form (:func:`.registry.prepares`) by it, and
computes for each value the step after which it is no longer needed, so intermediates are released
as early as possible. Level 0 does neither folding nor rewrites: every node is its own step.

Running a plan is a tight loop over prepared steps, :class:`~.steps.Step` records
``(fn, inputs, outputs, attrs, free, info, context, last)`` where ``info`` is the
:class:`~.steps.StepInfo` (node, path, opset, subgraph plans) used by context kernels and error
messages. Values live in one dict per run (``env``); the empty name maps to ``None`` so absent
optional inputs need no test per input. A run with a trace or a timeout takes a second loop
(:meth:`GraphPlan.execute_controlled`).

Subgraphs read outer-scope values: a plan lists the names it takes from the enclosing scope
(``free``), computed at preparation, so running a subgraph copies only those values.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np
from onnx import AttributeProto

from .. import schemas, tensors
from ..errors import EvalError, OnnxTextError
from .optimizer import MAX_LEVEL, optimize
from .optimizer.graph import Constants
from .plan_code import compile_scoped, compile_steps
from .registry import lookup, normalize_domain, prepared_form
from .steps import (CONTROL, UNUSED, KernelContext, RunControl, RunStopped, Step, StepInfo,  # noqa: F401
                    describe_node, describe_value, step_error)

_A = AttributeProto


# ------------------------------------------------------------------------------------------ attributes
def attribute_value(attr: AttributeProto, base_dir: str | None = None):
    """Python value of an AttributeProto (see the registry's calling convention)."""
    t = attr.type
    if t == _A.FLOAT:
        return attr.f
    if t == _A.INT:
        return attr.i
    if t == _A.STRING:
        return _text(attr.s)
    if t == _A.TENSOR:
        return tensors.to_array(attr.t, base_dir)
    if t == _A.GRAPH:
        return attr.g
    if t == _A.SPARSE_TENSOR:
        return attr.sparse_tensor
    if t == _A.TYPE_PROTO:
        return attr.tp
    if t == _A.FLOATS:
        return list(attr.floats)
    if t == _A.INTS:
        return list(attr.ints)
    if t == _A.STRINGS:
        return [_text(s) for s in attr.strings]
    if t == _A.TENSORS:
        return [tensors.to_array(x, base_dir) for x in attr.tensors]
    if t == _A.GRAPHS:
        return list(attr.graphs)
    if t == _A.SPARSE_TENSORS:
        return list(attr.sparse_tensors)
    if t == _A.TYPE_PROTOS:
        return list(attr.type_protos)
    raise EvalError(f"attribute {attr.name!r} has no type")


def _text(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def find_schema(op: str, domain: str, version: int):
    """The onnx.defs schema of ``domain::op`` in force at opset ``version``, or None (see :mod:`onnxtext.schemas`)."""
    return schemas.schema(domain, op, version)


_DEFAULTS: dict[tuple[str, str, int], dict] = {}


def schema_defaults(op: str, domain: str, version: int) -> dict:
    """Attribute defaults declared by the onnx.defs schema of ``domain::op`` at opset ``version``, as values."""
    key = (op, domain, version)
    d = _DEFAULTS.get(key)
    if d is None:
        d = {name: attribute_value(a) for name, a in schemas.defaults(domain, op, version).items()}
        _DEFAULTS[key] = d
    return d


def resolve_attributes(attributes, func_attrs: dict | None) -> list[AttributeProto]:
    """Attributes of a node with ``ref_attr_name`` references replaced by the caller's attributes.

    A reference to an attribute the caller did not set drops the attribute (the schema default, if
    any, then applies), as the IR spec says for function bodies.
    """
    out = []
    for a in attributes:
        if a.ref_attr_name:
            ref = (func_attrs or {}).get(a.ref_attr_name)
            if ref is None:
                continue
            a2 = AttributeProto()
            a2.CopyFrom(ref)
            a2.name = a.name
            a = a2
        out.append(a)
    return out


# ------------------------------------------------------------------------------------------ plans
def _no_inputs(env) -> tuple:
    return ()


#: plain runs of a plan before its steps become one generated function (:mod:`.plan_code`): plans run
#: once or twice (a node test, a subgraph entered once) do not pay for the compilation
COMPILE_AFTER = 3


class GraphPlan:
    """A graph prepared for repeated execution (see the module docstring)."""

    __slots__ = ("name", "input_names", "output_names", "constants", "free", "steps", "keep", "_loop", "_runs",
                 "_compiled", "_scoped")

    def __init__(self, name, input_names, output_names, constants, free, steps, keep):
        self.name = name
        self.input_names = input_names
        self.output_names = output_names
        self.constants = constants
        self.free = free
        self.steps = steps
        self.keep = keep
        self._loop = None  # what execute() iterates, built from steps on first use (see _loop_records)
        self._runs = 0  # plain runs so far: the steps are compiled into one function at COMPILE_AFTER
        self._compiled = None  # that function (plan_code.compile_steps), False when the plan keeps the loop
        self._scoped = None  # run_in_scope's function (plan_code.compile_scoped), False when it has none

    def _loop_records(self) -> list:
        """Per step ``(fn, get, kind, outputs, attrs, free, info, context, step)``: ``get(env)`` is an
        ``operator.itemgetter`` of the inputs (one C call instead of a list built in Python: about
        0.3-0.7 us less per step); ``kind`` is 0 for a plain call of one input without attributes
        (``get`` returns the argument itself), 1 for a plain call of several inputs without
        attributes (no keyword unpacking of an empty dict: the usual fused step), 2 otherwise."""
        records = []
        for st in self.steps:
            fn, ins, outs, attrs, free, info, context, _ = st
            get = itemgetter(*ins) if ins else _no_inputs
            kind = 2 if context or attrs else 0 if len(ins) == 1 else 1
            records.append((fn, get, kind, outs, attrs, free, info, context, st))
        self._loop = records
        return records

    # ---------------------------------------------------------------- running
    def bind_outer(self, outer: dict) -> dict:
        """The starting environment: constants, the empty name, and the outer values this plan reads
        (and the run's :class:`~.steps.RunControl`, when the run has one)."""
        env = dict(self.constants)
        env[""] = None
        try:
            for n in self.free:
                env[n] = outer[n]
        except KeyError as e:
            raise EvalError(f"graph {self.name!r} reads {e.args[0]!r}, which no enclosing scope defines") from None
        control = outer.get(CONTROL)
        if control is not None:
            env[CONTROL] = control
        return env

    def run_bound(self, base: dict, inputs) -> list:
        env = base.copy()
        for n, v in zip(self.input_names, inputs):
            env[n] = v
        self.execute(env)
        return [env[n] for n in self.output_names]

    def run_in_scope(self, scope: dict) -> list:
        """The output values of this plan run on ``scope``, which holds the outer values it reads and
        its inputs (an If branch's enclosing values; the usual call's feeds, for the main plan).

        From the :data:`COMPILE_AFTER`-th run on, a plain run (no trace or timeout) is one generated
        function reading ``scope`` itself, with the plan's values in locals (:func:`.plan_code.compile_scoped`:
        no dict bound per call); before, or when the plan does not fit it, :meth:`bind_outer` and
        :meth:`execute` (which compiles its own function then). A missing output is a KeyError."""
        run = self._scoped
        if run is None and self._runs >= COMPILE_AFTER - 1 and CONTROL not in scope:
            run = self._scoped = compile_scoped(self) or False
        if run and CONTROL not in scope:
            return run(scope)
        env = self.bind_outer(scope)
        for n in self.input_names:
            if n in scope:
                env[n] = scope[n]
        self.execute(env)
        return [env[n] for n in self.output_names]

    def run_positional(self, inputs, outer: dict) -> list:
        env = self.bind_outer(outer)  # (a fresh dict already: no second copy as in run_bound)
        for n, v in zip(self.input_names, inputs):
            env[n] = v
        self.execute(env)
        return [env[n] for n in self.output_names]

    def execute(self, env: dict) -> None:
        """Run every step on ``env`` (the hot loop: no allocation beyond arguments and results).

        A run with a :class:`~.steps.RunControl` (trace, timeout) takes :meth:`execute_controlled`;
        Ctrl-C stops either loop with an EvalError naming the node reached."""
        if CONTROL in env:
            return self.execute_controlled(env, env[CONTROL])
        run = self._compiled
        if run:
            return run(env)
        if run is None:
            self._runs += 1
            if self._runs >= COMPILE_AFTER:
                self._compiled = compile_steps(self.steps, self.keep) or False
        st = None
        try:
            for fn, get, kind, outs, attrs, free, info, context, st in self._loop or self._loop_records():
                if kind == 0:
                    out = fn(get(env))
                elif kind == 1:
                    out = fn(*get(env))
                elif len(st[1]) == 1:
                    out = fn(KernelContext(info, env), get(env), **attrs) if context else fn(get(env), **attrs)
                elif context:
                    out = fn(KernelContext(info, env), *get(env), **attrs)
                else:
                    out = fn(*get(env), **attrs)
                if type(out) is tuple:
                    for n, v in zip(outs, out):
                        env[n] = v
                else:
                    env[outs[0]] = out
                for n in free:
                    env.pop(n, None)
        except (Exception, KeyboardInterrupt) as e:
            raise step_error(st, env, e) from e

    def execute_controlled(self, env: dict, control: RunControl) -> None:
        """:meth:`execute` checking the deadline before each step and calling ``control.trace``
        after it with the step and its outputs (name -> value)."""
        st = None
        trace = control.trace
        try:
            for st in self.steps:
                control.check(st)
                fn, ins, outs, attrs, free, info, context, _ = st
                if context:
                    out = fn(KernelContext(info, env), *[env[n] for n in ins], **attrs)
                else:
                    out = fn(*[env[n] for n in ins], **attrs)
                if type(out) is tuple:
                    for n, v in zip(outs, out):
                        env[n] = v
                else:
                    env[outs[0]] = out
                if trace is not None:
                    trace(st, {n: env[n] for n in outs if n != UNUSED and n in env})
                for n in free:
                    env.pop(n, None)
        except (Exception, KeyboardInterrupt) as e:
            raise step_error(st, env, e) from e


class Preparation:
    """What preparing a graph needs: the evaluator, the opsets in force, function attributes, and the
    true constants of the enclosing graphs (``outer``: for a subgraph, see :meth:`scoped`)."""

    __slots__ = ("evaluator", "opsets", "func_attrs", "local_functions", "level", "disable", "outer")

    def __init__(self, evaluator, opsets: dict, func_attrs: dict | None = None, local_functions=None):
        self.evaluator = evaluator
        self.opsets = opsets
        self.func_attrs = func_attrs
        self.local_functions = evaluator.functions if local_functions is None else local_functions
        # the optimizer's level and disabled rules (see .optimizer), set by the Evaluator
        self.level = getattr(evaluator, "optimize", MAX_LEVEL)
        self.disable = getattr(evaluator, "disabled_rules", frozenset())
        self.outer: OuterConstants | None = None

    def child(self) -> Preparation:
        return self

    def scoped(self, constants: Constants) -> Preparation:
        """This preparation for the nodes of a graph whose true constants are ``constants`` (a live
        view: values folded later are in it too), so that its subgraphs take them as constants."""
        p = Preparation.__new__(Preparation)
        for name in Preparation.__slots__:
            setattr(p, name, getattr(self, name))
        p.outer = OuterConstants(constants, self.outer)
        return p


class OuterConstants:
    """The true constants of a graph and of the graphs enclosing it, innermost first."""

    __slots__ = ("constants", "parent")

    def __init__(self, constants: Constants, parent: OuterConstants | None):
        self.constants, self.parent = constants, parent

    def find(self, name):
        """``(True, value)`` when ``name`` is a constant of an enclosing graph, else ``(False, None)``."""
        scope = self
        while scope is not None:
            if name in scope.constants:
                return True, scope.constants.get(name)
            scope = scope.parent
        return False, None


def prepare_graph(graph, prep: Preparation, *, external=(), keep=(), outputs=None, overridden=None,
                  path: str = "graph") -> GraphPlan:
    """Prepare ``graph``: see the module docstring.

    ``external`` names initializers whose current value comes from the enclosing scope at run time
    (training state variables): they are neither decoded nor folded. ``keep`` are extra names to keep
    alive; ``outputs`` overrides the graph's outputs (and prunes nodes not needed for them).
    ``overridden`` names the initializers listed as graph inputs that the feeds replace: only those
    are not constants (None: every such initializer, as for subgraphs fed positionally). The main
    graph gets one plan per set of overridden initializers, so the usual call, which feeds none of
    them, folds everything computed from initializers (the light models' ConstantOfShape weights;
    onnxruntime folds them too at session creation). ``path`` is the graph's checker-style path
    (``graph``, ``graph.node[2].attribute[body].g``, ``functions[0]``): each step's node gets
    ``path.node[i]``.
    """
    input_names = [i.name for i in graph.input]
    output_names = list(outputs) if outputs is not None else [o.name for o in graph.output]
    constants = {}
    free_names: list[str] = []
    for init in graph.initializer:
        if init.name in external:
            free_names.append(init.name)
        else:
            constants[init.name] = prep.evaluator.decode_initializer(init)
    for sp in graph.sparse_initializer:
        from .kernels.core import sparse_to_dense
        constants[sp.values.name] = sparse_to_dense(sp, prep.evaluator.base_dir)
    # initializers that are also graph inputs are defaults a feed may override: not constants
    const_names = set(constants) - set(input_names if overridden is None else overridden)
    defined = set(input_names) | set(constants) | set(free_names) | {""}

    nodes = list(enumerate(graph.node))
    if outputs is not None:
        nodes = _needed_nodes(nodes, set(output_names) | set(keep))
    produced_later = {o for _, n in nodes for o in n.output}
    folding = prep.level > 0 and "constant_folding" not in prep.disable
    origin: dict[str, StepInfo] = {}  # output name -> the node computing it (steps name the last node they cover)
    # a subgraph reading a true constant of an enclosing graph (If/Loop/Scan bodies slicing the model's
    # weights, silero-vad's LSTM) holds it as a constant of its own, so what it computes from it is folded
    outer = prep.outer if folding else None
    if folding:
        prep = prep.scoped(Constants(constants, const_names))

    raw_steps = []  # (step tuple, used names)
    for index, node in nodes:
        info, fn, attrs, context = prepare_node(node, index, prep, graph, f"{path}.node[{index}]")
        for o in node.output:
            origin[o] = info
        used = [n for n in node.input]
        for g, plan in info.subplans.values():
            used.extend(plan.free)
        for n in used:
            if n not in defined:
                if n in produced_later:
                    raise EvalError(f"{info.describe()} uses {n!r} before the node that computes it "
                                    "(nodes must be in topological order)")
                defined.add(n)
                found, value = outer.find(n) if outer is not None else (False, None)
                if found:
                    constants[n] = value
                    const_names.add(n)
                else:
                    free_names.append(n)
        outs = tuple(o if o else UNUSED for o in node.output) or (UNUSED,)
        step = (fn, tuple(node.input), outs, attrs, (), info, context)
        if folding and _foldable(info, used, const_names):
            values = _fold(step, constants)
            if values is not None:
                info.folded = True
                for n, v in zip(outs, values):
                    if n != UNUSED:
                        constants[n] = v
                        const_names.add(n)
                        defined.add(n)
                continue
        defined.update(node.output)
        raw_steps.append((step, used))

    keep_set = set(output_names) | set(keep)
    if prep.level > 0:
        known = Constants(constants, const_names)  # a view: the constants folded by the passes are in it too
        raw_steps = optimize(raw_steps, keep_set, known, prep.level, prep.disable)
    last_use: dict[str, int] = {}
    for i, (step, used) in enumerate(raw_steps):
        for n in used:
            last_use[n] = i
    steps = []
    for i, (step, used) in enumerate(raw_steps):
        free = {n for n in used if last_use.get(n) == i and n not in keep_set and n}
        free.update(n for n in step[2] if n not in last_use and n not in keep_set)
        fn, ins, outs, attrs, _, info, context = step
        if prep.level > 0 and not context:
            fn, attrs = _prepared_kernel(fn, ins, attrs, constants, const_names)
        steps.append(Step(fn, ins, outs, attrs, tuple(free), info, context, origin.get(outs[0], info)))
    needed = set(last_use) | keep_set
    for k in [k for k in constants if k not in needed and k not in input_names]:
        del constants[k]  # (in place: subgraphs prepared later see the same constants through prep.outer)
        const_names.discard(k)
    for n in output_names:
        if n and n not in defined and n not in free_names:
            free_names.append(n)
    return GraphPlan(graph.name, input_names, output_names, constants, tuple(free_names), steps, keep_set)


def _prepared_kernel(fn, ins, attrs, constants, const_names):
    """``(fn, attrs)`` of a step, or its kernel's prepared form (:func:`.registry.prepares`) with no
    attributes left to pass: called once per step at levels above 0."""
    prepare = prepared_form(fn)
    if prepare is None:
        return fn, attrs
    try:
        run = prepare(attrs, tuple(constants.get(n) if n in const_names else None for n in ins))
    except Exception:  # noqa: BLE001 - attributes the kernel refuses: it says why at run time
        run = None
    return (fn, attrs) if run is None else (run, {})


def _needed_nodes(nodes, wanted: set) -> list:
    """The ``(index, node)`` pairs needed to compute ``wanted`` (subgraph reads of outer values count as inputs)."""
    keep = []
    need = set(wanted)
    for index, node in reversed(nodes):
        if any(o in need for o in node.output):
            keep.append((index, node))
            need.update(node.input)
            for a in node.attribute:
                for g in ([a.g] if a.type == _A.GRAPH else list(a.graphs)):
                    need.update(_graph_reads(g))
    return keep[::-1]


def _graph_reads(graph) -> set:
    names = set()
    for node in graph.node:
        names.update(node.input)
        for a in node.attribute:
            for g in ([a.g] if a.type == _A.GRAPH else list(a.graphs)):
                names |= _graph_reads(g)
    names.update(o.name for o in graph.output)
    return names


def _foldable(info: StepInfo, used, const_names) -> bool:
    if not all(n in const_names or not n for n in used):
        return False
    schema = find_schema(info.node.op_type, info.domain, info.opset or 0)
    # only schema ops declared deterministic (random ops, Dropout, control flow are not)
    return schema is not None and not schema.non_deterministic and not info.subplans


def _fold(step, constants):
    """Outputs of a step computed from constants, or None when it fails (then it runs normally)."""
    fn, ins, outs, attrs, _, info, context = step
    try:
        args = [constants[n] if n else None for n in ins]
        with np.errstate(all="ignore"):  # inf/nan are values, as at run time
            out = fn(KernelContext(info, constants), *args, **attrs) if context else fn(*args, **attrs)
    except Exception:  # noqa: BLE001 - the node fails at run time instead, with a proper message
        return None
    return out if type(out) is tuple else (out,)


def prepare_node(node, index: int, prep: Preparation, graph=None, path: str | None = None):
    """(StepInfo, fn, attrs, context) of one node: a kernel, a model-local or a schema function."""
    from .functions import local_function_call, schema_function_call

    domain = normalize_domain(node.domain)
    version = prep.opsets.get(domain)
    info = StepInfo(node, index, version, domain, prep, graph, path)
    attributes = resolve_attributes(node.attribute, prep.func_attrs)
    base_dir = prep.evaluator.base_dir
    fkey = (node.domain, node.op_type, getattr(node, "overload", ""))
    if fkey in prep.local_functions:
        fn = local_function_call(prep.local_functions[fkey], attributes, info)
        return info, fn, {}, True
    if version is None:
        raise EvalError(f"{info.describe()}: domain {node.domain!r} is not imported by the model")
    k = lookup(node.op_type, domain, version)
    if k is None:
        fn = schema_function_call(node, attributes, info)
        if fn is None:
            raise EvalError(f"{info.describe()}: no kernel for {node.domain or 'ai.onnx'}::{node.op_type} "
                            f"at opset {version}")
        return info, fn, {}, True
    attrs = dict(schema_defaults(node.op_type, domain, version))
    try:
        for a in attributes:
            if type(a.name) is not str:  # (protobuf hands over a name that is not UTF-8 as bytes)
                raise EvalError(f"{info.describe()}: attribute name {a.name!r} is not UTF-8: no operator has it")
            attrs[a.name] = attribute_value(a, base_dir)
    except OnnxTextError as e:
        raise EvalError(f"{info.describe()}: {e}") from None
    for a in attributes:
        if a.type in (_A.GRAPH, _A.GRAPHS):
            # the kernel receives the GraphProto objects stored in attrs: key their plans by them
            value = attrs[a.name]
            graphs = value if isinstance(value, list) else [value]
            for position, g in enumerate(graphs):
                sub = f"{info.path}.attribute[{a.name}]" + \
                    (f".graphs[{position}]" if isinstance(value, list) else ".g")
                info.subpaths[id(g)] = sub
                info.subplans[id(g)] = (g, prepare_graph(g, prep.child(), path=sub))
    return info, k.fn, attrs, k.context
