"""Runs PyTorch's own device-generic test files on the tpu device and summarizes them per file.

The test files are not vendored: bring them from a PyTorch checkout (see docs/pytorch-tests.md).
Each file runs in its own pytest process with PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1 and
TPURS_FALLBACK=error (an op with no tpu lowering fails the test instead of running on CPU). A
conftest.py written into the test directory re-exports names that torch 2.15 renamed, keeps a
stable sample of the tests (1 in N by a hash of the test id), puts a time limit on each test
(SIGALRM), and logs each test's start and outcome; when a test aborts the process, the file is
run again without the tests already done and the aborting test counts as "crashed".

    .venv/bin/python tools/pytorch_tests.py /tmp/pytorch-tests \
        test_view_ops test_unary_ufuncs:20 --out /tmp/pytorch-tests/results.json

`name:N` keeps 1 test in N of that file (`--sample N` sets the default).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import harness

CONFTEST = (
    r"""
# Written by tpurs tools/pytorch_tests.py: shims for renamed names, then tools/harness.py's
# sampling, limits and log.
import torch.testing._internal.common_cuda as common_cuda
import torch.testing._internal.common_methods_invocations as cmi
import torch.testing._internal.common_nn as common_nn
import torch.testing._internal.common_utils as common_utils

if not hasattr(common_utils, "skipIfMps"):
    common_utils.skipIfMps = common_utils.skipIfMPS
if not hasattr(cmi, "binary_ufuncs_and_refs"):
    cmi.binary_ufuncs_and_refs = cmi.binary_ufuncs
if not hasattr(common_cuda, "tf32_is_not_fp32"):
    common_cuda.tf32_is_not_fp32 = lambda: False
if not hasattr(common_nn, "new_module_tests"):
    common_nn.new_module_tests = []
"""
    + harness.CONFTEST
)

STATES = ("passed", "failed", "error", "timeout", "crashed", "skipped")


def summarize(entries: list[dict]) -> dict:
    counts = collections.Counter(e["outcome"] for e in entries)
    real = collections.Counter(e["outcome"] for e in entries if "complex" not in e["id"])
    ran = sum(counts[s] for s in STATES if s != "skipped")
    ran_real = sum(real[s] for s in STATES if s != "skipped")
    return dict(
        counts={s: counts[s] for s in STATES},
        ran=ran,
        pass_rate=counts["passed"] / ran if ran else 0.0,
        ran_no_complex=ran_real,
        pass_rate_no_complex=real["passed"] / ran_real if ran_real else 0.0,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("testdir", type=Path, help="directory holding PyTorch's test_*.py files")
    ap.add_argument("files", nargs="+", help="test file names without .py, optionally name:N")
    ap.add_argument("--sample", type=int, default=1, help="keep 1 test in N (default 1: all)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per test")
    ap.add_argument("--wall", type=int, default=600, help="seconds per file")
    ap.add_argument("--out", type=Path, help="write every test's outcome and message as JSON")
    args = ap.parse_args()

    (args.testdir / "conftest.py").write_text(CONFTEST)
    results = {}
    header = "| file | sample | run | passed | failed | error | timeout | crashed | skipped |"
    header += " pass rate | pass rate w/o complex |"
    rows = [header, "|" + "---|" * 11]
    for spec in args.files:
        name, _, n = spec.removesuffix(".py").partition(":")
        sample = int(n or args.sample)
        log = args.testdir / f".{name}.log.jsonl"
        t0 = time.monotonic()
        env = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1", "TPURS_FALLBACK": "error"}
        harness.run_file(args.testdir, f"{name}.py", env, sample, args.timeout, args.wall, log)
        entries = [json.loads(line) for line in log.open()] if log.exists() else []
        s = summarize(entries)
        s.update(sample=sample, seconds=round(time.monotonic() - t0), tests=entries)
        results[name] = s
        c = s["counts"]
        row = f"| {name} | 1/{sample} | {s['ran']} | " + " | ".join(str(c[k]) for k in STATES)
        row += f" | {s['pass_rate']:.1%} | {s['pass_rate_no_complex']:.1%} |"
        rows.append(row)
        print(f"{row}  ({s['seconds']} s)", file=sys.stderr)
        if args.out:
            args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
