"""Hugging Face Transformers models, unchanged, on the tpu device against CPU PyTorch: tiny
configs with random weights (nothing downloaded) of Llama, Qwen2, Qwen3, Qwen3-MoE,
Mistral, Gemma, GPT-2, BERT, T5 and ViT; forward logits, the loss's gradients for every
parameter, and greedy generation (dynamic and static KV cache) token for token."""

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")

from helpers import no_fallback  # noqa: E402

VOCAB = 96
DECODER = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)

CAUSAL_LMS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        {"head_dim": 16, "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2},
    ),
    "mistral": ("MistralConfig", "MistralForCausalLM", {}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 16}),
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 64},
    ),
}


def build(config_name, model_name, extra, **kw):
    torch.manual_seed(0)
    base = {} if config_name == "GPT2Config" else DECODER
    config = getattr(transformers, config_name)(**{**base, "vocab_size": VOCAB, **extra, **kw})
    model = getattr(transformers, model_name)(config).eval()
    return model, copy.deepcopy(model).to("tpu")


def close(a, e, tol=2e-4):
    torch.testing.assert_close(a.cpu(), e, atol=tol, rtol=tol)


def inputs(batch=2, length=10):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, VOCAB, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # left padding on the first row
    return ids, mask


@pytest.mark.parametrize("name", list(CAUSAL_LMS))
def test_causal_lm_forward_backward(name):
    cpu, dev = build(*CAUSAL_LMS[name])
    ids, mask = inputs()
    with no_fallback():
        out = dev(ids.to("tpu"), attention_mask=mask.to("tpu"), labels=ids.to("tpu"))
        out.loss.backward()
    ref = cpu(ids, attention_mask=mask, labels=ids)
    ref.loss.backward()
    close(out.logits, ref.logits)
    close(out.loss, ref.loss)
    for (n, p), q in zip(cpu.named_parameters(), dev.parameters()):
        if p.grad is None:
            assert q.grad is None, n
            continue
        close(q.grad, p.grad, tol=1e-3)


@pytest.mark.parametrize("name", list(CAUSAL_LMS))
def test_causal_lm_greedy_generation(name):
    cpu, dev = build(*CAUSAL_LMS[name])
    ids, mask = inputs(length=6)
    kw = dict(max_new_tokens=6, do_sample=False, pad_token_id=0)
    with no_fallback():
        got = dev.generate(ids.to("tpu"), attention_mask=mask.to("tpu"), **kw)
    assert torch.equal(got.cpu(), cpu.generate(ids, attention_mask=mask, **kw))


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_llama_static_cache_and_attention_choices(attn):
    cpu, dev = build(*CAUSAL_LMS["llama"], attn_implementation=attn)
    ids, mask = inputs(length=6)
    kw = dict(max_new_tokens=5, do_sample=False, pad_token_id=0, cache_implementation="static")
    with no_fallback():
        got = dev.generate(ids.to("tpu"), attention_mask=mask.to("tpu"), **kw)
    assert torch.equal(got.cpu(), cpu.generate(ids, attention_mask=mask, **kw))


def test_bert_masked_lm():
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96
    )
    cpu = transformers.BertForMaskedLM(config).eval()
    dev = copy.deepcopy(cpu).to("tpu")
    ids, mask = inputs()
    with no_fallback():
        out = dev(ids.to("tpu"), attention_mask=mask.to("tpu"), labels=ids.to("tpu"))
        out.loss.backward()
    ref = cpu(ids, attention_mask=mask, labels=ids)
    ref.loss.backward()
    close(out.logits, ref.logits)
    close(dev.bert.embeddings.word_embeddings.weight.grad, cpu.bert.embeddings.word_embeddings.weight.grad, 1e-3)


def test_t5_seq2seq():
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=VOCAB,
        d_model=64,
        d_kv=16,
        d_ff=96,
        num_layers=2,
        num_heads=4,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    cpu = transformers.T5ForConditionalGeneration(config).eval()
    dev = copy.deepcopy(cpu).to("tpu")
    ids, mask = inputs()
    labels = ids[:, :5].contiguous()
    with no_fallback():
        out = dev(input_ids=ids.to("tpu"), attention_mask=mask.to("tpu"), labels=labels.to("tpu"))
        out.loss.backward()
        got = dev.generate(ids.to("tpu"), attention_mask=mask.to("tpu"), max_new_tokens=5, do_sample=False)
    ref = cpu(input_ids=ids, attention_mask=mask, labels=labels)
    ref.loss.backward()
    close(out.logits, ref.logits)
    close(dev.shared.weight.grad, cpu.shared.weight.grad, 1e-3)
    assert torch.equal(got.cpu(), cpu.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False))


def test_vit_image_classification():
    torch.manual_seed(0)
    config = transformers.ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        num_labels=5,
    )
    cpu = transformers.ViTForImageClassification(config).eval()
    dev = copy.deepcopy(cpu).to("tpu")
    pixels = torch.randn(2, 3, 16, 16)
    labels = torch.tensor([1, 4])
    with no_fallback():
        out = dev(pixel_values=pixels.to("tpu"), labels=labels.to("tpu"))
        out.loss.backward()
    ref = cpu(pixel_values=pixels, labels=labels)
    ref.loss.backward()
    close(out.logits, ref.logits)
    close(
        dev.vit.embeddings.patch_embeddings.projection.weight.grad,
        cpu.vit.embeddings.patch_embeddings.projection.weight.grad,
        1e-3,
    )
