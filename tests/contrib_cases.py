"""Cases for tests/test_contrib_ops.py: com.microsoft operators against onnxruntime.

One row per case: ``Case(id, op, inputs, attrs, outputs, tol)``. ``inputs`` is a list of input specs,
in the operator's input order: ``rand(dtype, shape)`` (seeded random values; integer types get their
full range unless ``low``/``high`` say otherwise), a numpy array (used as given), or ``None`` (an
absent optional input, written as an empty name). ``outputs`` is the number of outputs the node
declares (optional outputs beyond the first are compared too). ``tol`` is (rtol, atol) for floats;
quantized integer outputs may differ by ``tol[1]`` (1 = one rounding step).

To add a case, add a row; the id must be unique. A case onnxruntime and onnxtext knowingly disagree
on goes in tests/data/contrib_known_failures.txt with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Rand:
    dtype: str
    shape: tuple
    low: float | None = None
    high: float | None = None


def rand(dtype, *shape, low=None, high=None):
    return Rand(dtype, tuple(shape), low, high)


@dataclass
class Case:
    id: str
    op: str
    inputs: list
    attrs: dict = field(default_factory=dict)
    outputs: int = 1
    tol: tuple = (1e-5, 1e-5)
    domain: str = "com.microsoft"
    opset: int = 17  # of the ONNX domain
    expect: object = None  # for operators onnxruntime's CPU build lacks: the documented formula
    unnamed: tuple = ()  # indices of declared outputs left unnamed (not asked for, not compared)


def _gelu(x):
    import math
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def f32(*shape, low=None, high=None):
    return rand("float32", *shape, low=low, high=high)


def i32(values):
    return np.asarray(values, np.int32)


def i64(values):
    return np.asarray(values, np.int64)


C = Case
CASES: list[Case] = [
    # ---------------------------------------------------------------- activations
    C("gelu", "Gelu", [f32(2, 3, 8)]),
    C("gelu_scalar", "Gelu", [np.float32(0.7)]),
    C("bias_gelu", "BiasGelu", [f32(2, 5, 16), f32(16)]),
    C("bias_gelu_empty", "BiasGelu", [f32(0, 4), f32(4)]),
    C("fast_gelu", "FastGelu", [f32(3, 7)]),
    C("fast_gelu_bias", "FastGelu", [f32(2, 3, 6), f32(6)]),
    C("fast_gelu_large", "FastGelu", [f32(4, 9, low=-12, high=12)]),
    C("quick_gelu", "QuickGelu", [f32(2, 10)]),
    C("quick_gelu_alpha", "QuickGelu", [f32(2, 10)], dict(alpha=1.0)),
    # BiasAdd and BiasSplitGelu have CUDA kernels only in onnxruntime: the documented formula is the oracle
    C("bias_add", "BiasAdd", [f32(2, 3, 8), f32(8), f32(2, 3, 8)], expect=lambda x, b, s: [x + b + s]),
    C("bias_split_gelu", "BiasSplitGelu", [f32(2, 4, 320), f32(320)],
      expect=lambda x, b: [(x + b)[..., :160] * _gelu((x + b)[..., 160:].astype(np.float64)).astype(np.float32)]),
    # ---------------------------------------------------------------- normalizations
    C("skip_ln", "SkipLayerNormalization", [f32(2, 3, 16), f32(2, 3, 16), f32(16), f32(16)],
      dict(epsilon=1e-5)),
    C("skip_ln_bias_all_outputs", "SkipLayerNormalization",
      [f32(2, 3, 16), f32(2, 3, 16), f32(16), f32(16), f32(16)], dict(epsilon=1e-5), outputs=4),
    C("skip_ln_no_beta_default_eps", "SkipLayerNormalization", [f32(1, 5, 8), f32(1, 5, 8), f32(8)]),
    # GPT-2's form: the normalized value and the sum (the residual stream), not the statistics
    C("skip_ln_sum_only", "SkipLayerNormalization", [f32(2, 3, 16), f32(2, 3, 16), f32(16), f32(16), f32(16)],
      dict(epsilon=1e-5), outputs=4, unnamed=(1, 2)),
    C("skip_sln_sum_only", "SkipSimplifiedLayerNormalization", [f32(2, 3, 16), f32(2, 3, 16), f32(16)],
      dict(epsilon=1e-6), outputs=4, unnamed=(1, 2)),
    C("skip_ln_float16_sum_only", "SkipLayerNormalization",
      [rand("float16", 2, 3, 16), rand("float16", 2, 3, 16), rand("float16", 16), rand("float16", 16)],
      dict(epsilon=1e-5), outputs=4, unnamed=(1, 2), tol=(5e-3, 5e-3)),
    C("skip_ln_2d", "SkipLayerNormalization", [f32(6, 16), f32(6, 16), f32(16), f32(16)], dict(epsilon=1e-5)),
    C("skip_ln_skip_broadcast", "SkipLayerNormalization", [f32(2, 3, 16), f32(3, 16), f32(16), f32(16)],
      dict(epsilon=1e-5)),
    C("skip_sln", "SkipSimplifiedLayerNormalization", [f32(2, 3, 16), f32(2, 3, 16), f32(16)],
      dict(epsilon=1e-6)),
    C("skip_sln_bias_sum", "SkipSimplifiedLayerNormalization",
      [f32(2, 3, 16), f32(2, 3, 16), f32(16), f32(16)], dict(epsilon=1e-6), outputs=4),
    C("sln", "SimplifiedLayerNormalization", [f32(2, 3, 16), f32(16)], dict(epsilon=1e-6), domain=""),
    C("sln_inv_std", "SimplifiedLayerNormalization", [f32(4, 16), f32(16)], dict(epsilon=1e-6), outputs=2,
      domain=""),
    C("sln_axis", "SimplifiedLayerNormalization", [f32(2, 3, 4), f32(3, 4)], dict(axis=1), domain=""),
    C("embed_ln", "EmbedLayerNormalization",
      [rand("int32", 2, 5, low=0, high=30), rand("int32", 2, 5, low=0, high=2), f32(30, 16), f32(8, 16),
       f32(2, 16), f32(16), f32(16), i32([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])], dict(epsilon=1e-5), outputs=2),
    C("embed_ln_no_segment_no_mask", "EmbedLayerNormalization",
      [rand("int32", 3, 4, low=0, high=30), None, f32(30, 16), f32(8, 16), None, f32(16), f32(16)],
      dict(epsilon=1e-5), outputs=2),
    C("embed_ln_sum_output", "EmbedLayerNormalization",
      [rand("int32", 2, 5, low=0, high=30), rand("int32", 2, 5, low=0, high=2), f32(30, 16), f32(8, 16),
       f32(2, 16), f32(16), f32(16), i32([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]])], dict(epsilon=1e-5), outputs=3),
    C("embed_ln_mask_values_not_one", "EmbedLayerNormalization",  # (mask_index counts the values equal to 1)
      [rand("int32", 2, 5, low=0, high=30), rand("int32", 2, 5, low=0, high=2), f32(30, 16), f32(8, 16),
       f32(2, 16), f32(16), f32(16), i32([[2, 3, 0, 1, 0], [0, 1, 1, 3, 2]])], dict(epsilon=1e-5), outputs=2),
    C("embed_ln_position_ids", "EmbedLayerNormalization",
      [rand("int32", 2, 4, low=0, high=30), None, f32(30, 16), f32(8, 16), None, f32(16), f32(16), None,
       i32([[3, 2, 1, 0], [0, 1, 2, 3]])], dict(epsilon=1e-5), outputs=2),
]

# ---------------------------------------------------------------- attention (B=2, S=5, hidden 16, 2 heads)
PAD_MASK = i32([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
ALL_MASKED = i32([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
CASES += [
    C("attention", "Attention", [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48)], dict(num_heads=2),
      tol=(1e-4, 1e-5)),
    C("attention_no_bias", "Attention", [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5)], dict(num_heads=4),
      tol=(1e-4, 1e-5)),
    C("attention_mask_2d", "Attention", [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), PAD_MASK],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("attention_mask_all_masked_row", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), ALL_MASKED], dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("attention_mask_1d_end", "Attention", [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), i32([3, 5])],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    # onnxruntime's EmbedLayerNormalization without a mask writes a mask_index of zeros: every key masked
    C("attention_mask_1d_all_zero", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), i32([0, 0])], dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("attention_mask_1d_one_row_zero", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), i32([0, 4])], dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("attention_mask_1d_all_zero_causal", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), i32([0, 0])], dict(num_heads=2, unidirectional=1),
      tol=(1e-4, 1e-5)),
    C("attention_mask_1d_end_start", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), i32([4, 5, 1, 2])], dict(num_heads=2),
      tol=(1e-4, 1e-5)),
    C("attention_mask_3d", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), rand("int32", 2, 5, 5, low=0, high=2)],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("attention_unidirectional", "Attention", [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48)],
      dict(num_heads=2, unidirectional=1), tol=(1e-4, 1e-5)),
    C("attention_unidirectional_masked", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), PAD_MASK], dict(num_heads=2, unidirectional=1),
      tol=(1e-4, 1e-5)),
    C("attention_past_present", "Attention",
      [f32(2, 1, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), None, f32(2, 2, 2, 4, 8)],
      dict(num_heads=2, unidirectional=1), outputs=2, tol=(1e-4, 1e-5)),
    C("attention_qkv_sizes", "Attention", [f32(2, 5, 16), f32(16, 40, low=-0.5, high=0.5), f32(40)],
      dict(num_heads=2, qkv_hidden_sizes=[12, 12, 16]), tol=(1e-4, 1e-5)),
    C("attention_scale_and_bias", "Attention",
      [f32(2, 5, 16), f32(16, 48, low=-0.5, high=0.5), f32(48), None, None, f32(1, 2, 5, 5)],
      dict(num_heads=2, scale=0.3), tol=(1e-4, 1e-5)),
    C("attention_seq1", "Attention", [f32(3, 1, 16), f32(16, 48, low=-0.5, high=0.5), f32(48)], dict(num_heads=2),
      tol=(1e-4, 1e-5)),
    C("mha", "MultiHeadAttention", [f32(2, 5, 16), f32(2, 7, 16), f32(2, 7, 16)], dict(num_heads=2),
      tol=(1e-4, 1e-5)),
    C("mha_bias_padding", "MultiHeadAttention",
      [f32(2, 5, 16), f32(2, 7, 16), f32(2, 7, 16), f32(48), i32([[1, 1, 1, 1, 0, 0, 0], [1] * 7])],
      dict(num_heads=4), tol=(1e-4, 1e-5)),
    C("mha_key_lengths", "MultiHeadAttention", [f32(2, 5, 16), f32(2, 7, 16), f32(2, 7, 16), None, i32([3, 7])],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("mha_causal_past", "MultiHeadAttention",
      [f32(2, 3, 16), f32(2, 3, 16), f32(2, 3, 16), None, None, None, f32(2, 2, 4, 8), f32(2, 2, 4, 8)],
      dict(num_heads=2, unidirectional=1), outputs=3, tol=(1e-4, 1e-5)),
    C("mha_attention_bias", "MultiHeadAttention",
      [f32(2, 5, 16), f32(2, 6, 16), f32(2, 6, 16), None, None, f32(2, 1, 5, 6)], dict(num_heads=2, scale=0.25),
      tol=(1e-4, 1e-5)),
    C("mha_cross_projected", "MultiHeadAttention", [f32(2, 5, 16), f32(2, 2, 6, 8), f32(2, 2, 6, 8), f32(48)],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("gqa_prompt", "GroupQueryAttention",
      [f32(2, 5, 32), f32(2, 5, 16), f32(2, 5, 16), None, None, i32([4, 4]), i32(5)],
      dict(num_heads=4, kv_num_heads=2), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_prompt_right_padded", "GroupQueryAttention",
      [f32(2, 5, 32), f32(2, 5, 16), f32(2, 5, 16), None, None, i32([2, 4]), i32(5)],
      dict(num_heads=4, kv_num_heads=2), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_token_with_cache", "GroupQueryAttention",
      [f32(2, 1, 32), f32(2, 1, 16), f32(2, 1, 16), f32(2, 2, 8, 8), f32(2, 2, 8, 8), i32([5, 7]), i32(8)],
      dict(num_heads=4, kv_num_heads=2), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_rotary", "GroupQueryAttention",
      [f32(2, 1, 64), f32(2, 1, 32), f32(2, 1, 32), f32(2, 2, 6, 16), f32(2, 2, 6, 16), i32([3, 5]), i32(6),
       f32(16, 8), f32(16, 8)], dict(num_heads=4, kv_num_heads=2, do_rotary=1), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_rotary_interleaved_prompt", "GroupQueryAttention",
      [f32(1, 6, 64), f32(1, 6, 16), f32(1, 6, 16), None, None, i32([5]), i32(6), f32(16, 8), f32(16, 8)],
      dict(num_heads=4, kv_num_heads=1, do_rotary=1, rotary_interleaved=1), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_local_window_softcap", "GroupQueryAttention",
      [f32(1, 6, 32), f32(1, 6, 16), f32(1, 6, 16), None, None, i32([5]), i32(6)],
      dict(num_heads=4, kv_num_heads=2, local_window_size=2, softcap=2.0), outputs=3, tol=(1e-4, 1e-5)),
    C("gqa_packed", "GroupQueryAttention", [f32(2, 3, 64), None, None, None, None, i32([2, 2]), i32(3)],
      dict(num_heads=4, kv_num_heads=2), outputs=3, tol=(1e-4, 1e-5)),
    C("rotary", "RotaryEmbedding", [f32(2, 5, 16), rand("int64", 2, 5, low=0, high=20), f32(20, 4), f32(20, 4)],
      dict(num_heads=2)),
    C("rotary_offset_interleaved", "RotaryEmbedding", [f32(2, 5, 16), i64([3]), f32(20, 4), f32(20, 4)],
      dict(interleaved=1)),
    C("rotary_4d_partial", "RotaryEmbedding",
      [f32(2, 2, 5, 8), rand("int64", 2, 5, low=0, high=20), f32(20, 2), f32(20, 2)],
      dict(rotary_embedding_dim=4, num_heads=2)),
]

# ---------------------------------------------------------------- fused float operators
CONV = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
CASES += [
    C("fused_matmul", "FusedMatMul", [f32(3, 4), f32(4, 5)], dict(alpha=0.5)),
    C("fused_matmul_trans", "FusedMatMul", [f32(2, 4, 3), f32(2, 5, 4)], dict(transA=1, transB=1, alpha=2.0)),
    C("fused_matmul_broadcast", "FusedMatMul", [f32(2, 3, 4, 6), f32(6, 5)], {}),
    C("fused_matmul_trans_batch_a", "FusedMatMul", [f32(4, 2, 3, 6), f32(2, 3, 6, 5)], dict(transBatchA=1)),
    C("fused_matmul_trans_batch_b", "FusedMatMul", [f32(2, 3, 4, 6), f32(6, 2, 3, 5)], dict(transBatchB=1)),
    C("fused_matmul_trans_batch_both", "FusedMatMul", [f32(6, 2, 4), f32(5, 2, 6)],
      dict(transBatchA=1, transBatchB=1, transA=1, transB=1)),
    C("fused_conv_relu", "FusedConv", [f32(1, 3, 6, 6), f32(4, 3, 3, 3), f32(4)], dict(activation="Relu", **CONV)),
    C("fused_conv_leaky_strided", "FusedConv", [f32(2, 4, 7, 7), f32(4, 2, 3, 3)],
      dict(activation="LeakyRelu", activation_params=[0.2], strides=[2, 2], group=2, **CONV)),
    C("fused_conv_clip_sum", "FusedConv", [f32(1, 3, 5, 5), f32(2, 3, 3, 3), f32(2), f32(1, 2, 5, 5)],
      dict(activation="Clip", activation_params=[-1.0, 1.5], **CONV)),
    C("fused_conv_sigmoid_1d", "FusedConv", [f32(2, 3, 9), f32(4, 3, 2)], dict(activation="Sigmoid")),
    C("fused_conv_tanh", "FusedConv", [f32(1, 3, 5, 5), f32(2, 3, 1, 1)], dict(activation="Tanh")),
    C("fused_conv_hardsigmoid", "FusedConv", [f32(1, 3, 5, 5), f32(2, 3, 3, 3)],
      dict(activation="HardSigmoid", activation_params=[0.3, 0.4], **CONV)),
    C("fused_gemm_relu", "FusedGemm", [f32(3, 4), f32(5, 4), f32(5)], dict(transB=1, activation="Relu")),
    C("fused_gemm_leaky", "FusedGemm", [f32(4, 3), f32(4, 5), f32(3, 5)],
      dict(transA=1, alpha=0.5, beta=2.0, activation="LeakyRelu", activation_alpha=0.1)),
]

# ---------------------------------------------------------------- weight-only and dynamic quantization
def u8(*shape, low=None, high=None):
    return rand("uint8", *shape, low=low, high=high)


def s8(*shape, low=None, high=None):
    return rand("int8", *shape, low=low, high=high)


def scales(*shape):
    return f32(*shape, low=0.01, high=0.1)


NBITS = dict(K=32, N=6, block_size=16)
CASES += [
    C("matmul_nbits_4", "MatMulNBits", [f32(3, 32), u8(6, 2, 8), scales(12)], dict(bits=4, **NBITS),
      tol=(1e-4, 1e-4)),
    C("matmul_nbits_4_zero_points", "MatMulNBits", [f32(2, 5, 32), u8(6, 2, 8), scales(12), u8(6)],
      dict(bits=4, **NBITS), tol=(1e-4, 1e-4)),
    C("matmul_nbits_4_bias", "MatMulNBits", [f32(3, 32), u8(6, 2, 8), scales(12), None, None, f32(6)],
      dict(bits=4, **NBITS), tol=(1e-4, 1e-4)),
    C("matmul_nbits_4_odd_k", "MatMulNBits", [f32(3, 40), u8(6, 3, 8), scales(18), u8(12)],
      dict(bits=4, K=40, N=6, block_size=16), tol=(1e-4, 1e-4)),
    C("matmul_nbits_4_float_zero_points", "MatMulNBits", [f32(3, 32), u8(6, 2, 8), scales(12), f32(12, low=6, high=9)],
      dict(bits=4, **NBITS), tol=(1e-4, 1e-4)),
    C("matmul_nbits_8", "MatMulNBits", [f32(3, 32), u8(6, 2, 16), scales(12), u8(12)], dict(bits=8, **NBITS),
      tol=(1e-4, 1e-4)),
    C("matmul_nbits_2", "MatMulNBits", [f32(3, 32), u8(6, 2, 4), scales(12), u8(6)], dict(bits=2, **NBITS),
      tol=(1e-4, 1e-4)),
    C("matmul_nbits_block32_rows1", "MatMulNBits", [f32(1, 64), u8(4, 2, 16), scales(8)],
      dict(bits=4, K=64, N=4, block_size=32), tol=(1e-4, 1e-4)),
    C("dq_matmul", "DynamicQuantizeMatMul", [f32(4, 16), s8(16, 8), np.float32(0.02)], tol=(1e-5, 1e-4)),
    C("dq_matmul_zp_bias", "DynamicQuantizeMatMul", [f32(2, 3, 16), u8(16, 8), np.float32(0.02), np.uint8(120), f32(8)],
      tol=(1e-5, 1e-4)),
    C("dq_matmul_per_column", "DynamicQuantizeMatMul", [f32(5, 16), s8(16, 8), scales(8), s8(8, low=-3, high=3)],
      tol=(1e-5, 1e-4)),
    C("dq_matmul_positive_input", "DynamicQuantizeMatMul", [f32(4, 300, low=0.5, high=2.0), s8(300, 3), scales(3)],
      tol=(1e-5, 1e-4)),
    C("dq_matmul_zeros", "DynamicQuantizeMatMul", [np.zeros((2, 4), np.float32), s8(4, 3), np.float32(0.1)]),
    C("mm_int_to_float", "MatMulIntegerToFloat",
      [u8(4, 16), s8(16, 8), np.float32(0.03), np.float32(0.02), np.uint8(128)], tol=(1e-5, 1e-4)),
    C("mm_int_to_float_per_column_bias", "MatMulIntegerToFloat",
      [u8(2, 4, 16), s8(16, 8), np.float32(0.03), scales(8), np.uint8(100), s8(8, low=-2, high=2), f32(8)],
      tol=(1e-5, 1e-4)),
    C("mm_int_to_float_s8s8", "MatMulIntegerToFloat", [s8(4, 16), s8(16, 8), np.float32(0.03), np.float32(0.02)],
      tol=(1e-5, 1e-4)),
]

# DynamicQuantizeLSTM: X (T=4, B=3, input 5), hidden 6, W (dirs, 5, 24), R (dirs, 6, 24) int8
def _lstm(dirs, **extra):
    return [f32(4, 3, 5), s8(dirs, 5, 24), s8(dirs, 6, 24), f32(dirs, 48, low=-0.5, high=0.5)] + list(extra.get(
        "middle", [None, None, None, None])) + [scales(dirs), s8(dirs, low=-2, high=2), scales(dirs),
                                                 s8(dirs, low=-2, high=2)]


CASES += [
    C("dq_lstm", "DynamicQuantizeLSTM", _lstm(1), dict(hidden_size=6), outputs=3, tol=(1e-4, 1e-4)),
    C("dq_lstm_bidirectional", "DynamicQuantizeLSTM", _lstm(2), dict(hidden_size=6, direction="bidirectional"),
      outputs=3, tol=(1e-4, 1e-4)),
    C("dq_lstm_states_lengths", "DynamicQuantizeLSTM",
      _lstm(1, middle=[i32([4, 2, 3]), f32(1, 3, 6), f32(1, 3, 6), None]), dict(hidden_size=6), outputs=3,
      tol=(1e-4, 1e-4)),
    C("dq_lstm_reverse_peephole", "DynamicQuantizeLSTM",
      _lstm(1, middle=[None, None, None, f32(1, 18)]), dict(hidden_size=6, direction="reverse"), outputs=3,
      tol=(1e-4, 1e-4)),
]

# ---------------------------------------------------------------- static quantization (QOperator form)
def q(scale, zero_point, dtype=np.uint8):
    return [np.float32(scale), np.asarray(zero_point, dtype)]


CASES += [
    C("qlinear_add", "QLinearAdd", [u8(2, 3, 8), *q(0.02, 128), u8(2, 3, 8), *q(0.03, 100), *q(0.05, 120)],
      tol=(0, 1)),
    C("qlinear_add_broadcast_saturate", "QLinearAdd", [u8(4, 8), *q(0.2, 10), u8(8), *q(0.3, 5), *q(0.01, 0)],
      tol=(0, 1)),
    C("qlinear_add_b_broadcasts_a", "QLinearAdd", [u8(8), *q(0.02, 3), u8(4, 8), *q(0.03, 100), *q(0.05, 120)],
      tol=(0, 1)),
    C("qlinear_add_int8", "QLinearAdd", [s8(3, 5), *q(0.02, 0, np.int8), s8(3, 5), *q(0.02, -3, np.int8),
                                          *q(0.04, 2, np.int8)], tol=(0, 1)),
    C("qlinear_mul", "QLinearMul", [u8(2, 6), *q(0.02, 128), u8(2, 6), *q(0.03, 100), *q(0.05, 120)], tol=(0, 1)),
    C("qlinear_mul_int8_broadcast", "QLinearMul", [s8(3, 4), *q(0.05, 1, np.int8), s8(1, 4), *q(0.04, 0, np.int8),
                                                    *q(0.1, -5, np.int8)], tol=(0, 1)),
    C("qlinear_sigmoid", "QLinearSigmoid", [u8(3, 16), *q(0.05, 128), *q(1 / 256, 0)], tol=(0, 1)),
    C("qlinear_sigmoid_int8", "QLinearSigmoid", [s8(3, 16), *q(0.05, 0, np.int8), *q(1 / 256, -128, np.int8)],
      tol=(0, 1)),
    C("qlinear_leaky_relu", "QLinearLeakyRelu", [u8(2, 3, 7), *q(0.04, 128), *q(0.03, 60)], dict(alpha=0.1),
      tol=(0, 1)),
    C("qlinear_leaky_relu_int8", "QLinearLeakyRelu", [s8(5, 5), *q(0.04, 3, np.int8), *q(0.02, -10, np.int8)],
      tol=(0, 1)),
    C("qlinear_concat", "QLinearConcat", [*q(0.05, 128), u8(2, 3, 4), *q(0.05, 128), u8(2, 5, 4), *q(0.02, 100)],
      dict(axis=1), tol=(0, 1)),
    C("qlinear_concat_three_last_axis", "QLinearConcat",
      [*q(0.04, 10), u8(2, 3), *q(0.03, 0), u8(2, 1), *q(0.04, 10), u8(2, 4), *q(0.1, 200)], dict(axis=-1),
      tol=(0, 1)),
    C("qlinear_global_avg_pool", "QLinearGlobalAveragePool", [u8(2, 3, 5, 5), *q(0.05, 128), *q(0.02, 100)],
      tol=(0, 1)),
    C("qlinear_global_avg_pool_nhwc", "QLinearGlobalAveragePool", [u8(2, 4, 4, 3), *q(0.05, 128), *q(0.02, 100)],
      dict(channels_last=1), tol=(0, 1)),
    C("qlinear_global_avg_pool_zero_point_0_wide", "QLinearGlobalAveragePool",
      [u8(1, 4, 64, 80), *q(0.05, 0), *q(0.04, 3)], tol=(0, 1)),
    C("qlinear_global_avg_pool_int8", "QLinearGlobalAveragePool",
      [s8(1, 3, 7, 7), *q(0.05, 2, np.int8), *q(0.01, -4, np.int8)], tol=(0, 1)),
    C("qlinear_avg_pool", "QLinearAveragePool", [u8(1, 2, 6, 6), *q(0.05, 128), *q(0.03, 110)],
      dict(kernel_shape=[3, 3], strides=[2, 2]), tol=(0, 1)),
    C("qlinear_avg_pool_pads", "QLinearAveragePool", [u8(2, 3, 5, 5), *q(0.05, 128), *q(0.03, 110)],
      dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), tol=(0, 1)),
    C("qlinear_avg_pool_pads_count_include", "QLinearAveragePool", [u8(2, 3, 5, 5), *q(0.05, 128), *q(0.03, 110)],
      dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1), tol=(0, 1)),
    C("qlinear_avg_pool_nhwc_ceil", "QLinearAveragePool", [u8(1, 5, 5, 2), *q(0.05, 128), *q(0.03, 110)],
      dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, channels_last=1), tol=(0, 1)),
    C("qgemm_float_out", "QGemm", [u8(3, 8), *q(0.02, 128), s8(8, 5), *q(0.03, 0, np.int8)], tol=(1e-5, 1e-5)),
    C("qgemm_requant_bias", "QGemm", [u8(3, 8), *q(0.02, 128), s8(8, 5), *q(0.03, 0, np.int8),
                                      rand("int32", 5, low=-500, high=500), *q(0.1, 120)], tol=(0, 1)),
    C("qgemm_trans_alpha_per_column", "QGemm", [u8(8, 3), *q(0.02, 128), s8(5, 8), scales(5),
                                                np.zeros(5, np.int8), None, *q(0.1, 120)],
      dict(transA=1, transB=1, alpha=0.5), tol=(0, 1)),
    C("qgemm_u8u8_float_bias", "QGemm", [u8(4, 6), *q(0.02, 100), u8(6, 3), *q(0.03, 128),
                                          rand("int32", 4, 3, low=-100, high=100)], tol=(1e-5, 1e-5)),
]

# ---------------------------------------------------------------- Tokenizer
def strings(*rows):
    return np.array(rows, dtype=object)


TEXT = strings("Hello World", "I love computer science !", "")
SKL_SEPARATORS = [" ", "[.]", "\\?", ",", ";", ":", "\\!", "\\(", "\\)", "\n", '"', "'", "-", "\\[", "\\]", "@"]
CASES += [
    C("tokenizer_space", "Tokenizer", [TEXT], dict(mark=0, mincharnum=1, pad_value="#", separators=[" "])),
    C("tokenizer_mark", "Tokenizer", [TEXT], dict(mark=1, mincharnum=1, pad_value="#", separators=[" "])),
    C("tokenizer_mincharnum", "Tokenizer", [TEXT], dict(mark=0, mincharnum=2, pad_value="", separators=[" "])),
    C("tokenizer_2d", "Tokenizer", [strings(["a b", "c"], ["d e f", "g h"])],
      dict(mark=0, mincharnum=1, pad_value="#", separators=[" "])),
    C("tokenizer_characters", "Tokenizer", [strings("abc", "de")],
      dict(mark=0, mincharnum=1, pad_value="#", separators=[""])),
    C("tokenizer_skl2onnx_separators", "Tokenizer",
      [strings("the quick, brown fox; jumps (over) the lazy dog!", "what? 'quoted' [x] a-b @c")],
      dict(mark=0, mincharnum=1, pad_value="#", separators=SKL_SEPARATORS)),
    C("tokenizer_tokenexp", "Tokenizer", [strings("the quick, brown_fox 42 jumps", "a b")],
      dict(mark=0, mincharnum=1, pad_value="#", tokenexp="[a-zA-Z0-9_]+")),
    C("tokenizer_tokenexp_words2", "Tokenizer", [strings("the quick, brown_fox 42 jumps", "a bb ccc \u00e9t\u00e9")],
      dict(mark=0, mincharnum=1, pad_value="#", tokenexp="\\b\\w\\w+\\b")),
    C("tokenizer_tokenexp_mark_min", "Tokenizer", [strings(["x yy zzz", "1 22"], ["", "q"])],
      dict(mark=1, mincharnum=2, pad_value="<pad>", tokenexp="[a-z0-9]+")),
    C("tokenizer_all_empty", "Tokenizer", [strings("", "")], dict(mark=0, mincharnum=1, pad_value="#", separators=[" "])),
]
CASES += [
    C("qlinear_softmax", "QLinearSoftmax", [u8(2, 3, 10), *q(0.05, 128), *q(1 / 256, 0)], dict(opset=13),
      tol=(0, 1)),
    C("qlinear_softmax_int8_axis1_v12", "QLinearSoftmax", [s8(2, 3, 4), *q(0.05, 0, np.int8), *q(1 / 256, -128, np.int8)],
      dict(opset=12, axis=1), tol=(0, 1)),
]
CASES += [  # onnxruntime's LayerNormalization in the ONNX domain of opset-14 models (its transformer optimizer)
    C("layer_norm_opset14", "LayerNormalization", [f32(2, 3, 16), f32(16), f32(16)], dict(epsilon=1e-5), outputs=3,
      domain="", opset=14),
    C("layer_norm_opset14_axis", "LayerNormalization", [f32(2, 3, 4), f32(3, 4)], dict(axis=1), domain="", opset=14),
]
CASES += [  # ONNX-domain integer products on both sides of the float32-exact bound (K <= 258 for 8-bit operands)
    C("matmul_integer_k16_float32_path", "MatMulInteger", [u8(3, 16), s8(16, 5), np.uint8(200), np.int8(-100)],
      domain="", tol=(0, 0)),
    C("matmul_integer_k300_float64_path", "MatMulInteger", [u8(3, 300), s8(300, 5), np.uint8(255), np.int8(-128)],
      domain="", tol=(0, 0)),
    C("matmul_integer_batched_per_column", "MatMulInteger", [u8(2, 3, 40), u8(40, 6), np.uint8(7), u8(6)],
      domain="", tol=(0, 0)),
    C("qlinear_matmul_k300", "QLinearMatMul",
      [u8(4, 300), *q(0.02, 128), s8(300, 6), *q(0.01, 0, np.int8), *q(0.5, 120)], domain="", tol=(0, 0)),
    C("dynamic_quantize_linear", "DynamicQuantizeLinear", [f32(5, 7)], outputs=3, domain="", tol=(0, 0)),
    C("dynamic_quantize_linear_negative", "DynamicQuantizeLinear", [f32(3, 40, low=-7.0, high=-0.25)], outputs=3,
      domain="", tol=(0, 0)),
    C("dynamic_quantize_linear_zeros", "DynamicQuantizeLinear", [np.zeros((2, 3), np.float32)], outputs=3,
      domain="", tol=(0, 0)),
    C("dynamic_quantize_linear_positive", "DynamicQuantizeLinear", [f32(4, 4, low=0.5, high=9.0)], outputs=3,
      domain="", tol=(0, 0)),
    # one NaN: left out of the range and coded 0 (with several, onnxruntime's SIMD reductions give ranges
    # that depend on the NaNs' lanes)
    C("dynamic_quantize_linear_nan", "DynamicQuantizeLinear",
      [np.asarray([[1.0, -1.0, 2.0, 0.5], [3.0, np.nan, 1.0, -2.0]], np.float32)], outputs=3, domain="",
      tol=(0, 0)),
]
CASES += [  # float16: computed in float32, rounded once
    C("bias_gelu_float16", "BiasGelu", [rand("float16", 2, 5, 16), rand("float16", 16)], tol=(2e-3, 2e-3)),
    C("fast_gelu_float16", "FastGelu", [rand("float16", 3, 8), rand("float16", 8)], tol=(2e-3, 2e-3)),
    C("skip_ln_float16", "SkipLayerNormalization",
      [rand("float16", 2, 3, 16), rand("float16", 2, 3, 16), rand("float16", 16), rand("float16", 16)],
      dict(epsilon=1e-5), tol=(5e-3, 5e-3)),
    # the sum of input, skip and bias is formed in float32 (rounded only in the sum output)
    C("skip_ln_float16_bias_sum", "SkipLayerNormalization",
      [rand("float16", 2, 4, 64), rand("float16", 2, 4, 64), rand("float16", 64, low=0.5, high=1.5),
       rand("float16", 64), rand("float16", 64)], dict(epsilon=1e-12), outputs=4, tol=(0, 1e-5)),
    C("attention_float16", "Attention",
      [rand("float16", 2, 5, 16), rand("float16", 16, 48, low=-0.5, high=0.5), rand("float16", 48), PAD_MASK],
      dict(num_heads=2), tol=(5e-3, 5e-3)),
]
CASES += [  # inner dimensions cut into float32-exact chunks (linalg.integer_product)
    C("dq_matmul_k2000_chunked", "DynamicQuantizeMatMul", [f32(3, 2000), s8(2000, 5), scales(5)], tol=(1e-5, 1e-4)),
    C("matmul_integer_k2000_chunked", "MatMulInteger", [u8(2, 2000), s8(2000, 4), np.uint8(0), np.int8(0)],
      domain="", tol=(0, 0)),
    C("matmul_integer_k5000_u8u8", "MatMulInteger", [u8(2, 5000), u8(5000, 3)], domain="", tol=(0, 0)),
    # C's int32 values near 2**24: the float32 sums with C would round, so they are formed in float64
    C("qgemm_bias_beyond_float32_sums", "QGemm", [u8(3, 200), *q(0.02, 128), s8(200, 4), *q(0.03, 0, np.int8),
                                                   rand("int32", 4, low=16_000_000, high=17_000_000)],
      tol=(1e-7, 0)),
    C("qgemm_k1500_trans_b_per_column_zp", "QGemm", [u8(3, 1500), *q(0.02, 128), s8(4, 1500), scales(4),
                                                      s8(4, low=-3, high=3), None, *q(0.5, 120)],
      dict(transB=1), tol=(0, 1)),
]
CASES += [  # ONNX-domain integer convolutions: float32 when exact, float64 when taps * bounds reach 2**24
    C("qlinear_conv_float32_path", "QLinearConv",
      [u8(1, 8, 9, 9), *q(0.02, 128), s8(4, 8, 3, 3), *q(0.01, 0, np.int8), *q(0.5, 120), rand("int32", 4, low=-900, high=900)],
      dict(pads=[1, 1, 1, 1]), domain="", tol=(0, 0)),
    C("qlinear_conv_float64_path", "QLinearConv",
      [u8(1, 300, 5, 5), *q(0.02, 0), u8(2, 300, 3, 3), *q(0.01, 0), *q(8.0, 10)], domain="", tol=(0, 0)),
    C("conv_integer_float64_path", "ConvInteger", [u8(1, 300, 4, 4), u8(2, 300, 3, 3)], domain="", tol=(0, 0)),
    C("conv_integer_grouped", "ConvInteger", [u8(2, 6, 7, 7), s8(6, 2, 3, 3), np.uint8(100)],
      dict(group=3, strides=[2, 2]), domain="", tol=(0, 0)),
]
CASES += [  # DynamicQuantizeLSTM with sequence lengths in each direction
    C("dq_lstm_lengths_reverse", "DynamicQuantizeLSTM",
      _lstm(1, middle=[i32([4, 2, 3]), f32(1, 3, 6), f32(1, 3, 6), None]), dict(hidden_size=6, direction="reverse"),
      outputs=3, tol=(1e-4, 1e-4)),
    C("dq_lstm_lengths_bidirectional", "DynamicQuantizeLSTM",
      _lstm(2, middle=[i32([1, 4, 3]), None, None, None]), dict(hidden_size=6, direction="bidirectional"),
      outputs=3, tol=(1e-4, 1e-4)),
]
CASES += [  # QAttention: Attention after onnxruntime's dynamic quantizer (uint8 input from DynamicQuantizeLinear)
    C("qattention", "QAttention", [u8(2, 5, 16), s8(16, 48), f32(48), np.float32(0.02), np.float32(0.01)],
      dict(num_heads=2), tol=(1e-4, 1e-5)),
    C("qattention_mask_zero_points", "QAttention",
      [u8(2, 5, 16), s8(16, 48), f32(48), np.float32(0.02), np.float32(0.01), PAD_MASK, np.uint8(128), np.int8(0)],
      dict(num_heads=4), tol=(1e-4, 1e-5)),
    C("qattention_per_column_scale_unidirectional", "QAttention",
      [u8(2, 5, 16), s8(16, 48), f32(48), np.float32(0.02), scales(48), i32([3, 5]), np.uint8(100)],
      dict(num_heads=2, unidirectional=1), tol=(1e-4, 1e-5)),
]
CASES += [  # skl2onnx's com.microsoft operators
    C("cdist_sqeuclidean", "CDist", [f32(7, 4), f32(5, 4)]),
    C("cdist_euclidean_double", "CDist", [rand("float64", 6, 3), rand("float64", 9, 3)], dict(metric="euclidean")),
    C("cdist_self_zero_distance", "CDist", [np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)],
      dict(metric="euclidean"), tol=(0, 1e-6)),
    C("murmur_int32", "MurmurHash3", [rand("int32", 4, 5)], dict(seed=0, positive=1), tol=(0, 0)),
    C("murmur_uint32_signed_seed", "MurmurHash3", [rand("uint32", 11)], dict(seed=42, positive=0), tol=(0, 0)),
    C("murmur_strings", "MurmurHash3", [strings("", "a", "ab", "abc", "abcd", "abcde", "hello world", "\u00e9t\u00e9")],
      dict(seed=7, positive=1), tol=(0, 0)),
    C("murmur_strings_signed", "MurmurHash3", [strings(["cat", "dog"], ["fish", "x"])], dict(positive=0), tol=(0, 0)),
]
_TIES = np.asarray([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1e9, -1e9], [3.5, 254.5, 255.5, -126.5, -127.5, -128.5, 0, 7],
                    [np.nan, -np.nan, np.inf, -np.inf, 0.49999997, -0.49999997, 126.5, 127.5]], np.float32)
CASES += [  # ONNX-domain QuantizeLinear / DequantizeLinear, per tensor with float32 scales (the float32 fast path),
    # ties (half to even) and saturation included; per axis goes through the general path
    C("quantize_linear_uint8_zp", "QuantizeLinear", [f32(2, 3, 5, 5), np.float32(0.013), np.uint8(131)], domain="",
      tol=(0, 0)),
    C("quantize_linear_no_zp", "QuantizeLinear", [f32(4, 7), np.float32(0.02)], domain="", tol=(0, 0)),
    C("quantize_linear_int8_ties_saturate", "QuantizeLinear", [_TIES, np.float32(1.0), np.int8(-1)], domain="",
      tol=(0, 0)),
    C("quantize_linear_uint8_ties_saturate", "QuantizeLinear", [_TIES, np.float32(1.0), np.uint8(3)], domain="",
      tol=(0, 0)),
    C("quantize_linear_uint16", "QuantizeLinear", [f32(3, 9, low=-50, high=800), np.float32(0.01), np.uint16(30000)],
      domain="", opset=21, tol=(0, 0)),
    C("quantize_linear_int16_ties", "QuantizeLinear", [_TIES * 128, np.float32(1.0), np.int16(5)],
      domain="", opset=21, tol=(0, 0)),
    C("quantize_linear_per_axis", "QuantizeLinear", [f32(2, 3, 4), scales(3), u8(3)], domain="", tol=(0, 0)),
    C("quantize_linear_per_axis_nan", "QuantizeLinear", [_TIES[:, :3], f32(3, low=0.5, high=2), s8(3)], domain="",
      tol=(0, 0)),
    C("dequantize_linear_uint8", "DequantizeLinear", [u8(2, 3, 5, 5), np.float32(0.013), np.uint8(131)], domain="",
      tol=(0, 0)),
    C("dequantize_linear_int8_no_zp", "DequantizeLinear", [s8(6, 7), np.float32(0.7)], domain="", tol=(0, 0)),
    C("dequantize_linear_int16", "DequantizeLinear", [rand("int16", 4, 9), np.float32(0.001), np.int16(-300)],
      domain="", opset=21, tol=(0, 0)),
    C("dequantize_linear_per_axis", "DequantizeLinear", [s8(3, 4), scales(4), s8(4)], dict(axis=1), domain="",
      tol=(0, 0)),
]
