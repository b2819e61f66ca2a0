"""A quick subset of `tools/opinfo_report.py` (the full sweeps take minutes): entries from
each family of rules, forward and gradients, with the CPU fallback forbidden. The tool runs
in a subprocess because it sets TPURS_FALLBACK=error for its whole process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORWARD = [
    "add",
    "mul",
    "div.floor_rounding",
    "floor_divide",
    "exp2",
    "sort",
    "cumsum",
    "nn.functional.conv2d",
    "nn.functional.interpolate.bilinear",
    "nn.functional.cross_entropy",
    "linalg.svd",
    "linalg.eigh",
    "fft.fft",
    "fft.rfft2",
    "fft.irfftn",
    "fft.hfft",
    "stft",
    "view_as_complex",
    "polar",
    "cfloat",
    "special.bessel_j0",
    "special.i1e",
    "erfc",
    "igamma",
    "frexp",
    "bernoulli",
    "empty_like",
    "uniform",
]
GRADIENTS = [
    "mul",
    "nn.functional.conv_transpose2d",
    "nn.functional.layer_norm",
    "softmax",
    "fft.rfft",
    "fft.ifft",
    "special.i0e",
    "index_put",
    "nn.functional.embedding",
]


def run_report(tmp_path, entries, *flags):
    out = tmp_path / "report.md"
    env = dict(os.environ, TPURS_FALLBACK="error")
    cmd = [sys.executable, "tools/opinfo_report.py", "--entries", ",".join(entries), "--out", str(out), *flags]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, out.read_text()


@pytest.mark.parametrize("flags", [(), ("--grad",)], ids=["forward", "gradients"])
def test_opinfo_subset_passes(tmp_path, flags):
    entries = GRADIENTS if flags else FORWARD
    log, report = run_report(tmp_path, entries, *flags)
    failures = [line for line in log.splitlines() if line.startswith("FAIL")]
    assert not failures, failures
    assert f"**{len(entries)} of {len(entries)} OpInfo entries pass" in report, log
