"""What tools/pytorch_tests.py and tools/transformers_tests.py share: the conftest that
samples a test file (1 test in N by a CRC32 of the test id), limits each test (SIGALRM) and
logs each test's start and outcome, and the loop that runs a file in pytest processes until
every sampled test is logged, restarting after a test aborts the process (that test counts as
"crashed")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

# Appended to each tool's own conftest shims; its settings come from TPURS_TEST_* variables.
CONFTEST = r"""
import json, os, re, signal, zlib

import pytest

SAMPLE = int(os.environ.get("TPURS_TEST_SAMPLE", "1"))
# A CPU control run of PyTorch's device tests samples by the tpu test's id, so that both runs
# keep the same tests.
AS_TPU = os.environ.get("TPURS_TEST_SAMPLE_AS_TPU") == "1"
LIMIT = int(os.environ.get("TPURS_TEST_TIMEOUT", "60"))
LOG = os.environ.get("TPURS_TEST_LOG")
DONE = set()
if LOG and os.path.exists(LOG):
    DONE = {json.loads(line)["id"] for line in open(LOG) if line.strip()}


def _log(**entry):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


# `f.py::TestXCPU::test_y_cpu_float32` -> `f.py::TestXPRIVATEUSE1::test_y_tpu_float32` and
# `f.py::TestXTPU::test_y_tpu_float32`: torch names most device classes of the tpu run
# `...PRIVATEUSE1`, some `...TPU`, so a control run keeps a test if either name is sampled.
def tpu_twins(nodeid):
    path, cls, name = nodeid.split("::", 2)
    cls = re.sub(r"CPU$", "", cls)
    cut = [m.start() for m in re.finditer(r"_cpu(?=_|$)", name)]
    if cut:
        name = name[: cut[-1]] + "_tpu" + name[cut[-1] + 4 :]
    return [f"{path}::{cls}{suffix}::{name}" for suffix in ("PRIVATEUSE1", "TPU")]


def sample_keys(nodeid):
    return tpu_twins(nodeid) if AS_TPU and nodeid.count("::") >= 2 else [nodeid]


# The id a test is logged under.
def sample_key(nodeid):
    return sample_keys(nodeid)[0]


def pytest_collection_modifyitems(config, items):
    keep = [
        i for i in items
        if any(zlib.crc32(k.encode()) % SAMPLE == 0 for k in sample_keys(i.nodeid)) and sample_key(i.nodeid) not in DONE
    ]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout(f"test ran over {LIMIT} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if LOG:
        with open(LOG + ".start", "w") as f:
            f.write(sample_key(item.nodeid))
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_outcome = {}


def pytest_runtest_logreport(report):
    msg = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash else str(report.longrepr)
        msg = msg.strip().split("\n")[0][:300]
        state = "failed" if report.when == "call" else "error"
        if "TestTimeout" in msg or "ran over" in msg:
            state = "timeout"
        _outcome.setdefault(report.nodeid, (state, msg))
    elif report.skipped:
        _outcome.setdefault(report.nodeid, ("skipped", ""))
    elif report.when == "call":
        _outcome.setdefault(report.nodeid, ("passed", ""))
    if report.when == "teardown":
        state, msg = _outcome.pop(report.nodeid, ("passed", ""))
        _log(id=sample_key(report.nodeid), outcome=state, msg=msg)
"""


def run_file(testdir: Path, target: str, env: dict, sample: int, limit: int, wall: int, log: Path) -> None:
    """Runs test file `target` with `env` added until every sampled test is logged
    (restarting after aborts) or `wall` seconds pass."""
    log.unlink(missing_ok=True)
    start_file = Path(str(log) + ".start")
    env = dict(os.environ, **env, TPURS_TEST_SAMPLE=str(sample), TPURS_TEST_TIMEOUT=str(limit), TPURS_TEST_LOG=str(log))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target]
    cmd += ["-o", f"faulthandler_timeout={limit * 3}", "--tb=no", "-rN"]
    deadline = time.monotonic() + wall
    while time.monotonic() < deadline:
        start_file.unlink(missing_ok=True)
        try:
            rc = subprocess.run(
                cmd,
                cwd=testdir,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=max(1, deadline - time.monotonic()),
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "wall"
        done = {json.loads(line)["id"] for line in log.open()} if log.exists() else set()
        last = start_file.read_text() if start_file.exists() else None
        if last is None or last in done:
            if rc == "wall":
                print(f"  {target}: stopped at the wall limit ({wall} s)", file=sys.stderr)
            return  # finished (or never started a test: collection error)
        with log.open("a") as f:
            state = "timeout" if rc == "wall" else "crashed"
            f.write(json.dumps(dict(id=last, outcome=state, msg=f"process ended, rc={rc}")) + "\n")
        print(f"  {target}: {state} in {last} (rc={rc})", file=sys.stderr)
        if rc == "wall":
            return
