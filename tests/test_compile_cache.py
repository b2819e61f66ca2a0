"""The on-disk compile cache (tiers 2 and 3): a second process starts warm, corrupt or
truncated entries are recompiled instead of loaded, concurrent writers leave a valid cache.
Each case runs fresh Python processes against its own cache directories."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import json, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to("tpu")
x = torch.randn(4, 8).to("tpu")
out = torch.compile(model)(x)
eager = (x * 2 + 1).sum()
values = {"out": out.cpu().tolist(), "eager": eager.item()}
m = torch.tpu.metrics()
values["metrics"] = {k: v for k, v in m.items() if isinstance(v, (int, float))}
print(json.dumps(values))
"""


def run(tier3, tier2=None):
    env = dict(os.environ, TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=str(tier3), TPURS_FALLBACK="error")
    env.pop("TORCH_TPU_TIER2_COMPILATION_CACHE", None)
    if tier2 is not None:
        env["TORCH_TPU_TIER2_COMPILATION_CACHE"] = str(tier2)
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def result(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def entries(root: Path):
    return sorted(p for p in root.rglob("*.bin"))


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    root = tmp_path_factory.mktemp("tier3")
    first, _ = result(run(root))
    return root, first


def test_second_process_starts_warm(cold):
    root, first = cold
    assert first["metrics"]["compiles"] > 0
    assert len(entries(root)) == first["metrics"]["compiles"]
    second, _ = result(run(root))
    assert second["metrics"]["compiles"] == 0
    assert second["metrics"]["tier3_hits"] == first["metrics"]["compiles"] + first["metrics"]["tier3_hits"]
    assert second["out"] == first["out"] and second["eager"] == first["eager"]


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_entries_are_recompiled_not_loaded(cold, tmp_path, damage):
    root, first = cold
    copy = tmp_path / "tier3"
    for path in entries(root):
        target = copy / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = bytearray(path.read_bytes())
        if damage == "flip":
            for i in range(len(data) // 2, len(data), 97):
                data[i] ^= 0x5A
        else:
            data = data[: len(data) // 2]
        target.write_bytes(bytes(data))
    damaged, err = result(run(copy))
    n = len(entries(root))
    assert damaged["metrics"]["cache_rejected"] == n
    assert damaged["metrics"]["compiles"] == n
    assert "recompiling" in err
    assert damaged["out"] == first["out"] and damaged["eager"] == first["eager"]
    # The rewritten entries load cleanly.
    again, _ = result(run(copy))
    assert again["metrics"]["compiles"] == 0 and again["metrics"]["cache_rejected"] == 0


def test_concurrent_writers_leave_a_valid_cache(tmp_path):
    tier2, tier3 = tmp_path / "shm", tmp_path / "tier3"
    procs = [run(tier3, tier2) for _ in range(2)]
    outs = [result(p)[0] for p in procs]
    assert outs[0]["out"] == outs[1]["out"]
    # Each program was compiled once between the two processes: the lock made one wait.
    assert outs[0]["metrics"]["compiles"] + outs[1]["metrics"]["compiles"] == len(entries(tier3))
    third, _ = result(run(tier3, tier2))
    assert third["metrics"]["compiles"] == 0
    assert third["metrics"]["cache_rejected"] == 0
    assert third["metrics"]["tier2_hits"] == len(entries(tier2)) > 0
