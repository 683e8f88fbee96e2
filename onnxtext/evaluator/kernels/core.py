"""Core kernels: Constant and Identity, and the sparse-tensor densifier they (and the runtime) share."""

from __future__ import annotations

import numpy as np

from ... import tensors
from ...errors import EvalError
from ..limits import check_tensor_dims
from ..registry import kernel


def sparse_to_dense(sparse, base_dir: str | None = None) -> np.ndarray:
    """Dense numpy array of a SparseTensorProto (indices either linear [NNZ] or coordinates [NNZ, rank])."""
    values = tensors.to_array(sparse.values, base_dir).reshape(-1)
    shape = tuple(int(d) for d in sparse.dims)
    check_tensor_dims(shape, values.dtype.itemsize, f"sparse tensor {sparse.values.name!r}")
    dense = np.zeros(shape, dtype=values.dtype)
    if values.size == 0:
        return dense
    indices = tensors.to_array(sparse.indices, base_dir).astype(np.int64)
    bound = np.array([dense.size] if indices.ndim == 1 else shape, dtype=np.int64)
    if indices.size and ((indices < 0).any() or (indices >= bound).any()):
        raise EvalError(f"sparse tensor {sparse.values.name!r}: an index lies outside dims {list(shape)}")
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    elif indices.ndim == 2 and indices.shape[1] == len(shape):
        dense[tuple(indices.T)] = values
    else:
        raise EvalError(f"sparse tensor indices of shape {list(indices.shape)} do not fit dims {list(shape)}")
    return dense


@kernel("Constant", since=1)
def constant(value=None, sparse_value=None, value_float=None, value_floats=None, value_int=None,
             value_ints=None, value_string=None, value_strings=None):
    # exactly one attribute is set; the schema has no defaults, so unset ones are not passed
    if value is not None:
        return value
    if sparse_value is not None:
        return sparse_to_dense(sparse_value)
    if value_float is not None:
        return np.array(value_float, dtype=np.float32)
    if value_floats is not None:
        return np.array(value_floats, dtype=np.float32)
    if value_int is not None:
        return np.array(value_int, dtype=np.int64)
    if value_ints is not None:
        return np.array(value_ints, dtype=np.int64)
    if value_string is not None:
        return np.array(value_string, dtype=object)
    if value_strings is not None:
        return np.array(value_strings, dtype=object).reshape(len(value_strings))
    raise EvalError("Constant has no value attribute")


@kernel("Identity", since=1)
def identity(x):
    # values are never mutated in place, so the same object can be passed on (tensor, sequence, optional)
    return x
