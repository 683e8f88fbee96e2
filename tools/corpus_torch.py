"""Corpus models exported from torch modules the way users export them: ``torch.onnx.export`` with the
TorchScript exporter (``dynamo=False``, ``dynamic_axes``) and with the dynamo exporter (``dynamo=True``,
``dynamic_shapes``; it writes ``<name>.onnx.data`` beside the model). Each ``*_spec`` function returns the
module in eval mode with example inputs; :func:`exported` turns a spec into a corpus builder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import corpus_feeds as F
from corpus_types import Built, Context


@dataclass
class Spec:
    module: object  # torch.nn.Module (or a scripted one)
    args: tuple  # example inputs, torch tensors
    input_names: list[str]
    output_names: list[str]
    dynamic: dict[str, dict[int, str]]  # input name -> {axis: dimension name}, as dynamic_axes spells it
    opset: int | None = None


def exported(spec_fn, exporter: str, opset: int | None = None):
    """A builder exporting ``spec_fn(rng)`` with ``exporter`` "script" (TorchScript) or "dynamo", at the
    exporter's default opset or ``opset`` (older opsets make the exporter decompose LayerNorm and Gelu)."""

    def make(path: Path, ctx: Context) -> Built:
        import torch

        torch.manual_seed(0)
        spec = spec_fn(ctx.rng)
        if opset:
            spec.opset = opset
        export(spec, path, exporter)
        return Built(source=f"torch {torch.__version__} {exporter} exporter, opset {opset or 'default'}",
                     feeds=feeds_for(spec, path))

    return make


def export(spec: Spec, path: Path, exporter: str) -> None:
    import torch

    kwargs = dict(input_names=spec.input_names, output_names=spec.output_names)
    if spec.opset:
        kwargs["opset_version"] = spec.opset
    if exporter == "script":
        torch.onnx.export(spec.module, spec.args, str(path), dynamo=False,
                          dynamic_axes=spec.dynamic, **kwargs)
    else:
        dims = {}
        shapes = tuple({axis: dims.setdefault(dim, torch.export.Dim(dim)) for axis, dim in
                        spec.dynamic.get(name, {}).items()} or None for name in spec.input_names)
        torch.onnx.export(spec.module, spec.args, str(path), dynamo=True, dynamic_shapes=shapes, **kwargs)


def feeds_for(spec: Spec, path: Path) -> dict[str, np.ndarray]:
    """The example inputs, keyed by the exported graph's input names (exporters drop unused inputs)."""
    import onnx

    values = {n: a.numpy() for n, a in zip(spec.input_names, spec.args)}
    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    return {i.name: values[i.name] for i in model.graph.input if i.name not in inits}


def _t(array):
    import torch

    return torch.from_numpy(np.ascontiguousarray(array))


# --- the modules --------------------------------------------------------------------------------------
def mlp_spec(rng) -> Spec:
    """A tabular MLP: Linear, ReLU, Linear, GELU, Dropout, Linear, LogSoftmax."""
    from torch import nn

    module = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Dropout(0.1),
                           nn.Linear(64, 10), nn.LogSoftmax(dim=-1)).eval()
    return Spec(module, (_t(F.features(rng, 8, 32)),), ["x"], ["log_probs"], {"x": {0: "batch"}})


def cnn_spec(rng) -> Spec:
    """A small image classifier: conv + batchnorm + ReLU blocks, max pool, a residual block, average pool."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(x + self.bn2(self.conv2(y)))

    module = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        Block(16), nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU6(), Block(32),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()
    _randomize_batchnorm(module)
    image = F.image(rng, (2, 3, 64, 64), -2.0, 2.0)
    return Spec(module, (_t(image),), ["image"], ["logits"], {"image": {0: "batch"}})


def _randomize_batchnorm(module) -> None:
    """Give batch norms trained-looking statistics (fresh ones are the identity, which hides folding bugs)."""
    import torch

    g = torch.Generator().manual_seed(1)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def lstm_spec(rng) -> Spec:
    """A text classifier: embedding, 2-layer bidirectional LSTM, linear head on the last step."""
    import torch
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(200, 32)
            self.lstm = nn.LSTM(32, 48, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(96, 5)

        def forward(self, ids):
            out, _ = self.lstm(self.emb(ids))
            return torch.log_softmax(self.head(out), dim=-1)

    ids = F.token_ids(rng, 3, 12, 200)
    return Spec(Tagger().eval(), (_t(ids),), ["ids"], ["tag_scores"], {"ids": {0: "batch", 1: "seq"}})


def gru_spec(rng) -> Spec:
    """A sequence regressor over sensor frames: GRU with an initial state input, linear head."""
    from torch import nn

    class Forecaster(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(16, 32, batch_first=True)
            self.head = nn.Linear(32, 1)

        def forward(self, x, h0):
            out, h = self.gru(x, h0)
            return self.head(out), h

    x = F.features(rng, 3 * 10, 16).reshape(3, 10, 16)
    h0 = np.zeros((1, 3, 32), np.float32)
    return Spec(Forecaster().eval(), (_t(x), _t(h0)), ["frames", "h0"], ["forecast", "h"],
                {"frames": {0: "batch", 1: "steps"}, "h0": {1: "batch"}})


def encoder_spec(rng) -> Spec:
    """nn.TransformerEncoder over embedded tokens with a padding mask (the attention path users export)."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(300, 64)
            self.pos = nn.Parameter(torch.randn(1, 64, 64) * 0.02)
            layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True, activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(64)

        def forward(self, ids, mask):
            x = self.emb(ids) + self.pos[:, : ids.shape[1]]
            x = self.encoder(x, src_key_padding_mask=mask == 0)
            return self.norm(x)

    ids = F.token_ids(rng, 2, 16, 300)
    mask = F.attention_mask(2, 16)
    return Spec(Encoder().eval(), (_t(ids), _t(mask)), ["ids", "mask"], ["hidden"],
                {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})


def shape_arith_spec(rng) -> Spec:
    """Multi-head reshapes driven by the input's shape (Shape, Gather, Concat, Reshape in the export)."""
    import torch
    from torch import nn

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(64, 64)

        def forward(self, x):
            b, t, c = x.shape
            q = self.proj(x).view(b, t, 4, c // 4).transpose(1, 2)  # b, heads, t, d
            scores = q @ q.transpose(-1, -2) / (c // 4) ** 0.5
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            w = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
            return (w @ q).transpose(1, 2).reshape(b, t, c)

    x = F.features(rng, 2 * 9, 64).reshape(2, 9, 64)
    return Spec(Heads().eval(), (_t(x),), ["x"], ["y"], {"x": {0: "batch", 1: "seq"}})


def loop_script_spec(rng) -> Spec:
    """A scripted module with a data-dependent loop and branch (Loop and If in the TorchScript export)."""
    import torch
    from torch import nn

    class Smoother(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = nn.Linear(8, 8)

        def forward(self, x):
            acc = torch.zeros_like(x[:, 0])
            outs = []
            for i in range(x.size(1)):
                acc = 0.8 * acc + 0.2 * torch.tanh(self.gain(x[:, i]))
                if bool(acc.sum() > 0):
                    acc = acc - 0.01
                outs.append(acc)
            return torch.stack(outs, 1)

    x = F.features(rng, 2 * 6, 8).reshape(2, 6, 8)
    return Spec(torch.jit.script(Smoother().eval()), (_t(x),), ["x"], ["smoothed"],
                {"x": {0: "batch", 1: "steps"}})


def cond_spec(rng) -> Spec:
    """torch.cond on the data (an If in the dynamo export), with a dynamic batch."""
    import torch
    from torch import nn

    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

        def forward(self, x):
            return torch.cond(x.mean() > 0, lambda v: torch.relu(self.a(v)), lambda v: torch.sigmoid(self.b(v)),
                              (x,))

    x = F.features(rng, 4, 16)
    return Spec(Gate().eval(), (_t(x),), ["x"], ["y"], {"x": {0: "batch"}})
