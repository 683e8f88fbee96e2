r"""com.microsoft::Tokenizer (skl2onnx's text vectorizers emit it).

Each string of X ([C] or [N, C]) becomes its tokens along a new last axis, padded with ``pad_value``
to the longest token count D: output [C, D] or [N, C, D]. Tokens come either from splitting on the
``separators`` (regular expressions; a single empty separator splits into characters) or from the
matches of ``tokenexp``. Tokens shorter than
``mincharnum`` characters are dropped; ``mark=1`` adds the start-of-text (U+0002) and end-of-text
(U+0003) markers around each row. The expressions are RE2 syntax, run by RE2 itself as in onnxruntime (linear time: no pattern can
hang a run; see kernels/string.py).
"""

from __future__ import annotations

import numpy as np

from ....errors import EvalError
from ...limits import check_allocation
from ...registry import kernel, prepares
from ..string import compile_re2, find_all_re2, python_find_all, split_re2
from . import MS

_START, _END = "\x02", "\x03"


def _splitter(separators, tokenexp):
    if tokenexp:
        pattern = compile_re2(tokenexp, "Tokenizer")  # also rejects what RE2 rejects
        return python_find_all(tokenexp) or (lambda s: find_all_re2(pattern, s))
    if separators is None:
        raise EvalError("Tokenizer needs 'separators' or 'tokenexp'")
    if list(separators) == [""]:
        return list  # characters
    pattern = compile_re2("|".join(f"(?:{s})" for s in separators), "Tokenizer")
    return lambda s: split_re2(pattern, s)


@kernel("Tokenizer", since=1, domain=MS)
def tokenizer(X, *, mark, mincharnum, pad_value, separators=None, tokenexp=None):
    if separators is not None and tokenexp:
        raise EvalError("Tokenizer: 'separators' and 'tokenexp' cannot both be set")
    return _tokenize(X, _splitter(separators, tokenexp), mark, mincharnum, pad_value)


@prepares(tokenizer)
def _prepare_tokenizer(a: dict, constants):
    separators, tokenexp = a.get("separators"), a.get("tokenexp")
    if separators is not None and tokenexp:
        return None  # (the plain kernel says why at run time)
    split, rest = _splitter(separators, tokenexp), (a["mark"], a["mincharnum"], a["pad_value"])
    return lambda X: _tokenize(X, split, *rest)


def _tokenize(X, split, mark, mincharnum, pad_value):
    """Tokenizer of ``X`` with the node's ``split`` function (:func:`_splitter`)."""
    if X.ndim not in (1, 2):
        raise EvalError(f"Tokenizer takes [C] or [N, C] strings, got rank {X.ndim}")
    texts = X.reshape(-1).tolist()
    if any(type(t) is not str for t in texts):
        texts = [t if type(t) is str else str(t) for t in texts]
    if mincharnum <= 1 and getattr(split, "__name__", "") == "findall":
        rows = list(map(split, texts))  # Python's findall of a pattern that never matches empty text
    else:
        rows = [[t for t in split(text) if t and len(t) >= mincharnum] for text in texts]
    if mark:
        rows = [[_START] + tokens + [_END] for tokens in rows]
    width = max(map(len, rows), default=0)
    check_allocation(len(rows) * width, 8, "Tokenizer")  # every row padded to the longest
    padded = [tokens if len(tokens) == width else tokens + [pad_value] * (width - len(tokens)) for tokens in rows]
    return np.array(padded, dtype=object).reshape(X.shape + (width,))
