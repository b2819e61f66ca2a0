"""Out-of-range indices raise what CPU PyTorch raises (type and message), checked on the
device inside the op's own program and raised at the next point where the host waits
(a read, `synchronize`), or at the op itself in launch-blocking mode; indices just copied
from the CPU raise at the op (the host knows them); the process goes on working
afterwards, compiled graphs carry the same checks, and `TORCH_TPU_ENABLE_DEBUG_CHECKS=0`
leaves the checks out."""

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from helpers import no_fallback


def bad_calls(dev, known=False):
    """Calls CPU PyTorch refuses. Their index tensors are computed on the device (only the
    device knows them) unless `known` (copied from the CPU, so the host knows them)."""
    x = torch.arange(5.0, device=dev)

    def t(v):
        v = torch.tensor(v, device=dev)
        return v if known else v.add(0)

    return {
        "index": lambda: x[t([1, 7])],
        "index_negative": lambda: x[t([-6])],
        "index_2d": lambda: torch.zeros(3, 4, device=dev)[t([0]), t([4])],
        "index_select": lambda: x.index_select(0, t([7])),
        "gather": lambda: torch.gather(x, 0, t([9])),
        "scatter": lambda: x.clone().scatter_(0, t([9]), 1.0),
        "scatter_add": lambda: x.clone().scatter_add(0, t([-1]), x[:1]),
        "index_put": lambda: x.clone().index_put_((t([7]),), t(1.0)),
        "index_put_accumulate": lambda: x.clone().index_put_((t([7]),), t(1.0), accumulate=True),
        "setitem": lambda: x.clone().__setitem__(t([2, 5]), 0.0),
        "embedding": lambda: F.embedding(t([9]), torch.ones(3, 2, device=dev)),
        "cross_entropy": lambda: F.cross_entropy(torch.ones(2, 3, device=dev), t([0, 5])),
        "nll_loss": lambda: F.nll_loss(torch.ones(2, 3, device=dev), t([0, -3])),
        "index_add": lambda: x.clone().index_add_(0, t([7]), x[:1]),
        "index_fill": lambda: x.clone().index_fill_(0, t([7]), 1.0),
        "index_copy": lambda: x.clone().index_copy_(0, t([7]), x[:1]),
    }


def cpu_error(name):
    try:
        bad_calls("cpu")[name]()
    except (IndexError, RuntimeError) as e:
        return type(e), str(e)
    raise AssertionError(f"CPU accepted {name}")


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "DEFER_NEVER"])
@pytest.mark.parametrize("name", list(bad_calls("cpu")))
def test_bad_index_raises_cpu_error_at_the_next_read(name, mode):
    kind, message = cpu_error(name)
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode(mode)
    try:
        out = bad_calls("tpu")[name]()  # no host wait yet: nothing raised
        with pytest.raises(kind) as info:
            (out if isinstance(out, torch.Tensor) else torch.zeros(1, device="tpu")).cpu()
        assert str(info.value) == message
        # The failure is consumed: the device goes on working.
        x = torch.arange(5.0, device="tpu")
        assert x[torch.tensor([4, -5], device="tpu")].tolist() == [4.0, 0.0]
        assert (x + 1).sum().item() == 15.0
    finally:
        torch.tpu.set_eager_mode(old)


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "DEFER_NEVER"])
@pytest.mark.parametrize("name", list(bad_calls("cpu")))
def test_indices_copied_from_the_cpu_raise_at_the_op(name, mode):
    kind, message = cpu_error(name)
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode(mode)
    try:
        with pytest.raises(kind) as info:
            bad_calls("tpu", known=True)[name]()
        assert str(info.value) == message
        torch.tpu.synchronize()  # nothing left to raise
        x = torch.arange(5.0, device="tpu")
        assert x[[4, -5]].tolist() == [4.0, 0.0]
    finally:
        torch.tpu.set_eager_mode(old)


def test_index_copied_from_the_cpu_then_written_on_the_device_is_not_trusted():
    # The host's copy of an index is only used while the device holds the same contents.
    x = torch.arange(5.0, device="tpu")
    i = torch.tensor([1, 2], device="tpu")
    i.add_(7)
    out = x[i]  # 8 and 9: out of range, known only to the device
    with pytest.raises(IndexError, match="index 8 is out of bounds for dimension 0 with size 5"):
        out.cpu()
    j = torch.tensor([1, 9], device="tpu")
    j[1] = 3
    assert x[j].tolist() == [1.0, 3.0]


def test_index_views_of_a_known_index_are_checked_at_the_op():
    x = torch.arange(5.0, device="tpu")
    i = torch.tensor([[0, 9], [1, 2]], device="tpu")
    assert x[i[:, 0]].tolist() == [0.0, 1.0]
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        x[i.t()[1]]
    i32 = torch.tensor([3, -6], dtype=torch.int32, device="tpu")
    with pytest.raises(IndexError, match="index -6 is out of bounds"):
        x[i32]


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "DEFER_NEVER"])
def test_boolean_mask_assignment_counts_the_mask_at_the_op(mode):
    # CPU (and CUDA, which waits for the mask's count) compare the number of selected
    # elements with the values' rows before the dtypes, and write nothing on failure.
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode(mode)
    try:
        for values in ([], [1, 2, 3], [7.0, 8.0], [5]):
            errors = []
            for dev in ("cpu", "tpu"):
                a = torch.arange(4, device=dev)
                try:
                    a[a > 1] = torch.tensor(values).to(dev)
                    errors.append(None)
                except RuntimeError as e:
                    errors.append(str(e))
                errors.append(a.tolist())
            assert errors[2:] == errors[:2], values
        a = torch.arange(4, device="tpu")
        a[a > 1] = torch.tensor([7, 8], device="tpu")
        assert a.tolist() == [0, 1, 7, 8]
    finally:
        torch.tpu.set_eager_mode(old)


def test_synchronize_raises_without_a_read():
    x = torch.arange(5.0, device="tpu")
    x.index_select(0, torch.tensor([5], device="tpu").add(0))
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.tpu.synchronize()
    torch.tpu.synchronize()  # consumed


def test_launch_blocking_raises_at_the_op():
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_NEVER_AND_LAUNCH_BLOCKING")
    try:
        x = torch.arange(5.0, device="tpu")
        with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
            x[torch.tensor([7], device="tpu")]
        assert x[torch.tensor([3], device="tpu")].item() == 3.0
    finally:
        torch.tpu.set_eager_mode(old)


def test_valid_indices_at_the_bounds_pass():
    x = torch.arange(12.0).reshape(3, 4)
    d = x.to("tpu")
    i = torch.tensor([0, 2, -3, -1])
    assert torch.equal(d[i.to("tpu")].cpu(), x[i])
    assert torch.equal(d.index_select(1, torch.tensor([0, 3], device="tpu")).cpu(), x[:, [0, 3]])
    target = torch.tensor([0, 2, -100])
    logits = torch.randn(3, 3)
    loss = F.cross_entropy(logits.to("tpu"), target.to("tpu"), ignore_index=-100)
    torch.testing.assert_close(loss.cpu(), F.cross_entropy(logits, target, ignore_index=-100))


def test_many_pending_checks_are_bounded():
    x = torch.arange(5.0, device="tpu")
    i = torch.tensor([1], device="tpu")
    acc = torch.zeros(1, device="tpu")
    for _ in range(1100):
        acc = acc + x[i]
    assert acc.item() == 1100.0


def test_checks_can_be_turned_off():
    code = (
        "import torch\n"
        "x = torch.arange(5.0, device='tpu')\n"
        "x.index_select(0, torch.tensor([7], device='tpu')).cpu()\n"
        "x[[9]].cpu()\n"
        "torch.tpu.synchronize()\n"
        "print('unchecked')\n"
    )
    env = dict(os.environ, TORCH_TPU_ENABLE_DEBUG_CHECKS="0", TPURS_FALLBACK="error")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["unchecked"]


@pytest.mark.parametrize("name", ["index", "gather", "embedding", "cross_entropy", "index_put"])
def test_compiled_graphs_carry_the_checks(name):
    x = torch.arange(5.0, device="tpu")
    fns = {
        "index": lambda x, i: x[i] * 2,
        "gather": lambda x, i: torch.gather(x, 0, i) + 1,
        "embedding": lambda x, i: F.embedding(i, x.view(5, 1)).sum(),
        "cross_entropy": lambda x, i: F.cross_entropy(x.view(1, 5), i),
        "index_put": lambda x, i: x.clone().index_put_((i,), x[:1]) * 3,
    }
    f = torch.compile(fns[name], fullgraph=True)
    good = torch.tensor([4], device="tpu")
    with no_fallback():
        _compiled_checks(f, fns[name], x, good)


def _compiled_checks(f, fn, x, good):
    torch.testing.assert_close(f(x, good).cpu(), fn(x.cpu(), good.cpu()))
    bad = torch.tensor([9], device="tpu").add(0)
    with pytest.raises((IndexError, RuntimeError)) as on_cpu:
        fn(x.cpu(), bad.cpu())
    out = f(x, bad)  # no host wait yet: nothing raised
    with pytest.raises(type(on_cpu.value)) as info:
        out.cpu()
    assert str(info.value) == str(on_cpu.value)
    assert torch.tpu.metrics()["graph_compiles"] > 0
    torch.testing.assert_close(f(x, good).cpu(), fn(x.cpu(), good.cpu()))
