"""Runs PyTorch's OpInfo database against the tpu device and writes a pass-rate report.

Each OpInfo's sample inputs (float32 by default) run on the CPU and, copied, on the tpu
device with TPURS_FALLBACK=error (so an op without a lowering counts as a failure, not a
silent CPU run). A sample passes when every output matches CPU in dtype, shape and value,
after the sample's own `output_process_fn_grad` (as PyTorch's `test_compare_cpu` does: it
fixes the sign of eigenvectors and the like). An op passes when all its samples pass.

Two kinds of entry are counted apart:
- not applicable: the CPU refuses every sample (nothing to compare), left out of the rate;
- random or undefined values: the CPU's own output changes with the RNG seed (also where
  the entry reseeds the generator itself), or PyTorch skips the entry's `test_compare_cpu`
  (uninitialized memory, dropout): dtype and shape must
  match CPU and, where the values come from the RNG, two device runs under one seed must agree.

`--grad` compares, for every differentiable entry, the gradients of the inputs for the same
random cotangents instead of the outputs; `--dtype` picks the dtype swept.

    .venv/bin/pip install expecttest   # needed by torch.testing._internal
    TPURS_FALLBACK=error .venv/bin/python tools/opinfo_report.py --out docs/opinfo-report.md
    TPURS_FALLBACK=error .venv/bin/python tools/opinfo_report.py --grad --out docs/opinfo-grad-report.md
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

# (atol, rtol): 1e-4 for full precision; torch.testing's own defaults for the half types,
# where one rounding step of the last bit is already 0.4% (bfloat16) or 0.05% (half).
TOLERANCE = {torch.bfloat16: (1e-5, 1.6e-2), torch.float16: (1e-5, 1e-3)}


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
                torch.testing.assert_close(a.cpu(), e.cpu(), atol=atol, rtol=rtol, equal_nan=True)
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


def reseeds_to_random_values(fn, atol: float, rtol: float) -> bool:
    """Whether `fn`'s values change with the seed once it cannot reseed the generator itself:
    OpInfo wraps alpha dropout in `wrapper_set_seed`, which seeds 42 and restores the state,
    so its CPU values repeat while they come from the RNG (another generator, the device's
    as CUDA's, gives other values)."""
    manual_seed = torch.manual_seed
    outs = []
    try:
        torch.manual_seed = lambda seed: torch.random.default_generator
        for seed in (0, 1):
            manual_seed(seed)
            outs.append(fn())
    finally:
        torch.manual_seed = manual_seed
    return compare(outs[1], outs[0], atol=atol, rtol=rtol) == "values"


def leaves_to(tree, device):
    """Copies of every tensor of `tree` on `device`, detached, keeping `requires_grad`."""

    def move(x):
        if not isinstance(x, torch.Tensor):
            return x
        y = x.detach().to(device, copy=True)
        return y.requires_grad_(x.requires_grad)

    return pytree.tree_map(move, tree)


def make_call(op, sample, device: str, grad: bool):
    """A fresh run of the sample on `device`: the outputs, or with `grad` the gradients of
    the inputs for fixed random cotangents (None where an input gets none)."""
    args = (sample.input, *sample.args)

    def call():
        a, kw = leaves_to((args, sample.kwargs), device)
        out = sample.output_process_fn_grad(op(*a, **kw))
        if not grad:
            return out
        outs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.requires_grad]
        ins = [t for t in pytree.tree_leaves((a, kw)) if isinstance(t, torch.Tensor) and t.requires_grad]
        if not outs or not ins:
            raise NoGradient
        gen = torch.Generator().manual_seed(1)
        # Each cotangent lives where its output does (`Tensor.to` samples move across).
        cots = [torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device) for t in outs]
        return torch.autograd.grad(outs, ins, cots, allow_unused=True)

    return call


class NoGradient(Exception):
    """The sample has no differentiable output or input."""


def run_op(op, dtype, max_samples: int, grad: bool = False) -> tuple[str, str]:
    """("pass" | "random" | "fail" | "n/a", why) for one OpInfo entry."""
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))[:max_samples]
    except Exception as e:  # noqa: BLE001 (sample generation failures are reported)
        return "fail", f"sample inputs: {type(e).__name__}"
    undefined = values_undefined(op, dtype)
    compared = 0
    random_values = False
    for s in samples:
        cpu_call = make_call(op, s, "cpu", grad)
        try:
            expected = seeded(cpu_call, 0)
        except Exception:  # noqa: BLE001 (CPU refuses the sample, or it has no gradient: skip it)
            continue
        compared += 1
        dev_call = make_call(op, s, "tpu", grad)
        try:
            actual = seeded(dev_call, 0)
        except NotImplementedError as e:
            msg = str(e).split("\n")[0].split(". ")[0][:160]
            return "fail", "no lowering: " + msg.replace("tpurs has no lowering for ", "").split(" and ")[0]
        except Exception as e:  # noqa: BLE001
            return "fail", f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
        atol, rtol = TOLERANCE.get(dtype, (1e-4, 1e-4))
        why = compare(actual, expected, atol=atol, rtol=rtol)
        if why != "values":
            if why:
                return "fail", "mismatch: " + why
            continue
        seed_dependent = compare(seeded(cpu_call, 1), expected, atol=atol, rtol=rtol) == "values"
        seed_dependent = seed_dependent or reseeds_to_random_values(cpu_call, atol, rtol)
        if not (undefined or seed_dependent):
            return "fail", "mismatch: values"
        # Values drawn from the RNG (the CPU repeats them under one seed) must repeat on the
        # device too; uninitialized memory need not.
        from_rng = not undefined and seed_dependent
        from_rng = from_rng and compare(seeded(cpu_call, 0), expected, atol=0, rtol=0) is None
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
    p.add_argument("--filter", default="", help="only entries whose name contains this")
    p.add_argument("--entries", default="", help="only these entries (comma-separated names)")
    p.add_argument("--grad", action="store_true", help="compare input gradients (differentiable entries)")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    results = {}
    t0 = time.time()
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if args.filter and args.filter not in name:
            continue
        if args.entries and name not in args.entries.split(","):
            continue
        if dtype not in op.supported_dtypes("cpu"):
            continue
        if args.grad and (not op.supports_autograd or dtype not in op.supported_backward_dtypes("cpu")):
            continue
        try:
            results[name] = run_op(op, dtype, args.max_samples, args.grad)
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
        f"# OpInfo pass rate on the tpu device{' (gradients)' if args.grad else ''}",
        "",
        f"Generated by `tools/opinfo_report.py{' --grad' if args.grad else ''}` (torch {torch.__version__}, dtype {args.dtype}, "
        f"up to {args.max_samples} samples per op, TPURS_FALLBACK=error, platform {torch.tpu.platform()}), "
        f"{time.time() - t0:.0f} s.",
        "",
        f"**{passed} of {total} OpInfo entries pass ({100.0 * passed / max(total, 1):.1f}%).**",
        "",
        "An entry passes when every sample the CPU accepts gives the same dtype, shape and values",
        f"(atol, rtol = {TOLERANCE.get(dtype, (1e-4, 1e-4))}) on the device, "
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
