"""String kernels: StringNormalizer, StringConcat, StringSplit, RegexFullMatch.

Strings are object arrays of Python ``str``. The per-element work here is Python string methods by
nature (numpy has no vectorized string kernels for object arrays); each op makes one pass.

RegexFullMatch: the spec names RE2 syntax; Python's ``re`` accepts the common subset (classes,
quantifiers, groups, alternation, anchors, ``\\d\\w\\s``, non-greedy). Differences: RE2 has no
backreferences or lookaround (``re`` accepts them, so patterns RE2 would reject run here), RE2 spells
named groups ``(?P<name>...)`` (``re`` agrees) and has POSIX classes like ``[[:alpha:]]`` which ``re``
does not understand; we translate those POSIX classes before compiling.
"""

from __future__ import annotations

import re

import numpy as np

from ..registry import kernel


def _strings(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != object:
        x = x.astype(str).astype(object)
    return x


@kernel("StringNormalizer", since=10)
def string_normalizer(x, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
    x = _strings(x)
    words = x.reshape(-1).tolist()
    if stopwords:
        if is_case_sensitive:
            stop = set(stopwords)
            words = [w for w in words if w not in stop]
        else:
            stop = {s.casefold() for s in stopwords}
            words = [w for w in words if w.casefold() not in stop]
    if case_change_action == "LOWER":
        words = [w.lower() for w in words]
    elif case_change_action == "UPPER":
        words = [w.upper() for w in words]
    if not words:
        words = [""]  # all dropped: the spec's "empty value" keeps one empty string
    out = np.array(words, dtype=object)
    return out.reshape(1, -1) if x.ndim == 2 else out


@kernel("StringConcat", since=20)
def string_concat(x, y):
    return np.asarray(np.add(_strings(x), _strings(y)), dtype=object)


@kernel("StringSplit", since=20)
def string_split(x, delimiter=None, maxsplit=None):
    x = _strings(x)
    sep = delimiter or None  # empty or unset delimiter: split on whitespace runs, trimmed
    limit = -1 if maxsplit is None else maxsplit
    parts = [s.split(sep, limit) for s in x.reshape(-1).tolist()]
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    width = int(counts.max()) if counts.size else 0
    out = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        out[i, :len(p)] = p
    return out.reshape(x.shape + (width,)), counts


_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "ascii": "\\x00-\\x7f", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}


def _re2_to_python(pattern: str) -> str:
    return re.sub(r"\[:(\^?)([a-z]+):\]", lambda m: _POSIX_CLASSES.get(m.group(2), m.group(0))
                  if not m.group(1) else m.group(0), pattern)


@kernel("RegexFullMatch", since=20)
def regex_full_match(x, pattern=""):
    compiled = re.compile(_re2_to_python(pattern))
    x = _strings(x)
    flat = [compiled.fullmatch(s) is not None for s in x.reshape(-1).tolist()]
    return np.array(flat, dtype=bool).reshape(x.shape)
