"""Text kernels: TfIdfVectorizer (n-gram counting with skips over int64 or string tokens).

Counting is vectorized: tokens are first replaced by their id in the pool's vocabulary (-1 when a
token appears in no pool n-gram), each candidate n-gram of ids is packed into one integer key, and
keys are matched against the pool's keys with a sorted search.
"""

import numpy as np

from ..registry import kernel


def _pool_ngrams(pool: list, ngram_counts: list) -> list[tuple]:
    """The pool's n-grams in order: group k (starting at ngram_counts[k]) holds (k+1)-grams."""
    grams = []
    bounds = list(ngram_counts) + [len(pool)]
    for k in range(len(ngram_counts)):
        n = k + 1
        group = pool[bounds[k]:bounds[k + 1]]
        grams.extend(tuple(group[i:i + n]) for i in range(0, len(group) - n + 1, n))
    return grams


@kernel("TfIdfVectorizer", since=9)
def tfidf_vectorizer(X, *, mode, min_gram_length, max_gram_length, max_skip_count, ngram_counts,
                     ngram_indexes, pool_int64s=None, pool_strings=None, weights=None):
    pool = list(pool_strings) if pool_strings is not None else [int(v) for v in pool_int64s]
    grams = _pool_ngrams(pool, ngram_counts)
    vocabulary = sorted(set(pool))
    vocab_index = {tok: i for i, tok in enumerate(vocabulary)}
    base = len(vocabulary) + 1  # id + 1 in [1, base) so that n-grams of different lengths differ

    rows = X.reshape(1, -1) if X.ndim == 1 else X
    batch, length = rows.shape
    if rows.dtype == object:
        # Strings: look up each distinct token once.
        distinct, inverse = np.unique(rows.ravel(), return_inverse=True)
        distinct_ids = np.array([vocab_index.get(t, -1) for t in distinct], dtype=np.int64)
        ids = distinct_ids[inverse].reshape(rows.shape)
    else:
        ids = _int_ids(rows.astype(np.int64), np.array(vocabulary, dtype=np.int64))

    def key(id_columns):
        k = np.zeros(id_columns[0].shape, dtype=object if base ** len(id_columns) > 2 ** 62 else np.int64)
        for c in id_columns:
            k = k * base + (c + 1)
        return k

    pool_keys = np.array([key([np.array(vocab_index[t]) for t in g]) for g in grams])
    order = np.argsort(pool_keys, kind="stable")
    sorted_keys = pool_keys[order]
    counts = np.zeros((batch, len(grams)), dtype=np.float32)
    for n in range(min_gram_length, max_gram_length + 1):
        # A unigram is the same whatever the skip: count it once.
        for skip in range(max_skip_count + 1 if n > 1 else 1):
            span = (n - 1) * (skip + 1)
            starts = np.arange(max(length - span, 0))
            if starts.size == 0:
                continue
            cols = [ids[:, starts + j * (skip + 1)] for j in range(n)]
            valid = np.all(np.stack([c >= 0 for c in cols]), axis=0)
            keys = key(cols)
            pos = np.searchsorted(sorted_keys, keys)
            pos = np.minimum(pos, len(sorted_keys) - 1)
            found = valid & (sorted_keys[pos] == keys)
            row_index = np.broadcast_to(np.arange(batch)[:, None], keys.shape)
            np.add.at(counts, (row_index[found], order[pos[found]]), 1)
    weight = np.ones(len(grams), np.float32) if weights is None else np.asarray(weights, np.float32)
    if mode == "TF":
        scores = counts
    elif mode == "IDF":
        scores = np.minimum(counts, 1) * weight
    elif mode == "TFIDF":
        scores = counts * weight
    else:
        raise ValueError(f"unknown TfIdfVectorizer mode {mode!r}")
    out = np.zeros((batch, max(ngram_indexes) + 1), np.float32)
    # Several pool entries may share an output coordinate: accumulate.
    np.add.at(out, (slice(None), np.asarray(ngram_indexes)), scores)
    return out[0] if X.ndim == 1 else out


def _int_ids(values: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    """Position of each value in the sorted ``vocabulary``, -1 when absent."""
    if vocabulary.size == 0:
        return np.full(values.shape, -1, np.int64)
    pos = np.minimum(np.searchsorted(vocabulary, values), vocabulary.size - 1)
    return np.where(vocabulary[pos] == values, pos, -1)
