"""Eager ops run through torch's own decompositions (`torch._decomp`) into ops tpurs lowers,
instead of a CPU round trip, for ops without a Rust rule. Only the functional overloads
listed here, each checked against CPU PyTorch by the OpInfo sweep (`tools/opinfo_report.py`)
and `tests/test_decompositions.py`: a decomposition registered for an op it calls back into
(several `out=` and in-place ones do) would recurse, so the list is chosen, not derived.
The backward of `upsample_bicubic2d` (and of bicubic `grid_sampler_2d`; the bilinear and
nearest ones have a Rust rule) has no decomposition and still runs on the CPU (or raises with
`TPURS_FALLBACK=error`)."""

from __future__ import annotations

import torch

from . import _core

DECOMPOSED = (
    "aminmax.default",
    "binary_cross_entropy.default",
    "binary_cross_entropy_backward.default",
    "channel_shuffle.default",
    "col2im.default",
    "count_nonzero.default",
    "count_nonzero.dim_IntList",
    "grid_sampler_2d.default",
    "heaviside.default",
    "huber_loss.default",
    "huber_loss_backward.default",
    "im2col.default",
    "multi_margin_loss.default",
    "multilabel_margin_loss_forward.default",
    "renorm.default",
    "sinc.default",
    "smooth_l1_loss.default",
    "smooth_l1_loss_backward.default",
    "upsample_bicubic2d.default",
    "upsample_bicubic2d.vec",
)

_lib: torch.library.Library | None = None


def _heaviside_checks(x: torch.Tensor, values: torch.Tensor) -> None:
    if x.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


# CPU's argument checks that torch's decompositions leave out.
CHECKS = {"heaviside.default": _heaviside_checks}


def _kernel(op: torch._ops.OpOverload, decomposition):
    check = CHECKS.get(str(op).removeprefix("aten."))

    def run(*args, **kwargs):
        if check is not None:
            check(*args, **kwargs)
        out = decomposition(*args, **kwargs)
        if out is NotImplemented:
            raise NotImplementedError(f"tpurs: torch's decomposition of {op} does not cover these arguments")
        return out

    return run


def install() -> None:
    """Registers the listed decompositions as the tpu kernels of their ops (once); an op that
    gains a Rust rule keeps the rule."""
    global _lib
    if _lib is not None:
        return
    from torch._decomp import decomposition_table

    rules = set(_core.op_names())
    _lib = torch.library.Library("aten", "IMPL")
    for full in DECOMPOSED:
        name, overload = full.split(".")
        op = getattr(getattr(torch.ops.aten, name), overload)
        if (name if overload == "default" else full) in rules or op not in decomposition_table:
            continue
        _lib.impl(op, _kernel(op, decomposition_table[op]), "PrivateUse1")
