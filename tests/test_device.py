"""Device integration: registration, torch.tpu API, storage and views, copies, printing,
serialisation, multiple devices, and errors (each raising what CPU PyTorch raises)."""

import io
import os
import subprocess
import sys

import pytest
import torch
from helpers import check, no_fallback, run_python, to_device


def test_import_torch_alone_registers_the_device():
    r = run_python("import torch; x = torch.ones(2, device='tpu'); print(x.device, torch.tpu.is_available())")
    assert r.returncode == 0, r.stderr
    assert "tpu:0 True" in r.stdout


def test_the_bridge_build_says_one_line_once(tmp_path):
    code = "import torch; print((torch.ones(2, device='tpu') * 3).sum().item())"
    first = run_python(code, TPURS_BRIDGE_CACHE=str(tmp_path))
    assert first.returncode == 0 and first.stdout.strip() == "6.0", first.stderr
    assert first.stderr.count("\n") == 1 and first.stderr.startswith("tpurs: building the C++ bridge for torch")
    again = run_python(code, TPURS_BRIDGE_CACHE=str(tmp_path))
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_plugin_logs_are_off_unless_asked_for():
    code = "import torch; print((torch.ones(2, device='tpu') + 1).sum().item())"
    quiet = run_python(code)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "4.0", quiet.stderr
    assert quiet.stderr == ""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    loud = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(env, TPURS_LOG_LEVEL="0"), timeout=300
    )
    assert "pjrt_c_api_cpu_internal" in loud.stderr


def test_import_tpurs_first_and_without_autoload():
    code = "import tpurs, torch; print((torch.ones(2, device='tpu') + 1).tolist())"
    for env in ({}, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}):
        r = run_python(code, **env)
        assert r.returncode == 0, r.stderr
        assert "[2.0, 2.0]" in r.stdout


def test_torch_tpu_api():
    tpu = torch.tpu
    assert tpu.is_available() and tpu.is_initialized()
    assert tpu.device_count() >= 1
    assert tpu.current_device() == 0
    assert tpu.platform() == "cpu"
    assert isinstance(tpu.get_device_name(), str)
    assert tpu.get_device_properties(0).platform == "cpu"
    tpu.synchronize()
    tpu.manual_seed(3)
    assert tpu.initial_seed() == 3
    state = tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    before = tpu.memory_allocated()
    x = torch.empty(1024, device="tpu")
    assert tpu.memory_allocated() == before + 4096
    assert tpu.max_memory_allocated() >= before + 4096
    del x
    assert tpu.memory_allocated() == before
    assert set(tpu.metrics()) >= {
        "op_launches",
        "fallbacks",
        "compiles",
        "compile_cache_hits",
        "compile_cache_misses",
        "compile_seconds",
        "bytes_to_device",
        "bytes_to_host",
    }


def test_accelerator_reports_tpu():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "tpu"
    assert torch.accelerator.device_count() == torch.tpu.device_count()


def test_plain_tensor_type_and_methods():
    x = torch.arange(6.0).reshape(2, 3).tpu()
    assert type(x) is torch.Tensor
    assert x.is_tpu and x.device == torch.device("tpu:0")
    assert x.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    m = torch.nn.Linear(3, 2).tpu()
    assert m.weight.device.type == "tpu"


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool],
)
def test_round_trip_copies(dtype):
    x = (torch.randn(5, 7) * 10).to(dtype)
    y = x.to("tpu")
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y.cpu(), x)
    # non-contiguous source and destination
    assert torch.equal(x.t().to("tpu").cpu(), x.t())
    z = torch.zeros(7, 5, dtype=dtype, device="tpu")
    z.copy_(x.t())
    assert torch.equal(z.cpu(), x.t().contiguous())
    # dtype conversion during copies, both directions
    assert torch.equal(y.to(torch.float32).cpu(), x.to(torch.float32))
    assert torch.equal(x.to("tpu", torch.float32).cpu(), x.to(torch.float32))
    # device -> host into existing CPU tensors: dense, transposed, another dtype, broadcast
    dense, strided = torch.empty(5, 7, dtype=dtype), torch.empty(7, 5, dtype=dtype).t()
    wider, rows = torch.empty(5, 7, dtype=torch.float64), torch.empty(3, 5, 7, dtype=dtype)
    for out in (dense, strided, wider, rows):
        out.copy_(y)
        assert torch.equal(out, x.to(out.dtype).expand_as(out))


def test_item_tolist_and_print():
    x = torch.tensor([[1.5, -2.0], [3.0, 4.25]], device="tpu")
    assert x[0, 1].item() == -2.0
    assert x.tolist() == [[1.5, -2.0], [3.0, 4.25]]
    assert x.sum().item() == 6.75
    assert "device='tpu:0'" in repr(x)
    assert repr(x).startswith("tensor([[ 1.5000, -2.0000]")


def test_views_alias_storage():
    base = torch.arange(24.0).reshape(4, 6)
    dev = base.to("tpu")
    views = {
        "view": lambda t: t.view(6, 4),
        "reshape": lambda t: t.reshape(3, 8),
        "transpose": lambda t: t.transpose(0, 1),
        "permute": lambda t: t.reshape(2, 3, 4).permute(2, 0, 1),
        "slice": lambda t: t[1:3, ::2],
        "select": lambda t: t[2],
        "expand": lambda t: t[:1].expand(3, 6),
        "squeeze": lambda t: t[:1].squeeze(0),
        "unsqueeze": lambda t: t.unsqueeze(1),
        "narrow": lambda t: t.narrow(1, 2, 3),
        "diagonal": lambda t: t.diagonal(),
        "as_strided": lambda t: t.as_strided((3, 3), (5, 2), 1),
        "unfold": lambda t: t.reshape(-1).unfold(0, 4, 3),
    }
    for name, f in views.items():
        vc, vd = f(base), f(dev)
        assert vd.untyped_storage().data_ptr() == dev.untyped_storage().data_ptr(), name
        assert vd.stride() == vc.stride() and vd.storage_offset() == vc.storage_offset(), name
        assert torch.equal(vd.cpu(), vc), name
        assert torch.equal(vd.contiguous().cpu(), vc.contiguous()), name


def test_inplace_through_views_updates_base():
    cases = [
        lambda t: t[1:3, ::2].mul_(10),
        lambda t: t.t()[2].fill_(-1),
        lambda t: t.diagonal().add_(100),
        lambda t: t.view(-1)[5:9].zero_(),
        lambda t: t[:, 1].copy_(torch.arange(4.0)),
        lambda t: t.unsqueeze(0)[0, :, 3:].sub_(1),
    ]
    for f in cases:
        base = torch.arange(24.0).reshape(4, 6)
        dev = base.to("tpu")
        f(base)
        f(dev)
        assert torch.equal(dev.cpu(), base)


def test_non_contiguous_inputs():
    x = torch.randn(6, 8)
    check(lambda t: t.t() * 2 + t.t(), x)
    check(lambda t: t[::2, 1::3].exp(), x)
    check(lambda t: t.expand(2, 6, 8) + 1, x)
    check(lambda t: t.as_strided((4, 4), (1, 4)) + 0, x)


def test_cached_op_does_not_recompile():
    mode = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_NEVER")
    try:
        _check_cached_op_does_not_recompile()
    finally:
        torch.tpu.set_eager_mode(mode)


def _check_cached_op_does_not_recompile():
    x = torch.randn(4, 4, device="tpu")
    y = x * 3 + 1
    m0 = torch.tpu.metrics()
    for _ in range(5):
        y = x * 3 + 1
    m1 = torch.tpu.metrics()
    assert m1["compiles"] == m0["compiles"]
    assert m1["compile_cache_hits"] >= m0["compile_cache_hits"] + 10
    assert m1["op_launches"] >= m0["op_launches"] + 10
    # A new scalar value is a runtime parameter, not a new program.
    y = x * 7 + 2
    assert torch.tpu.metrics()["compiles"] == m0["compiles"]
    assert torch.allclose(y.cpu(), x.cpu() * 7 + 2)


def test_a_loop_without_host_reads_stops_building_programs():
    # Fused batches end at content-defined ops, not at a fixed count that would fall
    # elsewhere in every iteration: after the first iterations each batch is one seen before.
    mode = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_AND_FUSE")
    try:
        ws_cpu = [torch.randn(9 + i, 9 + i) / 8 for i in range(24)]
        x_cpu = torch.randn(8)
        ws, x = [w.to("tpu") for w in ws_cpu], x_cpu.to("tpu")

        def iteration(x, ws):
            for w in ws:  # 48 ops of 24 shapes, then a slice: not a divisor of the op limit
                x = torch.nn.functional.pad(x, (0, 1))
                x = (w @ x).tanh()
            return x[:8]

        def built():
            m = torch.tpu.metrics()
            return m["compiles"] + m["tier3_hits"]

        for i in range(20):
            if i == 5:
                before = built()
            x = iteration(x, ws)
            x_cpu = iteration(x_cpu, ws_cpu)
        assert built() == before
        torch.testing.assert_close(x.cpu(), x_cpu, atol=1e-5, rtol=1e-5)
    finally:
        torch.tpu.set_eager_mode(mode)


def test_save_load_state_dict():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).to("tpu")
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    for k, v in model.state_dict().items():
        assert loaded[k].device.type == "tpu"
        assert torch.equal(loaded[k].cpu(), v.cpu())
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    for k, v in model.state_dict().items():
        assert on_cpu[k].device.type == "cpu"
        assert torch.equal(on_cpu[k], v.cpu())


def test_resize_keeps_contents_like_cpu():
    for device in ("cpu", "tpu"):
        x = torch.arange(6.0, device=device)
        y = x[1:]
        x.resize_(4, 5)  # grows the storage
        assert x.shape == (4, 5) and x.is_contiguous()
        assert x.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        x.resize_(2)  # shrinking keeps the storage
        assert x.tolist() == [0.0, 1.0]
        assert y.shape == (5,)


def test_zero_dim_cpu_tensor_is_allowed():
    x = torch.ones(3, device="tpu")
    y = x * torch.tensor(2.5)
    assert torch.equal(y.cpu(), torch.full((3,), 2.5))


def test_errors_match_cpu_and_process_survives():
    a, b = torch.ones(2, 3, device="tpu"), torch.ones(4, 5, device="tpu")
    with pytest.raises(RuntimeError, match="must match the size"):
        a + torch.ones(4, device="tpu")
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + torch.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.sum(dim=3)
    # the device still works afterwards
    assert torch.equal((a + 1).cpu(), torch.full((2, 3), 2.0))
    del b


def test_unsupported_dtype_raises():
    with pytest.raises(NotImplementedError, match="Bits8"):
        torch.ones(2, dtype=torch.bits8, device="tpu")
    assert torch.equal((torch.ones(2, device="tpu") + 1).cpu(), torch.full((2,), 2.0))


def test_mm_shape_mismatch_matches_cpu():
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
            torch.ones(2, 3, device=device) @ torch.ones(4, 5, device=device)


def test_fallback_error_mode_names_the_op():
    code = (
        "import torch\n"
        "x = torch.ones(4, device='tpu')\n"
        "try:\n"
        "    torch.linalg.ldl_factor(torch.eye(2, device='tpu') + x.reshape(2, 2))\n"
        "except NotImplementedError as e:\n"
        "    print('NIE', 'linalg_ldl_factor_ex' in str(e))\n"
        "print(((x + 1) * 2).sum().item() is not None)\n"
    )
    r = run_python(code, TPURS_FALLBACK="error")
    assert r.returncode == 0, r.stderr
    assert "NIE True" in r.stdout and "True" in r.stdout.splitlines()[-1]


def test_fallback_runs_on_cpu_with_one_warning_and_counter():
    # linalg.ldl_factor has no tpu lowering (change the op when it gets one): without
    # TPURS_FALLBACK=error (which the test suite sets) it runs on the CPU, warned once and
    # counted.
    code = (
        "import warnings, torch, tpurs\n"
        "a = torch.rand(3, 3)\n"
        "x = a @ a.T + torch.eye(3)\n"
        "r = torch.linalg.ldl_factor(x)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    d = torch.linalg.ldl_factor(x.to('tpu'))\n"
        "    torch.linalg.ldl_factor(x.to('tpu'))\n"
        "assert d.LD.device.type == 'tpu'\n"
        "torch.testing.assert_close(d.LD.cpu(), r.LD)\n"
        "torch.testing.assert_close(d.pivots.cpu(), r.pivots)\n"
        "print('warnings', sum('has no tpu lowering' in str(m.message) for m in w))\n"
        "print('count', sum(v for k, v in torch.tpu.metrics()['fallbacks'].items() if 'ldl_factor' in k))\n"
    )
    r = run_python(code, TPURS_FALLBACK=None)
    assert r.returncode == 0, r.stderr
    assert "warnings 1" in r.stdout and "count 2" in r.stdout, r.stdout


def test_missing_plugin_leaves_torch_working_and_says_why():
    code = (
        "import torch, tpurs\n"
        "assert (torch.ones(2) + 1).tolist() == [2.0, 2.0]\n"
        "assert not torch.tpu.is_available() and torch.tpu.device_count() == 0\n"
        "try:\n"
        "    torch.ones(2, device='tpu')\n"
        "except RuntimeError as e:\n"
        "    print('REFUSED', e)\n"
    )
    r = run_python(code, TPURS_PJRT_PLUGIN="/nonexistent/libpjrt.so")
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning: tpurs: the tpu device is unavailable" in r.stderr
    refused = r.stdout.split("REFUSED", 1)[1]
    assert "/nonexistent/libpjrt.so" in refused and "pip install" in refused


def test_two_devices():
    code = (
        "import torch\n"
        "assert torch.tpu.device_count() == 2\n"
        "a = torch.arange(6.0, device='tpu:0')\n"
        "b = a.to('tpu:1')\n"
        "assert b.device == torch.device('tpu:1')\n"
        "c = (b * 2).to('tpu:0')\n"
        "assert c.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0], c.tolist()\n"
        "assert (a[::2].to('tpu:1', torch.int64)).tolist() == [0, 2, 4]\n"
        "try:\n"
        "    a + b\n"
        "except RuntimeError as e:\n"
        "    assert 'same device' in str(e), e\n"
        "    print('MISMATCH_OK')\n"
        "with torch.tpu.device(1):\n"
        "    z = torch.zeros(2, device='tpu')\n"
        "assert z.device.index == 1, z.device\n"
        "print('OK')\n"
    )
    r = run_python(code, TPURS_CPU_DEVICES="2")
    assert r.returncode == 0, r.stderr
    assert "MISMATCH_OK" in r.stdout and "OK" in r.stdout


def test_no_fallback_in_basic_arithmetic():
    x = torch.randn(3, 3)
    with no_fallback():
        check(lambda t: (t * 2 - 1).abs().sqrt(), x)
    assert to_device(x).device.type == "tpu"


def test_core_stub_matches_the_extension():
    import pathlib
    import re

    import tpurs._core as core

    stub = (pathlib.Path(tpurs_dir()) / "_core.pyi").read_text()
    declared = set(re.findall(r"^def (\w+)\(", stub, flags=re.M))
    exported = {n for n in dir(core) if not n.startswith("_") and callable(getattr(core, n))}
    assert declared == exported


def tpurs_dir():
    import tpurs

    return os.path.dirname(tpurs.__file__)


def test_untyped_storage_resize_keeps_bytes_and_frees():
    # FSDP2 frees an unsharded parameter with `resize_(0)` and regrows it before use.
    t = torch.arange(6.0, device="tpu")
    storage = t.untyped_storage()
    storage.resize_(40)
    assert storage.nbytes() == 40
    grown = torch.empty(0, device="tpu").set_(storage, 0, (10,))
    assert torch.equal(grown[:6].cpu(), torch.arange(6.0))
    storage.resize_(8)
    assert torch.equal(torch.empty(0, device="tpu").set_(storage, 0, (2,)).cpu(), torch.arange(2.0))
    storage.resize_(0)
    assert storage.nbytes() == 0
    storage.resize_(16)
    refilled = torch.empty(0, device="tpu").set_(storage, 0, (4,)).fill_(2.0)
    assert torch.equal(refilled.cpu(), torch.full((4,), 2.0))


def test_byte_slices_of_a_storage_are_refused():
    # torch slices an UntypedStorage by offsetting its data pointer; a tpu storage pointer is
    # a runtime handle, so the slice is refused rather than read as one.
    t = torch.tensor([True, False, True, True], device="tpu")
    storage = t.untyped_storage()
    assert [storage[i] for i in range(4)] == [1, 0, 1, 1]
    with pytest.raises(NotImplementedError, match="byte slice"):
        storage[1:2][0]
    assert t.cpu().tolist() == [True, False, True, True]


def test_lazy_clone_is_an_independent_copy():
    # torch's copy-on-write clone materializes on a write through a raw data pointer, which
    # tpu kernels never take; tpu's `_lazy_clone` copies at once.
    for base in (torch.arange(6.0), torch.arange(12.0).reshape(3, 4)[1:, ::2]):
        a = base.to("tpu")
        b = torch._lazy_clone(a)
        b.add_(1)
        assert torch.equal(a.cpu(), base) and torch.equal(b.cpu(), base + 1)


def test_set_without_strides_is_contiguous():
    src = torch.arange(12.0, device="tpu")
    view = torch.empty(0, device="tpu").set_(src.untyped_storage(), 2, (2, 3))
    assert view.stride() == (3, 1)
    assert torch.equal(view.cpu(), torch.arange(12.0)[2:8].view(2, 3))
