"""Every real-model corpus model that onnxruntime runs also runs in onnxtext's Evaluator and matches it.

The corpus (tests/realmodels.py, built by tools/build_corpus.py) holds models nobody here wrote:
shipped in pip packages, exported by torch's two exporters and transformers, converted by skl2onnx,
quantized or optimized by onnxruntime's tools. Each model's own feeds go to onnxruntime (one thread,
the oracle) and to the Evaluator (default optimization; its first run and, after COMPILE_AFTER runs, its
compiled plan); every output is compared with
``debugging.compare_values``: float32 within rtol 1e-3 / atol 1e-4, float16 within 1e-2 / 1e-2,
integers, strings and ZipMap's maps exactly. Wider per-model tolerances are listed with their reason in
tests/data/realmodels_eval_tolerances.txt, models that do not match in
tests/data/realmodels_eval_known_failures.txt (both strict).
"""

from __future__ import annotations

import numpy as np
import pytest

import realmodels
from reason_tables import read_table
from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.debugging import compare_values
from onnxtext.evaluator.plan import COMPILE_AFTER

DEFAULT = {np.dtype(np.float16): (1e-2, 1e-2)}
FLOAT32 = (1e-3, 1e-4)
# the three models issue 19 names: a Tfidf pipeline (com.microsoft::Tokenizer), onnxruntime's BERT
# optimizer output (com.microsoft::BiasGelu) and its dynamic quantizer's LSTM (DynamicQuantizeLSTM)
ISSUE_MODELS = {"skl_tfidf_logreg": "Tokenizer", "ort_bert_opt": "BiasGelu", "ort_lstm_qdyn": "DynamicQuantizeLSTM"}


TOLERANCES = {k: (float(v[0]), float(v[1])) for k, v in read_table("realmodels_eval_tolerances.txt", 2).items()}
KNOWN = read_table("realmodels_eval_known_failures.txt")


def mismatches(model, tolerances=None) -> list[str]:
    feeds = model.feeds()
    expected = realmodels.run_onnxruntime(model, feeds)
    ev = Evaluator(str(model.path))
    # the first run goes through the plan's loop, the last through its compiled form (plan_code)
    runs = [ev.run(None, feeds) for _ in range(COMPILE_AFTER + 1)]
    bad = []
    for label, outputs in (("first run", runs[0]), ("compiled run", runs[-1])):
        actual = dict(zip(ev.output_names, outputs))
        for name, theirs in expected.items():
            rtol, atol = tolerances or DEFAULT.get(getattr(np.asarray(theirs) if not isinstance(theirs, list) else
                                                           np.zeros(0), "dtype", None), FLOAT32)
            d = compare_values(name, actual[name], theirs, rtol, atol)
            if not d.matches:
                bad.append(f"{label}: {d.text()}")
    return bad


@pytest.mark.parametrize("model", realmodels.params(ort_runs=True))
def test_evaluator_matches_onnxruntime(model):
    if model.name in KNOWN:
        assert mismatches(model), f"{model.name} is listed as a known failure but matches: remove it"
        return
    tolerances = TOLERANCES.get(model.name)
    bad = mismatches(model, tolerances)
    assert not bad, f"{model.name}: " + "; ".join(bad)
    if tolerances is not None:
        assert mismatches(model), f"{model.name} matches with the default tolerances: remove its wider ones"


@realmodels.requires_corpus
def test_issue_models_are_in_the_corpus_and_use_their_operator():
    for name, op in ISSUE_MODELS.items():
        ops = {n.op_type for n in realmodels.get(name).load(load_external_data=False).graph.node}
        assert op in ops, f"{name} no longer has {op}"
        assert realmodels.get(name).ort_runs


@realmodels.requires_corpus
def test_listed_models_exist():
    names = {m.name for m in realmodels.corpus_models()}
    assert set(TOLERANCES) | set(KNOWN) <= names
