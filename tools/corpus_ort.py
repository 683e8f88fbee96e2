"""Corpus models made by onnxruntime's own tools from a float model exported in the build's scratch folder:
dynamic and static quantization (QOperator and QDQ forms), 4-bit weight-only MatMulNBits, the transformer
optimizer's fusions (Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization, ...), and float16
conversion. Calls follow onnxruntime's documentation, with the options users pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import corpus_feeds as F
from corpus_torch import export, feeds_for
from corpus_types import Built, Context


def _base(spec_fn, ctx: Context, opset: int = 14, exporter: str = "script"):
    """The float model of ``spec_fn`` exported into the scratch folder: (path, feeds, spec)."""
    import torch

    torch.manual_seed(0)
    spec = spec_fn(ctx.rng)
    spec.opset = opset
    path = ctx.scratch / "float.onnx"
    export(spec, path, exporter)
    return path, feeds_for(spec, path), spec


def _ort() -> str:
    import onnxruntime
    import torch

    return f"onnxruntime {onnxruntime.__version__} tools, from a torch {torch.__version__} TorchScript export"


def quantized_dynamic(spec_fn, op_types=None, **extra):
    """``quantize_dynamic`` (int8 weights, activations quantized at run time) of ``spec_fn``'s model."""

    def make(path: Path, ctx: Context) -> Built:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        base, feeds, _ = _base(spec_fn, ctx)
        quantize_dynamic(base, path, weight_type=QuantType.QInt8, op_types_to_quantize=op_types,
                         extra_options=extra or None)
        return Built(source=_ort() + ": quantize_dynamic", feeds=feeds)

    return make


class _Calibration:
    """onnxruntime's CalibrationDataReader protocol over a few batches drawn like the feeds."""

    def __init__(self, batches):
        self.batches = iter(batches)

    def get_next(self):
        return next(self.batches, None)


def quantized_static(spec_fn, fmt: str):
    """``quantize_static`` of ``spec_fn``'s model, calibrated on 8 images, in "QOperator" or "QDQ" form,
    after onnxruntime's recommended ``quant_pre_process`` (shape inference and graph cleanup)."""

    def make(path: Path, ctx: Context) -> Built:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.shape_inference import quant_pre_process

        base, feeds, _ = _base(spec_fn, ctx, opset=17)
        pre = ctx.scratch / "pre.onnx"
        quant_pre_process(str(base), str(pre))
        (name, value), = feeds.items()
        calib = [{name: F.image(ctx.rng, value.shape, float(value.min()), float(value.max()))} for _ in range(8)]
        quantize_static(str(pre), str(path), _Calibration(calib),
                        quant_format=QuantFormat.QOperator if fmt == "QOperator" else QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=fmt == "QDQ")
        return Built(source=_ort() + f": quant_pre_process + quantize_static ({fmt})", feeds=feeds)

    return make


def matmul_nbits(spec_fn, opset=17):
    """4-bit weight-only quantization (``MatMulNBitsQuantizer``, block size 32, symmetric) of the MatMuls."""

    def make(path: Path, ctx: Context) -> Built:
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        base, feeds, _ = _base(spec_fn, ctx, opset=opset)
        quant = MatMulNBitsQuantizer(onnx.load(str(base)), block_size=32, is_symmetric=True)
        quant.process()
        quant.model.save_model_to_file(str(path), use_external_data_format=False)
        return Built(source=_ort() + ": MatMulNBitsQuantizer(block_size=32, is_symmetric=True)", feeds=feeds)

    return make


def optimized(spec_fn, model_type: str, num_heads: int, hidden_size: int, fp16: bool = False):
    """The transformer optimizer (``optimize_model``) on ``spec_fn``'s export; with ``fp16`` also
    ``convert_float_to_float16(keep_io_types=True)``, as its docs show for GPU deployment."""

    def make(path: Path, ctx: Context) -> Built:
        from onnxruntime.transformers.optimizer import optimize_model

        base, feeds, _ = _base(spec_fn, ctx)
        opt = optimize_model(str(base), model_type=model_type, num_heads=num_heads, hidden_size=hidden_size)
        if fp16:
            opt.convert_float_to_float16(keep_io_types=True)
        opt.save_model_to_file(str(path))
        fused = ", ".join(f"{k} {v}" for k, v in sorted(opt.get_fused_operator_statistics().items()) if v)
        return Built(source=_ort() + f": optimize_model(model_type={model_type!r})" + (" + float16" if fp16 else ""),
                     feeds=feeds, notes=f"fused: {fused}")

    return make


def float16(spec_fn):
    """``onnxruntime.transformers.float16.convert_float_to_float16`` with float16 inputs and outputs."""

    def make(path: Path, ctx: Context) -> Built:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16

        base, feeds, _ = _base(spec_fn, ctx, opset=17)
        onnx.save(convert_float_to_float16(onnx.load(str(base))), str(path))
        feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
        return Built(source=_ort() + ": convert_float_to_float16", feeds=feeds)

    return make
