"""Corpus models converted from scikit-learn with skl2onnx's ``to_onnx``/``convert_sklearn``, with the
converter's defaults (classifiers output a label and, through ZipMap, a list of {class: probability}).
Each estimator is trained on data drawn like its feeds (tools/corpus_feeds.py: ``features``), so the
feeds come from the training distribution."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import corpus_feeds as F
from corpus_types import Built, Context

N_FEATURES = 10


def _versions() -> str:
    import skl2onnx
    import sklearn

    return f"skl2onnx {skl2onnx.__version__}, scikit-learn {sklearn.__version__}"


def _tabular(estimator_fn, task: str, options=None, target_opset=None):
    """A builder training ``estimator_fn()`` on correlated features (classes 0-2 for "classifier")."""

    def make(path: Path, ctx: Context) -> Built:
        from skl2onnx import to_onnx

        train = F.features(np.random.default_rng(0), 300, N_FEATURES)
        score = train[:, 0] - 0.5 * train[:, 1] + 0.3 * train[:, 2] * train[:, 3]
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])) if task == "classifier" else score
        est = estimator_fn().fit(train, y)
        onx = to_onnx(est, train[:1], options=options, target_opset=target_opset)
        path.write_bytes(onx.SerializeToString())
        name = onx.graph.input[0].name
        return Built(source=f"{_versions()}: {type(est).__name__}", feeds={name: F.features(ctx.rng, 7, N_FEATURES)})

    return make


def logistic_regression():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=500)


def random_forest_classifier():
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0)


def random_forest_regressor():
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(n_estimators=20, max_depth=6, random_state=0)


def gradient_boosting_classifier():
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0)


def gradient_boosting_regressor():
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=0)


def svc():
    from sklearn.svm import SVC

    return SVC(probability=True, random_state=0)


def svr():
    from sklearn.svm import SVR

    return SVR()


def knn_classifier():
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(n_neighbors=5)


def scaler_pca_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), PCA(n_components=5, random_state=0), LogisticRegression(max_iter=500))


REVIEWS = ["great product works well", "terrible waste of money", "works as described, fast shipping",
           "broke after two days", "excellent value and quality", "not worth it, poor quality",
           "love it, would buy again", "awful customer service and slow", "good but a bit pricey",
           "stopped working, very disappointed", "fantastic, highly recommended", "cheap plastic, bad"]


def tfidf_pipeline(path: Path, ctx: Context) -> Built:
    """TfidfVectorizer + LogisticRegression on short reviews: a string input, Tokenizer and TfIdfVectorizer."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    labels = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression()).fit(REVIEWS, labels)
    onx = to_onnx(pipe, initial_types=[("text", StringTensorType([None, 1]))],
                  options={TfidfVectorizer: {"tokenexp": r"\w+"}})
    path.write_bytes(onx.SerializeToString())
    text = np.array([["works well, great value"], ["poor quality and slow"], ["would not buy again"]])
    return Built(source=f"{_versions()}: Pipeline(TfidfVectorizer, LogisticRegression)", feeds={"text": text})


def column_transformer(path: Path, ctx: Context) -> Built:
    """ColumnTransformer: OneHotEncoder on two string columns, StandardScaler on numbers, then a tree."""
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.tree import DecisionTreeClassifier
    import pandas as pd

    rng = np.random.default_rng(0)
    colors, sizes = np.array(["red", "green", "blue"]), np.array(["S", "M", "L", "XL"])

    def frame(r, n):
        return pd.DataFrame({"color": colors[r.integers(0, 3, n)], "size": sizes[r.integers(0, 4, n)],
                             "price": r.normal(20, 5, n).astype(np.float32),
                             "weight": r.normal(1, 0.3, n).astype(np.float32)})

    train = frame(rng, 200)
    y = ((train["color"] == "red") ^ (train["price"] > 20)).astype(int)
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["color", "size"]),
                             ("num", StandardScaler(), ["price", "weight"])])
    pipe = make_pipeline(pre, DecisionTreeClassifier(max_depth=4, random_state=0)).fit(train, y)
    initial = [("color", StringTensorType([None, 1])), ("size", StringTensorType([None, 1])),
               ("price", FloatTensorType([None, 1])), ("weight", FloatTensorType([None, 1]))]
    onx = to_onnx(pipe, initial_types=initial)
    path.write_bytes(onx.SerializeToString())
    test = frame(ctx.rng, 6)
    feeds = {c: test[c].to_numpy().reshape(-1, 1) for c in test.columns}
    feeds["color"], feeds["size"] = feeds["color"].astype(str), feeds["size"].astype(str)
    return Built(source=f"{_versions()}: Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler), "
                        "DecisionTreeClassifier)", feeds=feeds)


ESTIMATORS = {
    "logreg": (logistic_regression, "classifier"),
    "random_forest_clf": (random_forest_classifier, "classifier"),
    "random_forest_reg": (random_forest_regressor, "regressor"),
    "gradient_boosting_clf": (gradient_boosting_classifier, "classifier"),
    "gradient_boosting_reg": (gradient_boosting_regressor, "regressor"),
    "svc": (svc, "classifier"),
    "svr": (svr, "regressor"),
    "knn_clf": (knn_classifier, "classifier"),
    "scaler_pca_logreg": (scaler_pca_pipeline, "classifier"),
}


def tabular(name: str):
    fn, task = ESTIMATORS[name]
    return _tabular(fn, task)
