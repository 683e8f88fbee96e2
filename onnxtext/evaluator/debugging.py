"""Looking inside a run: every node's outputs, their statistics, and a node-by-node comparison with
another engine (onnxruntime, or onnx.reference as an oracle), like polygraphy's layer-wise mode.

* :func:`trace_run` runs a model with ``optimize=0`` (every node its own step, no rewrite) and
  returns each executed node's outputs in order (:class:`NodeOutputs`), optionally calling a callback
  per node; :func:`intermediates` gives all values by name.
* :func:`summarize` gives a value's shape, dtype, min/max/mean and NaN/Inf counts (:class:`Summary`).
* :func:`compare` runs the model in both engines on the same feeds, compares every value both
  computed, and names the first node (in execution order) whose outputs diverge beyond
  ``rtol``/``atol`` (:class:`Comparison`). onnxruntime sees every node output of the main graph as an
  extra graph output (its graph optimizations off, so each node is computed as written); onnx.reference
  returns its intermediate results itself.
* :class:`SourceLines` maps node paths (``graph.node[3]``) to ``file:line`` for a model read from
  onnxtext text (the parser's position table, :class:`onnxtext.syntax.positions.SpanMap`).

The other engines are oracles here, never part of onnxtext's own evaluation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx

from ..errors import EvalError

ENGINES = ("onnxruntime", "reference")


# ------------------------------------------------------------------------------------------ tracing
@dataclass
class NodeOutputs:
    """One executed node: its checker-style path, the NodeProto and its outputs (name -> value)."""

    path: str
    node: onnx.NodeProto
    outputs: dict


def trace_run(model, feeds: dict, callback: Callable[[NodeOutputs], None] | None = None, *,
              seed: int | None = None, output_names=None) -> tuple[list, list[NodeOutputs]]:
    """Run ``model`` (anything :class:`~.runtime.Evaluator` takes, or an Evaluator built with
    ``optimize=0``) node by node: (graph outputs, [NodeOutputs in execution order, subgraph and
    function-body nodes included]). ``callback`` is called with each record as it is produced."""
    from .runtime import Evaluator

    ev = model if isinstance(model, Evaluator) else Evaluator(model, optimize=0, seed=seed)
    records: list[NodeOutputs] = []

    def trace(step, outputs):
        record = NodeOutputs(step.path, step.node, dict(outputs))
        records.append(record)
        if callback is not None:
            callback(record)

    outputs = ev.run(output_names, feeds, trace=trace)
    return outputs, records


def intermediates(model, feeds: dict, *, seed: int | None = None) -> dict:
    """Every value of a run by name: the feeds, then each main-graph node's outputs in execution order."""
    _, records = trace_run(model, feeds, seed=seed)
    values = dict(feeds)
    for r in records:
        if is_main_graph(r.path):
            values.update(r.outputs)
    return values


def is_main_graph(path: str) -> bool:
    """True for ``graph.node[i]`` (not a node inside a subgraph or a function body)."""
    return path.startswith("graph.node[") and path.count(".") == 1


# ------------------------------------------------------------------------------------------ summaries
@dataclass
class Summary:
    """Shape, dtype and statistics of one value (min/max/mean over finite elements; None when there are
    none or the value is not numeric)."""

    kind: str  # "tensor", "sequence", "map", "none"
    dtype: str = ""
    shape: tuple = ()
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    nan: int = 0
    inf: int = 0
    length: int = 0

    def text(self) -> str:
        if self.kind == "none":
            return "none"
        if self.kind != "tensor":
            return f"{self.kind} of {self.length}"
        head = f"{self.dtype}[{', '.join(map(str, self.shape))}]"
        if self.min is None:
            return head
        stats = f"{head} min {_num(self.min)} max {_num(self.max)} mean {_num(self.mean)}"
        if self.nan or self.inf:
            stats += f" nan {self.nan} inf {self.inf}"
        return stats


def _num(v: float) -> str:
    return f"{v:.6g}"


def summarize(value) -> Summary:
    """The :class:`Summary` of a tensor (numpy array), sequence (list), map (dict) or None."""
    if value is None:
        return Summary("none")
    if isinstance(value, list):
        return Summary("sequence", length=len(value))
    if isinstance(value, dict):
        return Summary("map", length=len(value))
    arr = np.asarray(value)
    s = Summary("tensor", dtype=str(arr.dtype), shape=tuple(arr.shape))
    if arr.dtype == object or arr.dtype.kind in "USV" or arr.size == 0:
        return s
    data = arr
    if arr.dtype.kind == "c":
        data = np.abs(arr)
    elif arr.dtype.kind not in "biuf":  # float8, bfloat16, int4 ... (ml_dtypes)
        try:
            data = arr.astype(np.float64)
        except (TypeError, ValueError):
            return s
    if data.dtype.kind == "f":
        nan_mask = np.isnan(data)
        inf_mask = np.isinf(data)
        s.nan, s.inf = int(nan_mask.sum()), int(inf_mask.sum())
        finite = data[~(nan_mask | inf_mask)] if (s.nan or s.inf) else data
    else:
        finite = data
    if finite.size:
        s.min, s.max = float(finite.min()), float(finite.max())
        s.mean = float(finite.astype(np.float64).mean())
    return s


# ------------------------------------------------------------------------------------------ source lines
class SourceLines:
    """Node path -> ``file:line`` for a model read from onnxtext text (empty for a binary model)."""

    def __init__(self, path: str | None = None, text: str | None = None):
        self.file = path
        self._text = text
        self._spans = None
        self._loaded = path is None and text is None

    def text(self) -> str | None:
        """The model's text (None for a binary model), read on first use."""
        if self._text is None and self.file is not None and not self._loaded:
            self._text = _read_text(self.file)
        return self._text

    def _span_map(self):
        """The position table, made on first use (one more parse of the text: only when a line is asked)."""
        if not self._loaded:
            text = self.text()
            self._loaded = True
            if text is not None:
                from ..syntax.positions import SpanMap

                self._spans = SpanMap.from_text(text)
        return self._spans

    def line(self, node_path: str | None) -> int | None:
        if not node_path or self._span_map() is None:
            return None
        line, _ = self._spans.locate(node_path)
        return line

    def where(self, node_path: str | None) -> str:
        """``file:line`` (``line N`` without a file name), or '' when unknown."""
        line = self.line(node_path)
        if line is None:
            return ""
        return f"{self.file}:{line}" if self.file else f"line {line}"


def _read_text(path: str) -> str | None:
    from ..io import looks_like_text

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not looks_like_text(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ------------------------------------------------------------------------------------------ comparing
@dataclass
class ValueDifference:
    """How one value of one node differs between the two engines."""

    name: str
    matches: bool
    reason: str = ""  # for mismatches that are not numeric (shape, dtype, missing)
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst_index: tuple = ()
    ours: object = None
    theirs: object = None

    def text(self, other: str = "other") -> str:
        """One line: the reason, or the largest differences and the worst element of both engines."""
        if self.reason:
            return f"{self.name}: {self.reason}"
        where = f" at {list(self.worst_index)}" if self.worst_index else ""
        detail = ""
        if self.worst_index:
            detail = f" (onnxtext {self.ours!r}, {other} {self.theirs!r})"
        return f"{self.name}: max abs diff {_num(self.max_abs)}, max rel diff {_num(self.max_rel)}{where}{detail}"


@dataclass
class NodeComparison:
    path: str
    node: onnx.NodeProto
    values: list[ValueDifference] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return all(v.matches for v in self.values)


@dataclass
class Comparison:
    """Result of :func:`compare`: per-node comparisons (main graph, execution order), the graph outputs'
    comparison, and the first diverging node (None when everything matches)."""

    engine: str
    rtol: float
    atol: float
    graph_outputs: list  # onnxtext's values of the graph outputs
    nodes: list[NodeComparison]
    outputs: list[ValueDifference]
    compared: int  # values compared
    first_divergence: NodeComparison | None

    @property
    def matches(self) -> bool:
        return self.first_divergence is None and all(v.matches for v in self.outputs)


def compare_values(name: str, ours, theirs, rtol: float, atol: float) -> ValueDifference:
    """Compare one value: tensors element-wise with ``|a - b| <= atol + rtol * |b|`` (NaN equals NaN),
    strings and integers exactly, sequences element by element."""
    if isinstance(theirs, list) or isinstance(ours, list):
        if not (isinstance(theirs, list) and isinstance(ours, list)) or len(ours) != len(theirs):
            return ValueDifference(name, False, "sequence lengths differ")
        worst = ValueDifference(name, True)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            d = compare_values(f"{name}[{i}]", a, b, rtol, atol)
            if not d.matches:
                return d
            if d.max_abs >= worst.max_abs:
                worst = d
        return ValueDifference(name, True, max_abs=worst.max_abs, max_rel=worst.max_rel)
    if isinstance(theirs, dict) or isinstance(ours, dict):
        if not (isinstance(theirs, dict) and isinstance(ours, dict)) or set(ours) != set(theirs):
            return ValueDifference(name, False, "map keys differ")
        for k in theirs:
            d = compare_values(f"{name}[{k!r}]", np.asarray(ours[k]), np.asarray(theirs[k]), rtol, atol)
            if not d.matches:
                return d
        return ValueDifference(name, True)
    if ours is None or theirs is None:
        same = ours is None and theirs is None
        return ValueDifference(name, same, "" if same else "one engine has no value")
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape:
        return ValueDifference(name, False, f"shape {list(a.shape)} vs {list(b.shape)}")
    if a.dtype == object or b.dtype == object or a.dtype.kind in "USV" or b.dtype.kind in "USV":
        same = a.astype(str).tolist() == b.astype(str).tolist()
        return ValueDifference(name, same, "" if same else "strings differ")
    if a.dtype != b.dtype:
        return ValueDifference(name, False, f"dtype {a.dtype} vs {b.dtype}")
    if a.size == 0:
        return ValueDifference(name, True)
    a64, b64 = _as_float(a), _as_float(b)
    both_nan = np.isnan(a64) & np.isnan(b64)
    with np.errstate(all="ignore"):
        diff = np.where(both_nan | (a64 == b64), 0.0, np.abs(a64 - b64))
        diff = np.where(np.isnan(diff), np.inf, diff)
        magnitude = np.where(np.isnan(b64), 0.0, np.abs(b64))
        rel = diff / np.maximum(magnitude, np.finfo(np.float64).tiny)
        excess = diff - (atol + rtol * magnitude)
    worst = np.unravel_index(int(np.argmax(excess)), a.shape)
    matches = not bool(np.any(excess > 0))
    d = ValueDifference(name, matches, max_abs=float(diff.max()), max_rel=float(np.where(diff == 0, 0, rel).max()))
    if not matches:
        d.worst_index = tuple(int(i) for i in worst)
        d.ours, d.theirs = a[worst].item(), b[worst].item()
    return d


def _as_float(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return np.abs(a).astype(np.float64)
    return a.astype(np.float64)


def compare(model, feeds: dict, engine: str = "onnxruntime", *, rtol: float = 1e-4, atol: float = 1e-5,
            seed: int | None = None, callback: Callable[[NodeOutputs], None] | None = None) -> Comparison:
    """Run ``model`` in onnxtext (node by node) and in ``engine`` on the same ``feeds`` and compare every
    value both computed. ``model``: a ModelProto, a path, onnxtext text, or an Evaluator built with
    ``optimize=0``; ``callback`` sees each node's outputs as :func:`trace_run` does."""
    if engine not in ENGINES:
        raise EvalError(f"unknown comparison engine {engine!r}; expected one of {', '.join(ENGINES)}")
    from .runtime import Evaluator

    ev = model if isinstance(model, Evaluator) else Evaluator(model, optimize=0, seed=seed)
    outputs, records = trace_run(ev, feeds, callback)
    main = [r for r in records if is_main_graph(r.path)]
    wanted = [n for r in main for n in r.outputs]
    theirs = _other_engine(engine, ev.model, feeds, wanted, ev.base_dir)
    nodes, first, compared = [], None, 0
    for r in main:
        nc = NodeComparison(r.path, r.node)
        for name, value in r.outputs.items():
            if name in theirs:
                nc.values.append(compare_values(name, value, theirs[name], rtol, atol))
                compared += 1
        nodes.append(nc)
        if first is None and not nc.matches:
            first = nc
    outs = [compare_values(n, v, theirs[n], rtol, atol) if n in theirs
            else ValueDifference(n, False, f"{engine} did not return it")
            for n, v in zip(ev.output_names, outputs)]
    return Comparison(engine, rtol, atol, outputs, nodes, outs, compared, first)


def _other_engine(engine: str, model: onnx.ModelProto, feeds: dict, wanted: list[str], base_dir) -> dict:
    """{value name: value} computed by the other engine: graph outputs plus the ``wanted`` node outputs."""
    if engine == "reference":
        return _run_reference(model, feeds, base_dir)
    return _run_onnxruntime(model, feeds, wanted, base_dir)


def _with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` whose graph also outputs ``names`` (untyped: onnxruntime infers the types)."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    g = exposed.graph
    have = {o.name for o in g.output} | {i.name for i in g.input} | {t.name for t in g.initializer}
    for name in names:
        if name and name not in have:
            g.output.append(onnx.helper.make_value_info(name, onnx.TypeProto()))
            have.add(name)
    return exposed


def _run_onnxruntime(model, feeds, wanted, base_dir) -> dict:
    try:
        import onnxruntime as ort
    except ImportError:
        raise EvalError("--compare onnxruntime needs the onnxruntime package (pip install onnxruntime)") from None
    exposed = _with_outputs(model, wanted)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    # one thread: some kernels' results depend on how the work is split between threads (e.g. its
    # DynamicQuantizeLSTM quantizes each thread's share of the batch with that share's own range)
    options.intra_op_num_threads = 1
    error = None
    # exposing intermediates can fail where onnxruntime cannot type one of them: then graph outputs only
    for candidate in (exposed, model):
        try:
            session = ort.InferenceSession(_serialized(candidate, base_dir), options,
                                           providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            return dict(zip(names, session.run(names, dict(feeds))))
        except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types
            error = error or e
    raise EvalError(f"onnxruntime could not run the model: {str(error).splitlines()[0]}") from None


def _serialized(model: onnx.ModelProto, base_dir) -> bytes:
    """Model bytes with external data loaded (onnxruntime gets bytes, so it cannot find the files)."""
    from onnx.external_data_helper import uses_external_data

    if base_dir and any(uses_external_data(t) for t in model.graph.initializer):
        from onnx.external_data_helper import load_external_data_for_model

        model = onnx.ModelProto.FromString(model.SerializeToString())
        load_external_data_for_model(model, os.fspath(base_dir))
    return model.SerializeToString()


def _run_reference(model, feeds, base_dir) -> dict:
    from onnx.reference import ReferenceEvaluator

    try:
        ref = ReferenceEvaluator(onnx.ModelProto.FromString(_serialized(model, base_dir)))
        results = ref.run(None, feeds, intermediate=True)
    except Exception as e:  # noqa: BLE001 - whatever onnx.reference raises
        raise EvalError(f"onnx.reference could not run the model: {type(e).__name__}: "
                        f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return dict(results)
