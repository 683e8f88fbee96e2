"""Text kernels (TfIdfVectorizer, com.microsoft::Tokenizer, the RE2 helpers of kernels/string.py) checked
against onnxruntime, RE2's own Python binding, and each other's paths.

Cases are tables: a new n-gram setting, pattern or text is one more line.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from test_kernels_ml import I32, I64, F, S, check, make_model

pytest.importorskip("onnxruntime")


# TfIdfVectorizer counts small inputs with dict lookups and large ones with a vectorized key search
# (kernels/text.py, SMALL_INPUT_GRAMS); each row here is checked against onnxruntime, and the sizes put
# every mode on both paths. (id, X, attributes)
_RNG = np.random.default_rng(3)
_WORDS = np.array(["a", "b", "c", "d", "zz"], dtype=object)
TFIDF_POOL = dict(pool_strings=["a", "b", "c", "a", "b", "b", "c", "c", "a", "a", "d"], ngram_counts=[0, 3],
                  ngram_indexes=[0, 1, 2, 3, 4, 5, 6])
TFIDF_INT_POOL = dict(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 2, 2, 2], ngram_counts=[0, 4, 8],
                      ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 2])  # output 2 is shared: counts add up
TFIDF_CASES = [
    ("strings_small_tf", _WORDS[_RNG.integers(0, 5, (3, 6))], dict(TFIDF_POOL, mode="TF", min_gram_length=1,
                                                                     max_gram_length=2, max_skip_count=1)),
    ("strings_large_tf", _WORDS[_RNG.integers(0, 5, (6, 200))], dict(TFIDF_POOL, mode="TF", min_gram_length=1,
                                                                       max_gram_length=2, max_skip_count=1)),
    ("strings_small_bigrams_idf", _WORDS[_RNG.integers(0, 5, (2, 9))],
     dict(TFIDF_POOL, mode="IDF", min_gram_length=2, max_gram_length=2, max_skip_count=2,
          weights=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
    ("strings_large_bigrams_idf", _WORDS[_RNG.integers(0, 5, (4, 300))],
     dict(TFIDF_POOL, mode="IDF", min_gram_length=2, max_gram_length=2, max_skip_count=2,
          weights=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
    ("ints_small_tfidf", _RNG.integers(1, 9, (2, 7)).astype(np.int64),
     dict(TFIDF_INT_POOL, mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=1,
          weights=[0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])),
    ("ints_large_tfidf", _RNG.integers(1, 9, (5, 400)).astype(np.int64),
     dict(TFIDF_INT_POOL, mode="TFIDF", min_gram_length=1, max_gram_length=3, max_skip_count=1,
          weights=[0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])),
    ("strings_small_tfidf", _WORDS[_RNG.integers(0, 5, (4, 5))],
     dict(TFIDF_POOL, mode="TFIDF", min_gram_length=1, max_gram_length=2, max_skip_count=2,
          weights=[0.5, 2.0, 3.0, 0.25, 5.0, 6.0, 7.0])),
    ("strings_one_row_tfidf", _WORDS[_RNG.integers(0, 5, (7,))],
     dict(TFIDF_POOL, mode="TFIDF", min_gram_length=2, max_gram_length=2, max_skip_count=1,
          weights=[1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
    ("ints_one_row", _RNG.integers(1, 9, (11,)).astype(np.int32),
     dict(TFIDF_INT_POOL, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0)),
]


@pytest.mark.parametrize("case", TFIDF_CASES, ids=[c[0] for c in TFIDF_CASES])
def test_tfidf_vectorizer_against_onnxruntime(case):
    _, x, attrs = case
    elem = S if x.dtype == object else I32 if x.dtype == np.int32 else I64
    check(make_model("TfIdfVectorizer", [("X", elem)], [("Y", F)], attrs, domain="", onnx_opset=19), {"X": x})


def test_tfidf_vectorizer_count_paths_agree():
    """The dict-lookup and the vectorized n-gram counts find the same cells on the same rows."""
    from onnxtext.evaluator.kernels.text import _found_cells, _found_cells_small, _Pool

    pool = _Pool(TFIDF_POOL["pool_strings"], None, TFIDF_POOL["ngram_counts"], TFIDF_POOL["ngram_indexes"], None)
    rows = _WORDS[_RNG.integers(0, 5, (4, 30))]
    for n_min, n_max, skip in ((1, 1, 0), (1, 2, 0), (2, 2, 3), (1, 2, 2)):
        small = sorted(_found_cells_small(rows, pool, n_min, n_max, skip))
        assert small, (n_min, n_max, skip)
        assert small == sorted(_found_cells(rows, pool, n_min, n_max, skip).tolist()), (n_min, n_max, skip)
        # the same cells addressed by output column (row * width + ngram_indexes[position])
        by_column = sorted(_found_cells_small(rows, pool, n_min, n_max, skip, by_column=True))
        columns = TFIDF_POOL["ngram_indexes"]
        assert by_column == sorted(c // pool.size * pool.width + columns[c % pool.size] for c in small)


# Tokenizer's and RegexFullMatch's matches (kernels/string.py) step over the binding's matcher themselves;
# each line must give what the binding's own methods give: (pattern, text)
RE2_FIND_ALL = [(r"\w+", "works well, great value"), (r"\w+", "héllo wörld, ça va"), (r"a*", "baaac"),
                (r"", "xé€"), (r"\b", "ab cd"), (r"[[:alpha:]]+", "x1yz2 €uro"), (r"(a)(b)?", "abab a"),
                (r"\s*", "  a  b"), (r"é+|€", "éé€x€")]


@pytest.mark.parametrize("pattern, text", RE2_FIND_ALL + [(r"(,)|;", "a,b;;c,"), (r"(x)?y", "ayxyb"), (r" ", "")])
def test_re2_helpers_match_the_bindings_own_methods(pattern, text):
    """find_all_re2, split_re2 and full_match_re2 (Tokenizer, RegexFullMatch) call the binding's matcher
    directly; each gives what the binding's finditer, split and fullmatch give."""
    from onnxtext.evaluator.kernels.string import compile_re2, find_all_re2, full_match_re2, split_re2

    compiled = compile_re2(pattern)
    assert find_all_re2(compiled, text) == [m.group(0) for m in compiled.finditer(text)]
    assert split_re2(compiled, text) == compiled.split(text)
    for candidate in (text, text[:1], ""):
        assert full_match_re2(compiled)(candidate) == (compiled.fullmatch(candidate) is not None)


# Tokenizer runs token patterns of one simple shape with Python's re (kernels/string.python_find_all);
# these must give RE2's matches on any text, the others must be left to RE2.
FAST_TOKEN_PATTERNS = [r"\w+", r"\b\w\w+\b", r"\d+", r"\S+", r"\s", r"\W+", r"\D", r"ab+", r"\b\w", r"x\d\w+\b",
                       r"\s+", r"\b\W\b"]
RE2_ONLY_PATTERNS = [r"\W+\b", r"\w*", r"(\w+)", r"a|b", r"\w+\w+", r"[a-z]+", r"\w+?", r"é+", r"\b", r"",
                     r"\w{2,}", r"(?i)a+", r"\B\w+"]
_TEXT_ALPHABET = list("aZ09_ -,.!?\t\n\r\f\v\x0b\x1c\xa0") + ["é", "ß", "中", "\u2028", "😀", "\u0301"]


def _random_texts(n, seed):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(_TEXT_ALPHABET, size=int(rng.integers(0, 30)))) for _ in range(n)] + [
        "works well, great value", "naïve café\u00a0déjà-vu 42x_7", "\vtab\x0bvertical\tfeed\f"]


@pytest.mark.parametrize("pattern", FAST_TOKEN_PATTERNS + RE2_ONLY_PATTERNS)
def test_python_find_all_gives_re2s_matches(pattern):
    from onnxtext.evaluator.kernels.string import compile_re2, find_all_re2, python_find_all

    fast = python_find_all(pattern)
    assert (fast is not None) == (pattern in FAST_TOKEN_PATTERNS)
    if fast is not None:
        compiled = compile_re2(pattern)
        for text in _random_texts(300, seed=len(pattern)):
            assert fast(text) == find_all_re2(compiled, text), (pattern, text)


TOKEN_TEXTS = np.array([["Works well, GREAT value\vtab", "naïve café déjà-vu 42x_7"], ["", "a\u00a0b\x0bc d"]], object)


@pytest.mark.parametrize("attrs", [dict(tokenexp=r"\w+"), dict(tokenexp=r"\b\w\w+\b", mark=1, mincharnum=2),
                                   dict(tokenexp=r"\S+"), dict(tokenexp=r"[a-z]+")], ids=str)
def test_tokenizer_token_patterns_against_onnxruntime(attrs):
    model = make_model("Tokenizer", [("X", S)], [("Y", S)], dict(dict(mark=0, mincharnum=1, pad_value="#"), **attrs),
                       domain="com.microsoft")
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    check(model, {"X": TOKEN_TEXTS})
