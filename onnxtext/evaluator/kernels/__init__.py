"""Kernel modules, one per operator family. Importing this package registers every kernel.

Each module in this folder is imported automatically; a new family only needs a new file that uses
``@kernel`` from :mod:`onnxtext.evaluator.registry`.
"""

import importlib
import pkgutil

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_m}")
