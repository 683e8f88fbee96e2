"""Corpus models from transformers architectures: small configs built in code (no hub download), random
weights, exported with torch.onnx the way users export them (TorchScript exporter with dynamic batch and
sequence axes, or the dynamo exporter). The returned Spec is exported by tools/corpus_torch.py."""

from __future__ import annotations

import numpy as np

import corpus_feeds as F
from corpus_torch import Spec, _t


class _Outputs:
    """Wraps a transformers model so that forward takes positional tensors and returns plain tensors."""

    @staticmethod
    def wrap(model, keys, output_attr):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, x0, x1=None, x2=None):  # positional parameters, as torch.export matches them
                out = self.model(**dict(zip(keys, (x0, x1, x2))), return_dict=True)
                return tuple(getattr(out, a) for a in output_attr)

        return Wrapped().eval()


def _text_spec(rng, model, vocab, keys, outputs, batch=2, seq=16, first=None):
    ids = F.token_ids(rng, batch, seq, vocab, first=first)
    values = {"input_ids": ids, "attention_mask": F.attention_mask(batch, seq),
              "token_type_ids": np.concatenate([np.zeros((batch, seq // 2), np.int64),
                                                np.ones((batch, seq - seq // 2), np.int64)], axis=1)}
    args = tuple(_t(values[k]) for k in keys)
    dynamic = {k: {0: "batch", 1: "sequence"} for k in keys}
    return Spec(_Outputs.wrap(model.eval(), keys, outputs), args, list(keys), list(outputs), dynamic)


def bert_spec(rng, attn: str = "sdpa") -> Spec:
    """BertModel (a MiniLM-sized encoder: 2 layers, hidden 64): last_hidden_state and pooler_output.
    ``attn="eager"`` is the attention form that onnxruntime's optimizer fuses (optimum exports it)."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=128, attn_implementation=attn)
    return _text_spec(rng, BertModel(config), 1000, ("input_ids", "attention_mask", "token_type_ids"),
                      ("last_hidden_state", "pooler_output"), first=101)


def bert_eager_spec(rng) -> Spec:
    return bert_spec(rng, "eager")


def distilbert_spec(rng) -> Spec:
    """DistilBertForSequenceClassification: 2 layers, hidden 64, 3 labels."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    config = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                              max_position_embeddings=128, num_labels=3)
    return _text_spec(rng, DistilBertForSequenceClassification(config), 1000,
                      ("input_ids", "attention_mask"), ("logits",), first=101)


def gpt2_spec(rng) -> Spec:
    """GPT2LMHeadModel without cache: causal attention, tied embeddings, tanh-Gelu, Conv1D projections."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=500, n_positions=64, n_embd=64, n_layer=2, n_head=4, use_cache=False)
    return _text_spec(rng, GPT2LMHeadModel(config), 500, ("input_ids", "attention_mask"), ("logits",))


def llama_spec(rng) -> Spec:
    """LlamaForCausalLM without cache: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=500, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         use_cache=False)
    return _text_spec(rng, LlamaForCausalLM(config), 500, ("input_ids", "attention_mask"), ("logits",))


def t5_encoder_spec(rng) -> Spec:
    """T5EncoderModel: relative position buckets, RMS-style T5 layer norm, ReLU feed-forward."""
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=500, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                      relative_attention_num_buckets=16)
    return _text_spec(rng, T5EncoderModel(config), 500, ("input_ids", "attention_mask"),
                      ("last_hidden_state",))


def bart_spec(rng) -> Spec:
    """BartForSequenceClassification: encoder-decoder with the decoder fed the shifted input."""
    from transformers import BartConfig, BartForSequenceClassification

    config = BartConfig(vocab_size=500, d_model=64, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                        decoder_ffn_dim=128, max_position_embeddings=64, num_labels=3, use_cache=False)
    spec = _text_spec(rng, BartForSequenceClassification(config), 500, ("input_ids", "attention_mask"),
                      ("logits",))
    ids = spec.args[0].numpy()
    ids[:, -1] = config.eos_token_id  # the classification head reads the hidden state at the </s> token
    ids[:, :-1] = np.where(ids[:, :-1] == config.eos_token_id, 5, ids[:, :-1])
    spec.args[1].fill_(1)  # every row has exactly one </s>, so no padding here
    return spec


def vit_spec(rng) -> Spec:
    """ViTForImageClassification: 32x32 images in 8x8 patches, 2 layers, hidden 64, 10 labels."""
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128, num_labels=10)
    model = _Outputs.wrap(ViTForImageClassification(config).eval(), ("pixel_values",), ("logits",))
    image = F.image(rng, (2, 3, 32, 32), -1.0, 1.0)
    return Spec(model, (_t(image),), ["pixel_values"], ["logits"], {"pixel_values": {0: "batch"}})
