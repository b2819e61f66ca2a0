"""torch.profiler on tpu: programs (with the ops they fused), compiles and copies appear in
key_averages() with device time and in the Chrome trace."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import no_fallback
from torch.profiler import ProfilerActivity, profile

DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


@pytest.fixture(autouse=True)
def _native_only():
    with no_fallback():
        yield


def _trace(p, tmp_path) -> list[dict]:
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    return json.loads(path.read_text())["traceEvents"]


def test_programs_compiles_and_copies_are_recorded(tmp_path):
    lin = torch.nn.Linear(24, 40).to("tpu")
    x = torch.randn(8, 24)
    with profile(activities=DEVICE_ACTIVITIES) as p:
        y = lin(x.to("tpu")).relu().sum()
        y.backward()
        value = y.item()
    assert value == value  # the step ran
    events = _trace(p, tmp_path)
    programs = [e for e in events if e.get("cat") == "kernel"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    compiles = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    assert programs and all(e["dur"] > 0 for e in programs)
    # The fused program lists its ops (in strict eager each program is one op, named).
    ops = ",".join(e["args"].get("ops", e["name"]) for e in programs)
    assert "addmm" in ops and "threshold_backward" in ops
    assert {e["name"] for e in copies} >= {"copy host to device", "copy device to host"}
    up = next(e for e in copies if e["name"] == "copy host to device")
    assert int(up["args"]["bytes"]) == 8 * 24 * 4  # a quoted number before torch 2.15
    assert any(e["name"] in ("compile", "load compiled program") for e in compiles)

    table = p.key_averages()
    device_rows = [r for r in table if r.self_device_time_total > 0]
    assert device_rows, "device time is reported"
    assert any(r.key == "copy device to host" for r in device_rows)


def test_strict_eager_names_each_program_by_its_op(tmp_path):
    previous = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_NEVER")
    try:
        a = torch.randn(16, 16, device="tpu")
        with profile(activities=DEVICE_ACTIVITIES) as p:
            (a @ a).tanh().cpu()
    finally:
        torch.tpu.set_eager_mode(previous)
    names = {e["name"] for e in _trace(p, tmp_path) if e.get("cat") == "kernel"}
    assert {"mm", "tanh"} <= names


def test_a_cpu_only_profile_records_no_device_spans(tmp_path):
    a = torch.randn(16, 16, device="tpu")
    with profile(activities=[ProfilerActivity.CPU]) as p:
        (a @ a).cpu()
    events = _trace(p, tmp_path)
    assert not [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    assert any(e["name"] == "aten::mm" for e in events)
