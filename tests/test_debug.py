"""The numerics debugger: every op checked against the CPU, the first wrong one named with
the line that called it, in eager and compiled mode and for a whole script."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from helpers import no_fallback
from tpurs import compile as tpu_compile


@pytest.fixture(autouse=True)
def _native_only():
    # The device side must be tpurs' own lowerings, or the debugger compares CPU with CPU.
    with no_fallback():
        yield


def _model_step(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    loss = torch.softmax(model(x).sin(), dim=-1).square().mean()
    loss.backward()
    return loss


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Dropout(0.5), torch.nn.Linear(16, 4))


@contextlib.contextmanager
def _wrong_sin_kernel():
    """The tpu kernel of `sin` replaced by one that computes cos."""
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("sin", lambda t: torch.cos(t), "PrivateUse1")
    try:
        yield
    finally:
        lib._destroy()


def test_a_correct_training_step_agrees_with_the_cpu():
    model, x = _model().to("tpu"), torch.randn(4, 8, device="tpu")
    report = torch.tpu.debug.compare(_model_step, model, x)
    assert report.ok, str(report)
    assert report.ops_checked > 20  # forward and backward, dropout's draw not among them
    assert "agree" in str(report)
    assert model[0].weight.grad is not None and report.result.device.type == "tpu"


def test_a_wrong_kernel_is_named_with_its_source_line():
    model, x = _model().to("tpu"), torch.randn(4, 8, device="tpu")
    with _wrong_sin_kernel():
        report = torch.tpu.debug.compare(_model_step, model, x)
    assert not report.ok
    first = report.first
    assert first.op == "aten::sin"
    # Every op is fed the device's own inputs, so the error does not spread downstream.
    assert {d.op for d in report.divergences} == {"aten::sin"}
    assert "test_debug.py" in first.stack and "_model_step" in first.stack
    assert first.mismatched > 0 and len(first.worst) == 3 and first.shapes == [(4, 4)]
    assert "aten::sin" in str(report)


def test_compiled_graphs_are_checked_node_by_node(monkeypatch):
    model, x = _model().to("tpu"), torch.randn(4, 8, device="tpu")
    report = torch.tpu.debug.compare(_model_step, model, x, compiled=True)
    assert report.ok, str(report)
    assert report.ops_checked > 10

    # A wrong lowering inside the program: the compiled graph computes cos where the
    # traced graph says sin.
    compile_graph = tpu_compile._compile_graph

    def miscompile(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.target is torch.ops.aten.sin.default:
                node.target = torch.ops.aten.cos.default
        gm.recompile()
        return compile_graph(gm, example_inputs)

    monkeypatch.setattr(tpu_compile, "_compile_graph", miscompile)
    torch._dynamo.reset()
    report = torch.tpu.debug.compare(_model_step, model, x, compiled=True)
    assert not report.ok
    assert report.first.op.startswith("aten.sin.default")
    assert "sin()" in report.first.stack  # the source line Dynamo recorded


SCRIPT = textwrap.dedent(
    """
    import torch
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("sin", lambda t: torch.cos(t), "PrivateUse1")
    x = torch.randn(16, device="tpu")
    y = (x * 2).sin().exp()
    print("ran", y.shape)
    """
)


@pytest.mark.parametrize("setting", ["1", "raise"])
def test_whole_script_checking(setting):
    env = dict(os.environ, TPURS_DEBUG_COMPARE=setting, TPURS_FALLBACK="error")
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    if setting == "1":
        assert r.returncode == 0, r.stderr
        assert "ran" in r.stdout and "1 of 3 ops differ" in r.stdout and "aten::sin" in r.stdout
    else:
        assert r.returncode != 0
        assert "NumericsError" in r.stderr and "aten::sin" in r.stderr and "ran" not in r.stdout
