"""Rule ``common_steps``: a step computing what an earlier step already computed runs once.

Exporters repeat per layer what depends only on the model's inputs: transformers' TorchScript exports
rebuild the additive attention mask in every layer (BERT, Llama: ``Where(mask, 0, min)`` with the
layer's own copies of the two constants), and a converted graph often casts or reshapes one value
twice. Here a step that runs its node's own kernel, with the same kernel, the same attributes and the
same inputs as an earlier one (constants compared by value, small ones only) is dropped, and its
readers read the earlier step's outputs.

Condition: the kernel is deterministic (no random operators), neither step is a context kernel (they
may read values by name), the dropped step's outputs are not outputs or kept values and are read
only as explicit inputs of steps that are not context kernels (no subgraph reads them by name). Runs
last, so it never hides a pattern from another rule. Exact (level 1): the same kernel on the same
values computes the same result.
"""

from __future__ import annotations

import numpy as np

from .graph import GraphView

NAME = "common_steps"
LEVEL = 1

#: constants up to this many bytes are compared by value (larger ones by name)
_CONSTANT_BYTES = 4096


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    implicit = {n for st, used in steps for n in used if n not in st[1]}  # read by subgraphs, by name
    context_read = {n for st, _ in steps if st[6] for n in st[1]}
    seen: dict = {}
    rename: dict = {}
    out = []
    for i, (st, used) in enumerate(steps):
        if rename and any(n in rename for n in used):
            st = st[:1] + (tuple(rename.get(n, n) for n in st[1]),) + st[2:]
            used = [rename.get(n, n) for n in used]
        key = _key(view, i, st)
        if key is not None:
            first = seen.get(key)
            if first is not None and len(first) == len(st[2]) and \
                    not any(n in keep or n in implicit or n in context_read for n in st[2]):
                rename.update(zip(st[2], first))
                continue
            seen.setdefault(key, st[2])
        out.append((st, used))
    return out if rename else steps


def _key(view: GraphView, i: int, st):
    """What identifies the computation of plain step ``i`` (its inputs already renamed), or None."""
    if st[6] or view.op(i) is None:
        return None
    node = st[5].node
    if "Random" in node.op_type or node.op_type in ("Multinomial", "Bernoulli", "Dropout") or \
            any(type(n) is not str or not n or n.startswith("\x00") for n in st[2]):  # (bytes: not UTF-8)
        return None
    attrs = _frozen(st[3])
    if attrs is None:
        return None
    inputs = []
    for n in st[1]:
        c = view.constant(n) if n else None
        if isinstance(c, np.ndarray) and c.nbytes <= _CONSTANT_BYTES and c.dtype != object:
            inputs.append(("=", c.dtype.str, c.shape, c.tobytes()))
        else:
            inputs.append(n)
    return (st[0], tuple(inputs), attrs)


def _frozen(value):
    """A hashable copy of attribute values (numbers, strings, lists, arrays), or None for anything
    else (graphs, tensors as protos)."""
    if isinstance(value, dict):
        items = []
        for k in sorted(value):
            v = _frozen(value[k])
            if v is None and value[k] is not None:
                return None
            items.append((k, v))
        return tuple(items)
    if isinstance(value, float):
        return ("float", value.hex())  # (exact: -0.0 and 0.0 differ, NaN equals itself)
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(v) for v in value)
        return None if any(v is None for v in items) else items
    if isinstance(value, np.ndarray) and value.dtype != object:
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    return None
