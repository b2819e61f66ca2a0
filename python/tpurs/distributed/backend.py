"""The "tpu" process-group backend: c10d's calls mapped onto a few primitives that a
transport implements. Two transports: ranks that are threads of this process exchange
through PJRT collectives over the process's devices (`in_process.py`); ranks that are
processes exchange host copies through gloo (`host.py`)."""

from __future__ import annotations

from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import _create_work_from_future
from torch.futures import Future

ReduceOp = dist.ReduceOp.RedOpType

# c10d's reduction -> (our reduction, divide by the group size afterwards).
_REDUCTIONS = {
    ReduceOp.SUM: ("sum", False),
    ReduceOp.AVG: ("sum", True),
    ReduceOp.PRODUCT: ("product", False),
    ReduceOp.MAX: ("max", False),
    ReduceOp.MIN: ("min", False),
}


def reduction(op, dtype: torch.dtype) -> tuple[str, bool]:
    """Our name for a c10d reduction on `dtype`, and whether to average afterwards."""
    kind = op.op if hasattr(op, "op") else op
    if kind not in _REDUCTIONS:
        raise ValueError(f"tpu process group: reduction {kind} is not supported")
    name, average = _REDUCTIONS[kind]
    if average and not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"tpu process group: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    return name, average


def done(result) -> object:
    """A completed work object (the transports finish their work before returning)."""
    fut = Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def check_tpu(*tensors: torch.Tensor) -> None:
    for t in tensors:
        if t.device.type != "tpu":
            raise ValueError(f"tpu process group: expected tensors on tpu, got one on {t.device}")


def _eager_only(cls):
    """c10d calls these methods from C++ (DDP's reducer, say) while a compiled region runs;
    torch.compile must not trace them (the transports move data on the host and between
    devices, outside any graph)."""
    for name, fn in list(vars(cls).items()):
        if callable(fn) and not name.startswith("_"):
            setattr(cls, name, torch.compiler.disable(fn, recursive=True))
    return cls


@_eager_only
class TpuBackend(_C10dBackend):
    """c10d backend for tensors on tpu."""

    def __init__(self, transport, rank: int, size: int):
        super().__init__(rank, size)
        self._t = transport
        self._size = size

    def getBackendName(self) -> str:  # noqa: N802 - c10d's name
        return "tpu"

    # -- reductions ------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        check_tpu(*tensors)
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        for t in tensors:
            name, average = reduction(op, t.dtype)
            self._t.all_reduce(t, name)
            if average:
                t.div_(self._size)
        return done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts=None):
        # Every rank computes the reduction; only the root's result is specified.
        return self.allreduce(tensors, opts)

    def reduce_scatter_single(self, output, input, opts=None):
        check_tpu(output, input)
        name, average = reduction(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, input.dtype)
        if input.numel() != output.numel() * self._size:
            raise ValueError(
                f"reduce_scatter: input has {input.numel()} elements, expected {self._size} x {output.numel()}"
            )
        self._t.reduce_scatter(output, input, name)
        if average:
            output.div_(self._size)
        return done([output])

    def reduce_scatter(self, outputs, input_lists, opts=None):
        for out, inputs in zip(outputs, input_lists, strict=True):
            flat = torch.cat([t.reshape(-1) for t in inputs])
            self.reduce_scatter_single(out, flat, opts)
        return done(outputs)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs, strict=True):
            self.reduce_scatter_single(out, inp, opts)
        return done(outputs)

    # -- gathers ---------------------------------------------------------------------------

    def all_gather_single(self, output, input, opts=None):
        check_tpu(output, input)
        if output.numel() != input.numel() * self._size:
            raise ValueError(
                f"all_gather: output has {output.numel()} elements, expected {self._size} x {input.numel()}"
            )
        self._t.all_gather(output, input)
        return done([output])

    def allgather(self, output_lists, inputs, opts=None):
        for outs, inp in zip(output_lists, inputs, strict=True):
            if len(outs) != self._size:
                raise ValueError(f"all_gather: {len(outs)} outputs for a group of {self._size}")
            flat = torch.empty((self._size, *inp.shape), dtype=inp.dtype, device=inp.device)
            self.all_gather_single(flat, inp)
            for out, part in zip(outs, flat.unbind(0)):
                out.copy_(part)
        return done(output_lists)

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        return self.allgather(output_lists, inputs, opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs, strict=True):
            self.all_gather_single(out, inp)
        return done(outputs)

    def gather(self, output_lists, inputs, opts):
        check_tpu(*inputs)
        self._t.gather(output_lists[0] if output_lists else None, inputs[0], opts.rootRank)
        return done(output_lists)

    # -- scatters and exchanges ------------------------------------------------------------

    def broadcast(self, tensors, opts):
        check_tpu(*tensors)
        for t in tensors:
            self._t.broadcast(t, opts.rootRank)
        return done(tensors)

    def scatter(self, outputs, input_lists, opts):
        check_tpu(*outputs)
        self._t.scatter(outputs[0], input_lists[0] if input_lists else None, opts.rootRank)
        return done(outputs)

    def all_to_all_single(self, output, input, output_splits, input_splits, opts=None):
        check_tpu(output, input)
        self._t.all_to_all(output, input, list(output_splits), list(input_splits))
        return done([output])

    def alltoall(self, outputs, inputs, opts=None):
        check_tpu(*outputs, *inputs)
        flat_in = torch.cat([t.reshape(-1) for t in inputs])
        flat_out = torch.empty(sum(t.numel() for t in outputs), dtype=flat_in.dtype, device=flat_in.device)
        self._t.all_to_all(flat_out, flat_in, [t.numel() for t in outputs], [t.numel() for t in inputs])
        for out, part in zip(outputs, flat_out.split([t.numel() for t in outputs])):
            out.copy_(part.view(out.shape))
        return done(outputs)

    # -- point to point and barrier --------------------------------------------------------

    def send(self, tensors, dst: int, tag: int):
        check_tpu(*tensors)
        for t in tensors:
            self._t.send(t, dst, tag)
        return done(tensors)

    def recv(self, tensors, src: int, tag: int):
        check_tpu(*tensors)
        for t in tensors:
            self._t.recv(t, src, tag)
        return done(tensors)

    def barrier(self, opts=None):
        self._t.barrier()
        return done([])


def create(opts, backend_options=None) -> TpuBackend:
    """c10d's creator for the "tpu" backend (extended API)."""
    from . import in_process

    timeout = opts.timeout if isinstance(opts.timeout, timedelta) else timedelta(minutes=30)
    if in_process.active():
        transport = in_process.Transport(
            opts.group_id, opts.group_rank, opts.group_size, list(opts.global_ranks_in_group or []), timeout
        )
    else:
        from .host import Transport

        transport = Transport(opts.store, opts.group_rank, opts.group_size, timeout)
    return TpuBackend(transport, opts.group_rank, opts.group_size)
