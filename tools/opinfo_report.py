"""Runs PyTorch's OpInfo database against the tpu device and writes a pass-rate report.

Each OpInfo's sample inputs (float32 by default) run on the CPU and, copied, on the tpu
device with TPURS_FALLBACK=error (so an op without a lowering counts as a failure, not a
silent CPU run). A sample passes when every output matches CPU in dtype, shape and value,
after the sample's own `output_process_fn_grad` (as PyTorch's `test_compare_cpu` does: it
fixes the sign of eigenvectors and the like). An op passes when all its samples pass.

Two kinds of entry are counted apart:
- not applicable: the CPU refuses every sample (nothing to compare), left out of the rate;
- random or undefined values: the CPU's own output changes with the RNG seed, or PyTorch
  skips the entry's `test_compare_cpu` (uninitialized memory, dropout): dtype and shape must
  match CPU and, where the values come from the RNG, two device runs under one seed must agree.

    .venv/bin/pip install expecttest   # needed by torch.testing._internal
    TPURS_FALLBACK=error .venv/bin/python tools/opinfo_report.py --out docs/opinfo-report.md
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import traceback

os.environ.setdefault("TPURS_FALLBACK", "error")

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
from torch.testing._internal.opinfo.core import DecorateInfo  # noqa: E402


def to_tpu(tree):
    return pytree.tree_map(lambda x: x.detach().to("tpu") if isinstance(x, torch.Tensor) else x, tree)


def clone(tree):
    return pytree.tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)


def compare(actual, expected, atol, rtol) -> str | None:
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if a_spec != e_spec:
        return "structure"
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return "type"
            if a.dtype != e.dtype:
                return f"dtype {a.dtype} vs {e.dtype}"
            if a.shape != e.shape:
                return f"shape {tuple(a.shape)} vs {tuple(e.shape)}"
            try:
                torch.testing.assert_close(a.cpu(), e, atol=atol, rtol=rtol, equal_nan=True)
            except AssertionError:
                return "values"
        elif a != e and not (isinstance(e, float) and e != e):
            return "value"
    return None


def values_undefined(op, dtype) -> bool:
    """True when PyTorch itself skips comparing this entry's values with CPU."""
    for info in op.decorators:
        if isinstance(info, DecorateInfo) and info.test_name == "test_compare_cpu":
            if info.is_active("TestCommon", "test_compare_cpu", "tpu", dtype, {}):
                if any(getattr(d, "__qualname__", "").startswith("skip.") for d in info.decorators):
                    return True
    return False


def seeded(fn, seed: int):
    torch.manual_seed(seed)
    return fn()


def run_op(op, dtype, max_samples: int) -> tuple[str, str]:
    """("pass" | "random" | "fail" | "n/a", why) for one OpInfo entry."""
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:max_samples]
    except Exception as e:  # noqa: BLE001 (sample generation failures are reported)
        return "fail", f"sample inputs: {type(e).__name__}"
    undefined = values_undefined(op, dtype)
    compared = 0
    random_values = False
    for s in samples:
        args = (s.input, *s.args)
        # Each run gets fresh copies: in-place entries must not see an earlier run's writes.
        cpu_call = lambda: s.output_process_fn_grad(op(*clone(args), **clone(s.kwargs)))  # noqa: E731
        try:
            expected = seeded(cpu_call, 0)
        except Exception:  # noqa: BLE001 (CPU refuses the sample: skip it)
            continue
        compared += 1
        dev_call = lambda: s.output_process_fn_grad(op(*to_tpu(args), **to_tpu(s.kwargs)))  # noqa: E731
        try:
            actual = seeded(dev_call, 0)
        except NotImplementedError as e:
            msg = str(e).split("\n")[0]
            return "fail", "no lowering: " + msg.replace("tpurs has no lowering for ", "").split(" and ")[0]
        except Exception as e:  # noqa: BLE001
            return "fail", f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
        tol = 1e-3 if dtype in (torch.float16, torch.bfloat16) else 1e-4
        why = compare(actual, expected, atol=tol, rtol=tol)
        if why != "values":
            if why:
                return "fail", "mismatch: " + why
            continue
        seed_dependent = compare(seeded(cpu_call, 1), expected, atol=tol, rtol=tol) == "values"
        if not (undefined or seed_dependent):
            return "fail", "mismatch: values"
        # Values drawn from the RNG (the CPU repeats them under one seed) must repeat on the
        # device too; uninitialized memory need not.
        from_rng = seed_dependent and compare(seeded(cpu_call, 0), expected, atol=0, rtol=0) is None
        if from_rng and compare(seeded(dev_call, 0), actual, atol=0, rtol=0):
            return "fail", "mismatch: two device runs under one seed differ"
        random_values = True
    if compared == 0:
        return "n/a", "the CPU refuses every sample"
    return ("random", "") if random_values else ("pass", "")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="docs/opinfo-report.md")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--max-samples", type=int, default=8)
    p.add_argument("--filter", default="")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    results = {}
    t0 = time.time()
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if args.filter and args.filter not in name:
            continue
        if dtype not in op.supported_dtypes("cpu"):
            continue
        try:
            results[name] = run_op(op, dtype, args.max_samples)
        except Exception:  # noqa: BLE001
            results[name] = ("fail", "harness: " + traceback.format_exc().splitlines()[-1][:100])
        print(f"{results[name][0].upper()} {name} {results[name][1]}", flush=True)
    kinds = collections.Counter(kind for kind, _ in results.values())
    passed = kinds["pass"] + kinds["random"]
    total = len(results) - kinds["n/a"]
    failures = [r for kind, r in results.values() if kind == "fail"]
    reasons = collections.Counter(r.split(":")[0] for r in failures)
    missing = collections.Counter(r.split(": ", 1)[1] for r in failures if r.startswith("no lowering"))
    label = {"pass": "pass", "random": "pass (random or undefined values: dtype, shape, seed)"}
    lines = [
        "# OpInfo pass rate on the tpu device",
        "",
        f"Generated by `tools/opinfo_report.py` (torch {torch.__version__}, dtype {args.dtype}, "
        f"up to {args.max_samples} samples per op, TPURS_FALLBACK=error, platform {torch.tpu.platform()}), "
        f"{time.time() - t0:.0f} s.",
        "",
        f"**{passed} of {total} OpInfo entries pass ({100.0 * passed / max(total, 1):.1f}%).**",
        "",
        "An entry passes when every sample the CPU accepts gives the same dtype, shape and values",
        f"(atol = rtol = {'1e-3' if dtype in (torch.float16, torch.bfloat16) else '1e-4'}) on the device, "
        "after the sample's `output_process_fn_grad`",
        "as in PyTorch's `test_compare_cpu`; an op without a lowering fails.",
        f"Of the passes, {kinds['random']} have random or undefined values (the CPU's output changes with",
        "the seed, or PyTorch skips the entry's CPU comparison): dtype and shape match CPU and two",
        "device runs under one seed agree.",
        f"{kinds['n/a']} entries are not applicable (the CPU refuses every sample) and are not counted.",
        "",
        "## Failure kinds",
        "",
        *[f"- {k}: {v}" for k, v in reasons.most_common()],
        "",
        "## Most common missing lowerings",
        "",
        *[f"- `{k}`: {v} entries" for k, v in missing.most_common(40)],
        "",
        "## Per entry",
        "",
        "| entry | result |",
        "|---|---|",
        *[
            f"| {n} | {label.get(kind) or (kind + ': ' + r).replace('|', '/')} |"
            for n, (kind, r) in sorted(results.items())
        ],
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"{passed}/{total} passed; report written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
