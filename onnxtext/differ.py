"""Semantic diff of two ONNX models: what changed in meaning, not in spelling.

``compare(a, b)`` returns a :class:`DiffResult` (a list of :class:`Change` records); ``diff(a, b)`` renders it
as text, JSON or a unified diff of the two canonical texts.

Structural node matching (value ids, forward and backward passes, equal nodes sharing ids) and the diffs of
graph and function bodies are in ``diffmatch.py``; this module holds the public API, the change records and
their rendering, the model-level fields and the comparison of tensors. Weights are compared with numpy: raw
bytes first (cheap), then the count of differing elements and the max absolute difference.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import asdict, dataclass, field

import numpy as np
from onnx import ModelProto, TensorProto

from . import tensors
from .diffmatch import _cut, _domain, _dtype, _name, diff_function, diff_graph
from .errors import OnnxTextError


@dataclass
class Change:
    """One difference. ``kind`` is ``<what>.<how>`` (e.g. ``node.attribute``, ``initializer.values``);
    ``path`` the scope (``graph g``, ``function local.f``, ``graph g > node If "if1" > then_branch``);
    ``subject`` the element (a node's readable identity, ``input x``...); ``name`` the attribute, field or key;
    ``old``/``new`` short printable values (None when absent); ``detail`` numbers such as element counts."""

    kind: str
    path: str
    subject: str
    name: str | None = None
    old: object = None
    new: object = None
    detail: dict = field(default_factory=dict)

    @property
    def marker(self) -> str:
        return "+" if self.kind.endswith(".added") else "-" if self.kind.endswith(".removed") else "~"

    def message(self) -> str:
        """One line: the subject, then what changed about it."""
        what = self.what()
        return self.subject + (": " + what if what else "")

    def what(self) -> str:
        """What changed, without the subject (``alpha: 0.1 -> 0.2``); empty for a plain addition/removal."""
        parts = [] if self.name is None else [str(self.name)]
        d = self.detail
        if "differing" in d:
            text = f"{d['differing']} of {d['total']} elements differ"
            if d.get("max_abs_diff") is not None:
                text += f", max abs diff {_num(d['max_abs_diff'])}"
            if d.get("nan_mismatch"):
                text += f", {d['nan_mismatch']} NaN vs number"
            if d.get("elements"):
                shown = [f"[{', '.join(map(str, i))}] {old} -> {new}" for i, old, new in d["elements"]]
                more = d["differing"] - len(shown)
                text += ": " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")
            parts.append(text)
        elif self.old is None and self.new is not None:
            parts.append(f"added {self.new}")
        elif self.new is None and self.old is not None:
            parts.append(f"removed (was {self.old})")
        elif self.old is not None:
            parts.append(f"{self.old} -> {self.new}")
        return ": ".join(parts)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class DiffResult:
    """All changes between two models, in report order."""

    changes: list[Change]
    a_label: str = "a"
    b_label: str = "b"
    #: path -> diffmatch.ScopeMatch: how the nodes of each graph and function body paired (for pictures)
    scopes: dict = field(default_factory=dict, repr=False)
    #: the two ModelProtos compared (external data not loaded)
    models: tuple = field(default=(), repr=False)

    @property
    def equal(self) -> bool:
        return not self.changes

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_text(self, color: bool = False) -> str:
        if not self.changes:
            return ""
        paint = _paint if color else (lambda text, _style: text)
        lines = [paint(f"--- {self.a_label}", "bold"), paint(f"+++ {self.b_label}", "bold")]
        current = None
        # several changes of one element: the element once, then one indented line per change
        for (path, subject, marker), group in itertools.groupby(
                self.changes, lambda c: (c.path, c.subject, c.marker if c.marker == "~" else id(c))):
            group = list(group)
            if path != current:
                lines.append(paint(path, "bold"))
                current = path
            if len(group) == 1:
                lines.append("  " + paint(f"{group[0].marker} {group[0].message()}", group[0].marker))
            else:
                lines.append("  " + paint(f"~ {subject}", "~"))
                lines += ["      " + paint(c.what(), "~") for c in group]
        n = len(self.changes)
        lines.append(f"{n} change{'s' if n != 1 else ''}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        doc = {"a": self.a_label, "b": self.b_label, "equal": self.equal,
               "changes": [c.to_dict() for c in self.changes]}
        return json.dumps(doc, indent=1, default=_json_default) + "\n"


_COLORS = {"+": "\x1b[32m", "-": "\x1b[31m", "~": "\x1b[33m", "bold": "\x1b[1m"}


def _paint(text: str, style: str) -> str:
    return f"{_COLORS[style]}{text}\x1b[0m"


def _json_default(v):
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return str(v)


def _num(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


# ---------------------------------------------------------------------------------------------- public API
def compare(a, b) -> DiffResult:
    """Compare two models (ModelProto, onnxtext text, or a path to .onnx/.onnxtext) structurally."""
    from .non_utf8 import escaped

    ma, base_a, la = _model(a, "a")
    mb, base_b, lb = _model(b, "b")
    ma, mb = escaped(ma), escaped(mb)  # strings that are not UTF-8 (bytes) compared and shown as \xHH text
    ctx = _Ctx(base_a, base_b)
    _diff_model(ctx, ma, mb)
    return DiffResult(ctx.changes, la, lb, ctx.scopes, (ma, mb))


def diff(a, b, *, format: str = "text", color: bool = False) -> str:
    """The differences between two models as ``text`` (empty when equal), ``json`` or ``unified``
    (a unified line diff of the two canonical texts)."""
    if format == "unified":
        return unified(a, b)
    result = compare(a, b)
    if format == "json":
        return result.to_json()
    if format != "text":
        raise ValueError(f"unknown diff format {format!r} (text, json or unified)")
    return result.to_text(color=color)


def unified(a, b, context: int = 3) -> str:
    """A unified diff of ``to_text`` of both models (empty when the texts are equal)."""
    import difflib

    from .printing.printer import to_text

    ma, _, la = _model(a, "a")
    mb, _, lb = _model(b, "b")
    lines = difflib.unified_diff(to_text(ma).splitlines(True), to_text(mb).splitlines(True), la, lb, n=context)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _model(x, label):
    """(ModelProto, directory for external data, label) from a model, a text or a path."""
    if isinstance(x, ModelProto):
        return x, None, label
    if isinstance(x, bytes):
        from .io import load_binary

        return load_binary(x), None, label
    if isinstance(x, str) and not os.path.exists(x) and ("\n" in x or "{" in x):
        from .syntax.parser import parse_model

        return parse_model(x), None, label
    if isinstance(x, (str, os.PathLike)):
        from .io import load, model_dir

        path = os.fspath(x)
        # External data stays on disk: compare_tensors reads it from each model's directory only to compare
        # it (one tensor at a time), and compares the references when it is absent (a textconv copy).
        return load(path, load_external_data=False), model_dir(path), path
    raise TypeError(f"cannot diff a {type(x).__name__}: pass a ModelProto, onnxtext text or a path")


# ---------------------------------------------------------------------------------------------- context
class _Ctx:
    """The state of one comparison: the changes found so far, fresh value ids and the directories of both
    models' external data. diffmatch records its changes through it (the ``diffmatch.Recorder`` protocol)."""

    def __init__(self, base_a, base_b):
        self.changes: list[Change] = []
        self.scopes: dict = {}  # path -> diffmatch.ScopeMatch
        self.ids = itertools.count()
        self.base_a, self.base_b = base_a, base_b

    def add(self, kind, path, subject, name=None, old=None, new=None, **detail):
        """Record a change; ``subject`` may be a function (built only when something changed)."""
        self.changes.append(Change(kind, path, subject() if callable(subject) else subject, name, old, new, detail))

    def fields(self, prefix, path, subject, a, b, names):
        """Compare scalar fields (doc_string, producer_name, ...) and metadata_props of two messages."""
        for f in names:
            va, vb = getattr(a, f), getattr(b, f)
            if va != vb:
                self.add(f"{prefix}.{f}", path, subject, f, _cut(repr(va)) if va != "" else None,
                         _cut(repr(vb)) if vb != "" else None)
        if hasattr(a, "metadata_props") and (len(a.metadata_props) or len(b.metadata_props)):
            self.keyed(f"{prefix}.metadata", path, subject, {p.key: p.value for p in a.metadata_props},
                       {p.key: p.value for p in b.metadata_props}, show=lambda v: _cut(repr(v)))

    def keyed(self, kind, path, subject, da: dict, db: dict, show=str, key=json.dumps):
        """Compare two dicts (metadata, opset versions): one change per key added, removed or changed."""
        for k in list(da) + [k for k in db if k not in da]:
            if da.get(k) != db.get(k):
                self.add(kind, path, subject, key(k), show(da[k]) if k in da else None,
                         show(db[k]) if k in db else None)

    def opsets(self, kind, path, a, b):
        self.keyed(kind, path, "opset", {_domain(o.domain): o.version for o in a.opset_import},
                   {_domain(o.domain): o.version for o in b.opset_import})

    def tensors(self, ta: TensorProto, tb: TensorProto) -> list[tuple]:
        """``compare_tensors`` with this comparison's external-data directories (called by diffmatch)."""
        return compare_tensors(self, ta, tb)


# ---------------------------------------------------------------------------------------------- model
def _diff_model(ctx: _Ctx, a: ModelProto, b: ModelProto) -> None:
    path = "model"
    if a.ir_version != b.ir_version:
        ctx.add("model.ir_version", path, "ir_version", None, a.ir_version, b.ir_version)
    ctx.opsets("model.opset", path, a, b)
    ctx.fields("model", path, "model", a, b, ("producer_name", "producer_version", "domain", "model_version",
                                              "doc_string"))
    for f in ("configuration", "training_info"):
        if [x.SerializeToString(deterministic=True) for x in getattr(a, f)] != \
                [x.SerializeToString(deterministic=True) for x in getattr(b, f)]:
            ctx.add(f"model.{f}", path, f, None, f"{len(getattr(a, f))} entries", f"{len(getattr(b, f))} entries")
    diff_graph(ctx, f"graph {_name(a.graph.name)}", a.graph, b.graph, {}, {}, top=True)
    fa = {(f.domain, f.name, f.overload): f for f in a.functions}
    fb = {(f.domain, f.name, f.overload): f for f in b.functions}
    for key in list(fa) + [k for k in fb if k not in fa]:
        label = "function " + ".".join(p for p in key[:2] if p) + (":" + key[2] if key[2] else "")
        if key not in fb:
            ctx.add("function.removed", "model", label)
        elif key not in fa:
            ctx.add("function.added", "model", label)
        else:
            diff_function(ctx, label, fa[key], fb[key])


# ---------------------------------------------------------------------------------------------- tensors
def compare_tensors(ctx: _Ctx, ta: TensorProto, tb: TensorProto) -> list[tuple]:
    """Differences between two tensors as (how, name, old, new, detail) tuples: dtype, shape, then values."""
    if ta.data_type != tb.data_type:
        return [("dtype", "dtype", _dtype(ta.data_type), _dtype(tb.data_type), {})]
    if list(ta.dims) != list(tb.dims):
        return [("shape", "shape", list(ta.dims), list(tb.dims), {})]
    ext_a = ta.data_location == TensorProto.EXTERNAL
    ext_b = tb.data_location == TensorProto.EXTERNAL
    if not ext_a and not ext_b and ta.HasField("raw_data") and tb.HasField("raw_data"):
        if ta.raw_data == tb.raw_data:  # the common case: one memcmp, no decoding
            return []
    elif ta.SerializeToString(deterministic=True) == tb.SerializeToString(deterministic=True):
        if not (ext_a and ctx.base_a != ctx.base_b):
            return []
    try:
        xa = tensors.to_array(ta, ctx.base_a)
        xb = tensors.to_array(tb, ctx.base_b)
    except OnnxTextError as e:
        if ext_a or ext_b:  # external data that is not there (e.g. a textconv copy): compare the references
            ra, rb = tensors.external_info(ta), tensors.external_info(tb)
            return [] if ra == rb else [("external", "external data", _cut(repr(ra)), _cut(repr(rb)), {})]
        return [("data", "data", "(differs)", f"(differs; cannot decode: {_cut(str(e))})", {})]
    detail = value_difference(xa, xb)
    return [("values", None, None, None, detail)] if detail["differing"] else []


ELEMENTS_SHOWN = 5  # differing weight elements listed with their old and new values; the rest are counted


def value_difference(x: np.ndarray, y: np.ndarray) -> dict:
    """Count of differing elements (NaN equals NaN), the max absolute difference of the numeric ones, and the
    first ``ELEMENTS_SHOWN`` differing elements as ``[index, old, new]`` (values as printed by numpy)."""
    x, y = np.asarray(x), np.asarray(y)
    shape = x.shape
    x, y = x.ravel(), y.ravel()
    idx = np.flatnonzero(x != y)
    detail = {"differing": int(idx.size), "total": int(x.size), "max_abs_diff": None, "nan_mismatch": 0}
    if not idx.size:
        return detail
    if x.dtype == object or x.dtype.kind in "US":  # strings: no distance
        return _with_elements(detail, x, y, idx, shape)
    xs, ys = x[idx], y[idx]
    if x.dtype.kind in "iu" and x.dtype.itemsize == 8:  # exact for int64/uint64 extremes
        detail["max_abs_diff"] = int(max(abs(int(p) - int(q)) for p, q in zip(xs.tolist(), ys.tolist())))
        return _with_elements(detail, x, y, idx, shape)
    if x.dtype.kind in "biu":
        detail["max_abs_diff"] = int(np.abs(xs.astype(np.int64) - ys.astype(np.int64)).max())
        return _with_elements(detail, x, y, idx, shape)
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    xs, ys = xs.astype(wide), ys.astype(wide)
    both_nan = np.isnan(xs) & np.isnan(ys)  # NaN payloads or signs may differ bitwise: same value
    keep = ~both_nan
    detail["differing"] = int(keep.sum())
    d = np.abs(xs[keep] - ys[keep])
    nan = np.isnan(d)
    detail["nan_mismatch"] = int(nan.sum())
    if (~nan).any():
        detail["max_abs_diff"] = float(d[~nan].max())
    return _with_elements(detail, x, y, idx[keep], shape)


def _with_elements(detail: dict, x, y, idx, shape) -> dict:
    """Add the first differing elements: ``[[i, j, ...], old, new]`` with values in their own precision."""
    if idx.size:
        first = idx[:ELEMENTS_SHOWN]
        where = np.unravel_index(first, shape) if shape else [()] * len(first)
        detail["elements"] = [[[int(c[k]) for c in where] if shape else [], _element(x[i]), _element(y[i])]
                              for k, i in enumerate(first.tolist())]
    return detail


def _element(v) -> str:
    if isinstance(v, bytes):
        return repr(v)
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."
