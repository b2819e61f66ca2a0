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


def run(tier3, tier2=None, **extra_env):
    env = dict(os.environ, TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=str(tier3), TPURS_FALLBACK="error", **extra_env)
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


def test_other_plugin_flags_do_not_load_programs_compiled_without_them(cold, tmp_path):
    root, first = cold
    copy = tmp_path / "tier3"
    for path in entries(root):
        target = copy / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    # XLA_FLAGS changes how the plugin compiles: the programs compiled without them are
    # not loaded, and the new ones go to a directory of their own.
    flagged, _ = result(run(copy, XLA_FLAGS="--xla_cpu_enable_fast_math=false"))
    assert flagged["metrics"]["tier3_hits"] == 0
    assert flagged["metrics"]["compiles"] == len(entries(root))
    assert len({p.parent for p in entries(copy)}) == 2
    assert flagged["out"] == first["out"] and flagged["eager"] == first["eager"]


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


MANY = r"""
import json, os, torch
torch.tpu.set_eager_mode("DEFER_NEVER")
first = int(os.environ["FIRST_N"])
for n in range(first, 9):
    (torch.arange(n, device="tpu", dtype=torch.float32) * 2).sum().item()
m = torch.tpu.metrics()
print(json.dumps({"compiles": m["compiles"], "tier3_hits": m["tier3_hits"]}))
"""


def run_many(tier3, first_n, max_bytes=None):
    env = dict(os.environ, TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=str(tier3), FIRST_N=str(first_n))
    env.pop("TORCH_TPU_TIER2_COMPILATION_CACHE", None)
    if max_bytes is not None:
        env["TPURS_COMPILATION_CACHE_MAX_BYTES"] = str(max_bytes)
    r = subprocess.run([sys.executable, "-c", MANY], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_cache_stays_within_its_budget_dropping_the_least_recently_used(tmp_path):
    unlimited = tmp_path / "unlimited"
    run_many(unlimited, 3)
    total = sum(p.stat().st_size for p in entries(unlimited))
    assert len(entries(unlimited)) >= 10

    budget = total // 2
    limited = tmp_path / "limited"
    stale = limited / "0123456789abcdef" / "old.bin"  # an entry of an older tpurs or plugin
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x" * (budget // 2))
    os.utime(stale, (1, 1))
    run_many(limited, 3, max_bytes=budget)
    assert not stale.exists(), "stale fingerprints go first"
    assert sum(p.stat().st_size for p in entries(limited)) <= budget
    assert 0 < len(entries(limited)) < len(entries(unlimited))
    # The newest programs (the last shape's) survived: a process that needs only them
    # loads everything from the cache.
    again = run_many(limited, 8, max_bytes=budget)
    assert again["compiles"] == 0 and again["tier3_hits"] > 0


BOUNDED = r"""
import json, torch
import tpurs._core as core

def mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)

def sweep():
    for n in range(1, 41):
        a = torch.arange(3 * n, dtype=torch.float32, device="tpu").reshape(n, 3)
        got = ((a * 2 + 1).sin().sum()).item()
        want = ((a.cpu() * 2 + 1).sin().sum()).item()
        assert abs(got - want) <= 1e-4 * max(1.0, abs(want)), (n, got, want)
    return mappings(), core.compile_cache_size()

first = sweep()
second = sweep()
print(json.dumps({"first": first, "second": second, "metrics": torch.tpu.metrics()["tier3_hits"]}))
"""


def test_the_in_memory_cache_is_bounded_and_releases_programs(tmp_path):
    # Each executable keeps its code mapped; an unbounded cache ran long processes into the
    # kernel's mapping limit ("Failed to materialize symbols"). With room for 8 programs of
    # each kind, a second sweep over 40 shapes reloads evicted programs from disk and the
    # process's mappings stay where the first sweep left them.
    env = dict(
        os.environ,
        TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=str(tmp_path),
        TPURS_FALLBACK="error",
        TPURS_MAX_CACHED_PROGRAMS="8",
    )
    proc = subprocess.run([sys.executable, "-c", BOUNDED], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    (maps1, size1), (maps2, size2) = out["first"], out["second"]
    assert size1 <= 16 and size2 <= 16
    assert out["metrics"] >= 40, "the second sweep loads evicted programs from tier 3"
    assert maps2 <= maps1 + 40, (maps1, maps2)
