"""torch.profiler on tpu: programs (with the ops they fused), compiles and copies appear in
key_averages() with device time and in the Chrome trace."""

from __future__ import annotations

import json
import sys

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


def _device_names(p) -> set[str]:
    return {e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1}


def _compile_and_run(rows: int) -> None:
    # A shape no other test uses compiles a program of its own (a "compile" span).
    x = torch.randn(rows, 3).to("tpu")
    (x * 2.5 + 1).sum().item()


@pytest.mark.parametrize(
    ("levels", "device", "host"),
    [({}, True, True), ({"host_tracer_level": 0}, True, False), ({"device_tracer_level": 0}, False, True)],
)
def test_tpu_profiler_config_levels_choose_what_is_recorded(levels, device, host):
    from torch.tpu.profiler import TpuProfilerConfig  # TorchTPU's import path

    rows = 101 + 2 * len(levels) + ("host_tracer_level" in levels)
    with profile(activities=DEVICE_ACTIVITIES, experimental_config=TpuProfilerConfig(**levels)) as p:
        _compile_and_run(rows)
    names = {e.name for e in p.events()}
    assert ("fused 3 ops" in names and "copy host to device" in names) == device
    assert bool(names & {"compile", "load compiled program"}) == host
    assert bool(_device_names(p)) == device


def test_run_dir_gets_a_chrome_trace_of_the_device_spans(tmp_path):
    run_dir = tmp_path / "run"
    config = torch.tpu.profiler.TpuProfilerConfig(run_dir=run_dir)
    with profile(activities=DEVICE_ACTIVITIES, experimental_config=config) as p:
        _compile_and_run(97)
    (path,) = run_dir.glob("tpurs.*.trace.json")
    events = json.loads(path.read_text())["traceEvents"]
    kernel = next(e for e in events if e["cat"] == "kernel")
    assert kernel["name"] == "fused 3 ops" and kernel["args"]["detail"] == "mul.Tensor, add.Tensor, sum"
    assert kernel["dur"] > 0
    upload = next(e for e in events if e["name"] == "copy host to device")
    assert upload["args"]["bytes"] == 97 * 3 * 4
    # The same spans as in torch's own trace (which shifts the clock), with the same lengths.
    ours = {(e["name"], round(e["dur"])) for e in events}
    torch_trace = {(e["name"], round(e["dur"])) for e in _trace(p, tmp_path) if e.get("cat") == "kernel"}
    assert torch_trace and torch_trace <= ours


def test_run_dir_defaults_to_torch_tpu_profiler_output_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_TPU_PROFILER_OUTPUT_DIR", str(tmp_path))
    config = torch.tpu.profiler.TpuProfilerConfig()
    assert config.run_dir == tmp_path
    with profile(activities=DEVICE_ACTIVITIES, experimental_config=config):
        _compile_and_run(7)
    assert len(list(tmp_path.glob("tpurs.*.trace.json"))) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"python_tracer_level": 1}, "with_stack=True"),
        ({"device_tracer_level": 2}, "device_tracer_level must be an int from 0 to 1"),
        ({"host_tracer_level": -1}, "host_tracer_level must be an int from 0 to 3"),
        ({"experimental_options": {"run_dir": "x"}}, "cannot clash with stable option"),
        ({"experimental_options": {"a:b": 1}}, "cannot contain"),
        ({"experimental_options": {"enable_hlo_proto": True}}, "unknown experimental option"),
        ({"run_dir": "a,b"}, "cannot contain ','"),
    ],
)
def test_tpu_profiler_config_refuses_what_it_cannot_honour(kwargs, message):
    with pytest.raises(ValueError, match=message):
        torch.tpu.profiler.TpuProfilerConfig(**kwargs)


def test_unchecked_experimental_options_are_accepted():
    config = torch.tpu.profiler.TpuProfilerConfig(
        experimental_options={"enable_hlo_proto": True}, check_experimental_options=False
    )
    assert isinstance(config, torch.profiler._ExperimentalConfig)


def test_torch_tpu_submodules_import_by_name():
    from torch.tpu.memory import memory_allocated
    from torch.tpu.ops import ragged_dot

    assert memory_allocated is torch.tpu.memory_allocated and callable(ragged_dot)


def test_a_mingpt_training_step_shows_its_programs_and_compiles(tmp_path, monkeypatch):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "mingpt" / "model.py"
    spec = importlib.util.spec_from_file_location("example_mingpt_model", path)
    mingpt = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mingpt)  # its dataclass looks itself up there
    spec.loader.exec_module(mingpt)
    torch.manual_seed(0)
    # A width no other test uses, so the step compiles programs of its own.
    cfg = mingpt.GPTConfig(vocab_size=40, block_size=16, n_layer=1, n_head=2, n_embd=38, dropout=0.0)
    model = mingpt.GPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.block_size), device="tpu")
    with profile(activities=DEVICE_ACTIVITIES) as p:
        _, loss = model(idx, idx)
        loss.backward()
        opt.step()
        loss.item()
    events = _trace(p, tmp_path)
    programs = [e for e in events if e.get("cat") == "kernel"]
    compiles = [e for e in events if e.get("cat") == "privateuse1_runtime"]  # or loads from the disk cache
    fused_ops = ",".join(e["args"].get("ops", "") for e in programs)
    assert programs and compiles
    assert "embedding" in fused_ops and "native_layer_norm" in fused_ops and "mm" in fused_ops
