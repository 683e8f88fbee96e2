"""Text kernels: TfIdfVectorizer (n-gram counting with skips over int64 or string tokens).

Counting is vectorized: tokens are first replaced by their id in the pool's vocabulary (-1 when a
token appears in no pool n-gram), each candidate n-gram of ids is packed into one integer key, and
keys are matched against the pool's keys with a sorted search. The pool's tables are built once per
node (:mod:`.derived_cache`).
"""

import numpy as np

from ..limits import check_allocation
from ..registry import kernel, prepares
from .derived_cache import derived


def _pool_ngrams(pool: list, ngram_counts: list) -> list[tuple]:
    """The pool's n-grams in order: group k (starting at ngram_counts[k]) holds (k+1)-grams."""
    grams = []
    bounds = list(ngram_counts) + [len(pool)]
    for k in range(len(ngram_counts)):
        n = k + 1
        group = pool[bounds[k]:bounds[k + 1]]
        grams.extend(tuple(group[i:i + n]) for i in range(0, len(group) - n + 1, n))
    return grams


class _Pool:
    """A TfIdfVectorizer's pool as lookup tables, built once per node (:mod:`.derived_cache`)."""

    __slots__ = ("gram_position", "lookups", "column_weight", "vocab_index", "vocabulary", "int_vocabulary", "base", "sorted_keys", "order", "size", "weight", "indexes",
                 "unique_indexes", "width")

    def __init__(self, pool_strings, pool_int64s, ngram_counts, ngram_indexes, weights):
        pool = list(pool_strings) if pool_strings is not None else [int(v) for v in pool_int64s]
        grams = _pool_ngrams(pool, ngram_counts)
        self.gram_position = {}  # n-gram (tuple of tokens) -> its first position in the pool
        for i, g in enumerate(grams):
            self.gram_position.setdefault(g, i)
        self.vocabulary = sorted(set(pool))
        self.vocab_index = {tok: i for i, tok in enumerate(self.vocabulary)}
        self.int_vocabulary = None if pool_strings is not None else np.array(self.vocabulary, dtype=np.int64)
        self.base = len(self.vocabulary) + 1  # id + 1 in [1, base) so that n-grams of different lengths differ
        pool_keys = np.array([_key(self.base, [np.array(self.vocab_index[t]) for t in g]) for g in grams])
        self.order = np.argsort(pool_keys, kind="stable")
        self.sorted_keys = pool_keys[self.order]
        self.size = len(grams)
        self.weight = np.ones(len(grams), np.float32) if weights is None else np.asarray(weights, np.float32)
        self.indexes = np.asarray(ngram_indexes, np.int64)
        self.unique_indexes = np.unique(self.indexes).size == self.indexes.size
        self.width = int(self.indexes.max()) + 1
        # small inputs: n-gram -> its pool position, or straight to its output column when no two pool
        # entries share one; unigrams keyed by the token itself (no 1-tuple per token)
        columns = self.indexes.tolist()
        self.lookups = {}
        for by_column in (False, True):
            grams_to = {g: columns[i] if by_column else i for g, i in self.gram_position.items()}
            self.lookups[by_column] = ({g[0]: v for g, v in grams_to.items() if len(g) == 1}.get, grams_to.get)
        self.column_weight = None  # weight by output column (unique indexes): built once the width is checked


def _key(base: int, id_columns):
    """One integer per n-gram of token ids (object integers when int64 could overflow)."""
    k = np.zeros(id_columns[0].shape, dtype=object if base ** len(id_columns) > 2 ** 62 else np.int64)
    for c in id_columns:
        k = k * base + (c + 1)
    return k


#: Inputs with at most this many candidate n-grams are counted with dict lookups in Python, larger ones
#: with the vectorized key search (which costs tens of numpy calls whatever the input's size).
SMALL_INPUT_GRAMS = 512


def _found_cells_small(rows: np.ndarray, pool: _Pool, min_n: int, max_n: int, max_skip: int,
                       by_column: bool = False) -> list:
    """Flat (row, pool n-gram) positions of every n-gram found in ``rows`` [batch, length], by looking
    each one up in a dict; with ``by_column`` (pools whose n-grams have distinct output columns) flat
    (row, output column) positions.

    The candidate n-grams of all rows are looked up in one ``map`` per (n, skip) over the flattened tokens;
    windows that cross a row's end are dropped by their start's entry in ``starts``, which also holds the
    row's first flat position (kept per input shape)."""
    unigram, position = pool.lookups[by_column]
    stride = pool.width if by_column else pool.size
    batch, length = rows.shape
    flat = rows.ravel().tolist()
    cells = []
    for n in range(min_n, max_n + 1):
        for step in range(1, max_skip + 2 if n > 1 else 2):  # a unigram is the same whatever the skip
            span = (n - 1) * step
            if span >= length:
                continue
            found = map(unigram, flat) if n == 1 else map(position, zip(*[flat[j * step:] for j in range(n)]))
            starts = _window_starts(batch, length, span, stride)
            cells += [b + i for b, i in zip(starts, found) if i is not None and b is not None]
    return cells


_STARTS: dict = {}


def _window_starts(batch: int, length: int, span: int, stride: int) -> list:
    """Per flat token position, ``row * stride`` when a window of ``span`` starting there stays in its row,
    else None."""
    key = (batch, length, span, stride)
    starts = _STARTS.get(key)
    if starts is None:
        if len(_STARTS) > 64:
            _STARTS.clear()
        starts = _STARTS[key] = [r * stride if s + span < length else None for r in range(batch)
                                 for s in range(length)]
    return starts


def _found_cells(rows: np.ndarray, pool: _Pool, min_n: int, max_n: int, max_skip: int) -> np.ndarray:
    """:func:`_found_cells_small` vectorized: n-grams of token ids packed into integer keys, matched
    against the pool's sorted keys."""
    batch, length = rows.shape
    if rows.dtype == object:
        lookup = pool.vocab_index.get
        ids = np.array([lookup(t, -1) for t in rows.ravel().tolist()], np.int64).reshape(rows.shape)
    else:
        ids = _int_ids(rows.astype(np.int64), pool.int_vocabulary)

    sorted_keys = pool.sorted_keys
    found_cells = []  # flat (row, pool n-gram) positions of every n-gram found
    for n in range(min_n, max_n + 1):
        # A unigram is the same whatever the skip: count it once.
        for skip in range(max_skip + 1 if n > 1 else 1):
            span = (n - 1) * (skip + 1)
            count = length - span
            if count <= 0 or not sorted_keys.size:
                continue
            cols = [ids[:, j * (skip + 1):j * (skip + 1) + count] for j in range(n)]
            valid = cols[0] >= 0
            for c in cols[1:]:
                valid &= c >= 0
            keys = _key(pool.base, cols)
            pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
            found = valid & (sorted_keys[pos] == keys)
            row_index = np.nonzero(found)[0]
            found_cells.append(row_index * pool.size + pool.order[pos[found]])
    return np.concatenate(found_cells) if found_cells else np.zeros(0, np.int64)


@kernel("TfIdfVectorizer", since=9)
def tfidf_vectorizer(X, *, mode, min_gram_length, max_gram_length, max_skip_count, ngram_counts,
                     ngram_indexes, pool_int64s=None, pool_strings=None, weights=None):
    # keyed by the node's own (required) ngram_indexes list, which names the node and so its pool (see
    # derived_cache: each node's attribute lists are its own objects)
    pool = derived("tfidf-pool", (ngram_indexes,),
                   lambda: _Pool(pool_strings, pool_int64s, ngram_counts, ngram_indexes, weights))
    return _tfidf(X, pool, mode, min_gram_length, max_gram_length, max_skip_count)


@prepares(tfidf_vectorizer)
def _prepare_tfidf_vectorizer(a: dict, constants):
    pool = _Pool(a.get("pool_strings"), a.get("pool_int64s"), a["ngram_counts"], a["ngram_indexes"], a.get("weights"))
    rest = (a["mode"], a["min_gram_length"], a["max_gram_length"], a["max_skip_count"])
    return lambda X: _tfidf(X, pool, *rest)


def _tfidf(X, pool: _Pool, mode, min_gram_length, max_gram_length, max_skip_count):
    """TfIdfVectorizer of ``X`` with the node's pool tables."""
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    batch, length = rows.shape
    combinations = (max_gram_length - min_gram_length + 1) * (max_skip_count + 1)
    if mode not in ("TF", "IDF", "TFIDF"):
        raise ValueError(f"unknown TfIdfVectorizer mode {mode!r}")
    check_allocation(batch * pool.width, 4, "TfIdfVectorizer")  # the output width comes from ngram_indexes
    if batch * length * combinations <= SMALL_INPUT_GRAMS and pool.unique_indexes:
        # counted straight into the output columns
        cells = _found_cells_small(rows, pool, min_gram_length, max_gram_length, max_skip_count, True)
        counts = np.bincount(cells, minlength=batch * pool.width).reshape(batch, pool.width).astype(np.float32)
        if mode == "IDF":
            np.minimum(counts, 1, out=counts)
        if mode != "TF":
            if pool.column_weight is None:
                weights = np.zeros(pool.width, np.float32)
                weights[pool.indexes] = pool.weight
                pool.column_weight = weights
            counts *= pool.column_weight
        return counts[0] if X.ndim == 1 else counts
    if batch * length * combinations <= SMALL_INPUT_GRAMS:
        cells = np.array(_found_cells_small(rows, pool, min_gram_length, max_gram_length, max_skip_count), np.int64)
    else:
        cells = _found_cells(rows, pool, min_gram_length, max_gram_length, max_skip_count)
    counts = np.bincount(cells, minlength=batch * pool.size).reshape(batch, pool.size).astype(np.float32)
    if mode == "TF":
        scores = counts
    elif mode == "IDF":
        scores = np.minimum(counts, 1) * pool.weight
    else:
        scores = counts * pool.weight
    out = np.zeros((batch, pool.width), np.float32)
    if pool.unique_indexes:
        out[:, pool.indexes] = scores
    else:  # several pool entries share an output coordinate: accumulate
        np.add.at(out, (slice(None), pool.indexes), scores)
    return out[0] if X.ndim == 1 else out


def _int_ids(values: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    """Position of each value in the sorted ``vocabulary``, -1 when absent."""
    if vocabulary.size == 0:
        return np.full(values.shape, -1, np.int64)
    pos = np.minimum(np.searchsorted(vocabulary, values), vocabulary.size - 1)
    return np.where(vocabulary[pos] == values, pos, -1)
