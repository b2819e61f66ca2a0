"""Eager ops run through torch's own decompositions (`torch._decomp`) into ops tpurs lowers,
instead of a CPU round trip, for ops without a Rust rule. Only the functional overloads
listed here, each checked against CPU PyTorch by the OpInfo sweep (`tools/opinfo_report.py`)
and `tests/test_decompositions.py`: a decomposition registered for an op it calls back into
(several `out=` and in-place ones do) would recurse, so the list is chosen, not derived.
`OWN` adds formulas of tpurs' own for backwards torch does not decompose.
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
    "col2im.default",
    "count_nonzero.default",
    "count_nonzero.dim_IntList",
    "grid_sampler_2d.default",
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


def _margin_scale(grad_output: torch.Tensor, grad: torch.Tensor, reduction: int) -> torch.Tensor:
    """CPU's last step: a reduced loss scales every element, an unreduced one each sample."""
    if reduction != 0 or grad_output.dim() == 0:
        return grad * grad_output
    return grad * grad_output.reshape(-1, 1)


def _multi_margin_loss_backward(grad_output, x, target, p, margin, weight=None, reduction=1):
    """`multi_margin_loss_backward` (LossMultiMargin.cpp's loop, vectorized)."""
    rows = x.reshape(-1, x.shape[-1]) if x.dim() > 0 else x.reshape(1, 1)
    n, c = rows.shape
    t = target.reshape(-1, 1)
    scale = 1.0 / (n * c) if reduction == 1 else 1.0 / c
    z = margin - rows.gather(1, t) + rows
    classes = torch.arange(c, device=x.device)
    active = (z > 0) & (classes != t)
    h = torch.where(active, (2 * scale) * z if p == 2 else torch.full_like(z, scale), 0.0)
    if weight is not None:
        h = h * weight[t]
    grad = h - (classes == t) * h.sum(1, keepdim=True)
    return _margin_scale(grad_output, grad, reduction).reshape(x.shape)


def _multilabel_margin_loss_backward(grad_output, x, target, reduction, is_target):
    """`multilabel_margin_loss_backward`: each target class up to the first -1 against every
    non-target class (LossMultiLabelMargin.cpp's loop, vectorized)."""
    rows = x.reshape(-1, x.shape[-1]) if x.dim() > 0 else x.reshape(1, 1)
    n, c = rows.shape
    targets = target.reshape(n, c)
    valid = (targets >= 0).cumprod(1).bool()
    t = targets.clamp(min=0)
    scale = 1.0 / (n * c) if reduction == 1 else 1.0 / c
    z = 1 - rows.gather(1, t).unsqueeze(2) + rows.unsqueeze(1)  # [n, target slot, class]
    others = is_target.reshape(n, c) == 0
    active = (z > 0) & valid.unsqueeze(2) & others.unsqueeze(1)
    hits = active.to(x.dtype) * scale
    grad = hits.sum(1).scatter_add(1, t, -hits.sum(2))
    return _margin_scale(grad_output, grad, reduction).reshape(x.shape)


# Backwards torch has no decomposition for, written here from CPU PyTorch's kernels.
OWN = {
    "multi_margin_loss_backward.default": _multi_margin_loss_backward,
    "multilabel_margin_loss_backward.default": _multilabel_margin_loss_backward,
}


def _kernel(op: torch._ops.OpOverload, decomposition):
    def run(*args, **kwargs):
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
    for full, formula in OWN.items():
        name, overload = full.split(".")
        if name not in rules:
            _lib.impl(getattr(getattr(torch.ops.aten, name), overload), formula, "PrivateUse1")
