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
