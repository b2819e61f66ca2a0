"""torch.distributed with the "tpu" backend (collectives, DDP, FSDP2, tensor parallelism,
distributed checkpoints), in child processes (a process group needs a fresh device count and
owns process-wide state): ranks as threads over four CPU-plugin devices, whose collectives
run as PJRT programs, and ranks as torchrun processes, whose collectives go through gloo. `dist_worker.py` holds the checks; each rank compares with CPU
and prints `ok` once all its checks pass."""

import os
import re
import subprocess
import sys

import pytest
import torch

WORKER = os.path.join(os.path.dirname(__file__), "dist_worker.py")
CHECKS = ["collectives", "errors", "ddp", "mixed", "fsdp", "tensor_parallel", "sharded_load"]


def _run(cmd: list[str], devices: int, check: str, ranks: int, tmp: str) -> None:
    env = dict(
        os.environ, TPURS_CPU_DEVICES=str(devices), TPURS_FALLBACK="error", OMP_NUM_THREADS="1", TPURS_TEST_DIR=tmp
    )
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    # Lines of concurrent ranks can interleave, so count the marks, not the lines.
    oks = sorted(int(r) for r in re.findall(rf"ok {check} rank (\d+)", proc.stdout))
    assert oks == list(range(ranks)), out[-6000:]


@pytest.mark.parametrize("check", CHECKS)
def test_threads_over_devices(check, tmp_path):
    _run([sys.executable, WORKER, "spawn", "4", check], devices=4, check=check, ranks=4, tmp=str(tmp_path))


@pytest.mark.parametrize("check", CHECKS)
def test_torchrun_processes(check, tmp_path):
    _run([*_torchrun(2), WORKER, check], devices=2, check=check, ranks=2, tmp=str(tmp_path))


def test_torchrun_four_processes(tmp_path):
    _run([*_torchrun(4), WORKER, "collectives"], devices=4, check="collectives", ranks=4, tmp=str(tmp_path))


def _torchrun(processes: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"]


def test_load_safetensors_into_plain_module_and_bad_input(tmp_path):
    """Without a process group, plain parameters are read whole; mismatched names, shapes and
    paths raise Python exceptions."""
    from safetensors.torch import save_file
    from tpurs.distributed import load_safetensors

    source = torch.nn.Linear(4, 3)
    path = str(tmp_path / "model.safetensors")
    save_file(source.state_dict(), path)
    target = torch.nn.Linear(4, 3).to("tpu")
    report = load_safetensors(target, path)
    for name, value in source.state_dict().items():
        assert torch.equal(target.state_dict()[name].cpu(), value)
    assert report.bytes_read == report.checkpoint_bytes == (12 + 3) * 4 and report.tensors == 2

    with pytest.raises(KeyError, match="missing"):
        load_safetensors(torch.nn.Sequential(torch.nn.Linear(4, 3)).to("tpu"), path)
    with pytest.raises(ValueError, match="in the checkpoint"):
        load_safetensors(torch.nn.Linear(5, 3).to("tpu"), path)
    (tmp_path / "empty").mkdir()
    for missing in ("empty", "absent.safetensors"):
        with pytest.raises(FileNotFoundError):
            load_safetensors(target, str(tmp_path / missing))
