"""Completion items: what may be typed at the cursor, from the brackets open before it.

The context comes from the text before the cursor (the REPL's bracket scanner,
``repl.completion.open_brackets``), so completion works while the text does not parse; the names come from
the last index of the document that parsed (values in scope, local functions) and from
:mod:`onnxtext.schemas` (operators of the imported opsets, their attributes):

* after ``=`` in a node statement: operator names of the imported domains and versions, and model-local
  functions; a snippet per operator fills in its inputs and required attributes;
* inside ``Op<...>`` (or ``Op(...) <...>``) at an entry's start: the operator's attribute names with types;
* inside ``Op(...)``: the values in scope at the cursor;
* inside the model header ``<...>`` at an entry's start: header keys;
* elsewhere in a signature or value list: data types and type constructors.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from .. import dtypes, schemas
from ..lexer import HEADER_KEYS, TYPE_CONSTRUCTORS
from .index import DocumentIndex

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")


def complete(text: str, line: int, column: int, index: DocumentIndex | None, opsets: dict,
             stale: bool = False) -> list:
    """Completion items at 1-based (line, column) of ``text``. ``opsets``: imported domain -> version.

    ``stale``: ``index`` comes from an earlier text (the current one does not parse), so its positions may
    be off: the scope at the cursor is then found by the name of the graph whose ``{`` encloses it."""
    from ..repl.completion import open_brackets

    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[:line - 1]) + column - 1
    before = text[:offset]
    m = _WORD.search(before)
    word = m.group(0) if m else ""
    head = before[:len(before) - len(word)]
    stack = open_brackets(head)
    prev = head.rstrip()[-1:] if head.strip() else ""
    inner = stack[-1] if stack else (None, None)
    if inner[0] == "<" and _in_header(head, stack):
        if prev in ("<", ","):
            return [lsp.CompletionItem(k, kind=lsp.CompletionItemKind.Keyword, insert_text=f"{k}: ",
                                       detail="header key") for k in HEADER_KEYS]
        return []
    if inner[0] == "<" and inner[1] and prev in ("<", ","):
        return attribute_items(inner[1], opsets, index)
    if prev == "=" and not head.rstrip().endswith("=>"):
        return operator_items(opsets, index)
    if inner[0] == "(" and inner[1] and _is_call(head, inner[1]):
        return value_items(index, _scope(text, offset, index, line, column, stale))
    if inner[0] in ("(", "<", "[") or prev == ":":
        return type_items()
    return []


def _in_header(head: str, stack) -> bool:
    """Whether the innermost ``<`` is a model or function header (it opens a line of its own)."""
    pos = head.rfind("<")
    start = head.rfind("\n", 0, pos) + 1
    return not head[start:pos].strip() and len(stack) == 1


def _is_call(head: str, op: str) -> bool:
    """A ``(`` after ``= Op`` (node inputs), not a graph signature ``name (``."""
    return re.search(r"=\s*" + re.escape(op) + r"[^=]*$", head.replace("=>", "  ")) is not None


def type_items() -> list:
    items = [lsp.CompletionItem(n, kind=lsp.CompletionItemKind.TypeParameter, detail="element type")
             for n in dtypes.NAMES]
    items += [lsp.CompletionItem(n, kind=lsp.CompletionItemKind.Keyword, detail="type constructor")
              for n in TYPE_CONSTRUCTORS]
    return items


def operator_items(opsets: dict, index: DocumentIndex | None) -> list:
    items = []
    for name, s in schemas.op_names(_with_default(opsets)).items():
        required = [a for a in s.attributes.values() if a.required]
        items.append(lsp.CompletionItem(
            name, kind=lsp.CompletionItemKind.Function, detail=f"since opset {s.since_version}",
            documentation=lsp.MarkupContent(lsp.MarkupKind.Markdown, schemas.markdown(s)),
            insert_text=node_snippet(name, s, required), insert_text_format=lsp.InsertTextFormat.Snippet))
    for key in (index.functions if index is not None else {}):
        name = key.lstrip(".")
        items.append(lsp.CompletionItem(name, kind=lsp.CompletionItemKind.Module, detail="model-local function"))
    return items


def node_snippet(name: str, s, required) -> str:
    """``Conv (${1:X}, ${2:W})`` plus ``<attr = ${n}>`` for the required attributes."""
    k = 1
    attrs = []
    for a in required:
        attrs.append(f"{a.name} = ${{{k}:{schemas.attribute_type(a)}}}")
        k += 1
    ins = []
    for p in s.inputs:
        if p.option == p.option.Optional:
            continue
        ins.append(f"${{{k}:{p.name}}}")
        k += 1
    text = name
    if attrs:
        text += " <" + ", ".join(attrs) + ">"
    return text + " (" + ", ".join(ins) + ")$0"


def attribute_items(op: str, opsets: dict, index: DocumentIndex | None) -> list:
    domain, _, name = op.rpartition(".")
    version = _with_default(opsets).get(schemas.canonical_domain(domain))
    s = schemas.schema(domain, name, version) if version is not None else None
    if s is None:  # a model-local function: its declared attributes
        fn = index.functions.get(f"{domain}.{name}") if index is not None else None
        if fn is None:
            return []
        return [lsp.CompletionItem(key[1:], kind=lsp.CompletionItemKind.Property, insert_text=f"{key[1:]} = ",
                                   detail="function attribute")
                for key in fn.scope.defs if key.startswith("@")]
    items = []
    for a_name, a_type, default in schemas.attributes(s):
        detail = a_type + (" (required)" if default == "required" else f", {default}" if default else "")
        items.append(lsp.CompletionItem(a_name, kind=lsp.CompletionItemKind.Property, detail=detail,
                                        insert_text=f"{a_name} = ",
                                        documentation=s.attributes[a_name].description.strip() or None))
    return items


_GRAPH_HEAD = re.compile(r'([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*")\s*\((?:[^()]|\([^()]*\))*\)\s*=>')


def _scope(text: str, offset: int, index: DocumentIndex | None, line: int, column: int, stale: bool):
    if index is None:
        return None
    if not stale:
        return index.scope_at(line, column)
    from ..syntax.hints import open_brackets
    from ..syntax.literal_data import unescape

    braces = [off for ch, off in open_brackets(text, offset) if ch == "{"]
    if braces:
        heads = list(_GRAPH_HEAD.finditer(text, 0, braces[-1]))
        if heads:
            name = heads[-1].group(1)
            if name.startswith('"'):
                name = unescape(name).decode("utf-8", "replace")
            for s in index.scopes:
                if s.name == name:
                    return s
    return index.scopes[0] if index.scopes else None


def value_items(index: DocumentIndex | None, scope) -> list:
    if index is None or scope is None:
        return []
    seen = {}
    s = scope
    while s is not None:
        for name, occ in s.defs.items():
            if not name.startswith("@"):
                seen.setdefault(name, occ)
        s = s.parent
    from ..printing.atoms import name as quoted

    return [lsp.CompletionItem(n, kind=lsp.CompletionItemKind.Variable, insert_text=quoted(n),
                               detail=(occ.detail or occ.role)) for n, occ in seen.items()]


def _with_default(opsets: dict) -> dict:
    out = {schemas.canonical_domain(d): v for d, v in opsets.items()}
    if not out:
        out[""] = schemas.newest_version("")
    return out
