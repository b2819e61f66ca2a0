"""Ranks that are processes (torchrun): the XLA CPU plugin cannot run a program across
processes, so the data moves through a gloo group on host copies. Before each collective the
ranks compare signatures through the store, so a mismatched collective raises a RuntimeError
naming it instead of hanging in gloo."""

from __future__ import annotations

import pickle
from datetime import timedelta

import torch
import torch.distributed as dist

_GLOO_OPS = {
    "sum": dist.ReduceOp.SUM,
    "product": dist.ReduceOp.PRODUCT,
    "max": dist.ReduceOp.MAX,
    "min": dist.ReduceOp.MIN,
}


class Transport:
    """The primitives of `backend.TpuBackend` over gloo."""

    def __init__(self, store, rank: int, size: int, timeout: timedelta):
        self.rank = rank
        self.size = size
        self.store = dist.PrefixStore("tpurs/", store)
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
        self.seq = 0

    def _handshake(self, *signature) -> None:
        """Every rank publishes what it is about to run and checks the others'."""
        self.seq += 1
        seq = self.seq
        self.store.set(f"{seq}/{self.rank}", pickle.dumps(signature))
        keys = [f"{seq}/{r}" for r in range(self.size)]
        try:
            self.store.wait(keys)
        except Exception as e:  # the store's timeout
            raise RuntimeError(
                f"tpu process group: collective #{seq} {signature[0]} timed out waiting for the other ranks ({e})"
            ) from e
        for r in range(self.size):
            other = pickle.loads(self.store.get(keys[r]))
            if other != signature:
                raise RuntimeError(
                    f"tpu process group: mismatched collective #{seq}: rank {self.rank} called "
                    f"{signature}, rank {r} called {other}"
                )
        # Every rank has read the keys of collective seq-1 once all have published seq.
        if seq > 1:
            self.store.delete_key(f"{seq - 1}/{self.rank}")

    def all_reduce(self, t: torch.Tensor, reduce: str) -> None:
        self._handshake("all_reduce", reduce, str(t.dtype), tuple(t.shape))
        host = t.cpu()
        self.gloo.allreduce([host], _opts(reduce)).wait()
        t.copy_(host)

    def all_gather(self, out: torch.Tensor, inp: torch.Tensor) -> None:
        self._handshake("all_gather", str(inp.dtype), tuple(inp.shape))
        parts = [torch.empty(inp.shape, dtype=inp.dtype) for _ in range(self.size)]
        self.gloo.allgather([parts], [inp.cpu()]).wait()
        out.copy_(torch.cat([p.reshape(-1) for p in parts]).view(out.shape))

    def reduce_scatter(self, out: torch.Tensor, inp: torch.Tensor, reduce: str) -> None:
        self._handshake("reduce_scatter", reduce, str(inp.dtype), tuple(inp.shape))
        host = inp.cpu().reshape(-1)
        self.gloo.allreduce([host], _opts(reduce)).wait()
        out.copy_(host.chunk(self.size)[self.rank].view(out.shape))

    def all_to_all(self, out: torch.Tensor, inp: torch.Tensor, out_splits: list[int], in_splits: list[int]) -> None:
        self._handshake("all_to_all", str(inp.dtype), tuple(inp.shape[1:]))
        host_out = torch.empty(out.shape, dtype=out.dtype)
        self.gloo.alltoall_base(host_out, inp.cpu(), out_splits, in_splits).wait()
        out.copy_(host_out)

    def broadcast(self, t: torch.Tensor, root: int) -> None:
        self._handshake("broadcast", root, str(t.dtype), tuple(t.shape))
        host = t.cpu()
        opts = dist.BroadcastOptions()
        opts.rootRank = root
        self.gloo.broadcast([host], opts).wait()
        t.copy_(host)

    def gather(self, outs: list[torch.Tensor] | None, inp: torch.Tensor, root: int) -> None:
        self._handshake("gather", root, str(inp.dtype), tuple(inp.shape))
        host_outs = [torch.empty(inp.shape, dtype=inp.dtype) for _ in range(self.size)] if self.rank == root else []
        opts = dist.GatherOptions()
        opts.rootRank = root
        self.gloo.gather([host_outs] if host_outs else [], [inp.cpu()], opts).wait()
        for o, h in zip(outs or [], host_outs):
            o.copy_(h)

    def scatter(self, out: torch.Tensor, ins: list[torch.Tensor] | None, root: int) -> None:
        self._handshake("scatter", root, str(out.dtype), tuple(out.shape))
        host = torch.empty(out.shape, dtype=out.dtype)
        opts = dist.ScatterOptions()
        opts.rootRank = root
        self.gloo.scatter([host], [[t.cpu() for t in ins]] if self.rank == root else [], opts).wait()
        out.copy_(host)

    def barrier(self) -> None:
        self._handshake("barrier")

    def send(self, t: torch.Tensor, dst: int, tag: int) -> None:
        self.gloo.send([t.cpu()], dst, tag).wait()

    def recv(self, t: torch.Tensor, src: int, tag: int) -> None:
        host = torch.empty(t.shape, dtype=t.dtype)
        self.gloo.recv([host], src, tag).wait()
        t.copy_(host)


def _opts(reduce: str) -> dist.AllreduceOptions:
    opts = dist.AllreduceOptions()
    opts.reduceOp = _GLOO_OPS[reduce]
    return opts
