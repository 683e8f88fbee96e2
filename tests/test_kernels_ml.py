"""ai.onnx.ml, recurrent and other kernels checked against onnxruntime as the oracle.

The ONNX backend suite exercises few ai.onnx.ml operators, so each case here builds a one-node model
with onnx.helper, runs it through onnxruntime and through the evaluator, and compares the outputs.
Cases are a table: (id, op, inputs, outputs, feeds, attributes[, ml opset]). Where onnxruntime departs
from the specification, the case is left out and the reason is written next to the table.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

from onnxtext.evaluator import Evaluator

ort = pytest.importorskip("onnxruntime")

F, D, I64, I32, S = TP.FLOAT, TP.DOUBLE, TP.INT64, TP.INT32, TP.STRING


def _seq_map(key, value=F):
    return helper.make_sequence_type_proto(helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None)))


def _map(key, value):
    return helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None))


def _value_info(name, t):
    if isinstance(t, int):
        return helper.make_tensor_value_info(name, t, None)
    return helper.make_value_info(name, t)


def make_model(op, inputs, outputs, attrs, domain="ai.onnx.ml", ml_opset=3, onnx_opset=19):
    """One-node model; ``inputs``/``outputs`` are [(name, elem type or TypeProto)]."""
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], domain=domain, **attrs)
    graph = helper.make_graph([node], op, [_value_info(n, t) for n, t in inputs],
                              [_value_info(n, t) for n, t in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx_opset),
                                                    helper.make_opsetid("ai.onnx.ml", ml_opset)])
    model.ir_version = 9  # what onnxruntime accepts
    return model


def assert_same(expected, actual, rtol, where="output"):
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, rtol, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), f"{where}: keys differ"
        for k in expected:
            np.testing.assert_allclose(actual[k], expected[k], rtol=rtol, atol=1e-6, err_msg=f"{where}[{k}]")
        return
    expected, actual = np.asarray(expected), np.asarray(actual)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype == object:
        assert actual.tolist() == expected.tolist(), where
        return
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6, err_msg=where)


def check(model, feeds, rtol=1e-5):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = Evaluator(model).run(None, feeds)
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, rtol, f"output {i}")


X2 = np.array([[1.0, 2.0], [-1.0, -3.0], [0.5, -0.2], [0.0, 0.3], [4.0, -1.0]], np.float32)
X3 = np.array([[0.2, 1.5, -0.7], [3.0, -2.0, 0.1], [-1.0, 0.0, 2.5], [np.nan, 0.4, 1.0]], np.float32)
XF = [("X", F)]
LABEL_SCORE = [("Y", I64), ("Z", F)]
SV = [1.0, 0.0, 0.0, 1.0, -1.0, -1.0, 2.0, 1.0, 0.5, 0.5]
SVC3 = dict(classlabels_ints=[0, 1, 2], vectors_per_class=[2, 2, 1], support_vectors=SV,
            coefficients=[1, -0.5, 0.3, 0.2, -1, 0.5, 0.2, -0.7, 1, 0.4], rho=[0.1, -0.2, 0.3])

# Two regression trees over 3 features: tree 0 has 5 nodes, tree 1 has 3 (one LEQ/LT/GTE/GT/EQ/NEQ each).
TREES = dict(
    nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
    nodes_featureids=[0, 1, 0, 0, 0, 2, 0, 0], nodes_values=[0.5, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    nodes_modes=["BRANCH_LEQ", "BRANCH_GT", "LEAF", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"],
    nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
    nodes_missing_value_tracks_true=[1, 0, 0, 0, 0, 0, 0, 0],
)
REG_TARGETS = dict(target_treeids=[0, 0, 0, 0, 1, 1, 1], target_nodeids=[2, 3, 4, 4, 1, 2, 2],
                   target_ids=[0, 0, 0, 1, 0, 0, 1], target_weights=[1.5, -2.0, 0.25, 3.0, 0.5, -1.0, 2.0])
CLS_TARGETS = dict(class_treeids=[0, 0, 0, 0, 1, 1, 1], class_nodeids=[2, 3, 4, 4, 1, 2, 2],
                   class_ids=[0, 1, 2, 1, 2, 0, 1], class_weights=[0.5, 0.2, 0.3, 0.4, 0.6, 0.1, 0.9])
BINARY_TARGETS = dict(class_treeids=[0, 0, 0, 1, 1], class_nodeids=[2, 3, 4, 1, 2],
                      class_ids=[1, 1, 1, 1, 1], class_weights=[0.1, 0.4, 0.2, 0.3, 0.25])
V5_TREE = dict(  # TreeEnsemble (opset 5): one tree with a BRANCH_MEMBER root and a GTE child
    nodes_featureids=[0, 2], nodes_modes=helper.make_tensor("m", TP.UINT8, [2], [6, 2]),
    nodes_splits=helper.make_tensor("s", F, [2], [0.0, 0.5]),
    nodes_truenodeids=[0, 1], nodes_trueleafs=[1, 1], nodes_falsenodeids=[1, 2], nodes_falseleafs=[0, 1],
    membership_values=helper.make_tensor("mv", F, [4], [1.0, 3.0, -1.0, np.nan]),
    leaf_targetids=[0, 1, 0], leaf_weights=helper.make_tensor("w", F, [3], [1.0, 10.0, 100.0]), tree_roots=[0],
)
X_MEMBER = np.array([[1.0, 0, 0.7], [3.0, 0, 0.1], [2.0, 0, 0.9], [-1.0, 0, 0.2], [0.5, 0, 0.4]], np.float32)

def random_forest(n_trees, depth, n_features, seed, mode="BRANCH_LEQ", n_targets=2, missing_tracks=0.5,
                  early_leaves=0.0):
    """Binary regression trees of ``depth`` (legacy encoding), every interior node one ``mode``; a node sends
    missing values to its true branch with probability ``missing_tracks``. With ``early_leaves``, a node
    above the last level is a leaf with that probability (unbalanced trees, as sklearn grows them; the
    roots stay interior and node ids keep their heap numbers, which onnxruntime accepts while they stay
    below the forest's node count: give one-tree forests no early leaves)."""
    rng = np.random.default_rng(seed)
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                             "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    interior = 2 ** depth - 1
    for t in range(n_trees):
        present = {0}
        for n in range(2 * interior + 1):
            if n not in present:
                continue
            leaf = n >= interior or (n > 0 and rng.random() < early_leaves)
            if not leaf:
                present.update((2 * n + 1, 2 * n + 2))
            for k, v in (("nodes_treeids", t), ("nodes_nodeids", n),
                         ("nodes_featureids", 0 if leaf else int(rng.integers(n_features))),
                         ("nodes_values", 0.0 if leaf else float(rng.normal())),
                         ("nodes_modes", "LEAF" if leaf else mode), ("nodes_truenodeids", 0 if leaf else 2 * n + 1),
                         ("nodes_falsenodeids", 0 if leaf else 2 * n + 2),
                         ("nodes_missing_value_tracks_true", int(not leaf and rng.random() < missing_tracks))):
                attrs[k].append(v)
            if leaf:
                for target in range(n_targets):
                    for k, v in (("target_treeids", t), ("target_nodeids", n), ("target_ids", target),
                                 ("target_weights", float(rng.normal()))):
                        attrs[k].append(v)
    return dict(attrs, n_targets=n_targets)


def random_forest_classifier(n_trees, depth, n_features, seed, labels, voted=None, **options):
    """:func:`random_forest` as a TreeEnsembleClassifier: one target per label, the weights made non-negative
    (with ``voted``, every leaf votes for that class only, as skl2onnx writes binary classifiers)."""
    forest = random_forest(n_trees, depth, n_features, seed, n_targets=len(labels) if voted is None else 1,
                           **options)
    forest.pop("n_targets")
    classes = {k.replace("target_", "class_"): forest.pop(k) for k in list(forest) if k.startswith("target_")}
    if voted is not None:
        classes["class_ids"] = [voted] * len(classes["class_ids"])
    classes["class_weights"] = [abs(w) for w in classes["class_weights"]]
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"
    return dict(forest, **classes, **{key: labels})


X_WIDE = np.random.default_rng(7).normal(size=(40, 5)).astype(np.float32)
X_WIDE[::7, 2] = np.nan

CASES = [
    ("binarizer", "Binarizer", XF, [("Y", F)], {"X": X2}, dict(threshold=0.4)),
    ("array_feature_extractor", "ArrayFeatureExtractor", [("X", F), ("I", I64)], [("Y", F)],
     {"X": X3, "I": np.array([2, 0], np.int64)}, {}),
    ("array_feature_extractor_1d", "ArrayFeatureExtractor", [("X", F), ("I", I64)], [("Y", F)],
     {"X": X3[0], "I": np.array([1], np.int64)}, {}),
    ("array_feature_extractor_strings", "ArrayFeatureExtractor", [("X", S), ("I", I64)], [("Y", S)],
     {"X": np.array([["a", "b", "c"], ["d", "e", "f"]], object), "I": np.array([2, 1], np.int64)}, {}),
    ("normalizer_max", "Normalizer", XF, [("Y", F)], {"X": X2}, dict(norm="MAX")),
    ("normalizer_l1", "Normalizer", XF, [("Y", F)], {"X": X2}, dict(norm="L1")),
    ("normalizer_l2", "Normalizer", XF, [("Y", F)], {"X": X2}, dict(norm="L2")),
    ("normalizer_l1_zero_row", "Normalizer", XF, [("Y", F)], {"X": np.vstack([X2, np.zeros((1, 2), np.float32)])},
     dict(norm="L1")),
    ("normalizer_l2_zero_row_double", "Normalizer", [("X", D)], [("Y", F)],
     {"X": np.vstack([np.zeros((1, 2)), X2.astype(np.float64)])}, dict(norm="L2")),
    ("normalizer_max_zero_row", "Normalizer", XF, [("Y", F)], {"X": np.vstack([X2, np.zeros((1, 2), np.float32)])},
     dict(norm="MAX")),
    *[(f"normalizer_{norm.lower()}_many_rows", "Normalizer", XF, [("Y", F)],  # reduced on the transpose
       {"X": np.vstack([np.nan_to_num(X_WIDE), np.zeros((1, 5), np.float32)])}, dict(norm=norm))
      for norm in ("MAX", "L1", "L2")],
    ("scaler", "Scaler", XF, [("Y", F)], {"X": X2}, dict(offset=[0.5, -1.0], scale=[2.0, 0.25])),
    ("scaler_broadcast", "Scaler", [("X", D)], [("Y", F)], {"X": X2.astype(np.float64)}, dict(offset=[1.0], scale=[3.0])),
    ("imputer_float_nan", "Imputer", XF, [("Y", F)], {"X": X3}, dict(imputed_value_floats=[9.0, 8.0, 7.0],
                                                                  replaced_value_float=float("nan"))),
    ("imputer_int", "Imputer", [("X", I64)], [("Y", I64)], {"X": np.array([[0, 1], [2, 0]], np.int64)},
     dict(imputed_value_int64s=[5], replaced_value_int64=0)),
    ("feature_vectorizer", "FeatureVectorizer", [("A", F), ("B", F)], [("Y", F)],
     {"A": X2, "B": np.arange(15, dtype=np.float32).reshape(5, 3)}, dict(inputdimensions=[2, 3])),
    ("one_hot_ints", "OneHotEncoder", [("X", I64)], [("Y", F)], {"X": np.array([[1, 5], [3, 9]], np.int64)},
     dict(cats_int64s=[1, 3, 5], zeros=1)),
    ("one_hot_strings", "OneHotEncoder", [("X", S)], [("Y", F)], {"X": np.array(["b", "z", "a"], object)},
     dict(cats_strings=["a", "b"], zeros=1)),
    ("one_hot_strings_2d_all_known", "OneHotEncoder", [("X", S)], [("Y", F)],
     {"X": np.array([["b", "c"], ["a", "a"], ["c", "b"]], object)}, dict(cats_strings=["a", "b", "c"], zeros=0)),
    ("one_hot_ints_all_known", "OneHotEncoder", [("X", I64)], [("Y", F)], {"X": np.array([3, 1, 5, 5], np.int64)},
     dict(cats_int64s=[1, 3, 5], zeros=0)),
    ("category_mapper_to_int", "CategoryMapper", [("X", S)], [("Y", I64)],
     {"X": np.array([["a", "q"], ["c", "b"]], object)},
     dict(cats_strings=["a", "b", "c"], cats_int64s=[7, 8, 9], default_int64=-5)),
    ("category_mapper_to_string", "CategoryMapper", [("X", I64)], [("Y", S)],
     {"X": np.array([9, 1, 7], np.int64)}, dict(cats_strings=["a", "b", "c"], cats_int64s=[7, 8, 9],
                                                default_string="none")),
    ("label_encoder_v1_to_int", "LabelEncoder", [("X", S)], [("Y", I64)], {"X": np.array(["b", "x", "a"], object)},
     dict(classes_strings=["a", "b"], default_int64=42), 1),
    ("label_encoder_v1_to_string", "LabelEncoder", [("X", I64)], [("Y", S)], {"X": np.array([1, 0, 5], np.int64)},
     dict(classes_strings=["a", "b"], default_string="?"), 1),
    ("label_encoder_v2_float_keys", "LabelEncoder", XF, [("Y", S)],
     {"X": np.array([0.5, 2.0, -1.0, 0.5], np.float32)},
     dict(keys_floats=[0.5, -1.0], values_strings=["half", "minus"], default_string="other"), 2),
    ("label_encoder_v2_int_to_float", "LabelEncoder", [("X", I64)], [("Y", F)],
     {"X": np.array([[3, 4], [5, 3]], np.int64)},
     dict(keys_int64s=[3, 5], values_floats=[0.25, 0.75], default_float=-2.0), 2),
    ("zipmap_strings", "ZipMap", XF, [("Z", _seq_map(S))], {"X": X2}, dict(classlabels_strings=["neg", "pos"])),
    ("zipmap_ints", "ZipMap", XF, [("Z", _seq_map(I64))], {"X": X3[:2]}, dict(classlabels_int64s=[10, 20, 30])),
    ("zipmap_four_labels", "ZipMap", XF, [("Z", _seq_map(S))], {"X": np.hstack([X2, -X2])},
     dict(classlabels_strings=["a", "b", "c", "d"])),
    ("dict_vectorizer_strings", "DictVectorizer", [("X", _map(S, F))], [("Y", F)],
     {"X": {"a": np.float32(4.0), "c": np.float32(8.0)}}, dict(string_vocabulary=["a", "b", "c", "z"])),
    ("dict_vectorizer_ints", "DictVectorizer", [("X", _map(I64, F))], [("Y", F)],
     {"X": {3: 1.5, 1: -2.0}}, dict(int64_vocabulary=[1, 2, 3])),
    ("cast_map_dense", "CastMap", [("X", _map(I64, F))], [("Y", F)], {"X": {3: np.float32(1.5), 1: np.float32(-2.0)}},
     dict(cast_to="TO_FLOAT", map_form="DENSE")),
    ("cast_map_sparse_int64", "CastMap", [("X", _map(I64, F))], [("Y", I64)],
     {"X": {3: np.float32(1.5), 1: np.float32(-2.0)}}, dict(cast_to="TO_INT64", map_form="SPARSE", max_map=5)),
    ("cast_map_to_string", "CastMap", [("X", _map(I64, F))], [("Y", S)], {"X": {3: 1.5, 1: 2.0, 7: -0.1}},
     dict(cast_to="TO_STRING")),
    ("cast_map_to_int64_truncates", "CastMap", [("X", _map(I64, F))], [("Y", I64)], {"X": {3: 1.7, 1: -2.6}},
     dict(cast_to="TO_INT64")),
    ("linear_regressor", "LinearRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[0.5, -0.25, 1.0, 1.0], intercepts=[1.0, 2.0], targets=2)),
    ("linear_regressor_softmax", "LinearRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[0.5, -0.25, 1.0, 1.0], intercepts=[1.0, 2.0], targets=2, post_transform="SOFTMAX")),
    ("linear_classifier_multiclass", "LinearClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(coefficients=[0.5, -0.25, 1, 1, 0.3, -2], intercepts=[0.0, 0.5, -0.1], classlabels_ints=[3, 4, 5])),
    ("linear_classifier_softmax", "LinearClassifier", XF, [("Y", S), ("Z", F)], {"X": X2},
     dict(coefficients=[0.5, -0.25, 1, 1, 0.3, -2], intercepts=[0.0, 0.5, -0.1], classlabels_strings=["a", "b", "c"],
          post_transform="SOFTMAX")),
    ("linear_classifier_index_labels_softmax", "LinearClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(coefficients=[0.5, -0.25, 1, 1, 0.3, -2], intercepts=[0.0, 0.5, -0.1], classlabels_ints=[0, 1, 2],
          multi_class=1, post_transform="SOFTMAX")),
    # many rows of few classes: row-wise softmax and argmax on the transposed scores (ml.MANY_ROWS)
    ("linear_classifier_many_rows_softmax", "LinearClassifier", XF, [("Y", S), ("Z", F)], {"X": X_WIDE[:, :2] * 3},
     dict(coefficients=[0.5, -0.25, 1, 1, 0.3, -2], intercepts=[0.0, 0.5, -0.1], classlabels_strings=["a", "b", "c"],
          post_transform="SOFTMAX")),
    ("linear_classifier_two_columns_logistic", "LinearClassifier", XF, LABEL_SCORE, {"X": X2 * 30},
     dict(coefficients=[0.5, -0.25, -0.5, 0.25], intercepts=[0.1, -0.1], classlabels_ints=[0, 1],
          post_transform="LOGISTIC")),
    ("linear_classifier_binary", "LinearClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(coefficients=[0.5, -0.25], intercepts=[-0.3], classlabels_ints=[3, 7])),
    ("linear_classifier_binary_logistic", "LinearClassifier", XF, [("Y", S), ("Z", F)], {"X": X2},
     dict(coefficients=[0.5, -0.25], intercepts=[0.1], classlabels_strings=["n", "p"], post_transform="LOGISTIC")),
    ("svm_classifier_rbf", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(SVC3, kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0])),
    ("svm_classifier_poly_probabilities", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(SVC3, kernel_type="POLY", kernel_params=[0.5, 1.0, 2.0], prob_a=[-1.0, -2.0, -0.5], prob_b=[0.1, 0.0, 0.2])),
    # four classes: six pairs, samples whose probability coupling converges after different iterations
    ("svm_classifier_four_classes_probabilities", "SVMClassifier", XF, LABEL_SCORE, {"X": X_WIDE[:, :2]},
     dict(classlabels_ints=[0, 1, 2, 3], vectors_per_class=[2, 1, 1, 1], support_vectors=SV, kernel_type="RBF",
          kernel_params=[0.7, 0.0, 0.0], coefficients=[1, -0.5, 0.3, 0.2, -1, 0.5, 0.2, -0.7, 1, 0.4, -0.3, 0.6, 0.8,
                                                       -0.2, 0.9], rho=[0.1, -0.2, 0.3, 0.05, -0.1, 0.2],
          prob_a=[-1.0, -2.0, -0.5, -1.5, -0.8, -1.2], prob_b=[0.1, 0.0, 0.2, -0.1, 0.05, 0.0])),
    ("svm_classifier_binary", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(classlabels_ints=[4, 5], vectors_per_class=[2, 1], support_vectors=SV[:6], coefficients=[1, -0.5, 0.3],
          rho=[0.1], kernel_type="SIGMOID", kernel_params=[0.5, 0.2, 0.0])),
    ("svm_classifier_binary_probabilities", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(classlabels_ints=[4, 5], vectors_per_class=[2, 1], support_vectors=SV[:6], coefficients=[1, -0.5, 0.3],
          rho=[0.1], kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], prob_a=[-1.0], prob_b=[0.1])),
    ("svm_classifier_linear_multiclass", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(classlabels_ints=[4, 5, 6], coefficients=[1, -0.5, 1, 1, 0, -1], rho=[0.1], kernel_type="LINEAR",
          kernel_params=[0.0, 0.0, 0.0])),
    ("svm_classifier_linear_rbf", "SVMClassifier", XF, LABEL_SCORE, {"X": X2},
     dict(classlabels_ints=[4, 5, 6], coefficients=[1, -0.5, 1, 1, 0, -1], rho=[0.1], kernel_type="RBF",
          kernel_params=[0.3, 0.0, 0.0])),
    ("svm_regressor_rbf", "SVMRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[1, -0.5, 0.3], support_vectors=SV[:6], n_supports=3, rho=[0.25], kernel_type="RBF",
          kernel_params=[0.5, 0.0, 0.0])),
    ("svm_regressor_linear_rbf", "SVMRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[1, -0.5], rho=[0.1], kernel_type="RBF", kernel_params=[0.4, 0.0, 0.0])),
    ("svm_regressor_poly", "SVMRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[1, -0.5, 0.3], support_vectors=SV[:6], n_supports=3, rho=[0.1], kernel_type="POLY",
          kernel_params=[0.5, 1.0, 2.0])),
    ("svm_regressor_one_class", "SVMRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[1, -0.5, 0.3], support_vectors=SV[:6], n_supports=3, rho=[-0.6], kernel_type="RBF",
          kernel_params=[0.5, 0.0, 0.0], one_class=1)),
    ("svm_regressor_linear", "SVMRegressor", XF, [("Y", F)], {"X": X2},
     dict(coefficients=[1, -0.5], rho=[0.1], kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0])),
    ("tree_regressor_sum", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X3},
     dict(TREES, **REG_TARGETS, n_targets=2, base_values=[0.5, 0.0])),
    ("tree_regressor_average", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X3},
     dict(TREES, **REG_TARGETS, n_targets=2, aggregate_function="AVERAGE")),
    ("tree_regressor_min", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X3},
     dict(TREES, **REG_TARGETS, n_targets=2, aggregate_function="MIN")),
    ("tree_regressor_max", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X3},
     dict(TREES, **REG_TARGETS, n_targets=2, aggregate_function="MAX")),
    ("tree_regressor_eq_neq_gte_nan", "TreeEnsembleRegressor", XF, [("Y", F)],
     {"X": np.array([[3, 0.4, 1], [3, 0.5, 0.5], [2, 0, 2], [np.nan, np.nan, np.nan]], np.float32)},
     dict(TREES, **REG_TARGETS, n_targets=2, nodes_values=[3.0, 0.4, 0, 0, 0, 1.0, 0, 0],
          nodes_modes=["BRANCH_EQ", "BRANCH_NEQ", "LEAF", "LEAF", "LEAF", "BRANCH_GTE", "LEAF", "LEAF"])),
    ("tree_regressor_double", "TreeEnsembleRegressor", [("X", D)], [("Y", F)], {"X": X3.astype(np.float64)},
     dict({k: v for k, v in TREES.items() if k != "nodes_values"}, **REG_TARGETS, n_targets=2,
          nodes_values_as_tensor=helper.make_tensor("v", D, [8], TREES["nodes_values"]))),
    ("tree_classifier", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **CLS_TARGETS, classlabels_int64s=[5, 6, 7])),
    ("tree_classifier_softmax_strings", "TreeEnsembleClassifier", XF, [("Y", S), ("Z", F)], {"X": X3},
     dict(TREES, **CLS_TARGETS, classlabels_strings=["x", "y", "z"], post_transform="SOFTMAX",
          base_values=[0.1, 0.0, -0.1])),
    ("tree_classifier_logistic", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **CLS_TARGETS, classlabels_int64s=[5, 6, 7], post_transform="LOGISTIC")),
    ("tree_classifier_binary", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **BINARY_TARGETS, classlabels_int64s=[0, 1])),
    ("tree_classifier_binary_softmax", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **BINARY_TARGETS, classlabels_int64s=[0, 1], post_transform="SOFTMAX")),
    ("tree_classifier_binary_class0_logistic", "TreeEnsembleClassifier", XF, [("Y", S), ("Z", F)], {"X": X3},
     dict(TREES, **dict(BINARY_TARGETS, class_ids=[0] * 5), classlabels_strings=["no", "yes"],
          post_transform="LOGISTIC", base_values=[0.2])),
    ("tree_classifier_binary_class0_margin", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **dict(BINARY_TARGETS, class_ids=[0] * 5, class_weights=[0.1, -0.4, 0.2, -0.3, 0.25]),
          classlabels_int64s=[0, 1])),
    ("tree_classifier_binary_class0_margin_logistic", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X3},
     dict(TREES, **dict(BINARY_TARGETS, class_ids=[0] * 5, class_weights=[0.1, -0.4, 0.2, -0.3, 0.25]),
          classlabels_int64s=[0, 1], post_transform="LOGISTIC")),
    ("tree_regressor_single_mode_leq", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X3},
     dict(TREES, **REG_TARGETS, n_targets=2,
          nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"])),
    ("forest_depth5_leq_nan", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE},
     dict(random_forest(12, 5, 5, seed=1), aggregate_function="AVERAGE")),
    ("forest_depth3_gt_nan", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE},
     random_forest(7, 3, 5, seed=2, mode="BRANCH_GT")),
    ("forest_depth4_lt_one_row", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:1]},
     random_forest(5, 4, 5, seed=3, mode="BRANCH_LT", n_targets=1)),
    # single-mode forests whose nodes track no missing value: NaN goes where the comparison sends it
    ("forest_depth5_no_tracks_nan", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE},
     dict(random_forest(12, 5, 5, seed=4, missing_tracks=0), aggregate_function="AVERAGE", base_values=[0.5, -1])),
    ("forest_depth5_no_tracks_nan_12_rows", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:12]},
     dict(random_forest(12, 5, 5, seed=4, missing_tracks=0), aggregate_function="AVERAGE", base_values=[0.5, -1])),
    ("forest_depth2_one_target_sum", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:7]},
     random_forest(30, 2, 5, seed=5, n_targets=1, missing_tracks=0)),
    ("forest_unbalanced_depth4", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:9]},
     random_forest(15, 4, 5, seed=14, n_targets=1, missing_tracks=0, early_leaves=0.3)),
    ("forest_unbalanced_depth7_two_targets", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:5]},
     random_forest(6, 7, 5, seed=15, missing_tracks=0, early_leaves=0.25)),
    ("forest_classifier_unbalanced_depth3", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X_WIDE[:6]},
     random_forest_classifier(9, 3, 5, seed=16, labels=[0, 1, 2], missing_tracks=0, early_leaves=0.4)),
    ("forest_one_tree_two_targets", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": X_WIDE[:6]},
     random_forest(1, 4, 5, seed=17, missing_tracks=0)),
    ("forest_classifier_one_tree_binary_voted_class0", "TreeEnsembleClassifier", XF, LABEL_SCORE,
     {"X": X_WIDE[:6]}, random_forest_classifier(1, 3, 5, seed=18, labels=[4, 9], voted=0, missing_tracks=0)),
    ("forest_tracks_without_nan_input", "TreeEnsembleRegressor", XF, [("Y", F)], {"X": np.nan_to_num(X_WIDE)},
     random_forest(6, 4, 5, seed=6)),
    ("forest_double_input", "TreeEnsembleRegressor", [("X", D)], [("Y", F)], {"X": X_WIDE.astype(np.float64)},
     random_forest(6, 3, 5, seed=7, missing_tracks=0)),
    ("forest_classifier_three_classes", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X_WIDE},
     random_forest_classifier(8, 4, 5, seed=8, labels=[3, 5, 9], missing_tracks=0)),
    ("forest_classifier_softmax_strings_tracks", "TreeEnsembleClassifier", XF, [("Y", S), ("Z", F)],
     {"X": np.nan_to_num(X_WIDE)},
     dict(random_forest_classifier(5, 3, 5, seed=9, labels=["a", "b", "c", "d"]), post_transform="SOFTMAX")),
    ("forest_classifier_binary_one_voted_class", "TreeEnsembleClassifier", XF, LABEL_SCORE, {"X": X_WIDE},
     random_forest_classifier(6, 3, 5, seed=10, labels=[0, 1], voted=1, missing_tracks=0)),
    ("forest_classifier_binary_voted_class0_logistic", "TreeEnsembleClassifier", XF, [("Y", S), ("Z", F)],
     {"X": X_WIDE}, dict(random_forest_classifier(6, 3, 5, seed=11, labels=["no", "yes"], voted=0, missing_tracks=0),
                         post_transform="LOGISTIC", base_values=[0.1])),
    ("tree_ensemble_v5_member", "TreeEnsemble", XF, [("Y", F)], {"X": X_MEMBER},
     dict(V5_TREE, n_targets=2), 5),
    ("tree_ensemble_v5_max", "TreeEnsemble", XF, [("Y", F)], {"X": X_MEMBER},
     dict(V5_TREE, n_targets=2, aggregate_function=3), 5),
    ("tree_ensemble_v5_average_softmax_zero", "TreeEnsemble", XF, [("Y", F)], {"X": X_MEMBER},
     dict(V5_TREE, n_targets=3, aggregate_function=0, post_transform=3), 5),
]
# Left out, onnxruntime departs from the specification or is undefined there:
# - LinearRegressor/SVMRegressor with one target ignore LOGISTIC/SOFTMAX in onnxruntime (it only applies
#   PROBIT to a single score); the specification applies the post-transform.
# - PROBIT of a binary LinearClassifier: onnxruntime writes the transformed scores shifted by one row.
# - SVMClassifier in linear mode with two classes: onnxruntime labels every sample with the second class.
# - TreeEnsembleRegressor base_values: onnxruntime adds a target's base value only when some reached
#   leaf votes for that target; the specification adds it after aggregation in every case.
# - TreeEnsemble (opset 5) post_transform: onnxruntime reads 1 as LOGISTIC and 2 as SOFTMAX (its own
#   enumeration); the specification numbers them SOFTMAX (1), LOGISTIC (2).
# - TreeEnsemble (opset 5) with two targets and a transform: onnxruntime applies its binary-classifier
#   rule ([-s, s]) to targets that no leaf reached.
# - LabelEncoder opset 4 is not implemented in onnxruntime (the suite covers its tensor attributes).
# - SOFTMAX_ZERO of an all-zero row: onnxruntime returns NaN (0/0); the evaluator returns zeros.


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_against_onnxruntime(case):
    _, op, inputs, outputs, feeds, attrs, *opset = case
    check(make_model(op, inputs, outputs, attrs, ml_opset=opset[0] if opset else 3), feeds)


@pytest.mark.parametrize("elem, x, cats", [(S, np.array([["a"], ["q"]], object), dict(cats_strings=["a", "b"])),
                                            (I64, np.array([1, 7], np.int64), dict(cats_int64s=[1, 3]))],
                         ids=["strings", "ints"])
def test_one_hot_encoder_unknown_category_without_zeros_is_an_error(elem, x, cats):
    """zeros=0 refuses a value that is no category (onnxruntime fails the run too)."""
    from onnxtext.errors import EvalError

    model = make_model("OneHotEncoder", [("X", elem)], [("Y", F)], dict(cats, zeros=0))
    with pytest.raises(EvalError, match="not among the categories"):
        Evaluator(model).run(None, {"X": x})
    with pytest.raises(Exception):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})


@pytest.mark.parametrize("shape", [(40, 3), (100, 1), (64, 32), (33, 7)])
def test_row_reductions_on_the_transpose_equal_the_row_wise_ones(shape, monkeypatch):
    """softmax_rows and argmax_rows of many short rows (transposed) against the row-wise numpy spelling,
    with ties, NaN rows and float32/float64 scores."""
    from onnxtext.evaluator.kernels import ml

    rng = np.random.default_rng(shape[0])
    for dtype in (np.float32, np.float64):
        scores = rng.integers(-3, 4, size=shape).astype(dtype)  # small integers: many ties
        scores[5] = np.nan
        fast = ml.softmax_rows(scores), ml.argmax_rows(scores)
        monkeypatch.setattr(ml, "MANY_ROWS", 10 ** 9)
        rows = ml.softmax_rows(scores), ml.argmax_rows(scores)
        monkeypatch.undo()
        assert fast[0].dtype == dtype and fast[0].flags.c_contiguous
        np.testing.assert_allclose(fast[0], rows[0], rtol=1e-6)
        np.testing.assert_array_equal(fast[1], rows[1])
        np.testing.assert_array_equal(rows[1], np.argmax(scores, axis=1))


def test_probit_post_transform():
    """PROBIT is the standard normal quantile (checked against the standard library)."""
    from statistics import NormalDist

    from onnxtext.evaluator.kernels.ml import post_transform

    p = np.array([[1e-6, 0.02, 0.3, 0.5, 0.9, 0.999999]])
    expected = [[NormalDist().inv_cdf(v) for v in p[0]]]
    np.testing.assert_allclose(post_transform(p, "PROBIT"), expected, rtol=1e-8)


def test_label_encoder_v4_tensor_attributes():
    """LabelEncoder opset 4 (not in onnxruntime): int32 keys, int64 values, default_tensor."""
    model = make_model("LabelEncoder", [("X", I32)], [("Y", I64)],
                       dict(keys_tensor=helper.make_tensor("k", I32, [3], [1, 3, 1]),
                            values_tensor=helper.make_tensor("v", I64, [3], [10, 30, 11]),
                            default_tensor=helper.make_tensor("d", I64, [1], [-7])), ml_opset=4)
    (y,) = Evaluator(model).run(None, {"X": np.array([[1, 2], [3, 1]], np.int32)})
    # A repeated key maps to its last value.
    np.testing.assert_array_equal(y, np.array([[11, -7], [30, 11]], np.int64))


# --- recurrent operators (ai.onnx), against onnxruntime -------------------------------------------

def _recurrent_case(op, gates, direction, hidden=3, inputs=2, steps=4, batch=3, seed=0, peepholes=False,
                    lens=None, **attrs):
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = {
        "X": rng.standard_normal((steps, batch, inputs)).astype(np.float32),
        "W": rng.standard_normal((dirs, gates * hidden, inputs)).astype(np.float32),
        "R": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32),
        "B": rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32),
        "sequence_lens": np.array(lens or [steps] * batch, np.int32),
        "initial_h": rng.standard_normal((dirs, batch, hidden)).astype(np.float32),
    }
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h"]
    outputs = [("Y", F), ("Y_h", F)]
    if op == "LSTM":
        feeds["initial_c"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
        names.append("initial_c")
        if peepholes:
            feeds["P"] = rng.standard_normal((dirs, 3 * hidden)).astype(np.float32)
            names.append("P")
        outputs.append(("Y_c", F))
    ins = [(n, I32 if n == "sequence_lens" else F) for n in names]
    model = make_model(op, ins, outputs, dict(hidden_size=hidden, direction=direction, **attrs), domain="",
                       onnx_opset=14)
    return model, {n: feeds[n] for n in names}


RECURRENT = [
    ("rnn_forward", "RNN", 1, "forward", {}),
    ("rnn_reverse_lens", "RNN", 1, "reverse", dict(lens=[4, 2, 1])),
    ("rnn_bidirectional_activations", "RNN", 1, "bidirectional",
     dict(activations=["LeakyRelu", "Tanh"], activation_alpha=[0.2], lens=[3, 4, 2])),
    ("gru_forward", "GRU", 3, "forward", {}),
    ("gru_linear_before_reset", "GRU", 3, "forward", dict(linear_before_reset=1, lens=[1, 4, 3])),
    ("gru_bidirectional_lens", "GRU", 3, "bidirectional", dict(lens=[2, 4, 3])),
    ("gru_clip_hardsigmoid", "GRU", 3, "reverse",
     dict(clip=0.7, activations=["HardSigmoid", "Softsign"], activation_alpha=[0.3], activation_beta=[0.4])),
    ("lstm_forward", "LSTM", 4, "forward", {}),
    ("lstm_peepholes_lens", "LSTM", 4, "forward", dict(peepholes=True, lens=[4, 1, 3])),
    ("lstm_bidirectional_peepholes", "LSTM", 4, "bidirectional", dict(peepholes=True, lens=[2, 4, 3])),
    ("lstm_input_forget_clip", "LSTM", 4, "reverse", dict(input_forget=1, clip=0.5)),
    ("lstm_activations", "LSTM", 4, "forward",
     dict(activations=["Sigmoid", "Elu", "ScaledTanh"], activation_alpha=[0.5, 1.5], activation_beta=[0.8])),
]


@pytest.mark.parametrize("case", RECURRENT, ids=[c[0] for c in RECURRENT])
def test_recurrent_against_onnxruntime(case):
    _, op, gates, direction, attrs = case
    model, feeds = _recurrent_case(op, gates, direction, **attrs)
    check(model, feeds, rtol=1e-4)


def test_recurrent_layout_1_matches_layout_0():
    """layout=1 (batch first) gives the transposed results of layout=0 (onnxruntime lacks layout=1)."""
    model, feeds = _recurrent_case("LSTM", 4, "bidirectional", peepholes=True, lens=[2, 4, 3])
    expected = Evaluator(model).run(None, feeds)
    batch_first = dict(feeds, X=feeds["X"].transpose(1, 0, 2), initial_h=feeds["initial_h"].transpose(1, 0, 2),
                       initial_c=feeds["initial_c"].transpose(1, 0, 2))
    node = model.graph.node[0]
    node.attribute.append(helper.make_attribute("layout", 1))
    y, y_h, y_c = Evaluator(model).run(None, batch_first)
    np.testing.assert_allclose(y, expected[0].transpose(2, 0, 1, 3), rtol=1e-6)
    np.testing.assert_allclose(y_h, expected[1].transpose(1, 0, 2), rtol=1e-6)
    np.testing.assert_allclose(y_c, expected[2].transpose(1, 0, 2), rtol=1e-6)


def _ml_schema_versions():
    import onnx.defs

    return sorted({(s.name, s.since_version) for s in onnx.defs.get_all_schemas_with_history()
                   if s.domain == "ai.onnx.ml" and not s.deprecated})


@pytest.mark.parametrize("op,version", _ml_schema_versions(), ids=lambda v: str(v))
def test_every_ai_onnx_ml_operator_version_has_a_kernel(op, version):
    from onnxtext.evaluator.registry import lookup

    assert lookup(op, "ai.onnx.ml", version) is not None, f"no kernel for ai.onnx.ml::{op} at opset {version}"


def test_two_forests_in_one_model_keep_their_own_trees():
    """The per-node forest cache must not hand one node's trees to another."""
    first, second = random_forest(3, 3, 5, seed=11), random_forest(4, 2, 5, seed=12)
    nodes = [helper.make_node("TreeEnsembleRegressor", ["X"], ["A"], domain="ai.onnx.ml", **first),
             helper.make_node("TreeEnsembleRegressor", ["X"], ["B"], domain="ai.onnx.ml", **second)]
    graph = helper.make_graph(nodes, "two", [_value_info("X", F)], [_value_info("A", F), _value_info("B", F)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 9
    check(model, {"X": X_WIDE})
    ev = Evaluator(model)
    a1, b1 = ev.run(None, {"X": X_WIDE})
    a2, b2 = ev.run(None, {"X": X_WIDE[::-1].copy()})
    np.testing.assert_array_equal(a2, a1[::-1])
    np.testing.assert_array_equal(b2, b1[::-1])


# Pairs of CASES of one operator, same input, run as two nodes of one model: a kernel's per-node tables
# (kernels/derived_cache.py, keyed by node-specific attribute lists) must stay each node's own.
TWO_NODE_PAIRS = [("svm_classifier_rbf", "svm_classifier_poly_probabilities"),
                  ("linear_classifier_multiclass", "linear_classifier_index_labels_softmax"),
                  ("svm_regressor_poly", "svm_regressor_one_class"),
                  ("forest_classifier_three_classes", "forest_classifier_binary_one_voted_class"),
                  ("scaler", "normalizer_l2")]


@pytest.mark.parametrize("first, second", TWO_NODE_PAIRS, ids=["-".join(p) for p in TWO_NODE_PAIRS])
def test_two_nodes_of_one_operator_keep_their_own_tables(first, second):
    cases = [next(c for c in CASES if c[0] == name) for name in (first, second)]
    feeds = cases[0][4]
    np.testing.assert_array_equal(cases[1][4]["X"], feeds["X"])  # a pair shares its input
    nodes, outputs = [], []
    for k, (_, op, _, outs, _, attrs, *_) in enumerate(cases):
        names = [f"{name}{k}" for name, _ in outs]
        nodes.append(helper.make_node(op, ["X"], names, domain="ai.onnx.ml", **attrs))
        outputs += [_value_info(n, t) for n, (_, t) in zip(names, outs)]
    graph = helper.make_graph(nodes, "two", [_value_info("X", F)], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 9
    check(model, feeds)


# Single-mode forests walk small batches with a first block of levels and per (sample, node slot) tables
# (ml_tree_walk.BatchWalk); larger batches, NaN
# inputs to nodes that track missing values, and mixed modes take the per-walker walk.
# (case id, whether the batch walk runs)
BATCH_WALK = [
    ("forest_depth5_leq_nan", False),  # NaN in the input and nodes that track it
    ("forest_depth3_gt_nan", False),
    ("forest_depth4_lt_one_row", False),  # one row with a NaN
    ("forest_depth5_no_tracks_nan", False),  # 40 rows: 2.4 MB of tables, above BATCH_TABLE_BYTES
    ("forest_depth5_no_tracks_nan_12_rows", True),
    ("forest_depth2_one_target_sum", True),
    ("forest_unbalanced_depth4", True),
    ("forest_unbalanced_depth7_two_targets", True),
    ("forest_classifier_unbalanced_depth3", True),
    ("forest_one_tree_two_targets", True),
    ("forest_classifier_one_tree_binary_voted_class0", True),
    ("forest_tracks_without_nan_input", True),
    ("forest_double_input", True),
    ("forest_classifier_three_classes", True),
    ("forest_classifier_softmax_strings_tracks", True),
    ("forest_classifier_binary_one_voted_class", True),
    ("forest_classifier_binary_voted_class0_logistic", True),
    ("tree_regressor_single_mode_leq", False),
    ("tree_classifier", False),  # mixed modes
]

# every form of the batch walk: (levels of the first block, matrix slots per level, largest leaf values per key)
BATCH_WALK_FORMS = [(levels, matrix, 1 << 30) for levels in (0, 1, 2, 3) for matrix in (0, 10 ** 9)] + [(3, 0, 0)]


@pytest.mark.parametrize("name, batch_walk", BATCH_WALK, ids=[b[0] for b in BATCH_WALK])
def test_batch_walk_equals_the_per_walker_walk(name, batch_walk, monkeypatch):
    """Every form of the batch walk (checked against onnxruntime in CASES) gives exactly what the
    per-walker walk gives."""
    from onnxtext.evaluator.kernels import ml_tree_walk

    _, op, inputs, outputs, feeds, attrs, *opset = next(c for c in CASES if c[0] == name)
    model = make_model(op, inputs, outputs, attrs)
    calls = []
    sums = ml_tree_walk.BatchWalk.sums
    monkeypatch.setattr(ml_tree_walk.BatchWalk, "sums", lambda self, x: calls.append(1) or sums(self, x))
    fast = []
    for levels, matrix, values_bytes in BATCH_WALK_FORMS:
        monkeypatch.setattr(ml_tree_walk, "BLOCK_LEVELS", levels)
        monkeypatch.setattr(ml_tree_walk, "BLOCK_VALUES_BYTES", values_bytes)
        monkeypatch.setattr(ml_tree_walk, "MATRIX_SLOTS_PER_LEVEL", matrix)
        fast.append(Evaluator(model).run(None, feeds))
    assert len(calls) == (len(BATCH_WALK_FORMS) if batch_walk else 0)
    monkeypatch.setattr(ml_tree_walk, "BATCH_TABLE_BYTES", 0)
    calls.clear()
    reference = Evaluator(model).run(None, feeds)
    assert not calls
    for outputs in fast:
        for f, r in zip(outputs, reference):
            np.testing.assert_array_equal(f, r)


def test_batch_walk_tables_follow_the_batch_shape(monkeypatch):
    """Batch sizes alternating between runs (more than the shapes a forest keeps) each get their own tables."""
    from onnxtext.evaluator.kernels import ml_tree_walk

    model = make_model("TreeEnsembleRegressor", XF, [("Y", F)], random_forest(6, 5, 5, seed=13, missing_tracks=0))
    evaluator = Evaluator(model)
    for rows in (1, 7, 1, 7, 3, 5, 9, 2, 1, 12, 7):
        x = X_WIDE[rows:2 * rows + 1]
        (fast,) = evaluator.run(None, {"X": x})
        with monkeypatch.context() as patch:
            patch.setattr(ml_tree_walk, "BATCH_TABLE_BYTES", 0)
            (reference,) = Evaluator(model).run(None, {"X": x})
        np.testing.assert_array_equal(fast, reference)
