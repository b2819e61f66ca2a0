"""Runs PyTorch's own device-generic test files on the tpu device and summarizes them per file.

The test files are not vendored: bring them from a PyTorch checkout (see docs/pytorch-tests.md).
Each file runs in its own pytest process with PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1 and
TPURS_FALLBACK=error (an op with no tpu lowering fails the test instead of running on CPU). A
conftest.py written into the test directory re-exports names that torch 2.15 renamed, keeps a
stable sample of the tests (1 in N by a hash of the test id), puts a time limit on each test
(SIGALRM), and logs each test's start and outcome; when a test aborts the process, the file is
run again without the tests already done and the aborting test counts as "crashed".

With `--control` each file also runs on the CPU (tpurs not loaded), on the same sample: a test
that fails on CPU PyTorch too (the files are older than the installed torch) is drift, not a tpu
failure, and the last columns count, of the tests that pass on cpu, those that pass on tpu.

    .venv/bin/python tools/pytorch_tests.py /tmp/pytorch-tests \
        test_view_ops test_unary_ufuncs:20 --out /tmp/pytorch-tests/results.json

`name:N` keeps 1 test in N of that file (`--sample N` sets the default).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness

CONFTEST = (
    r"""
# Written by tpurs tools/pytorch_tests.py: shims for renamed names, then tools/harness.py's
# sampling, limits and log.
import torch.testing._internal.common_cuda as common_cuda
import torch.testing._internal.common_methods_invocations as cmi
import torch.testing._internal.common_mkldnn as common_mkldnn
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
if not hasattr(common_mkldnn, "bf32_on_and_off"):
    common_mkldnn.bf32_on_and_off = lambda bf32_precision=1e-2: common_mkldnn.reduced_f32_on_and_off(bf32_precision)
"""
    + harness.CONFTEST
)

STATES = ("passed", "failed", "error", "timeout", "crashed", "skipped")


def rate(passed: int, ran: int) -> float:
    return passed / ran if ran else 0.0


def canonical(test_id: str) -> str:
    """A test id without its device class suffix (`TestXPRIVATEUSE1` and `TestXTPU` are one)."""
    return re.sub(r"(PRIVATEUSE1|TPU)::", "::", test_id)


def summarize(entries: list[dict], control: dict[str, str] | None) -> dict:
    counts = collections.Counter(e["outcome"] for e in entries)
    real = collections.Counter(e["outcome"] for e in entries if "complex" not in e["id"])
    ran = sum(counts[s] for s in STATES if s != "skipped")
    ran_real = sum(real[s] for s in STATES if s != "skipped")
    out = dict(
        counts={s: counts[s] for s in STATES},
        ran=ran,
        pass_rate=rate(counts["passed"], ran),
        ran_no_complex=ran_real,
        pass_rate_no_complex=rate(real["passed"], ran_real),
    )
    if control is not None:
        # Tests that pass on cpu; tests instantiated for tpu only (no cpu twin) are counted
        # with them when they ran.
        on_cpu = [control.get(canonical(e["id"]), "passed") for e in entries]
        base = [e for e, c in zip(entries, on_cpu) if c == "passed" and e["outcome"] != "skipped"]
        base_real = [e for e in base if "complex" not in e["id"]]
        out.update(
            cpu_passed=len(base),
            vs_cpu=rate(sum(e["outcome"] == "passed" for e in base), len(base)),
            vs_cpu_no_complex=rate(sum(e["outcome"] == "passed" for e in base_real), len(base_real)),
            drift=sorted(e["id"] for e, c in zip(entries, on_cpu) if c not in ("passed", "skipped")),
        )
    return out


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.open()] if log.exists() else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("testdir", type=Path, help="directory holding PyTorch's test_*.py files")
    ap.add_argument("files", nargs="+", help="test file names without .py, optionally name:N")
    ap.add_argument("--sample", type=int, default=1, help="keep 1 test in N (default 1: all)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per test")
    ap.add_argument("--wall", type=int, default=600, help="seconds per file")
    ap.add_argument("--out", type=Path, help="write every test's outcome and message as JSON")
    ap.add_argument("--control", action="store_true", help="also run each file on cpu; compare")
    ap.add_argument(
        "--require",
        type=float,
        help="with --control: exit 1 when a file's share of cpu-passing tests that pass on tpu "
        "is below this percentage",
    )
    args = ap.parse_args()
    if args.require is not None and not args.control:
        ap.error("--require compares with the cpu run: add --control")

    (args.testdir / "conftest.py").write_text(CONFTEST)
    results = {}
    header = "| file | sample | run | passed | failed | error | timeout | crashed | skipped |"
    header += " pass rate | pass rate w/o complex |"
    if args.control:
        header += " pass on cpu | of those, pass on tpu | same, w/o complex |"
    rows = [header, "|" + "---|" * header.count(" |")]
    for spec in args.files:
        name, _, n = spec.removesuffix(".py").partition(":")
        sample = int(n or args.sample)
        log = args.testdir / f".{name}.log.jsonl"
        t0 = time.monotonic()
        runs = [({"PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1", "TPURS_FALLBACK": "error"}, log)]
        if args.control:
            cpu_log = args.testdir / f".{name}.cpu.log.jsonl"
            env = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
            runs.append((dict(env, TPURS_TEST_SAMPLE_AS_TPU="1"), cpu_log))
        # The cpu control runs beside the tpu run: each is one pytest process, mostly busy
        # importing the file and collecting its tests.
        with ThreadPoolExecutor(len(runs)) as pool:
            jobs = [
                pool.submit(harness.run_file, args.testdir, f"{name}.py", env, sample, args.timeout, args.wall, out)
                for env, out in runs
            ]
            for job in jobs:
                job.result()
        entries = read_log(log)
        control = {canonical(e["id"]): e["outcome"] for e in read_log(cpu_log)} if args.control else None
        s = summarize(entries, control)
        s.update(sample=sample, seconds=round(time.monotonic() - t0), tests=entries)
        results[name] = s
        c = s["counts"]
        row = f"| {name} | 1/{sample} | {s['ran']} | " + " | ".join(str(c[k]) for k in STATES)
        row += f" | {s['pass_rate']:.1%} | {s['pass_rate_no_complex']:.1%} |"
        if control is not None:
            row += f" {s['cpu_passed']} | {s['vs_cpu']:.1%} | {s['vs_cpu_no_complex']:.1%} |"
        rows.append(row)
        print(f"{row}  ({s['seconds']} s)", file=sys.stderr)
        if args.out:
            args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(rows))
    if args.require is not None:
        below = [n for n, r in results.items() if 100 * r["vs_cpu"] < args.require]
        for name in below:
            r = results[name]
            failed = [
                e["id"] for e in r["tests"] if e["outcome"] not in ("passed", "skipped") and e["id"] not in r["drift"]
            ]
            print(f"{name}: below {args.require}% of cpu-passing tests; not passed: {failed}")
        if below:
            sys.exit(1)


if __name__ == "__main__":
    main()
