"""Every kernel's prepared form (``@prepares``, onnxtext/evaluator/registry.py) against the plain kernel.

At optimizer levels above 0 a plan calls a kernel's prepared form, a function of the inputs that already
holds the tables the kernel derives from its attributes; ``optimize=0`` calls the plain kernel. The cases
are the one-node tables of the kernel test files (tests/test_kernels_ml.py, tests/test_kernels_text.py),
whose default runs are compared with onnxruntime there: here each case whose operator has a prepared
form runs on both paths, which must give identical results, and the default path must really have used
the prepared form. A kernel given a prepared form without a case in those tables fails
``test_every_prepared_form_has_cases``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels_ml import CASES as ML_CASES
from test_kernels_ml import F, I32, I64, S, make_model
from test_kernels_text import TFIDF_CASES

from helpers import node_model

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.registry import lookup, prepared_forms


def _ml_case(case):
    _, op, inputs, outputs, feeds, attrs, *opset = case
    return op, make_model(op, inputs, outputs, attrs, ml_opset=opset[0] if opset else 3), feeds


def _tfidf_case(case):
    _, x, attrs = case
    elem = S if x.dtype == object else I32 if x.dtype == np.int32 else I64
    return "TfIdfVectorizer", make_model("TfIdfVectorizer", [("X", elem)], [("Y", F)], attrs, domain="",
                                         onnx_opset=19), {"X": x}


TEXTS = np.array([["Hello World  of text"], ["a-b,c d"], [""]], dtype=object)
WORDS = np.array([["The", "cat", "AND", "the", "Dog"]], dtype=object)
# (id, op, domain, X, attributes): string operators whose kernel tests do not use a one-node table
STRING_CASES = [
    ("tokenizer_tokenexp", "Tokenizer", "com.microsoft", TEXTS,
     dict(tokenexp=r"\w+", mark=0, mincharnum=1, pad_value="#")),
    ("tokenizer_tokenexp_marked", "Tokenizer", "com.microsoft", TEXTS[:, 0],
     dict(tokenexp=r"\b\w\w+\b", mark=1, mincharnum=2, pad_value="")),
    ("tokenizer_separators", "Tokenizer", "com.microsoft", TEXTS, dict(separators=[" ", "-"], mark=0, mincharnum=1,
                                                                       pad_value="#")),
    ("tokenizer_characters", "Tokenizer", "com.microsoft", TEXTS, dict(separators=[""], mark=0, mincharnum=1,
                                                                       pad_value="_")),
    ("normalizer_stopwords_lower", "StringNormalizer", "", WORDS,
     dict(stopwords=["the", "and"], case_change_action="LOWER")),
    ("normalizer_stopwords_case_sensitive", "StringNormalizer", "", WORDS[0],
     dict(stopwords=["the", "AND"], is_case_sensitive=1, case_change_action="UPPER")),
    ("normalizer_everything_dropped", "StringNormalizer", "", WORDS[:, :2], dict(stopwords=["THE", "CAT"])),
    ("normalizer_plain", "StringNormalizer", "", WORDS, {}),
]


def _string_case(case):
    name, op, domain, x, attrs = case
    model = node_model(op, {"X": x}, attrs, domain=domain, opset=19)
    return name, op, model, {"X": x}


def _kernel_of(model):
    node = model.graph.node[0]
    opsets = {o.domain: o.version for o in model.opset_import}
    return lookup(node.op_type, node.domain, opsets[node.domain]).fn


_R = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)
_R_NAN = _R.copy()
_R_NAN[1, 2, 3] = np.nan
# (id, op, opset, X, axes (an attribute before ReduceSum 13 / the others 18, else a constant input),
# other attributes): reductions with constant axes; float16 and integers take the plain kernel
REDUCE_CASES = [
    ("reduce_mean_all_keepdims", "ReduceMean", 20, _R[0], None, {}),
    ("reduce_mean_last", "ReduceMean", 18, _R, [-1], dict(keepdims=0)),
    ("reduce_mean_attribute", "ReduceMean", 13, _R, [0, 2], {}),
    ("reduce_mean_scalar", "ReduceMean", 13, _R, None, dict(keepdims=0)),
    ("reduce_mean_float64", "ReduceMean", 18, _R.astype(np.float64), [1], {}),
    ("reduce_mean_float16", "ReduceMean", 18, _R.astype(np.float16), [1], {}),
    ("reduce_mean_empty_axis", "ReduceMean", 18, np.zeros((2, 0, 3), np.float32), [1], {}),
    ("reduce_mean_noop", "ReduceMean", 18, _R, [], dict(noop_with_empty_axes=1)),
    ("reduce_sum_input", "ReduceSum", 13, _R, [1], {}),
    ("reduce_sum_attribute", "ReduceSum", 11, _R, [2], dict(keepdims=0)),
    ("reduce_sum_int", "ReduceSum", 13, np.arange(12, dtype=np.int32).reshape(3, 4), [1], {}),
    ("reduce_max_input", "ReduceMax", 18, _R_NAN, [2], {}),
    ("reduce_max_attribute", "ReduceMax", 13, _R, None, dict(keepdims=0)),
    ("reduce_min_input", "ReduceMin", 18, _R_NAN, [0], dict(keepdims=0)),
    ("reduce_min_attribute", "ReduceMin", 13, _R, [1], {}),
]


def _reduce_case(case):
    name, op, opset, x, axes, attrs = case
    as_input = opset >= (13 if op == "ReduceSum" else 18)
    attrs = dict(attrs, **({} if as_input or axes is None else {"axes": axes}))
    constants = {"axes": np.array(axes, np.int64)} if as_input and axes is not None else None
    return name, op, node_model(op, {"X": x}, attrs, constants=constants, opset=opset), {"X": x}


ALL = [(c[0],) + _ml_case(c) for c in ML_CASES] + [("tfidf_" + c[0],) + _tfidf_case(c) for c in TFIDF_CASES] + \
    [_string_case(c) for c in STRING_CASES] + [_reduce_case(c) for c in REDUCE_CASES]
CASES = [c for c in ALL if _kernel_of(c[2]) in prepared_forms()]


def assert_identical(want, got, where):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (w, g) in enumerate(zip(want, got)):
            assert_identical(w, g, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), where
        for k in want:
            assert_identical(want[k], got[k], f"{where}[{k!r}]")
    else:
        want, got = np.asarray(want), np.asarray(got)
        assert want.dtype == got.dtype and want.shape == got.shape, f"{where}: {got.dtype}{got.shape}"
        np.testing.assert_array_equal(got, want, err_msg=where)


@pytest.mark.parametrize("name, op, model, feeds", CASES, ids=[c[0] for c in CASES])
def test_prepared_form_equals_the_plain_kernel(name, op, model, feeds):
    plain, prepared = Evaluator(model, optimize=0), Evaluator(model)
    assert plain._main.steps[0].fn is _kernel_of(model)
    assert prepared._main.steps[0].fn is not _kernel_of(model) and not prepared._main.steps[0].attrs
    for _ in range(4):  # the fourth run goes through the generated run function (plan_code)
        assert_identical(plain.run(None, feeds), prepared.run(None, feeds), op)


def test_every_prepared_form_has_cases():
    covered = {_kernel_of(c[2]) for c in CASES}
    missing = [fn.__name__ for fn in prepared_forms() if fn not in covered]
    assert not missing, f"prepared forms without a case in the kernel tables: {missing}"


def test_attributes_a_prepared_form_refuses_keep_the_plain_kernels_error():
    from onnxtext.errors import EvalError

    model = node_model("Tokenizer", {"X": TEXTS}, dict(separators=[" "], tokenexp=r"\w+", mark=0, mincharnum=1,
                                                        pad_value="#"), domain="com.microsoft", opset=19)
    ev = Evaluator(model)
    assert ev._main.steps[0].fn is _kernel_of(model)
    with pytest.raises(EvalError, match="'separators' and 'tokenexp' cannot both be set"):
        ev.run(None, {"X": TEXTS})
