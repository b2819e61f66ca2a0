"""Bounded dynamic shapes (`torch.tpu.bucketed`): a growing sequence padded up to buckets
with a mask gives CPU's results and compiles one model program per bucket."""

import collections
import copy

import pytest
import torch
from helpers import no_fallback

transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def tiny_llama():
    config = transformers.LlamaConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    cpu = transformers.LlamaForCausalLM(config).eval()
    return cpu, copy.deepcopy(cpu).to("tpu")


def greedy(model, ids, new_tokens):
    """Greedy generation without a KV cache: the whole sequence, one token longer each step,
    with the host read a stopping check makes."""
    with torch.no_grad():
        for _ in range(new_tokens):
            logits = model(ids, use_cache=False).logits
            assert logits.shape[1] == ids.shape[1]
            token = logits[:, -1].argmax(-1, keepdim=True)
            token.max().item()
            ids = torch.cat([ids, token], 1)
    return ids


def test_default_buckets_take_two_sizes_per_power_of_two():
    assert [torch.tpu.bucket_for(n) for n in (0, 1, 16, 17, 24, 25, 33, 49, 65, 97, 129)] == [
        16,
        16,
        16,
        24,
        24,
        32,
        48,
        64,
        96,
        128,
        192,
    ]
    assert len({torch.tpu.bucket_for(n) for n in range(8, 72)}) == 6
    assert torch.tpu.bucket_for(5, [4, 12, 8]) == 8


def test_bad_lengths_and_buckets_raise():
    with pytest.raises(ValueError, match="exceeds the largest bucket 8"):
        torch.tpu.bucket_for(9, [4, 8])
    with pytest.raises(ValueError, match="non-negative"):
        torch.tpu.bucket_for(-1)
    with pytest.raises(ValueError, match="positive sizes"):
        torch.tpu.bucketed(lambda x: x, [0, 8])
    with pytest.raises(ValueError, match="no tensor argument"):
        torch.tpu.bucketed(lambda x: x)(3)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "fused_eager"])
def test_greedy_generation_over_64_lengths_matches_cpu_with_one_program_per_bucket(compiled):
    cpu, dev = tiny_llama()
    ids = torch.randint(3, 96, (2, 8), generator=torch.Generator().manual_seed(1))
    expected = greedy(cpu, ids, 64)
    model = torch.tpu.bucketed(torch.compile(dev) if compiled else dev)
    before = torch.tpu.metrics()["graph_compiles"]
    with no_fallback():
        out = greedy(model, ids.to("tpu"), 64)
    assert torch.equal(out.cpu(), expected)
    if compiled:
        # Lengths 8..71 fall in the buckets 16, 24, 32, 48, 64 and 96: one forward graph each.
        assert torch.tpu.metrics()["graph_compiles"] - before == 6


def test_logits_of_real_positions_equal_cpu_and_a_given_mask_is_padded_with_zeros():
    cpu, dev = tiny_llama()
    ids = torch.randint(3, 96, (2, 11), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # left padding of the caller's own
    seen = {}

    def spy(input_ids, attention_mask):
        seen["ids"], seen["mask"] = input_ids.cpu(), attention_mask.cpu()
        return dev(input_ids, attention_mask=attention_mask, use_cache=False)

    with no_fallback():
        out = torch.tpu.bucketed(spy, pad_value=5)(ids.to("tpu"), attention_mask=mask.to("tpu"))
    ref = cpu(ids, attention_mask=mask, use_cache=False)
    assert seen["ids"].shape == (2, 16) and seen["ids"][:, 11:].eq(5).all()
    assert torch.equal(seen["mask"], torch.cat([mask, torch.zeros(2, 5, dtype=mask.dtype)], 1))
    assert type(out) is type(ref) and out.logits.shape == ref.logits.shape
    torch.testing.assert_close(out.logits.cpu(), ref.logits, atol=2e-4, rtol=2e-4)


def test_plain_functions_tuples_and_other_dims():
    Pair = collections.namedtuple("Pair", "padded_len summed")

    def fn(x):  # x: [batch, features, length]; padded entries are zeros
        return Pair(torch.full((1, 1, x.shape[2]), float(x.shape[2]), device=x.device), x * 2), [x.sum(2)]

    x = torch.randn(2, 3, 5)
    with no_fallback():
        pair, (total,) = torch.tpu.bucketed(fn, [8, 32], dim=2, mask=None)(x.to("tpu"))
    assert isinstance(pair, Pair)
    assert pair.padded_len.shape == (1, 1, 5) and pair.padded_len.eq(8).all().item()  # cut back to 5
    torch.testing.assert_close(pair.summed.cpu(), x * 2)
    torch.testing.assert_close(total.cpu(), x.sum(2))
