"""The model checker: ONNX IR-spec rules reported as :class:`Diagnostic` objects, all at once.

``check(model_or_text_or_path)`` accepts a ``ModelProto`` (also a GraphProto or FunctionProto, wrapped into
a model), onnxtext source text, or a path to a ``.onnx`` / ``.onnxtext`` file. It never stops at the first
problem: every rule runs over every element and all diagnostics come back, sorted by position.

Rules live in one module per family (graph, operators, functions, tensors, model, ir_version, training,
devices). Each rule is a small generator function registered with :func:`rule`, which records its stable id
(``graph.ssa``), its severity and the IR-spec clause it enforces. The walker in :mod:`.walk` visits every
graph, node, function and tensor of the model and calls the rules registered for that kind of element with a
path such as ``graph.node[3].attribute[body].g.node[0]``. Rules yield ``(path, message)`` pairs (or
``(path, message, severity)``); the path is turned into a text line/column through :mod:`.spans` when the
model came from text.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

__all__ = ["Diagnostic", "check", "infer_types", "RULES", "rule"]


@dataclass
class Diagnostic:
    """One finding of the checker.

    ``path`` always locates the culprit inside the model (``graph.node[3].attribute[alpha]``); ``line`` and
    ``column`` (1-based) are set when the model came from text.
    """

    severity: str  # "error" or "warning" (lint-level rules report warnings, only when asked for)
    rule: str  # stable id, e.g. "graph.ssa"
    message: str  # names the culprit: value, node, attribute, field
    spec: str  # the IR-spec / versioning clause the rule comes from
    path: str = ""
    line: int | None = None
    column: int | None = None
    file: str | None = field(default=None, compare=False)
    source_line: str | None = field(default=None, compare=False, repr=False)  # the text line, when from text

    def format(self, caret: bool = False) -> str:
        """``file:line:col: severity[rule]: message`` (the model path when there is no line); with ``caret``,
        followed by the source line and a caret under the culprit when the model came from text."""
        where = self.file or "<model>"
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        elif self.path:
            where += f": {self.path}"
        head = f"{where}: {self.severity}[{self.rule}]: {self.message}"
        if not caret or self.source_line is None or self.line is None:
            return head
        shown, col = self.source_line.expandtabs(1), self.column or 1
        if len(shown) > 200:  # keep huge single-line inputs readable
            start = max(0, col - 100)
            shown, col = shown[start:start + 200], col - start
        word = re.match(r"[\w.:/-]+", shown[col - 1:])
        return f"{head}\n  {shown}\n  {' ' * (col - 1)}{'^' * min(60, len(word.group(0)) if word else 1)}"

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["source_line"]
        return out

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str  # which element the walker passes: model, graph, node, function, tensor, sparse, type
    spec: str
    severity: str  # "error", "warning", or "lint" (style advice every exporter triggers: run with lint=True)
    func: object


#: Every registered rule, by id (filled when the rule modules are imported).
RULES: dict[str, Rule] = {}


def rule(rule_id: str, kind: str, spec: str, severity: str = "error"):
    """Register a rule function for elements of ``kind``; it yields (path, message[, severity]).

    A yielded severity ``"tolerated"`` marks a spec rule that runtimes do not enforce: a warning, an error
    under ``strict``.
    """

    def deco(func):
        if rule_id in RULES:
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES[rule_id] = Rule(rule_id, kind, spec, severity, func)
        func.rule_id, func.spec = rule_id, spec
        return func

    return deco


def infer_types(model) -> dict:
    """Value name -> inferred ``TypeProto`` for the main graph of ``model`` (see :func:`.shapes.infer_types`)."""
    from .shapes import infer_types as infer

    return infer(model)


def _load_rules():
    from . import devices, functions, graph, ir_version, model, operators, shapes, tensors, training  # noqa: F401
    from . import recursion, unknown_fields  # noqa: F401


def check(model_or_text_or_path, *, filename: str | None = None, base_dir: str | None = None,
          rules: set[str] | None = None, strict: bool = False, lint: bool = False,
          text: str | None = None) -> list[Diagnostic]:
    """Check a model against the IR-spec rules and return every diagnostic (errors and warnings).

    Text that does not parse yields the parse errors as diagnostics of rule ``parse.syntax`` (up to ~20).
    ``base_dir`` is the directory external data locations are resolved against (default: the file's
    directory, or the current directory). ``rules`` restricts the run to those rule ids.

    Severity fits real models: an error is a model the IR spec forbids AND mainstream runtimes reject or
    misread. Spec rules runtimes tolerate (duplicate node names, a domain imported twice with one version)
    are warnings that say so, errors with ``strict=True``. Style advice every exporter triggers (no
    ``model.domain``, names that are not C identifiers) runs only with ``lint=True``.

    ``text``: the source a ``ModelProto`` was just parsed from (``compile`` passes it): diagnostics then get
    lines and columns without parsing the model a second time.
    """
    import onnx

    from .walk import Context, walk

    _load_rules()
    src = model_or_text_or_path
    if text is not None and not isinstance(src, onnx.ModelProto):
        text = None
    if isinstance(src, os.PathLike) or (isinstance(src, str) and "\n" not in src and "{" not in src
                                        and os.path.exists(src)):
        path = os.fspath(src)
        filename = filename or path
        base_dir = base_dir or os.path.dirname(os.path.abspath(path))
        from ..errors import ModelFileError
        from ..io import read_model_source

        try:
            src = read_model_source(path)  # the text, or the decoded binary model
        except ModelFileError as e:
            return [Diagnostic("error", "model.decode", str(e), "IR spec: Models", file=filename)]
    if isinstance(src, str) and re.fullmatch(r"[^\s{}()<>=]+\.(onnx|onnxtext|onnxtxt|txt)", src):
        from ..errors import ModelFileError

        raise ModelFileError(f"{src}: no such file")
    if isinstance(src, (bytes, str)):
        text = src.decode("utf-8", "replace") if isinstance(src, bytes) else src
        model, diags = _from_text(text, filename)
        if model is None:
            _add_source_lines(diags, text)
            return diags
        wrapped_text = diags
    else:
        model = _as_model(src)
        wrapped_text = False
    ctx = Context(model, text=text, filename=filename, base_dir=base_dir, strict=strict,
                  rules=[r for r in RULES.values() if (rules is None or r.id in rules)
                         and (lint or r.severity != "lint" or (rules is not None and r.id in rules))])
    # a bare graph/function/node is not a model: model-level advice (domain) does not apply to it
    ctx.wrapped = wrapped_text if text is not None else not isinstance(src, onnx.ModelProto)
    walk(ctx)
    out = ctx.diagnostics
    out.sort(key=lambda d: (d.line or 0, d.column or 0, d.path, d.rule))
    if text is not None:
        _add_source_lines(out, text)
    return out


def _add_source_lines(diags, text: str) -> None:
    lines = None
    for d in diags:
        if d.line is not None:
            lines = lines or text.splitlines()
            if 1 <= d.line <= len(lines):
                d.source_line = lines[d.line - 1]


def _from_text(text: str, filename):
    """Parse text into a model; on failure, the parse errors as diagnostics."""
    import onnx

    from ..syntax import parser
    from ..errors import ParseError

    try:
        obj = parser.parse(text, filename=filename)
    except ParseError as first:
        errors = first.errors  # the first error, then those found by recovering from it (checker/recovery.py)
        return None, [Diagnostic("error", "parse.syntax", e.message + (f" (hint: {e.hint})" if e.hint else ""),
                                 "onnxtext syntax (docs/syntax.md)", line=e.line, column=e.column, file=filename)
                      for e in errors]
    return _as_model(obj), not isinstance(obj, onnx.ModelProto)


def _as_model(obj):
    """Wrap a GraphProto / FunctionProto / NodeProto into a ModelProto so every rule applies."""
    import onnx

    if isinstance(obj, onnx.ModelProto):
        return obj
    m = onnx.ModelProto()
    m.ir_version = onnx.IR_VERSION
    if isinstance(obj, onnx.GraphProto):
        m.graph.CopyFrom(obj)
    elif isinstance(obj, onnx.FunctionProto):
        m.functions.append(obj)
        m.opset_import.extend(obj.opset_import)
        if obj.domain and not any(o.domain == obj.domain for o in m.opset_import):
            m.opset_import.add(domain=obj.domain, version=1)
    elif isinstance(obj, onnx.NodeProto):
        m.graph.node.append(obj)
    else:
        raise TypeError(f"check() expects a ModelProto, text or a path, not {type(obj).__name__}")
    if not m.opset_import:
        m.opset_import.add(domain="", version=onnx.defs.onnx_opset_version())
    return m
