"""Locate and load the onnxtext grammar once per process (LALR, contextual lexer, cached tables).

The grammar lives in ``grammar/`` at the top of the source tree and is installed into the wheel as
``onnxtext/grammar/`` (see pyproject.toml), so both layouts are searched.
"""

from __future__ import annotations

import os
import tempfile

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # onnxtext/
# a wheel has onnxtext/grammar/; a source tree has grammar/ beside the package
_CANDIDATES = (os.path.join(_PACKAGE, "grammar"), os.path.join(os.path.dirname(_PACKAGE), "grammar"))

START_SYMBOLS = ["model", "graph", "function", "node"]

_parsers: dict = {}


def grammar_dir() -> str:
    for d in _CANDIDATES:
        if os.path.exists(os.path.join(d, "onnxtext.lark")):
            return d
    raise FileNotFoundError("onnxtext grammar not found (looked in " + ", ".join(_CANDIDATES) + ")")


def grammar_path() -> str:
    return os.path.join(grammar_dir(), "onnxtext.lark")


def _cache_file(variant: str = "") -> str:
    """A per-user cache file for lark's serialized tables.

    Lark hashes the grammar and the options that shape the tables (e.g. ``propagate_positions``) into the
    file and rebuilds on a mismatch, so each set of options gets its own ``variant`` file: sharing one
    would make two parsers overwrite each other's cache on every alternation.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "onnxtext")
    suffix = f"-{variant}" if variant else ""
    try:
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, f"grammar-lalr{suffix}.cache")
    except OSError:
        return os.path.join(tempfile.gettempdir(), f"onnxtext-grammar-{os.getuid() if hasattr(os, 'getuid') else 0}"
                            f"{suffix}.cache")


def get_parser(transformer=None, key="tree"):
    """The Lark LALR parser (one per transformer kind), built once per process."""
    p = _parsers.get(key)
    if p is None:
        import lark

        # The cache is keyed by grammar content and options (lark checks a hash), so edits invalidate it.
        p = lark.Lark.open(grammar_path(), parser="lalr", lexer="contextual", start=START_SYMBOLS,
                           transformer=transformer, maybe_placeholders=True, cache=_cache_file())
        _parsers[key] = p
    return p
