"""Rule ``contrib_transformer`` on the input variants of onnxruntime's fused layers that its fixtures
(tests/fixtures/optimizer/contrib_transformer*.onnxtext) do not cover: each row is a small model whose
one com.microsoft node must become the named prepared step, and whose outputs must equal ``optimize=0``
and onnxruntime's on two feed shapes (so the per-shape tiles are built twice). Add a row to cover a
new variant.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, run_onnxruntime, text_model

from onnxtext import Evaluator

HEADER = '<ir_version: 8, opset_import: ["": 14, "com.microsoft": 1]>\n'


def _values(rng, *shape, scale=0.5):
    return ", ".join(f"{v:.4g}" for v in (rng.standard_normal(shape) * scale).reshape(-1))


def _constants(seed=0):
    rng = np.random.default_rng(seed)
    return dict(w=_values(rng, 8, 24), b=_values(rng, 24, scale=0.1), w40=_values(rng, 8, 40),
                b40=_values(rng, 40, scale=0.1), word=_values(rng, 6, 8), pos=_values(rng, 7, 8),
                seg=_values(rng, 4, 8), g=_values(rng, 8, scale=0.3), beta=_values(rng, 8, scale=0.1))


# (id, prepared step expected, graph signature and body with {constants}, feed specs per shape)
CASES = [
    ("attention_no_bias", "PackedQkvAttention",
     "g (float[N, S, 8] x) => (float[N, S, 8] y) {{\n"
     "  w = Constant <value = float[8, 24] {{{w}}}> ()\n"
     "  y = com.microsoft.Attention <num_heads = 2> (x, w)\n}}",
     [{"x": ("f", (2, 5, 8))}, {"x": ("f", (1, 3, 8))}]),
    ("attention_qkv_hidden_sizes", "PackedQkvAttention",
     "g (float[N, S, 8] x) => (float[N, S, 16] y) {{\n"
     "  w = Constant <value = float[8, 40] {{{w40}}}> ()\n"
     "  b = Constant <value = float[40] {{{b40}}}> ()\n"
     "  y = com.microsoft.Attention <num_heads = 2, qkv_hidden_sizes = [12, 12, 16]> (x, w, b)\n}}",
     [{"x": ("f", (2, 5, 8))}, {"x": ("f", (1, 3, 8))}]),
    ("attention_2d_mask_scale", "PackedQkvAttention",
     "g (float[N, S, 8] x, int32[N, S] m) => (float[N, S, 8] y) {{\n"
     "  w = Constant <value = float[8, 24] {{{w}}}> ()\n"
     "  b = Constant <value = float[24] {{{b}}}> ()\n"
     "  y = com.microsoft.Attention <num_heads = 4, scale = 0.3> (x, w, b, m)\n}}",
     [{"x": ("f", (2, 5, 8)), "m": ("mask", (2, 5))}, {"x": ("f", (3, 4, 8)), "m": ("mask", (3, 4))}]),
    ("embed_no_segment_no_mask", "PreparedEmbedNorm",
     "g (int32[N, S] ids) => (float[N, S, 8] y) {{\n"
     "  word = Constant <value = float[6, 8] {{{word}}}> ()\n"
     "  pos = Constant <value = float[7, 8] {{{pos}}}> ()\n"
     "  g = Constant <value = float[8] {{{g}}}> ()\n"
     "  beta = Constant <value = float[8] {{{beta}}}> ()\n"
     "  y, mi = com.microsoft.EmbedLayerNormalization <epsilon = 1e-05> (ids, , word, pos, , g, beta)\n}}",
     [{"ids": ("ids", (2, 5))}, {"ids": ("ids", (1, 7))}]),
    ("embed_mask_index_output", "PreparedEmbedNorm",
     "g (int32[N, S] ids, int32[N, S] segs, int32[N, S] m) => (float[N, S, 8] y, int32[N] mi) {{\n"
     "  word = Constant <value = float[6, 8] {{{word}}}> ()\n"
     "  pos = Constant <value = float[7, 8] {{{pos}}}> ()\n"
     "  seg = Constant <value = float[4, 8] {{{seg}}}> ()\n"
     "  g = Constant <value = float[8] {{{g}}}> ()\n"
     "  beta = Constant <value = float[8] {{{beta}}}> ()\n"
     "  y, mi = com.microsoft.EmbedLayerNormalization <epsilon = 1e-05> (ids, segs, word, pos, seg, g, beta, m)\n}}",
     [{"ids": ("ids", (2, 5)), "segs": ("seg", (2, 5)), "m": ("mask", (2, 5))},
      {"ids": ("ids", (3, 2)), "segs": ("seg", (3, 2)), "m": ("mask", (3, 2))}]),
    ("skip_norm_no_beta_no_bias", "PreparedSkipNorm",
     "g (float[N, S, 8] x, float[N, S, 8] r) => (float[N, S, 8] y) {{\n"
     "  g = Constant <value = float[8] {{{g}}}> ()\n"
     "  y = com.microsoft.SkipLayerNormalization <epsilon = 1e-05> (x, r, g)\n}}",
     [{"x": ("f", (2, 5, 8)), "r": ("f", (2, 5, 8))}, {"x": ("f", (1, 4, 8)), "r": ("f", (1, 4, 8))}]),
]


def _feeds(spec, rng):
    feeds = {}
    for name, (kind, shape) in spec.items():
        if kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
        elif kind == "ids":
            feeds[name] = rng.integers(0, 6, shape).astype(np.int32)
        elif kind == "seg":
            feeds[name] = rng.integers(0, 4, shape).astype(np.int32)
        else:  # a padding mask of 0/1, its first column valid
            m = rng.integers(0, 2, shape).astype(np.int32)
            m[:, 0] = 1
            feeds[name] = m
    return feeds


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prepared_step_matches_the_kernel_and_onnxruntime(case):
    _, expected, body, specs = case
    model = text_model(HEADER + body.format(**_constants()))
    ev, reference = Evaluator(model), Evaluator(model, optimize=0)
    assert expected in [type(st.fn).__name__ for st in ev._plan_for(None, ()).steps]
    rng = np.random.default_rng(1)
    for spec in specs:
        feeds = _feeds(spec, rng)
        got = ev.run(None, feeds)
        assert_close(got, reference.run(None, feeds), 1e-6, 1e-6, f"{case[0]} vs optimize=0")
        assert_close(got, run_onnxruntime(model, feeds), 1e-4, 1e-5, f"{case[0]} vs onnxruntime")
