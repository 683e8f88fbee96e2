"""The real-model corpus for tests: models shipped in pip packages or made by torch, transformers, skl2onnx
and onnxruntime's tools, built into a cache by ``python tools/build_corpus.py`` (see docs/corpus.md).

Typical use in a test module::

    import realmodels

    @pytest.mark.parametrize("model", realmodels.params())
    def test_something(model):
        proto = model.load()                  # onnx.ModelProto, external data read
        feeds = model.feeds()                 # {input name: numpy array}
        expected = realmodels.run_onnxruntime(model, feeds)

``params()`` gives one parameter per corpus model with the model's name as test id; when the cache is
missing it gives a single skipped parameter whose reason says how to build it, so the test is reported as
skipped, never silently absent. ``params(kind=..., ort_runs=True, max_bytes=...)`` filters.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

NOT_BUILT = "real-model corpus not built: run python tools/build_corpus.py"


def corpus_dir() -> Path:
    """The cache folder: ``$ONNXTEXT_CORPUS`` or ``~/.cache/onnxtext/corpus`` (as tools/build_corpus.py)."""
    return Path(os.environ.get("ONNXTEXT_CORPUS") or Path.home() / ".cache" / "onnxtext" / "corpus")


@dataclass(frozen=True)
class RealModel:
    """One manifest record of the corpus, with the paths of its files."""

    name: str
    kind: str  # pip-shipped, torch-script, torch-dynamo, transformers, skl2onnx, ort-quantized, ...
    source: str
    bytes: int  # model file plus its external data files
    external_data: bool
    ort_runs: bool  # onnxruntime ran the feeds when the corpus was built
    nodes: int
    checker: str | None  # why onnx.checker rejects the model, or None when it accepts it
    notes: str
    files: tuple[str, ...]
    path: Path  # models/<name>.onnx
    feeds_path: Path  # feeds/<name>.npz

    def load(self, load_external_data: bool = True):
        """The model as an ``onnx.ModelProto`` (external data read into the tensors unless told not to)."""
        import onnx

        return onnx.load(str(self.path), load_external_data=load_external_data)

    def feeds(self) -> dict[str, np.ndarray]:
        """The model's realistic input set."""
        return load_feeds(self.name)


def corpus_built() -> bool:
    return (corpus_dir() / "manifest.json").exists()


def corpus_models(kind: str | None = None) -> list[RealModel]:
    """Every model of the manifest (in the table order of tools/build_corpus.py); [] when not built."""
    root = corpus_dir()
    manifest = root / "manifest.json"
    if not manifest.exists():
        return []
    models = []
    for r in json.loads(manifest.read_text()):
        if kind is not None and r["kind"] != kind:
            continue
        models.append(RealModel(
            name=r["name"], kind=r["kind"], source=r["source"], bytes=r["bytes"],
            external_data=r["external_data"], ort_runs=r["ort_runs"], nodes=r.get("nodes", 0),
            checker=r.get("checker"), notes=r.get("notes", ""), files=tuple(r.get("files", ())),
            path=root / "models" / f"{r['name']}.onnx", feeds_path=root / "feeds" / f"{r['name']}.npz"))
    return models


def get(name: str) -> RealModel:
    """The corpus model called ``name`` (KeyError when it is not in the manifest)."""
    for m in corpus_models():
        if m.name == name:
            return m
    raise KeyError(f"{name!r} is not in the real-model corpus at {corpus_dir()}")


def load_feeds(name: str) -> dict[str, np.ndarray]:
    """The input set of model ``name``: {input name: array} (strings as numpy str arrays)."""
    with np.load(corpus_dir() / "feeds" / f"{name}.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


requires_corpus = pytest.mark.skipif(not corpus_built(), reason=NOT_BUILT)


def params(kind: str | None = None, ort_runs: bool | None = None, max_bytes: int | None = None,
           exclude: dict[str, str] | None = None) -> list:
    """``pytest.param(model, id=model.name)`` for each corpus model that fits the filters.

    ``exclude`` maps model names to a reason: those models are still listed, marked skipped with the
    reason, so that the report shows them. Without the corpus, one skipped parameter says how to build it.
    """
    models = corpus_models(kind)
    if not models:
        return [pytest.param(None, id="corpus-not-built", marks=pytest.mark.skip(reason=NOT_BUILT))]
    out = []
    for m in models:
        if ort_runs is not None and m.ort_runs != ort_runs:
            continue
        if max_bytes is not None and m.bytes > max_bytes:
            continue
        marks = [pytest.mark.skip(reason=exclude[m.name])] if exclude and m.name in exclude else []
        out.append(pytest.param(m, id=m.name, marks=marks))
    return out


def ort_session(model: RealModel, threads: int = 1):
    """An onnxruntime CPU session of ``model`` (the test oracle), warnings off."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return ort.InferenceSession(str(model.path), options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model: RealModel, feeds: dict[str, np.ndarray] | None = None,
                    threads: int = 1) -> dict[str, object]:
    """onnxruntime's outputs for ``feeds`` (default: the model's own), as {output name: value}."""
    sess = ort_session(model, threads)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, model.feeds() if feeds is None else feeds)))
