"""``com.microsoft`` operators (onnxruntime's contrib operators), one module per family.

Semantics follow onnxruntime's contrib-operator documentation (docs/ContribOperators.md in the
onnxruntime repository), with the numerics of its CPU kernels where the documentation leaves them
open; tests/test_contrib_ops.py checks every operator against onnxruntime on seeded random inputs.
These operators have no schema in ``onnx.defs``, so unset attributes arrive unset: each kernel gives
its defaults (the documented ones) in its signature. Importing this package registers every kernel.
"""

import importlib
import pkgutil

MS = "com.microsoft"

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_m}")
