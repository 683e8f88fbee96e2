"""String kernels: StringNormalizer, StringConcat, StringSplit, RegexFullMatch.

Strings are object arrays of Python ``str``. The per-element work here is Python string methods by
nature (numpy has no vectorized string kernels for object arrays); each op makes one pass.

RegexFullMatch: the spec names RE2 syntax, and onnxruntime runs ``RE2::FullMatch`` with RE2's default
options. We run the same engine through its Python binding (the ``google-re2`` package, module ``re2``):
the same syntax (POSIX classes like ``[[:alpha:]]``, no backreferences or lookaround: such patterns are
an error, as in onnxruntime) and a match time linear in the string's length, so no pattern can hang a
run the way a backtracking engine (Python's ``re``) does on ``(a+)+$``.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ...errors import EvalError
from ..limits import check_allocation
from ..registry import kernel, prepares


def _strings(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != object:
        x = x.astype(str).astype(object)
    return x


@kernel("StringNormalizer", since=10)
def string_normalizer(x, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
    return _normalize(x, _stop_set(stopwords, is_case_sensitive), is_case_sensitive, case_change_action)


@prepares(string_normalizer)
def _prepare_string_normalizer(a: dict, constants):
    sensitive, action = a.get("is_case_sensitive", 0), a.get("case_change_action", "NONE")
    stop = _stop_set(a.get("stopwords"), sensitive)
    return lambda x: _normalize(x, stop, sensitive, action)


def _stop_set(stopwords, is_case_sensitive):
    """The stop words as a set (case-folded unless case-sensitive), None without any."""
    if not stopwords:
        return None
    return set(stopwords) if is_case_sensitive else {s.casefold() for s in stopwords}


def _normalize(x, stop, is_case_sensitive, case_change_action):
    x = _strings(x)
    words = x.reshape(-1).tolist()
    if stop is not None:
        if is_case_sensitive:
            words = [w for w in words if w not in stop]
        else:
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
    x, y = _strings(x), _strings(y)
    longest = max((len(s) for s in x.reshape(-1).tolist()), default=0) + max((len(s) for s in y.reshape(-1).tolist()),
                                                                           default=0)
    check_allocation(np.broadcast_shapes(x.shape, y.shape) + (longest,), 1, "StringConcat")  # characters
    return np.asarray(np.add(x, y), dtype=object)


@kernel("StringSplit", since=20)
def string_split(x, delimiter=None, maxsplit=None):
    x = _strings(x)
    sep = delimiter or None  # empty or unset delimiter: split on whitespace runs, trimmed
    limit = -1 if maxsplit is None else maxsplit
    parts = [s.split(sep, limit) for s in x.reshape(-1).tolist()]
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    width = int(counts.max()) if counts.size else 0
    check_allocation((len(parts), width), 8, "StringSplit")  # every row padded to the longest
    out = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        out[i, :len(p)] = p
    return out.reshape(x.shape + (width,)), counts


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: str, op: str = "RegexFullMatch"):
    """``pattern`` compiled by RE2 (linear time, ONNX's and onnxruntime's engine); errors name ``op``.

    Compiled patterns are kept (a kernel called on every run compiles its attribute once)."""
    try:
        import re2
    except ImportError:  # a dependency; reported rather than falling back to a backtracking engine
        raise EvalError(f"{op} needs the RE2 engine (the google-re2 package, "
                        "pip install google-re2)") from None
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise EvalError(f"{op}: the pattern {pattern!r} is not valid RE2 syntax ({reason})") from None


@kernel("RegexFullMatch", since=20)
def regex_full_match(x, pattern=""):
    matches = full_match_re2(compile_re2(pattern))
    x = _strings(x)
    flat = [matches(s) for s in x.reshape(-1).tolist()]
    return np.array(flat, dtype=bool).reshape(x.shape)


def _match_spans(compiled, text: str):
    """(UTF-8 bytes of ``text``, the byte spans of every group of each successive non-overlapping match),
    stepping as the binding's ``finditer`` does (after an empty match at the search position, one
    character on), or None when the binding has no low-level matcher.

    The binding's own ``finditer`` builds a match object and decodes offsets per match, which costs
    several microseconds each; calling its matcher on the bytes directly does not."""
    re2 = _re2_module()
    regexp = getattr(compiled, "_regexp", None)
    char_bytes = getattr(getattr(re2, "_re2", None), "CharLenToBytes", None)
    anchor = getattr(re2, "_Anchor", None)
    if regexp is None or char_bytes is None or anchor is None:
        return None
    unanchored = anchor.UNANCHORED
    data = text.encode("utf-8")
    end_of_text = len(data)
    pos = 0
    matches = []
    while True:
        spans = regexp.Match(unanchored, data, pos, end_of_text)
        start, end = spans[0]
        if start < 0:
            return data, matches
        matches.append(spans)
        if pos == end_of_text:
            return data, matches
        pos = pos + char_bytes(data, pos, 1) if end == pos else end


def find_all_re2(compiled, text: str) -> list[str]:
    """The successive non-overlapping matches of an RE2 pattern in ``text``, as strings: what
    ``[m.group(0) for m in compiled.finditer(text)]`` gives (:func:`_match_spans`)."""
    found = _match_spans(compiled, text)
    if found is None:
        return [m.group(0) for m in compiled.finditer(text)]
    data, matches = found
    return [data[spans[0][0]:spans[0][1]].decode("utf-8") for spans in matches]


def split_re2(compiled, text: str) -> list:
    """``compiled.split(text)``: the pieces between matches, each match's groups in between (None for a
    group that did not take part), from :func:`_match_spans`."""
    found = _match_spans(compiled, text)
    if found is None:
        return compiled.split(text)
    data, matches = found
    pieces = []
    end = 0
    for spans in matches:
        pieces.append(data[end:spans[0][0]].decode("utf-8"))
        pieces.extend(None if g[0] < 0 else data[g[0]:g[1]].decode("utf-8") for g in spans[1:])
        end = spans[0][1]
    pieces.append(data[end:].decode("utf-8"))
    return pieces


def full_match_re2(compiled):
    """A function ``text -> bool``: whether the whole of ``text`` matches (``compiled.fullmatch``), by the
    binding's low-level matcher when it has one."""
    re2 = _re2_module()
    regexp = getattr(compiled, "_regexp", None)
    anchor = getattr(re2, "_Anchor", None)
    if regexp is None or anchor is None:
        return lambda text: compiled.fullmatch(text) is not None
    both = anchor.ANCHOR_BOTH

    def full_match(text: str) -> bool:
        data = text.encode("utf-8")
        return regexp.Match(both, data, 0, len(data))[0][0] >= 0
    return full_match


# RE2's Perl classes are ASCII (RE2's syntax page): \s is [\t\n\f\r ] (no \v, unlike Python's ASCII \s).
_CLASSES = {"w": "[0-9A-Za-z_]", "W": "[^0-9A-Za-z_]", "d": "[0-9]", "D": "[^0-9]", "s": "[\t\n\f\r ]",
            "S": "[^\t\n\f\r ]"}
_SIMPLE_PATTERN = re.compile(r"(\\b)?((?:\\[wWdDsS]|[A-Za-z0-9])+?)(\+)?(\\b)?")


@functools.lru_cache(maxsize=256)
def python_find_all(pattern: str):
    r"""A function ``text -> list[str]`` equal to ``find_all_re2(compile_re2(pattern), text)`` run by Python's
    ``re`` (a C loop per text instead of one RE2 call per match), or None when ``pattern`` is not of the
    one shape where the two engines provably agree and Python's stays linear in the text's length:

    ``[\b] ATOM... [+] [\b]`` where an ATOM is \w \W \d \D \s \S or an ASCII letter or digit, only the
    last one may repeat (``+``), and a final ``\b`` after a repeated atom only when that atom is \w
    (its greedy run always ends on a word boundary, so nothing is retried). Such a pattern never matches
    the empty string, the classes are spelled out as RE2 defines them, and ``\b`` is ASCII in both.
    skl2onnx's token patterns (``\w+``, ``\b\w\w+\b``) have this shape; any other goes to RE2.
    """
    shape = _SIMPLE_PATTERN.fullmatch(pattern)
    if shape is None:
        return None
    start, atoms, plus, end = shape.groups()
    atoms = re.findall(r"\\[wWdDsS]|[A-Za-z0-9]", atoms)
    if plus and end and atoms[-1] != "\\w":
        return None
    body = "".join(_CLASSES[a[1]] if a.startswith("\\") else a for a in atoms)
    return re.compile((r"\b" if start else "") + body + (plus or "") + (r"\b" if end else ""), re.ASCII).findall


def _re2_module():
    import re2

    return re2
