"""The kernel registry: ``@kernel("Add", since=14)`` and version-aware lookup.

Calling convention of a kernel function (kept deliberately plain so kernels have no boilerplate):

* ``fn(*inputs, **attrs)``; with ``context=True`` the first argument is a :class:`KernelContext`
  (``ctx.node``, ``ctx.opset``, ``ctx.run_graph(graph, inputs)``, ``ctx.num_outputs``, ``ctx.rng``...).
* ``inputs`` are numpy arrays (0-d arrays for scalars, object arrays of ``str`` for strings), Python
  lists for sequences, dicts for maps, ``None`` for a missing optional input or an empty optional.
  Trailing absent optional inputs are not passed at all, so give them defaults (``B=None``).
* ``attrs`` are Python values: float, int, str (bytes when not UTF-8), numpy arrays for tensors,
  GraphProto for graphs, lists for repeated kinds, TypeProto, SparseTensorProto. Attributes the node
  does not set but whose schema has a default arrive with the schema default (from ``onnx.defs``);
  attributes without default that are unset are not passed.
* Return one value for a single output, a **tuple** for several outputs (a list is a sequence value).

A kernel may also have a **prepared form** (:func:`prepares`): ``prepare(attrs, constants)`` is called
once per step when a plan is prepared at an optimizer level above 0, with the step's attributes and a
tuple holding, per input, its value when it is a constant of the plan (an initializer, or folded) and
``None`` otherwise. It returns a function of the inputs alone (``run(*inputs)``, no attributes) that
already holds what the kernel derives from its attributes (a forest's tables, an SVM's support
vectors), or ``None`` to keep the plain kernel for this node. The plain kernel stays the reference:
``optimize=0`` calls it, and tests/test_prepared_kernels.py runs every prepared form against it.

Lookup picks, for a node of (domain, op) with the model importing ``version`` of that domain, the
registered kernel with the highest ``since`` that is not above ``version``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable

ONNX_DOMAINS = ("", "ai.onnx")


def normalize_domain(domain: str) -> str:
    return "" if domain in ONNX_DOMAINS else domain


@dataclass(frozen=True)
class Kernel:
    op: str
    domain: str
    since: int
    fn: Callable
    context: bool


_KERNELS: dict[tuple[str, str], list[Kernel]] = {}


def kernel(op: str | tuple[str, ...], since: int = 1, domain: str = "", *, context: bool = False):
    """Register the decorated function as the kernel of ``op`` (or several ops) from opset ``since``."""
    ops = (op,) if isinstance(op, str) else tuple(op)

    def register(fn):
        for name in ops:
            key = (normalize_domain(domain), name)
            entries = _KERNELS.setdefault(key, [])
            if any(k.since == since for k in entries):
                raise ValueError(f"kernel {domain or 'ai.onnx'}::{name} since {since} registered twice")
            entries.append(Kernel(name, key[0], since, fn, context))
            entries.sort(key=lambda k: k.since)
        return fn

    return register


_PREPARED: dict[Callable, Callable] = {}


def prepares(kernel_fn: Callable):
    """Register the decorated ``prepare(attrs, constants) -> run | None`` as the prepared form of the
    kernel function ``kernel_fn`` (see the module docstring)."""
    def register(prepare):
        if kernel_fn in _PREPARED:
            raise ValueError(f"kernel {kernel_fn.__name__} has two prepared forms")
        _PREPARED[kernel_fn] = prepare
        return prepare

    return register


def prepared_form(kernel_fn: Callable) -> Callable | None:
    """The ``prepare`` function registered for ``kernel_fn`` by :func:`prepares`, or None."""
    return _PREPARED.get(kernel_fn)


def prepared_forms() -> dict[Callable, Callable]:
    """Every kernel function with a prepared form (kernel -> prepare), for tests."""
    _ensure_loaded()
    return _PREPARED


def lookup(op: str, domain: str, version: int) -> Kernel | None:
    """The kernel for ``domain::op`` at opset ``version`` (highest since <= version), or None."""
    _ensure_loaded()
    entries = _KERNELS.get((normalize_domain(domain), op))
    if not entries:
        return None
    i = bisect.bisect_right([k.since for k in entries], version)
    return entries[i - 1] if i else None


def registered() -> dict[tuple[str, str], list[Kernel]]:
    """All registered kernels (for documentation, completion and coverage reports)."""
    _ensure_loaded()
    return _KERNELS


_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import kernels  # noqa: F401  (imports every kernel module, which registers itself)
