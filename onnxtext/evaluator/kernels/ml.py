"""``ai.onnx.ml`` kernels: feature transforms, encoders, map conversions, and the shared post-transforms.

The classifier/regressor families live in :mod:`.ml_linear` (linear models, SVMs) and
:mod:`.ml_tree` (tree ensembles); they use :func:`post_transform` and :func:`class_labels` from here.

Maps are Python dicts; a sequence of maps is a list of dicts. Where the ml specification leaves a
detail open (output shapes of 1-D inputs, padding values), the behaviour of onnxruntime, the
domain's reference runtime, is followed; tests/test_kernels_ml.py checks each against it.
"""

from itertools import repeat

import numpy as np

from ..registry import kernel, prepares
from .activation import _softmax, row_max, row_sums
from .derived_cache import derived

ML = "ai.onnx.ml"


# --- shared helpers ----------------------------------------------------------------------------

def _inverse_normal_cdf(p: np.ndarray) -> np.ndarray:
    """Quantile of the standard normal distribution, p in (0, 1): Acklam's rational approximation
    (relative error below 1.2e-9, far below float32 resolution)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    p = np.clip(np.asarray(p, np.float64), 1e-300, 1 - 1e-16)
    low = p < 0.02425
    high = p > 1 - 0.02425
    q = np.sqrt(-2 * np.log(np.where(low, p, np.where(high, 1 - p, 0.5))))
    tail = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    r = (p - 0.5) ** 2
    centre = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * (p - 0.5) / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    return np.where(low, tail, np.where(high, -tail, centre))


#: Row-wise reductions over [N, C] scores with many rows (at least MANY_ROWS) of few classes (at most
#: FEW_CLASSES) run on the transposed, contiguous [C, N] copy: numpy reduces a short last axis one row
#: at a time (1000 x 10 float32: row maximum 59 us, argmax 16 us, sum 18 us) but an [C, N] array's
#: first axis in one vectorized pass (5.7 us for the copy and the maximum).
MANY_ROWS, FEW_CLASSES = 32, 32


def _many_short_rows(scores: np.ndarray) -> bool:
    return scores.ndim == 2 and scores.shape[0] >= MANY_ROWS and 0 < scores.shape[1] <= FEW_CLASSES


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Softmax of every row of [N, C] scores (a new C-contiguous array of the same dtype)."""
    if _many_short_rows(scores):
        t = np.ascontiguousarray(scores.T)
        t -= t.max(axis=0)
        np.exp(t, out=t)
        out = np.empty(scores.shape, scores.dtype)
        np.divide(t, t.sum(axis=0), out=out.T)
        return out
    return _softmax(scores, 1)  # the Softmax kernel's own form (unshifted when that only changes rounding)


def argmax_rows(scores: np.ndarray) -> np.ndarray:
    """Index of each row's largest score (the first of equal ones) of [N, C] scores."""
    if _many_short_rows(scores):
        return np.ascontiguousarray(scores.T).argmax(axis=0)
    return scores.argmax(axis=1)


def post_transform(scores: np.ndarray, name: str) -> np.ndarray:
    """Apply an ml post-transform (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT) to [N, C] scores."""
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return 1 / (1 + np.exp(-scores))
    if name == "SOFTMAX":
        return softmax_rows(scores)
    if name == "SOFTMAX_ZERO":
        # Softmax over the non-zero scores of a row; zero scores stay zero.
        nonzero = scores != 0
        e = np.where(nonzero, np.exp(scores - row_max(scores)), 0)
        total = e.sum(axis=-1, keepdims=True)
        return np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    if name == "PROBIT":
        return _inverse_normal_cdf(scores)
    raise ValueError(f"unknown post_transform {name!r}")


def class_labels(classlabels_strings, classlabels_int64s):
    """The class labels array (object strings or int64) from whichever attribute is set."""
    if classlabels_strings is not None and len(classlabels_strings):
        return np.array(classlabels_strings, dtype=object)
    return np.array(classlabels_int64s if classlabels_int64s is not None else [], dtype=np.int64)


def as_rows(X: np.ndarray) -> np.ndarray:
    """[N, F] view of a model input (a 1-D input is one sample; a 2-D one is itself)."""
    if X.ndim == 2:
        return X
    return X.reshape(1, -1) if X.ndim == 1 else X.reshape(X.shape[0], -1)


def _lookup(values: np.ndarray, keys: np.ndarray):
    """(position of each value among ``keys``, found mask); keys need not be sorted.

    Numeric lookups sort the keys and use searchsorted; NaN keys match NaN values. For duplicated
    keys the last occurrence wins. String lookups go through a dict over the distinct values.
    """
    if values.dtype == object or keys.dtype == object:
        # one dict lookup per value (sorting object arrays for np.unique costs more Python comparisons)
        get = derived("lookup-table", (keys,), lambda: {k: i for i, k in enumerate(keys.tolist())}.get,
                      readonly_inputs=True)
        pos = np.array([get(v, -1) for v in values.ravel().tolist()], np.int64).reshape(values.shape)
        return np.maximum(pos, 0), pos >= 0
    # The last occurrence of a duplicated key wins: keep, per distinct key, its last position.
    reversed_keys = keys[::-1]
    distinct, first_in_reversed = np.unique(reversed_keys, return_index=True)
    last_pos = len(keys) - 1 - first_in_reversed
    if distinct.size == 0:
        return np.zeros(values.shape, np.int64), np.zeros(values.shape, bool)
    idx = np.minimum(np.searchsorted(distinct, values), distinct.size - 1)
    found = distinct[idx] == values
    if values.dtype.kind == "f":
        nan_keys = np.flatnonzero(np.isnan(keys))
        if nan_keys.size:
            nan_values = np.isnan(values)
            found = found | nan_values
            return np.where(nan_values, nan_keys[-1], last_pos[idx]), found
    return last_pos[idx], found


def _attribute_array(values: list | None, dtype) -> np.ndarray:
    """A list attribute as a read-only array, built once per node (:mod:`.derived_cache`)."""
    def build():
        array = np.array(values or [], dtype=dtype)
        array.flags.writeable = False
        return array
    return derived(f"attribute-{np.dtype(dtype).name}", (values,), build)


# --- element-wise and feature transforms -------------------------------------------------------

@kernel("ArrayFeatureExtractor", since=1, domain=ML)
def array_feature_extractor(X, Y):
    indices = np.asarray(Y, np.int64).ravel()
    if X.ndim == 1:
        return X[indices].reshape(1, -1)
    return np.take(X, indices, axis=-1)


@kernel("Binarizer", since=1, domain=ML)
def binarizer(X, *, threshold):
    return (X > threshold).astype(X.dtype)


@kernel("Imputer", since=1, domain=ML)
def imputer(X, *, imputed_value_floats=None, imputed_value_int64s=None, replaced_value_float,
            replaced_value_int64):
    if X.dtype.kind == "f":
        imputed = np.asarray(imputed_value_floats, X.dtype)
        replaced = replaced_value_float
        hit = np.isnan(X) if np.isnan(replaced) else X == replaced
    else:
        imputed = np.asarray(imputed_value_int64s).astype(X.dtype)
        hit = X == replaced_value_int64
    return np.where(hit, np.broadcast_to(imputed, X.shape[:-1] + imputed.shape[-1:]) if imputed.size > 1
                    else imputed.reshape(()), X)


@kernel("Normalizer", since=1, domain=ML)
def normalizer(X, *, norm):
    x = X.reshape(1, -1) if X.ndim == 1 else X
    if x.dtype != np.float32:
        x = x.astype(np.float32)
    rows = np.ascontiguousarray(x.T) if _many_short_rows(x) else None  # reduced along its first axis
    if norm == "MAX":
        divisor = x.max(axis=-1, keepdims=True) if rows is None else rows.max(axis=0)[:, None]
    elif norm == "L1":
        divisor = row_sums(np.abs(x), -1) if rows is None else np.abs(rows).sum(axis=0)[:, None]
    elif norm == "L2":
        divisor = np.sqrt(np.vecdot(x, x)[..., None] if rows is None else (rows * rows).sum(axis=0)[:, None])
    else:
        raise ValueError(f"unknown Normalizer norm {norm!r}")
    if np.count_nonzero(divisor) != divisor.size:  # (cheaper than divisor.all(), a Python-level reduction)
        divisor[divisor == 0] = 1  # a zero row stays as it is
    y = x / divisor
    return y.reshape(X.shape) if X.ndim == 1 else y


@kernel("Scaler", since=1, domain=ML)
def scaler(X, *, offset=None, scale=None):
    shift, factor = derived("scaler", (offset, scale), lambda: _scaler_tables(offset, scale))
    return _scale(X, shift, factor)


@prepares(scaler)
def _prepare_scaler(a: dict, constants):
    shift, factor = _scaler_tables(a.get("offset"), a.get("scale"))
    return lambda X: _scale(X, shift, factor)


def _scaler_tables(offset, scale):
    def per_feature(values, neutral):
        # One value per feature (last axis), or a single value for all features.
        v = np.asarray(values if values else [neutral], np.float32)
        return v.reshape(()) if v.size == 1 else v
    return per_feature(offset, 0.0), per_feature(scale, 1.0)


def _scale(X, shift, factor):
    y = (X if X.dtype == np.float32 else X.astype(np.float32)) - shift  # a new float32 array either way
    y *= factor
    return y


@kernel("FeatureVectorizer", since=1, domain=ML)
def feature_vectorizer(*X, inputdimensions=None):
    rows = [x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1) for x in X]
    dims = list(inputdimensions) if inputdimensions else [r.shape[1] for r in rows]
    batch = rows[0].shape[0]
    out = np.zeros((batch, sum(dims)), np.float32)
    start = 0
    for r, width in zip(rows, dims):
        # Each input fills exactly its declared width: truncated or zero-padded.
        n = min(width, r.shape[1])
        out[:, start:start + n] = r[:, :n]
        start += width
    return out


@kernel("OneHotEncoder", since=1, domain=ML)
def one_hot_encoder(X, *, cats_int64s=None, cats_strings=None, zeros):
    # row c of the table is category c's one-hot vector, its last row (for values not found) all zeros
    strings = X.dtype == object
    tables = derived("one-hot-" + ("strings" if strings else "ints"), (cats_strings, cats_int64s),
                     lambda: _one_hot_tables(cats_strings if strings else cats_int64s, strings))
    return _one_hot(X, tables, zeros)


@prepares(one_hot_encoder)
def _prepare_one_hot_encoder(a: dict, constants):
    by_strings = (_one_hot_tables(a.get("cats_int64s"), False), _one_hot_tables(a.get("cats_strings"), True))
    zeros = a["zeros"]
    return lambda X: _one_hot(X, by_strings[X.dtype == object], zeros)


def _one_hot(X, tables, zeros):
    """OneHotEncoder of ``X`` with the tables of :func:`_one_hot_tables` for its kind of values."""
    cats, table, position = tables
    n = len(cats)
    if X.dtype == object:  # one dict lookup per value (a C-level map); the table rows taken by the list itself
        pos = list(map(position, X.ravel().tolist(), repeat(n)))
        if not zeros and n in pos:
            raise ValueError("OneHotEncoder: input value not among the categories (zeros=0)")
        return table.take(pos, axis=0).reshape(X.shape + (n,))  # (take: a third of table[pos]'s time)
    pos, found = _lookup(X.astype(np.int64), cats)
    pos = np.where(found, pos, n)
    if not zeros and (pos == n).any():
        raise ValueError("OneHotEncoder: input value not among the categories (zeros=0)")
    return table[pos]


def _one_hot_tables(categories, strings: bool):
    """(categories array, one-hot table with a zero last row, category -> position lookup) of an encoder."""
    cats = _attribute_array(categories, object if strings else np.int64)
    table = np.eye(len(cats) + 1, len(cats), dtype=np.float32)
    return cats, table, {c: i for i, c in enumerate(cats.tolist())}.get


# --- encoders ----------------------------------------------------------------------------------

@kernel("CategoryMapper", since=1, domain=ML)
def category_mapper(X, *, cats_int64s, cats_strings, default_int64, default_string):
    ints = _attribute_array(cats_int64s, np.int64)
    strings = _attribute_array(cats_strings, object)
    if X.dtype == object:  # strings -> integers
        pos, found = _lookup(X, strings)
        return np.where(found, ints[pos] if ints.size else default_int64, default_int64).astype(np.int64)
    pos, found = _lookup(X.astype(np.int64), ints)
    out = np.where(found, strings[pos] if strings.size else default_string, default_string)
    return out.astype(object)


@kernel("LabelEncoder", since=1, domain=ML)
def label_encoder_1(X, *, classes_strings=None, default_int64, default_string):
    classes = _attribute_array(classes_strings, object)
    if X.dtype == object:  # string -> its index in classes_strings
        pos, found = _lookup(X, classes)
        return np.where(found, pos, default_int64).astype(np.int64)
    index = X.astype(np.int64)
    valid = (index >= 0) & (index < len(classes))
    out = np.where(valid, classes[np.clip(index, 0, max(len(classes) - 1, 0))] if len(classes) else "",
                   default_string)
    return out.astype(object)


def _label_encode(X, keys, values, default):
    pos, found = _lookup(X.astype(keys.dtype) if keys.dtype != object else X, keys)
    mapped = values[pos] if values.size else np.zeros(X.shape, values.dtype)
    return np.where(found, mapped, np.asarray(default, values.dtype)).astype(values.dtype)


def _first_set(attrs: dict, names_and_dtypes):
    for name, dtype in names_and_dtypes:
        v = attrs.get(name)
        if v is not None:
            return np.asarray(v) if dtype is None else _attribute_array(v, dtype)
    raise ValueError(f"LabelEncoder: none of {[n for n, _ in names_and_dtypes]} is set")


@kernel("LabelEncoder", since=2, domain=ML)
def label_encoder_2(X, **attrs):
    keys = _first_set(attrs, [("keys_tensor", None), ("keys_strings", object), ("keys_int64s", np.int64),
                              ("keys_floats", np.float32)])
    values = _first_set(attrs, [("values_tensor", None), ("values_strings", object),
                                ("values_int64s", np.int64), ("values_floats", np.float32)])
    if attrs.get("default_tensor") is not None:
        default = np.asarray(attrs["default_tensor"]).ravel()[0]
    elif values.dtype == object:
        default = attrs["default_string"]
    elif values.dtype.kind in "iu":
        default = attrs["default_int64"]
    else:
        default = attrs["default_float"]
    return _label_encode(X, keys, values, default)


# --- maps ------------------------------------------------------------------------------------

def _map_value_dtype(values):
    sample = next(iter(values), None)
    if isinstance(sample, np.generic) or isinstance(sample, np.ndarray):
        return np.asarray(sample).dtype
    if isinstance(sample, str):
        return np.dtype(object)
    if isinstance(sample, (int, np.integer)) and not isinstance(sample, bool):
        return np.dtype(np.int64)
    return np.dtype(np.float32)


@kernel("CastMap", since=1, domain=ML)
def cast_map(X, *, cast_to, map_form, max_map):
    keys = np.array(sorted(X), dtype=np.int64)
    values = [X[k] for k in keys.tolist()]
    target = {"TO_FLOAT": np.float32, "TO_INT64": np.int64, "TO_STRING": object}[cast_to]
    if cast_to == "TO_STRING":
        converted = np.array([str(v) if isinstance(v, str) else _float_text(v) for v in values], dtype=object)
    else:
        converted = np.array([float(v) for v in values], np.float64).astype(target)
    if map_form == "DENSE":
        return converted.reshape(1, -1)
    if map_form != "SPARSE":
        raise ValueError(f"unknown CastMap map_form {map_form!r}")
    pad = "0" if cast_to == "TO_STRING" else 0
    out = np.full((1, max_map), pad, dtype=target)
    inside = (keys >= 0) & (keys < max_map)
    out[0, keys[inside]] = converted[inside]
    return out


def _float_text(v) -> str:
    # Six decimals, as C's "%f" (std::to_string) writes them in onnxruntime.
    return f"{float(v):f}"


@kernel("DictVectorizer", since=1, domain=ML)
def dict_vectorizer(X, *, int64_vocabulary=None, string_vocabulary=None):
    vocabulary = string_vocabulary if string_vocabulary else int64_vocabulary or []
    maps = X if isinstance(X, list) else [X]
    dtype = _map_value_dtype(maps[0].values()) if maps and maps[0] else np.dtype(np.float32)
    index = {k: i for i, k in enumerate(vocabulary)}
    out = np.zeros((len(maps), len(vocabulary)), dtype=dtype)
    if dtype == object:
        out[...] = ""
    for row, m in enumerate(maps):  # one dict per sample: the loop is over the batch
        cols = [index[k] for k in m if k in index]
        out[row, cols] = [m[k] for k in m if k in index]
    return out


@kernel("ZipMap", since=1, domain=ML)
def zip_map(X, *, classlabels_int64s=None, classlabels_strings=None):
    return _zip_rows(X, classlabels_strings or classlabels_int64s)


@prepares(zip_map)
def _prepare_zip_map(a: dict, constants):
    labels = a.get("classlabels_strings") or a.get("classlabels_int64s")
    return lambda X: _zip_rows(X, labels)


def _zip_rows(X, labels):
    # the attribute lists hold Python str / int already: they zip as they are (building the dicts is
    # the cost, as it is for onnxruntime's Python binding, which returns the same list of dicts)
    rows = (X.tolist() if X.ndim == 2 else as_rows(X).tolist())
    if rows and len(rows[0]) != len(labels):
        raise ValueError(f"ZipMap: {len(rows[0])} columns but {len(labels)} labels")
    # two and three classes (most classifiers) as dict displays: 2.5x faster than dict(zip(...)) per row
    if len(labels) == 2:
        a, b = labels
        return [{a: x, b: y} for x, y in rows]
    if len(labels) == 3:
        a, b, c = labels
        return [{a: x, b: y, c: z} for x, y, z in rows]
    return [dict(zip(labels, row)) for row in rows]
