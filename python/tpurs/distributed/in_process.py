"""Ranks that are threads of one process, one device each (`tpurs.distributed.spawn`).

Every collective is a rendezvous: each rank deposits its tensors and a signature; the last
rank to arrive checks that the signatures agree (else every rank raises a RuntimeError
naming the difference), runs the collective for all ranks (one PJRT program over their
devices, or device-to-device copies for broadcast, gather, scatter), and wakes the others.
A rank that waits longer than the group's timeout raises, naming the ranks that never came."""

from __future__ import annotations

import threading
from datetime import timedelta

import torch
from torch.utils._python_dispatch import _disable_current_modes

from .. import _core
from .._dtypes import DTYPE_CODES

_session = threading.local()
_lock = threading.Lock()
_groups: dict[tuple[int, str], _Group] = {}
_session_ids = iter(range(1, 1 << 62))


def active() -> bool:
    """Whether this thread is a rank started by `spawn`."""
    return getattr(_session, "id", None) is not None


def enter(session: int) -> None:
    _session.id = session


def new_session() -> int:
    with _lock:
        return next(_session_ids)


def end_session(session: int) -> None:
    with _lock:
        for key in [k for k in _groups if k[0] == session]:
            del _groups[key]


class CollectiveMismatch(RuntimeError):
    pass


class _Slot:
    def __init__(self, size: int):
        self.payloads: list = [None] * size
        self.signatures: list = [None] * size
        self.arrived = 0
        self.left = 0
        self.done = False
        self.error: BaseException | None = None


class _Group:
    """The state shared by the ranks of one group: open collectives by sequence number and
    point-to-point mailboxes."""

    def __init__(self, size: int):
        self.size = size
        self.cond = threading.Condition()
        self.slots: dict[int, _Slot] = {}
        self.mail: dict[tuple[int, int, int], list[torch.Tensor]] = {}

    def exchange(self, seq: int, rank: int, signature, payload, work, timeout: float):
        with self.cond:
            slot = self.slots.setdefault(seq, _Slot(self.size))
            if not slot.done:
                slot.payloads[rank] = payload
                slot.signatures[rank] = signature
                slot.arrived += 1
                if slot.arrived == self.size:
                    try:
                        _check_signatures(seq, slot.signatures)
                        # The work is done for every rank, so none of this thread's dispatch
                        # modes (a compiled region's, say) may see it.
                        with _disable_current_modes(), torch.no_grad():
                            work(slot.payloads)
                    except BaseException as e:  # handed to every rank
                        slot.error = e
                    slot.done = True
                    self.cond.notify_all()
                elif not self.cond.wait_for(lambda: slot.done, timeout):
                    missing = [r for r, sig in enumerate(slot.signatures) if sig is None]
                    slot.error = RuntimeError(
                        f"tpu process group: collective #{seq} {signature[0]} timed out after "
                        f"{timeout:.0f} s waiting for rank(s) {missing}"
                    )
                    slot.done = True
                    self.cond.notify_all()
            slot.left += 1
            if slot.left == self.size:
                del self.slots[seq]
            slot.payloads[rank] = None
            if slot.error is not None:
                raise slot.error

    def post(self, key: tuple[int, int, int], t: torch.Tensor) -> None:
        with self.cond:
            self.mail.setdefault(key, []).append(t)
            self.cond.notify_all()

    def take(self, key: tuple[int, int, int], timeout: float) -> torch.Tensor:
        with self.cond:
            if not self.cond.wait_for(lambda: self.mail.get(key), timeout):
                raise RuntimeError(
                    f"tpu process group: recv from rank {key[0]} (tag {key[2]}) timed out after {timeout:.0f} s"
                )
            return self.mail[key].pop(0)


def _check_signatures(seq: int, signatures: list) -> None:
    first = signatures[0]
    for rank, sig in enumerate(signatures):
        if sig != first:
            raise CollectiveMismatch(
                f"tpu process group: mismatched collective #{seq}: rank 0 called {_describe(first)}, "
                f"rank {rank} called {_describe(sig)}"
            )


def _describe(sig) -> str:
    name, *details = sig
    return f"{name}({', '.join(str(d) for d in details)})"


def _dense(t: torch.Tensor) -> bool:
    """Whether `t` covers its whole storage contiguously from offset 0 (what the runtime's
    collectives read and write)."""
    return (
        t.is_contiguous() and t.storage_offset() == 0 and t.untyped_storage().nbytes() == t.numel() * t.element_size()
    )


def _collective(kind: str, reduce: str, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
    """Runs one runtime collective, staging through dense copies where needed."""
    if inputs[0].numel() == 0:
        return
    ins = [t if _dense(t) else t.contiguous().clone() for t in inputs]
    outs = [
        o if o is i or _dense(o) else torch.empty(o.shape, dtype=o.dtype, device=o.device)
        for o, i in zip(outputs, inputs)
    ]
    outs = [ins[r] if outputs[r] is inputs[r] else o for r, o in enumerate(outs)]
    _core.collective(
        kind,
        reduce,
        _scalar_type(ins[0].dtype),
        ins[0].numel(),
        [t.untyped_storage().data_ptr() for t in ins],
        [t.untyped_storage().data_ptr() for t in outs],
    )
    for o, staged in zip(outputs, outs):
        if o is not staged:
            o.copy_(staged.view(o.shape))


def _scalar_type(dtype: torch.dtype) -> int:
    """c10's ScalarType code of `dtype`."""
    if dtype not in _CODES:
        raise TypeError(f"tpu process group: collectives on {dtype} are not supported")
    return _CODES[dtype]


# Collectives run on the runtime's dtypes but the wide unsigned ones.
_CODES = {d: c for d, c in DTYPE_CODES.items() if d not in (torch.uint16, torch.uint32, torch.uint64)}


class Transport:
    """The primitives of `backend.TpuBackend` for thread ranks."""

    def __init__(self, group_id: str, rank: int, size: int, global_ranks: list[int], timeout: timedelta):
        self.rank = rank
        self.size = size
        self.timeout = timeout.total_seconds()
        self.seq = 0
        with _lock:
            self.group = _groups.setdefault((_session.id, group_id), _Group(size))

    def _run(self, signature, payload, work) -> None:
        self.seq += 1
        self.group.exchange(self.seq, self.rank, signature, payload, work, self.timeout)

    def all_reduce(self, t: torch.Tensor, reduce: str) -> None:
        self._run(
            ("all_reduce", reduce, t.dtype, tuple(t.shape)), t, lambda ts: _collective("all_reduce", reduce, ts, ts)
        )

    def all_gather(self, out: torch.Tensor, inp: torch.Tensor) -> None:
        def work(ps):
            _collective("all_gather", "sum", [p[1] for p in ps], [p[0] for p in ps])

        self._run(("all_gather", inp.dtype, tuple(inp.shape)), (out, inp), work)

    def reduce_scatter(self, out: torch.Tensor, inp: torch.Tensor, reduce: str) -> None:
        def work(ps):
            _collective("reduce_scatter", reduce, [p[1] for p in ps], [p[0] for p in ps])

        self._run(("reduce_scatter", reduce, inp.dtype, tuple(inp.shape)), (out, inp), work)

    def all_to_all(self, out: torch.Tensor, inp: torch.Tensor, out_splits: list[int], in_splits: list[int]) -> None:
        self._run(("all_to_all", inp.dtype, tuple(inp.shape[1:])), (out, inp, out_splits, in_splits), self._all_to_all)

    def _all_to_all(self, ps) -> None:
        n = self.size
        rows = [p[1].shape[0] if p[1].dim() else 1 for p in ps]
        splits_in = [p[3] or [rows[r] // n] * n for r, p in enumerate(ps)]
        for r, s in enumerate(splits_in):
            if sum(s) != rows[r] or len(s) != n:
                raise ValueError(f"all_to_all: rank {r} splits {s} do not cover its {rows[r]} rows in {n} parts")
        width = max(max(s) for s in splits_in)
        if all(s == [width] * n for s in splits_in):
            _collective("all_to_all", "sum", [p[1] for p in ps], [p[0] for p in ps])
            return
        # Uneven splits: pad every chunk to the widest, exchange, then drop the padding.
        padded = []
        for (_, inp, _, _), s in zip(ps, splits_in):
            buf = inp.new_zeros((n * width, *inp.shape[1:]))
            for j, part in enumerate(inp.split(s)):
                buf[j * width : j * width + s[j]].copy_(part)
            padded.append(buf)
        received = [torch.empty_like(b) for b in padded]
        _collective("all_to_all", "sum", padded, received)
        for r, (out, _, _, _) in enumerate(ps):
            parts = [received[r][j * width : j * width + splits_in[j][r]] for j in range(n)]
            out.copy_(torch.cat(parts).view(out.shape))

    def broadcast(self, t: torch.Tensor, root: int) -> None:
        def work(ts):
            for r, other in enumerate(ts):
                if r != root:
                    other.copy_(ts[root])

        self._run(("broadcast", root, t.dtype, tuple(t.shape)), t, work)

    def gather(self, outs: list[torch.Tensor] | None, inp: torch.Tensor, root: int) -> None:
        def work(ps):
            for r, (_, part) in enumerate(ps):
                ps[root][0][r].copy_(part)

        self._run(("gather", root, inp.dtype, tuple(inp.shape)), (outs, inp), work)

    def scatter(self, out: torch.Tensor, ins: list[torch.Tensor] | None, root: int) -> None:
        def work(ps):
            for r, (o, _) in enumerate(ps):
                o.copy_(ps[root][1][r])

        self._run(("scatter", root, out.dtype, tuple(out.shape)), (out, ins), work)

    def barrier(self) -> None:
        self._run(("barrier",), None, lambda _: None)

    def send(self, t: torch.Tensor, dst: int, tag: int) -> None:
        self.group.post((self.rank, dst, tag), t.clone())

    def recv(self, t: torch.Tensor, src: int, tag: int) -> None:
        t.copy_(self.group.take((src, self.rank, tag), self.timeout))
