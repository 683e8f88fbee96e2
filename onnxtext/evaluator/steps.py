"""What a prepared plan is made of: named step records, their metadata, and a run's controls.

A :class:`Step` is a NamedTuple ``(fn, inputs, outputs, attrs, free, info, context, last)``: the run
loop unpacks it at tuple speed, while tools (the trace hook, error messages, tests) read it by name.
``info`` is what the kernel was prepared with (a context kernel's node; for a step a rewrite made of
several nodes, the node the rewrite chose, usually its first, which error messages name); ``last``
is the node computing the step's outputs, which ``step.node`` and ``step.path`` report.

A :class:`RunControl` carries what a caller asked of one run beyond its feeds: a ``trace`` callback
``trace(step, outputs)`` called after each executed step (subgraph and function bodies included) and
a deadline (``timeout=``). It travels in the run's value dict under :data:`CONTROL`, so subgraph
plans run from a control-flow kernel find it without any kernel knowing about it; a run without one
takes the plain loop, which pays nothing for either.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from ..errors import EvalError

#: placeholder name for outputs a node leaves unnamed (its value is dropped right away)
UNUSED = "\x00unused"
#: the key of a run's :class:`RunControl` in its value dict (absent in ordinary runs)
CONTROL = "\x00control"


# ------------------------------------------------------------------------------------------ describing
def describe_node(node, index: int | None = None) -> str:
    """``node 'name' (domain::Op)`` for messages; unnamed nodes are named by their position."""
    domain = node.domain or "ai.onnx"
    who = repr(node.name) if node.name else f"#{index}" if index is not None else "<unnamed>"
    return f"node {who} ({domain}::{node.op_type})"


def describe_value(name: str, v) -> str:
    """``name: float32[2, 3]`` (or sequence/map/none) for messages."""
    if v is None:
        kind = "none"
    elif isinstance(v, np.ndarray):
        kind = f"{v.dtype}{list(v.shape)}"
    elif isinstance(v, list):
        kind = f"sequence[{len(v)}]" + (f" of {describe_value('', v[0]).strip()}" if v else "")
    elif isinstance(v, dict):
        kind = f"map[{len(v)}]"
    else:
        kind = type(v).__name__
    return f"{name}: {kind}" if name else kind


# ------------------------------------------------------------------------------------------ records
class StepInfo:
    """Per-node metadata: the node, where it is (``path``, checker-style), its opset, subgraph plans."""

    __slots__ = ("node", "index", "path", "opset", "domain", "subplans", "subpaths", "prep", "folded", "graph")

    def __init__(self, node, index, opset, domain, prep, graph=None, path=None):
        self.graph = graph  # the GraphProto holding the node (for ops like Gradient that read it)
        self.node = node
        self.index = index
        self.path = path if path is not None else f"graph.node[{index}]"
        self.opset = opset
        self.domain = domain
        self.subplans: dict[int, tuple] = {}
        self.subpaths: dict[int, str] = {}  # id(graph attribute) -> its path
        self.prep = prep
        self.folded = False

    def describe(self) -> str:
        return describe_node(self.node, self.index)

    def subplan(self, graph):
        """The prepared plan of a graph attribute of this node (prepared on first use if needed)."""
        entry = self.subplans.get(id(graph))
        if entry is None or entry[0] is not graph:
            from .plan import prepare_graph

            path = self.subpaths.get(id(graph), f"{self.path}.attribute[?].g")
            entry = (graph, prepare_graph(graph, self.prep.child(), path=path))
            self.subplans[id(graph)] = entry
        return entry[1]


class Step(NamedTuple):
    """One executed step of a plan (see the module docstring)."""

    fn: Callable
    inputs: tuple
    outputs: tuple
    attrs: dict
    free: tuple
    info: StepInfo
    context: bool
    last: StepInfo

    @property
    def node(self):
        """The NodeProto this step stands for (the last one, for a step covering several)."""
        return self.last.node

    @property
    def path(self) -> str:
        """The checker-style path of :attr:`node`, e.g. ``graph.node[2].attribute[body].g.node[0]``."""
        return self.last.path


class KernelContext:
    """What a ``context=True`` kernel sees: the node, its opset, and a way to run subgraphs."""

    __slots__ = ("info", "scope")

    def __init__(self, info: StepInfo, scope: dict):  # (one per context step run: two stores, nothing else)
        self.info = info
        self.scope = scope

    @property
    def evaluator(self):
        """The Evaluator running the model."""
        return self.info.prep.evaluator

    @property
    def node(self):
        return self.info.node

    @property
    def opset(self) -> int:
        return self.info.opset

    @property
    def graph(self):
        """The GraphProto that holds this node (``ctx.scope`` has the values computed so far)."""
        return self.info.graph

    @property
    def num_outputs(self) -> int:
        return len(self.info.node.output)

    @property
    def rng(self):
        return self.evaluator.rng

    @property
    def control(self):
        """The run's :class:`RunControl` (None in an ordinary run): pass it on to isolated scopes."""
        return self.scope.get(CONTROL)

    def run_graph(self, graph, inputs, scope=None):
        """Run a graph attribute of this node with positional ``inputs``; returns its outputs (a list)."""
        plan = self.info.subplan(graph)
        return plan.run_positional(inputs, self.scope if scope is None else scope)

    def graph_runner(self, graph):
        """A function ``inputs -> outputs`` running a graph attribute many times (Loop, Scan bodies).

        Outer-scope values are bound once, so each call costs only the body's own steps.
        """
        plan = self.info.subplan(graph)
        base = plan.bind_outer(self.scope)
        return lambda inputs: plan.run_bound(base, inputs)


class RunControl:
    """A run's trace callback and deadline (see the module docstring)."""

    __slots__ = ("trace", "deadline", "timeout")

    def __init__(self, trace=None, timeout: float | None = None):
        if timeout is not None and not timeout > 0:
            raise EvalError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.trace = trace
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def check(self, step) -> None:
        """Raise when the deadline has passed (called before each step)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise RunStopped(f"timed out after {self.timeout:g} s")


class RunStopped(Exception):
    """A run stopped between steps (timeout, interrupt); :func:`step_error` names the node reached."""


# ------------------------------------------------------------------------------------------ errors
def step_error(st, env, e) -> Exception:
    """An EvalError naming the failing node (name, op, domain; ``.path``), with its inputs' types and shapes.

    The error carries ``.path`` (checker-style path of the node, the innermost one for a failure in a
    subgraph or function body) and ``.node`` (the NodeProto), so a front end can point at its text line.
    """
    if st is None:
        return e
    info = st[5]
    where = info.describe()
    if isinstance(e, EvalError) and getattr(e, "path", None) is not None:
        # from a subgraph or function body: keep the inner node's message and position
        err = EvalError(f"in {where}: {e}")
        err.path, err.node, err.stopped = e.path, e.node, getattr(e, "stopped", False)
        return err
    if isinstance(e, (RunStopped, KeyboardInterrupt)):
        reason = str(e) if isinstance(e, RunStopped) else "interrupted"
        err = EvalError(f"run stopped at {where} ({info.path}): {reason}")
        err.path, err.node, err.stopped = info.path, info.node, True
        return err
    missing = [n for n in st[1] if n not in env]
    if missing:
        err = EvalError(f"{where}: input {missing[0]!r} has no value (not computed, or an optional output "
                        f"the producing node did not compute)")
    else:
        shapes = ", ".join(describe_value(n or "<absent>", env[n]) for n in st[1])
        err = EvalError(f"{where} failed on inputs ({shapes}): {type(e).__name__}: {e}")
    err.path, err.node, err.stopped = info.path, info.node, False
    return err


__all__ = ["CONTROL", "UNUSED", "KernelContext", "RunControl", "RunStopped", "Step", "StepInfo",
           "describe_node", "describe_value", "step_error"]
