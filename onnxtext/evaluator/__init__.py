"""The embedded numpy evaluator: :class:`Evaluator`, the kernel registry and kernel families.

``runtime`` holds the public Evaluator (model loading, input checks, training, engine switch),
``plan`` prepares graphs into step lists and runs them, ``functions`` runs model-local and schema
function bodies, ``registry`` maps (domain, op, opset) to kernels, ``kernels/`` holds the kernels.
"""

from .plan import KernelContext
from .registry import kernel, lookup
from .runtime import Evaluator

__all__ = ["Evaluator", "KernelContext", "kernel", "lookup"]
