"""Patterns written as onnxtext graphs, matched against a plan's steps, and rules built from them.

A pattern is the subgraph a rewrite replaces, in the language's own syntax::

    gelu_erf (x) => (y) {
      d = Div(x, sqrt2)
      e = Erf(d)
      a = Add(e, one)
      m = Mul(x, a)
      y = Mul(m, half)
    }

* the graph's **inputs** are holes for any value (``x``: bound to whatever the graph computes there);
* a name that is read but neither an input nor computed in the pattern is a hole for a **constant**
  (``sqrt2``, ``one``, ``half``): it only matches a true constant of the graph;
* every other name is an **inner value**: it must be computed by the matching step, read by as many
  steps as in the pattern (no reader outside it) and not be an output of the graph;
* the single output is the value the replacement computes.

``Add``, ``Mul`` and the other commutative ops match their two inputs in either order. Attributes are
not part of the pattern: a rule's condition reads them (``Match.attrs``), so one pattern serves
every opset's way of passing them.

A :class:`PatternRule` ties patterns to a ``build(match) -> (callable, input names) | None`` that
checks the condition and returns the replacement step's kernel and inputs; :meth:`PatternRule.apply`
is the rule function the optimizer table calls.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .graph import GraphView

COMMUTATIVE = frozenset({"Add", "Mul", "Max", "Min", "Sum", "And", "Or", "Xor", "Equal"})


class Pattern:
    """A pattern graph (see the module docstring), parsed from onnxtext text."""

    def __init__(self, text: str):
        from ...syntax.parser import parse_graph

        g = parse_graph(text)
        self.name = g.name
        self.inputs = frozenset(i.name for i in g.input)
        if len(g.output) != 1:
            raise ValueError(f"pattern {g.name!r}: one output expected")
        self.output = g.output[0].name
        self.nodes = list(g.node)
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.uses = Counter(i for n in self.nodes for i in n.input)
        if self.output not in self.producer:
            raise ValueError(f"pattern {g.name!r}: its output is not computed")

    def match(self, view: GraphView, i: int):
        """A :class:`Match` of this pattern with its output computed by step ``i``, or None."""
        anchor = self.producer[self.output]
        st = view.step(i)
        if st is None or len(st[2]) != 1:
            return None
        for names, steps in self._node(view, anchor, i, {self.output: st[2][0]}, {self.output: i}):
            return Match(self, view, names, steps)
        return None

    def _node(self, view, pnode, i, names, steps):
        """Every way the node ``pnode`` matches step ``i``: (names, steps) binding pairs."""
        if view.op(i) != pnode.op_type:
            return
        actual = view.step(i)[1]
        if len(actual) != len(pnode.input):
            return
        orders = [actual]
        if pnode.op_type in COMMUTATIVE and len(actual) == 2:
            orders.append(actual[::-1])
        for order in orders:
            yield from self._inputs(view, list(zip(pnode.input, order)), names, steps)

    def _inputs(self, view, pairs, names, steps):
        if not pairs:
            yield names, steps
            return
        (p, a), rest = pairs[0], pairs[1:]
        if p in names:
            if names[p] == a:
                yield from self._inputs(view, rest, names, steps)
            return
        names = {**names, p: a}
        if p in self.producer:  # inner value
            k = view.producer.get(a)
            if k is None or k in steps.values() or view.readers[a] != self.uses[p] or a in view.keep or \
                    len(view.step(k)[2]) != 1:
                return
            for n2, s2 in self._node(view, self.producer[p], k, names, {**steps, p: k}):
                yield from self._inputs(view, rest, n2, s2)
        elif p in self.inputs:
            yield from self._inputs(view, rest, names, steps)
        elif view.constant(a) is not None:
            yield from self._inputs(view, rest, names, steps)


@dataclass
class Match:
    """A pattern's names bound to graph values (``names``) and its nodes to step indices (``steps``)."""

    pattern: Pattern
    view: GraphView
    names: dict
    steps: dict = field(default_factory=dict)

    def constant(self, name):
        """The value bound to a constant hole."""
        return self.view.constant(self.names[name])

    def scalar(self, name):
        """The constant bound to ``name`` as a Python float when it has one element, else None."""
        c = self.constant(name)
        return float(np.asarray(c).reshape(-1)[0]) if c is not None and np.size(c) == 1 else None

    def attrs(self, value: str) -> dict:
        """The attributes of the step computing the inner value ``value``."""
        return self.view.step(self.steps[value])[3]

    def info(self, value: str):
        return self.view.step(self.steps[value])[5]

    def is_scalar(self, name, *values, rtol=1e-6) -> bool:
        """True when the constant bound to ``name`` is one element equal to one of ``values``."""
        v = self.scalar(name)
        return v is not None and any(abs(v - w) <= rtol * max(1.0, abs(w)) for w in values)


class PatternRule:
    """A rewrite given by patterns and ``build(match) -> (kernel, input names) | None``.

    A pattern is parsed (by onnxtext's own parser) the first time a graph holds every operator it
    names, so a process whose models never could match pays nothing for it."""

    def __init__(self, name: str, level: int, patterns, build, doc: str):
        self.name, self.level, self.doc = name, level, doc
        self.texts = list(patterns)
        self.ops = [frozenset(re.findall(r"=\s*(\w+)\(", t)) for t in self.texts]  # operators each one names
        self.build = build
        self._parsed: dict[int, Pattern] = {}

    def patterns(self, present=None) -> list[Pattern]:
        """The patterns (those whose operators are all in ``present``, when given), parsed on first use."""
        out = []
        for k, text in enumerate(self.texts):
            if present is None or self.ops[k] <= present:
                if k not in self._parsed:
                    self._parsed[k] = Pattern(text)
                out.append(self._parsed[k])
        return out

    def apply(self, steps: list, keep: set, known) -> list:
        present = {st[5].node.op_type for st, _ in steps if not st[5].domain}
        patterns = self.patterns(present)
        if not patterns:
            return steps
        view = GraphView(steps, keep, known)
        anchors = {p.producer[p.output].op_type for p in patterns}
        changed = False
        for i in reversed(range(len(view))):  # the last steps first: a longer form wins over its prefix
            if view.op(i) not in anchors:
                continue
            for p in patterns:
                m = p.match(view, i)
                built = self.build(m) if m is not None else None
                if built is None:
                    continue
                fn, inputs = built
                st = view.step(i)
                for k in m.steps.values():
                    if k != i:
                        view.remove(k)
                view.replace(i, (fn, tuple(inputs), st[2], {}, (), st[5], False), [n for n in inputs if n])
                changed = True
                break
        return view.entries() if changed else steps
