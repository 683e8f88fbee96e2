"""The embedded numpy evaluator: :class:`Evaluator`, the kernel registry and kernel families."""

from .registry import kernel, lookup
from .runtime import Evaluator

__all__ = ["Evaluator", "kernel", "lookup"]
