"""Distributed checks that test_distributed.py runs in child processes, with ranks that are
threads (`python dist_worker.py spawn N CHECK`: `tpurs.distributed.spawn` over N CPU-plugin
devices) or processes (`torchrun --nproc-per-node N dist_worker.py CHECK`). Every rank
compares what it received with the value computed on CPU, raises on a difference and prints
`ok CHECK rank R` when all agree."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn


def rank_data(rank: int, dtype: torch.dtype, rows: int = 3) -> torch.Tensor:
    """Small integers, exact in every dtype checked, different on every rank."""
    return ((torch.arange(rows * 4, dtype=torch.float32).reshape(rows, 4) - 5) * (rank + 1)).to(dtype)


def same(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    got = got.cpu()
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError(f"{what}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}")
    torch.testing.assert_close(got, want, msg=lambda m: f"{what}: {m}")


def collectives(rank: int, world: int, dev: torch.device) -> None:
    for dt in (torch.float32, torch.bfloat16, torch.int64):
        xs = [rank_data(r, dt) for r in range(world)]
        x = xs[rank].to(dev)
        for op, combine in [
            (dist.ReduceOp.SUM, torch.add),
            (dist.ReduceOp.PRODUCT, torch.mul),
            (dist.ReduceOp.MAX, torch.maximum),
            (dist.ReduceOp.MIN, torch.minimum),
        ]:
            y = x.clone()
            dist.all_reduce(y, op=op)
            same(y, functools.reduce(combine, xs), f"all_reduce {op} {dt}")
        if dt.is_floating_point:
            y = x.clone()
            dist.all_reduce(y, op=dist.ReduceOp.AVG)
            same(y, functools.reduce(torch.add, xs) / world, f"all_reduce AVG {dt}")
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x)
        for r in range(world):
            same(parts[r], xs[r], f"all_gather part {r} {dt}")
        flat = torch.empty(world * 3, 4, dtype=dt, device=dev)
        dist.all_gather_into_tensor(flat, x)
        same(flat, torch.cat(xs), f"all_gather_into_tensor {dt}")
        big = [rank_data(r, dt, rows=world) for r in range(world)]
        out = torch.empty(1, 4, dtype=dt, device=dev)
        dist.reduce_scatter_tensor(out, big[rank].to(dev))
        same(out, functools.reduce(torch.add, big)[rank : rank + 1], f"reduce_scatter_tensor {dt}")
        b = x.clone()
        dist.broadcast(b, src=world - 1)
        same(b, xs[world - 1], f"broadcast {dt}")
        out = torch.empty(world, 4, dtype=dt, device=dev)
        dist.all_to_all_single(out, big[rank].to(dev))
        same(out, torch.stack([big[r][rank] for r in range(world)]), f"all_to_all_single {dt}")
        gathered = [torch.empty_like(x) for _ in range(world)] if rank == 0 else None
        dist.gather(x, gathered, dst=0)
        if rank == 0:
            for r in range(world):
                same(gathered[r], xs[r], f"gather part {r} {dt}")
        s = torch.empty_like(x)
        dist.scatter(s, [t.to(dev) for t in xs] if rank == 0 else None, src=0)
        same(s, xs[rank], f"scatter {dt}")

    # Uneven all_to_all: rank r sends r+1 elements to every rank.
    sent = [torch.arange(world * (r + 1), dtype=torch.float32) + 100 * r for r in range(world)]
    out = torch.empty(sum(range(1, world + 1)), device=dev)
    dist.all_to_all_single(out, sent[rank].to(dev), [r + 1 for r in range(world)], [rank + 1] * world)
    want = torch.cat([sent[r][rank * (r + 1) : (rank + 1) * (r + 1)] for r in range(world)])
    same(out, want, "uneven all_to_all_single")

    # A ring of send/recv.
    t = torch.full((5,), float(rank), device=dev)
    got = torch.empty(5, device=dev)
    if rank % 2 == 0:
        dist.send(t, dst=(rank + 1) % world)
        dist.recv(got, src=(rank - 1) % world)
    else:
        dist.recv(got, src=(rank - 1) % world)
        dist.send(t, dst=(rank + 1) % world)
    same(got, torch.full((5,), float((rank - 1) % world)), "send/recv ring")

    work = dist.all_reduce(y := torch.ones(2, device=dev), async_op=True)
    work.wait()
    same(y, torch.full((2,), float(world)), "async all_reduce")
    dist.barrier()

    # A subgroup of the first and last rank (every rank must create it).
    pair = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        z = torch.full((3,), float(rank + 1), device=dev)
        dist.all_reduce(z, group=pair)
        same(z, torch.full((3,), float(world + 1)), "subgroup all_reduce")


def errors(rank: int, world: int, dev: torch.device) -> None:
    def expect(error: type, words: str, call) -> None:
        try:
            call()
        except error as e:
            if words not in str(e):
                raise AssertionError(f"expected {words!r} in: {e}") from e
        else:
            raise AssertionError(f"expected {error.__name__} ({words})")

    # Different shapes on rank 0: every rank raises, and the group stays usable.
    shape = (3,) if rank == 0 else (4,)
    expect(RuntimeError, "mismatched collective", lambda: dist.all_reduce(torch.ones(shape, device=dev)))
    # Different collectives in the same position.
    if rank == 0:
        expect(RuntimeError, "mismatched collective", lambda: dist.all_reduce(torch.ones(2, device=dev)))
    else:
        expect(RuntimeError, "mismatched collective", lambda: dist.broadcast(torch.ones(2, device=dev), src=0))
    y = torch.ones(2, device=dev)
    dist.all_reduce(y)
    same(y, torch.full((2,), float(world)), "all_reduce after a mismatch")
    expect(
        ValueError,
        "floating-point",
        lambda: dist.all_reduce(torch.ones(2, dtype=torch.int64, device=dev), op=dist.ReduceOp.AVG),
    )
    # As with NCCL: a CPU tensor finds no backend in a group of tpu's.
    expect(RuntimeError, "No backend type associated", lambda: dist.all_reduce(torch.ones(2)))
    # A collective the other ranks never join times out with an error, not a hang.
    if rank == 0:
        expect(RuntimeError, "timed out", lambda: dist.all_reduce(torch.ones(2, device=dev)))


class _Net(nn.Sequential):
    def forward(self, x):  # user code: torch.compile traces it (torch.nn's own frames it skips)
        return self[2](torch.tanh(self[0](x)))


def _model() -> nn.Module:
    # Initialised from its own generator: the global one is shared by the rank threads.
    model = _Net(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model


def _batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(6, 8, generator=g), torch.randn(6, 4, generator=g)


def ddp(rank: int, world: int, dev: torch.device) -> None:
    """Five SGD steps of DistributedDataParallel, eager, over a compiled module and compiled
    whole, each step accumulating one micro-batch under `no_sync()` before a synchronised one,
    equal one process training on every rank's micro-batches at once."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    for compiled in ("no", "DDP(compile(module))", "compile(DDP(module))"):
        module = _model().to(dev)
        if compiled == "no":
            model = DDP(module)
        else:
            model = DDP(torch.compile(module)) if compiled.startswith("DDP") else torch.compile(DDP(module))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        reference = _model()
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        for step in range(5):
            for micro in (2 * step, 2 * step + 1):
                x, y = _batch(rank, micro)
                with model.no_sync() if micro % 2 == 0 else contextlib.nullcontext():
                    nn.functional.mse_loss(model(x.to(dev)), y.to(dev)).backward()
                xs, ys = zip(*[_batch(r, micro) for r in range(world)])
                nn.functional.mse_loss(reference(torch.cat(xs)), torch.cat(ys)).backward()
            opt.step()
            opt.zero_grad()
            ref_opt.step()
            ref_opt.zero_grad()
        for (name, p), q in zip(module.named_parameters(), reference.parameters()):
            torch.testing.assert_close(
                p.detach().cpu(), q.detach(), atol=1e-5, rtol=1e-5, msg=lambda m: f"{name} (compiled {compiled}): {m}"
            )
    # The captured graphs ran as tpurs programs (TPURS_FALLBACK=error forbids anything else);
    # both compiled forms share _Net.forward's dynamo cache, so graphs are not counted per form.
    if torch.tpu.metrics()["graph_compiles"] == 0:
        raise AssertionError("the compiled module ran no tpurs graph")


def _train_like_reference(model, world_batches, rank_batch, dev, tolerance: float, what: str) -> None:
    """Five SGD steps of `model` (sharded across ranks) on `rank_batch(step)` equal five steps
    of the unsharded CPU model on the concatenation of `world_batches(step)`: each step's
    loss on this rank's batch, and the parameters at the end."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    reference = _model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(5):
        x, y = rank_batch(step)
        loss = nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            rank_loss = nn.functional.mse_loss(reference(x), y)
        torch.testing.assert_close(
            loss.detach().cpu().float(), rank_loss, atol=tolerance, rtol=tolerance, msg=f"{what} loss {step}"
        )
        xs, ys = zip(*world_batches(step))
        nn.functional.mse_loss(reference(torch.cat(xs)), torch.cat(ys)).backward()
        ref_opt.step()
        ref_opt.zero_grad()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        torch.testing.assert_close(
            full.detach().cpu().float(), q.detach(), atol=tolerance, rtol=tolerance, msg=lambda m: f"{what} {name}: {m}"
        )


def fsdp(rank: int, world: int, dev: torch.device) -> None:
    """FSDP2 (`fully_shard` per layer and at the root), in float32, with bfloat16 parameters
    reducing in float32, and compiled (`torch.compile` of the sharded root)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    every = lambda step: [_batch(r, step) for r in range(world)]  # noqa: E731
    bf16 = MixedPrecisionPolicy(torch.bfloat16, torch.float32)
    for policy, tolerance, compiled in [(None, 1e-5, False), (bf16, 3e-2, False), (None, 1e-5, True)]:
        model = _model().to(dev)
        kwargs = {"mp_policy": policy} if policy else {}
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, **kwargs)
        fully_shard(model, **kwargs)
        run = torch.compile(model) if compiled else model
        what = f"fsdp {policy} compiled {compiled}"
        _train_like_reference(run, every, lambda step: _batch(rank, step), dev, tolerance, what)
    checkpoint_round_trip(model, dev)


def checkpoint_round_trip(model: nn.Module, dev: torch.device) -> None:
    """`torch.distributed.checkpoint` saves the sharded state and loads it into a freshly
    sharded model: every local shard comes back exactly."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    path = os.path.join(os.environ.get("TPURS_TEST_DIR", tempfile.gettempdir()), "tpurs-dcp")
    dcp.save(model.state_dict(), checkpoint_id=path)
    fresh = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(dev)
    for layer in fresh:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(fresh)
    state = fresh.state_dict()
    dcp.load(state, checkpoint_id=path)
    for name, saved in model.state_dict().items():
        torch.testing.assert_close(
            state[name].to_local().cpu(), saved.to_local().cpu(), atol=0, rtol=0, msg=lambda m: f"dcp {name}: {m}"
        )


def tensor_parallel(rank: int, world: int, dev: torch.device) -> None:
    """Colwise then rowwise `parallelize_module` over all ranks; with four ranks also a 2-D
    (data x tensor) mesh, FSDP2 over the data dimension."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
    mesh = torch.tpu.distributed.topology_aware_mesh((world,))
    model = parallelize_module(_model().to(dev), mesh, plan)
    same_batch = lambda step: _batch(0, step)  # noqa: E731
    _train_like_reference(model, lambda step: [same_batch(step)], same_batch, dev, 1e-5, "tp")
    if world == 4:
        mesh = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
        dp_rank = mesh["dp"].get_local_rank()
        model = parallelize_module(_model().to(dev), mesh["tp"], plan)
        fully_shard(model, mesh=mesh["dp"])
        every = lambda step: [_batch(r, step) for r in range(2)]  # noqa: E731
        _train_like_reference(model, every, lambda step: _batch(dp_rank, step), dev, 1e-5, "dp x tp")


def sharded_load(rank: int, world: int, dev: torch.device) -> None:
    """A safetensors checkpoint split in two files under a Hugging Face index loads into
    FSDP2 and tensor-parallel shards equal to the full tensors, each rank reading exactly
    the bytes of its own shards."""
    import json

    from safetensors.torch import save_file
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )
    from tpurs.distributed import load_safetensors

    full = {k: v.contiguous() for k, v in _model().state_dict().items()}
    path = os.path.join(os.environ.get("TPURS_TEST_DIR", tempfile.gettempdir()), "tpurs-safetensors")
    if rank == 0:
        os.makedirs(path, exist_ok=True)
        names = sorted(full)
        halves = {"part-1.safetensors": names[::2], "part-2.safetensors": names[1::2]}
        for file, part in halves.items():
            save_file({n: full[n] for n in part}, os.path.join(path, file))
        weight_map = {n: file for file, part in halves.items() for n in part}
        with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": weight_map}, f)
    dist.barrier()
    mesh = torch.tpu.distributed.topology_aware_mesh((world,))
    fsdp_model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(dev)
    fully_shard(fsdp_model, mesh=mesh)
    tp_model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(dev)
    parallelize_module(tp_model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    for what, model in [("fsdp", fsdp_model), ("tp", tp_model)]:
        report = load_safetensors(model, path)
        own = sum(p.to_local().numel() * p.element_size() for p in model.state_dict().values())
        if report.bytes_read != own or report.checkpoint_bytes != sum(t.numel() * 4 for t in full.values()):
            raise AssertionError(f"{what}: read {report}, own shards {own} bytes")
        for name, p in model.state_dict().items():
            torch.testing.assert_close(
                p.full_tensor().cpu(), full[name], atol=0, rtol=0, msg=lambda m: f"{what} {name}: {m}"
            )
    plain = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(dev)
    load_safetensors(plain, os.path.join(path, "model.safetensors.index.json"))
    for name, p in plain.state_dict().items():
        same(p, full[name], f"unsharded {name}")


def mixed(rank: int, world: int, dev: torch.device) -> None:
    """A group initialised as "cpu:gloo,tpu:tpu" sends CPU tensors to gloo and tpu tensors to
    the tpu backend."""
    for device in ("cpu", dev):
        x = torch.full((4,), float(rank + 1), device=device)
        dist.all_reduce(x)
        same(x, torch.full((4,), float(world * (world + 1) // 2)), f"all_reduce on {device}")
        parts = [torch.empty(2, device=device) for _ in range(world)]
        dist.all_gather(parts, torch.full((2,), float(rank), device=device))
        for r in range(world):
            same(parts[r], torch.full((2,), float(r)), f"all_gather part {r} on {device}")


CHECKS = {
    "collectives": collectives,
    "errors": errors,
    "ddp": ddp,
    "mixed": mixed,
    "fsdp": fsdp,
    "tensor_parallel": tensor_parallel,
    "sharded_load": sharded_load,
}


def run_rank(rank: int, world: int, check: str) -> None:
    timeout = timedelta(seconds=3 if check == "errors" else 120)
    backend = "cpu:gloo,tpu:tpu" if check == "mixed" else "tpu"
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=timeout)
    dev = torch.device("tpu", torch.tpu.current_device())
    CHECKS[check](rank, world, dev)
    if torch.tpu.metrics()["fallback_count"]:
        raise AssertionError(f"{torch.tpu.metrics()['fallback_count']} ops fell back to CPU")
    print(f"ok {check} rank {rank}", flush=True)


def main() -> None:
    if sys.argv[1] == "spawn":
        world, check = int(sys.argv[2]), sys.argv[3]
        from tpurs.distributed import spawn

        spawn(run_rank, args=(world, check), nprocs=world)
        # The collectives ran as PJRT programs across the devices, not through the host.
        if check != "errors" and torch.tpu.metrics()["collectives"] == 0:
            raise AssertionError("no PJRT collective ran")
    else:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
        run_rank(rank, world, sys.argv[1])
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
