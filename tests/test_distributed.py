"""torch.distributed with the "tpu" backend, in child processes (a process group needs a
fresh device count and owns process-wide state): ranks as threads over four CPU-plugin
devices, whose collectives run as PJRT programs, and ranks as torchrun processes, whose
collectives go through gloo. `dist_worker.py` holds the checks; each rank compares with CPU
and prints `ok` once all its checks pass."""

import os
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(__file__), "dist_worker.py")
CHECKS = ["collectives", "errors", "ddp"]


def _run(cmd: list[str], devices: int, check: str, ranks: int) -> None:
    env = dict(os.environ, TPURS_CPU_DEVICES=str(devices), TPURS_FALLBACK="error", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    oks = {line for line in proc.stdout.splitlines() if line.startswith(f"ok {check} rank ")}
    assert oks == {f"ok {check} rank {r}" for r in range(ranks)}, out[-6000:]


@pytest.mark.parametrize("check", CHECKS)
def test_threads_over_devices(check):
    _run([sys.executable, WORKER, "spawn", "4", check], devices=4, check=check, ranks=4)


@pytest.mark.parametrize("check", CHECKS)
def test_torchrun_processes(check):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    _run([*torchrun, WORKER, check], devices=2, check=check, ranks=2)
