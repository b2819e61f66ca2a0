"""Runs Hugging Face Transformers' own model tests on cpu and on tpu and compares the two.

The test files are not vendored: bring them from a Transformers source tree (see
docs/transformers-tests.md). Each model's test file runs twice, each time in its own pytest
process: once on "cpu" (the control, with TRANSFORMERS_TEST_DEVICE=cpu and tpurs not autoloaded)
and once on "tpu" (through a TRANSFORMERS_TEST_DEVICE_SPEC file, with TPURS_FALLBACK=error so an
op with no tpu lowering fails the test instead of running on CPU). A conftest.py written into the
test directory keeps a stable sample of the tests (1 in N by a CRC32 of the test id), puts a time
limit on each test (SIGALRM) and logs each test's outcome; when a test aborts the process, the
file is run again without the tests already done and the aborting test counts as "crashed".

    .venv/bin/python tools/transformers_tests.py /tmp/hf-tests llama gpt2 bert qwen3_moe \
        --sample 3 --out /tmp/hf-tests/results.json

The table counts the tests that pass on cpu and, of those, the ones that also pass on tpu; the
tpu-only failures follow, grouped by cause with their first error line.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

import harness

CONFTEST = (
    r"""
# Written by tpurs tools/transformers_tests.py: shims, then tools/harness.py's sampling,
# limits and log.
import transformers.testing_utils as testing_utils

# Model testers newer than 5.15 read these defaults from testing_utils; 5.25.0 dropped them.
if not hasattr(testing_utils, "_TEXT_MODEL_TESTER_DEFAULTS"):
    testing_utils._TEXT_MODEL_TESTER_DEFAULTS = dict(
        batch_size=13, seq_length=7, is_training=True, use_input_mask=True, use_labels=True,
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, intermediate_size=32, hidden_act="gelu",
        max_position_embeddings=512, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        expert_interval=1, moe_layer_start_index=0, moe_intermediate_size=16,
        shared_expert_intermediate_size=36, shared_expert_gate=True, moe_num_shared_experts=2,
        num_experts_per_tok=2, num_experts=8,
    )

"""
    + harness.CONFTEST
)

# Read by transformers.testing_utils (TRANSFORMERS_TEST_DEVICE_SPEC). DEVICE_NAME must be "tpu":
# test_modeling_common looks up eager/sdpa tolerances by device and maps "tpu" to the cuda rows.
DEVICE_SPEC = """\
import torch
import tpurs  # noqa: F401

DEVICE_NAME = "tpu"
MANUAL_SEED_FN = torch.tpu.manual_seed
EMPTY_CACHE_FN = torch.tpu.empty_cache
DEVICE_COUNT_FN = torch.tpu.device_count
"""
SPEC_NAME = "tpurs_device_spec.py"

DEVICES = {
    "cpu": {"TRANSFORMERS_TEST_DEVICE": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    "tpu": {
        "TRANSFORMERS_TEST_DEVICE": "tpu",
        "TRANSFORMERS_TEST_DEVICE_SPEC": SPEC_NAME,
        "TPURS_FALLBACK": "error",
    },
}


def cause(msg: str, outcome: str) -> str:
    """A short label for why a test failed on tpu."""
    if m := re.search(r"has no lowering for (aten::\S+)", msg):
        return f"no lowering: {m.group(1)}"
    if "cannot lower a compiled graph" in msg:
        return "torch.compile graph not lowered"
    if outcome in ("timeout", "crashed"):
        return outcome
    if re.search(r"not close|Mismatched elements|allclose|Max absolute difference", msg):
        return "numerical difference"
    return msg.split(":")[0] if ":" in msg else msg[:60]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("testdir", type=Path, help="folder holding Transformers' tests/ package")
    ap.add_argument("models", nargs="+", help="model folder names under tests/models")
    ap.add_argument("--sample", type=int, default=3, help="keep 1 test in N (default 3)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per test")
    ap.add_argument("--wall", type=int, default=1200, help="seconds per file and device")
    ap.add_argument("--out", type=Path, help="write every test's outcome and message as JSON")
    ap.add_argument("--report", action="store_true", help="only summarize the logs of an earlier run")
    args = ap.parse_args()

    (args.testdir / "conftest.py").write_text(CONFTEST)
    (args.testdir / SPEC_NAME).write_text(DEVICE_SPEC)
    results = {}
    rows = ["| model | sampled | pass on cpu | of those, pass on tpu | pass rate | skipped on cpu, pass on tpu |"]
    rows.append("|---|---|---|---|---|---|")
    failures = collections.defaultdict(list)
    for model in args.models:
        path = f"tests/models/{model}/test_modeling_{model}.py"
        per_device = {}
        for device in DEVICES:
            log = args.testdir / f".{model}.{device}.log.jsonl"
            t0 = time.monotonic()
            if not args.report:
                harness.run_file(args.testdir, path, DEVICES[device], args.sample, args.timeout, args.wall, log)
            entries = [json.loads(line) for line in log.open()] if log.exists() else []
            per_device[device] = {e["id"]: e for e in entries}
            print(f"  {model} [{device}]: {len(entries)} tests, {time.monotonic() - t0:.0f} s", file=sys.stderr)
        cpu, tpu = per_device["cpu"], per_device["tpu"]
        base = [i for i, e in cpu.items() if e["outcome"] == "passed"]
        ok = [i for i in base if tpu.get(i, {}).get("outcome") == "passed"]
        for i in base:
            if i not in ok:
                e = tpu.get(i, {"outcome": "missing", "msg": "not run on tpu"})
                failures[cause(e["msg"], e["outcome"])].append((model, i, e["outcome"], e["msg"]))
        extra = [i for i, e in cpu.items() if e["outcome"] == "skipped" and tpu.get(i, {}).get("outcome") == "passed"]
        rate = len(ok) / len(base) if base else 0.0
        rows.append(f"| {model} | {len(cpu)} | {len(base)} | {len(ok)} | {rate:.1%} | {len(extra)} |")
        print(rows[-1], file=sys.stderr)
        results[model] = {"sample": args.sample, "cpu": cpu, "tpu": tpu, "cpu_passed": len(base), "tpu_passed": len(ok)}
        if args.out:
            args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(rows))
    print("\ntpu-only failures by cause:")
    for label, items in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"\n{label} ({len(items)})")
        for model, test_id, outcome, msg in items:
            print(f"  [{model}] {test_id.split('::', 1)[-1]} ({outcome}): {msg[:200]}")


if __name__ == "__main__":
    main()
