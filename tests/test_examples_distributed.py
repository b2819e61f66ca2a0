"""The torchrun examples in `examples/distributed/` run for three steps on two processes: the
first step's loss (before any update) equals the same model's CPU loss on the same batches, and
the loss falls."""

import os
import re
import subprocess
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = os.path.join(ROOT, "examples")
RANKS = 2


def _run(script: str, *args: str) -> tuple[list[float], str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={RANKS}"]
    cmd += [os.path.join(EXAMPLES, "distributed", script), "--steps", "3", "--log-every", "1", *args]
    env = dict(os.environ, TPURS_CPU_DEVICES=str(RANKS), TPURS_FALLBACK="error", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    losses = [float(v) for v in re.findall(r"step +\d+  loss ([\d.]+)", proc.stdout)]
    assert len(losses) == 3, proc.stdout
    return losses, proc.stdout


def _cpu_first_loss(make_model, block: int, batch_size: int, seeds: list[int]) -> float:
    """Mean CPU loss of the freshly initialised model over the ranks' first batches."""
    sys.path[:0] = [os.path.join(EXAMPLES, "mingpt"), os.path.join(EXAMPLES, "distributed")]
    try:
        from data import CharDataset, make_text

        data = CharDataset(make_text(), block)
        torch.manual_seed(0)
        model = make_model(data.vocab_size)
        with torch.no_grad():
            losses = [model(*data.batch(batch_size, torch.Generator().manual_seed(s)))[1] for s in seeds]
        return float(torch.stack(losses).mean())
    finally:
        del sys.path[:2]


def _gpt(vocab_size: int):
    from model import GPT, GPTConfig

    return GPT(GPTConfig(vocab_size=vocab_size, dropout=0.0))


def _llama(vocab_size: int):
    from llama import Llama, LlamaConfig

    return Llama(LlamaConfig(vocab_size=vocab_size))


@pytest.mark.parametrize(
    "script, args, make_model, block, batch_size, seeds",
    [
        ("ddp_mingpt.py", ["--dropout", "0"], _gpt, 128, 16, [1, 2]),
        ("train_llama.py", ["--parallel", "fsdp"], _llama, 64, 8, [1, 2]),
        ("train_llama.py", ["--parallel", "fsdp", "--compile"], _llama, 64, 8, [1, 2]),
        ("train_llama.py", ["--parallel", "tp"], _llama, 64, 8, [1]),
    ],
    ids=["ddp_mingpt", "fsdp_llama", "fsdp_llama_compiled", "tp_llama"],
)
def test_example_trains_like_cpu(script, args, make_model, block, batch_size, seeds):
    losses, out = _run(script, *args)
    if "--compile" in args:  # the blocks ran as compiled graphs, not eagerly
        assert int(re.search(r"graph compiles (\d+)", out).group(1)) > 0, out
    expected = _cpu_first_loss(make_model, block, batch_size, seeds)
    assert abs(losses[0] - expected) < 2e-4, (losses, expected)
    assert losses[-1] < losses[0], losses
