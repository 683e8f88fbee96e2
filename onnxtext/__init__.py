"""onnxtext: read, write, diff and run ONNX models as plain text.

The public API is listed in ``__all__``; heavy modules are imported lazily so ``import onnxtext``
stays fast.
"""

from __future__ import annotations

import importlib

from .errors import CheckError, EvalError, ExternalDataError, ModelFileError, OnnxTextError, ParseError

__version__ = "0.1.0"

_LAZY = {
    "parse": "syntax.parser", "parse_model": "syntax.parser", "parse_graph": "syntax.parser",
    "parse_function": "syntax.parser", "parse_node": "syntax.parser",
    "to_text": "printing.printer",
    "load": "io", "save": "io",
    "Evaluator": "evaluator",
    "check": "checker", "Diagnostic": "checker",
    "diff": "differ",
    "format_text": "formatter",
}

__all__ = sorted([*_LAZY, "OnnxTextError", "ParseError", "CheckError", "EvalError", "ExternalDataError",
                  "ModelFileError", "__version__"])


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onnxtext' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
