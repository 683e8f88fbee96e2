"""Tab completion and the signature toolbar for the REPL (prompt_toolkit).

Where the cursor is decides what is offered: the innermost open bracket before it tells whether we are
in an attribute list (``Op<...``: attribute names, then types for values), in call arguments
(``Op(...``: value names), or where an operator goes (after ``=``: operator names). Commands complete
their own arguments (file paths after ``:save``/``:load``, operators after ``:doc``...). The scan only
tracks brackets and strings; it never needs to understand the full syntax.
"""

from __future__ import annotations

import functools
import re

from prompt_toolkit.completion import Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from .. import dtypes
from .. import schemas

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_OP_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*(?::\s*[A-Za-z_][A-Za-z0-9_]*\s*)?$")
_PAIRS = {"(": ")", "<": ">", "{": "}", "[": "]"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}
KEYWORDS = ("true", "false", "seq", "map", "optional", "sparse_tensor", "tensor")


def open_brackets(text: str) -> list[tuple[str, str | None]]:
    """The brackets still open at the end of ``text``, outermost first: (bracket, operator name or None).

    The operator is the name written just before ``<`` or ``(`` (``Relu(``, ``Clip<``); a ``(`` right
    after a closed attribute list ``Op<...>(`` belongs to the same operator.
    """
    stack: list[tuple[str, str | None]] = []
    last_closed: tuple[str, str | None, int] | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':  # skip strings, honouring escapes
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c in _PAIRS:
            op = None
            if c in "<(":
                before = text[:i]
                # `Op<...>(` and `Op(...)<` : the second bracket belongs to the operator of the first
                if last_closed and last_closed[0] in "<(" and last_closed[0] != c \
                        and last_closed[2] == len(before.rstrip()):
                    op = last_closed[1]
                else:
                    m = _OP_BEFORE.search(before)
                    op = m.group(1) if m else None
            stack.append((c, op))
        elif c in _CLOSERS and not (c == ">" and i > 0 and text[i - 1] == "="):  # '=>' is no bracket
            if stack and stack[-1][0] == _CLOSERS[c]:
                bracket, op = stack.pop()
                last_closed = (bracket, op, i + 1)
        i += 1
    return stack


class ReplCompleter(Completer):
    """Completes against the live session: its opsets, functions and values."""

    def __init__(self, session):
        self.session = session
        self.paths = PathCompleter(expanduser=True)

    # --------------------------------------------------------------------------- candidate tables
    def operators(self) -> dict[str, str]:
        """Operator name -> short meta text (``since 14``, or ``function``)."""
        opsets = self.session.opsets
        table = dict(_operator_table(tuple(sorted(opsets.items()))))
        # operators of domains not imported yet: the first use imports the domain's newest opset
        others = {d: schemas.newest_version(d) for d in schemas.known_domains() if d not in opsets}
        for name, meta in _operator_table(tuple(sorted(others.items()))).items():
            table[name] = f"{meta}, imported on use"
        for (domain, name), f in self.session.functions().items():
            table[f"{domain}.{name}" if domain else name] = "function"
        return table

    def attributes(self, op: str) -> dict[str, str]:
        s = self.schema_of(op)
        if s is None:
            f = self.function_of(op)
            return {a: "function attribute" for a in f.attribute} if f is not None else {}
        return {name: f"{typ}, {default}" if default else typ for name, typ, default in schemas.attributes(s)}

    def schema_of(self, op: str):
        domain, _, name = op.rpartition(".")
        domain = schemas.canonical_domain(domain)
        version = self.session.opsets.get(domain)
        if version is None:
            return None
        return schemas.schema(domain, name, version)

    def function_of(self, op: str):
        domain, _, name = op.rpartition(".")
        return self.session.functions().get((domain, name))

    def values(self) -> dict[str, str]:
        from .values import describe

        env = self.session.env
        return {n: describe(env[n]) if n in env else "" for n in self.session.defined()}

    # --------------------------------------------------------------------------- completion
    def get_completions(self, document: Document, complete_event):
        text = document.text_before_cursor
        if text.lstrip().startswith(":"):
            yield from self._command(text.lstrip())
            return
        word = _WORD.search(text)
        word = word.group(0) if word else ""
        before = text[: len(text) - len(word)]
        yield from _matching(word, self.candidates(before))

    def candidates(self, before: str) -> dict[str, str]:
        """What may be typed at the end of ``before`` (the text up to the word being completed)."""
        stack = open_brackets(before)
        prev = before.rstrip()[-1:] if before.strip() else ""
        inner = stack[-1] if stack else (None, None)
        if inner[0] == "<" and inner[1] and prev in ("<", ","):
            return self.attributes(inner[1])
        if inner[0] == "<":
            return {**{d: "type" for d in dtypes.NAMES}, **{k: "" for k in KEYWORDS}, **self.values()}
        if prev == "=":
            return self.operators()
        if inner[0] == "(" and inner[1]:
            return self.values()
        if inner[0] in ("(", "[") or prev == ":":
            return {d: "type" for d in dtypes.NAMES}
        return {}

    def _command(self, text: str):
        from .commands import COMMANDS

        name, sep, arg = text[1:].partition(" ")
        if not sep:
            yield from _matching(name, {c: "" for c in COMMANDS if len(c) > 1})
            return
        arg = arg.lstrip()
        if name in ("save", "load"):
            for c in self.paths.get_completions(Document(arg, len(arg)), None):
                yield c
            return
        words = arg.split(" ")
        word = words[-1]
        table: dict[str, str] = {}
        if name == "doc":
            ops = dict(self.operators())
            for (domain, op), versions in schemas.all_schemas().items():
                ops.setdefault(f"{domain}.{op}" if domain else op, f"since {versions[0].since_version}")
            table = ops
        elif name == "output":
            table = self.values()
        elif name == "input":
            table = {d: "type" for d in dtypes.NAMES} if len(words) == 1 else {}
            if len(words) == 1:
                table.update({i.name: "resample" for i in self.session.model.graph.input})
        elif name == "opset" and len(words) == 1:
            table = {d or "ai.onnx": f"newest {schemas.newest_version(d)}" for d in schemas.known_domains()}
        yield from _matching(word, table)

    # --------------------------------------------------------------------------- signature toolbar
    def signature_at(self, text: str) -> str | None:
        """The signature of the innermost operator being called at the end of ``text``."""
        for bracket, op in reversed(open_brackets(text)):
            if op is None:
                continue
            s = self.schema_of(op)
            if s is not None:
                return schemas.signature(s)
            f = self.function_of(op)
            if f is not None:
                attrs = f" <{', '.join(f.attribute)}>" if f.attribute else ""
                return f"{op}({', '.join(f.input)}) -> ({', '.join(f.output)}){attrs}  (function)"
        return None


@functools.lru_cache(maxsize=8)
def _operator_table(opsets: tuple) -> dict[str, str]:
    return {name: f"since {s.since_version}" for name, s in schemas.op_names(dict(opsets)).items()}


def _matching(word: str, table: dict[str, str]):
    low = word.lower()
    exact = [k for k in table if k.startswith(word)]
    # fall back to case-insensitive matching (`relu` finds Relu)
    names = exact or [k for k in table if k.lower().startswith(low)]
    for name in sorted(names, key=lambda k: (k.lower() != low, len(k.split(".")), k)):
        yield Completion(name, start_position=-len(word), display_meta=table[name])
