"""The round-trip corpus: every model of the ONNX backend test data in the installed onnx package."""

from __future__ import annotations

import glob
import os
import warnings

import onnx

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
_cache: dict = {}


def node_models() -> list[tuple[str, onnx.ModelProto]]:
    """The 1884 node test models (collect_testcases)."""
    if "node" not in _cache:
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _cache["node"] = [(c.name, c.model) for c in collect_testcases(None)]
    return _cache["node"]


def file_models() -> list[str]:
    """Paths of every model.onnx and light_*.onnx under onnx/backend/test/data."""
    paths = sorted(glob.glob(os.path.join(DATA, "**", "model.onnx"), recursive=True))
    paths += sorted(glob.glob(os.path.join(DATA, "light", "light_*.onnx")))
    return paths


def all_models():
    """(id, loader) pairs for the whole corpus; loaders avoid holding every model in memory."""
    out = [(name, (lambda m=m: m)) for name, m in node_models()]
    for p in file_models():
        out.append((os.path.relpath(p, DATA), (lambda p=p: onnx.load(p, load_external_data=False))))
    return out


def cleared(m):
    """A copy with scalar fields explicitly set to their default cleared (the round-trip equivalence)."""
    c = type(m)()
    c.CopyFrom(m)
    _clear_defaults(c)
    return c


def _clear_defaults(msg):
    for fd, value in msg.ListFields():
        if fd.message_type is not None:
            if fd.is_repeated:
                for v in value:
                    _clear_defaults(v)
            else:
                _clear_defaults(value)
        elif not fd.is_repeated and value == fd.default_value and fd.containing_oneof is None:
            msg.ClearField(fd.name)
