"""The graph view the rewrites read: who produces a value, who reads it, which values are constants.

A plan's steps before last uses are computed are a list of ``(step, used names)`` entries (see
:mod:`..plan`); ``used`` also holds the outer values a step's subgraphs read. :class:`GraphView`
indexes such a list once: a rule asks it instead of rebuilding its own reader/producer maps, edits
through :meth:`replace` and :meth:`remove`, and takes the new list from :meth:`entries`.
"""

from __future__ import annotations

from collections import Counter

from ..registry import lookup


def is_pointwise_conv(conv) -> bool:
    """Whether a PreparedConv is a per-pixel linear map (1x1 kernel, unit strides, no padding, no Relu)."""
    attrs, w = getattr(conv, "attrs", None), getattr(conv, "w", None)
    if not isinstance(attrs, dict) or getattr(w, "ndim", 0) < 3 or getattr(conv, "relu", True) is not False:
        return False
    return all(k == 1 for k in w.shape[2:]) and \
        all(s == 1 for s in attrs.get("strides") or ()) and not any(attrs.get("pads") or ()) and \
        attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID")


class Constants:
    """The true constants of the graph being prepared (new folded values are added to the plan's);
    initializers a feed may override are not among them."""

    def __init__(self, constants, names):
        self.constants, self.names = constants, names

    def get(self, name):
        return self.constants.get(name) if name in self.names else None

    def __contains__(self, name):
        return name in self.names

    def add(self, name, value):
        self.constants[name] = value
        self.names.add(name)


class GraphView:
    """Readers, producers and constants of a step list (see the module docstring)."""

    def __init__(self, steps: list, keep: set, known):
        self.steps = list(steps)
        self.keep = keep
        self.known = known  # the graph's true constants (Constants: get, __contains__, add)
        self.readers = Counter(n for _, used in steps for n in used)
        self.producer = {n: i for i, (step, _) in enumerate(steps) for n in step[2]}

    def __len__(self) -> int:
        return len(self.steps)

    def step(self, i):
        """The step tuple at ``i`` (None once removed)."""
        entry = self.steps[i]
        return None if entry is None else entry[0]

    def op(self, i) -> str | None:
        """The op type of the node at ``i`` when its step still runs that node's own kernel, else None."""
        st = self.step(i)
        if st is None or st[6]:
            return None
        info = st[5]
        node = info.node
        if info.domain or tuple(node.input) != st[1]:
            return None
        k = lookup(node.op_type, "", info.opset or 0)
        return node.op_type if k is not None and k.fn is st[0] else None

    def constant(self, name):
        """The value of a true constant, else None."""
        return self.known.get(name) if name and name in self.known else None

    def single_reader_value(self, name) -> bool:
        """True when ``name`` is read by exactly one step and is not an output or kept value."""
        return self.readers[name] == 1 and name not in self.keep

    def only_reader(self, name):
        """The index of the one step reading ``name`` when it is read once and is not an output or kept
        value, else None."""
        if not self.single_reader_value(name):
            return None
        for j, entry in enumerate(self.steps):
            if entry is not None and name in entry[0][1]:
                return j
        return None

    def replace(self, i, step, used) -> None:
        self.steps[i] = (step, list(used))

    def remove(self, i) -> None:
        self.steps[i] = None

    def entries(self) -> list:
        """The edited list (removed steps dropped)."""
        return [e for e in self.steps if e is not None]
