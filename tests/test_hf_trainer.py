"""Hugging Face's high-level entry points on the tpu device, unchanged: `Trainer` (through
accelerate, which finds the device as torch's current accelerator, with its default fused
AdamW and a linear learning-rate schedule; in float32, under bf16 autocast and with
`torch_compile=True`) and `pipeline(..., device="tpu")`, each against
the same run on the CPU. Tiny configs with random weights; nothing is downloaded."""

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from helpers import no_fallback  # noqa: E402


def gpt2(vocab=50):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=32,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.ids = torch.randint(0, 50, (32, 16), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


MODES = {"float32": {}, "bf16_autocast": {"bf16": True}, "torch_compile": {"torch_compile": True}}


def train(tmp_path, use_cpu, mode="float32"):
    model = gpt2()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / ("cpu" if use_cpu else "tpu")), per_device_train_batch_size=8,
        num_train_epochs=1, learning_rate=1e-3, logging_steps=1, report_to=[], use_cpu=use_cpu,
        save_strategy="no", seed=0, data_seed=0, disable_tqdm=True, **MODES[mode],
    )  # fmt: skip
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens())
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return args, trainer, losses


@pytest.mark.parametrize("mode", list(MODES))
def test_trainer_runs_on_the_device_as_on_cpu(tmp_path, mode):
    _, _, expected = train(tmp_path, use_cpu=True, mode=mode)
    with no_fallback():
        args, trainer, losses = train(tmp_path, use_cpu=False, mode=mode)
    assert args.device.type == "tpu"
    assert next(trainer.model.parameters()).device.type == "tpu"
    assert args.optim == "adamw_torch_fused"
    assert trainer.optimizer.defaults.get("fused")
    assert len(losses) == len(expected) == 4
    tol = 1e-3 if mode == "bf16_autocast" else 1e-5  # bf16 matmuls round differently in order
    torch.testing.assert_close(losses, expected, atol=tol, rtol=tol)


def test_text_generation_pipeline():
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz ")}
    vocab["<unk>"] = len(vocab)
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", "isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token="<unk>", pad_token="<unk>"
    )
    model = gpt2(vocab=len(vocab)).eval()
    kw = dict(max_new_tokens=8, do_sample=False)
    expected = transformers.pipeline("text-generation", model=model, tokenizer=tokenizer, device="cpu")("hello", **kw)
    with no_fallback():
        pipe = transformers.pipeline("text-generation", model=model, tokenizer=tokenizer, device="tpu")
        got = pipe("hello", **kw)
    assert pipe.device.type == "tpu"
    assert got == expected
