"""`torch.unique` (`aten::_unique2`) and `torch.unique_consecutive` on the device, written
with ops tpurs lowers: a stable sort (for `unique`), a flag where each run of equal values
starts, and one host read, the number of runs, which sizes the outputs (as `nonzero` does).
Output as on CPU: values sorted whatever `sorted` says, NaNs each their own value."""

from __future__ import annotations

import torch

_lib: torch.library.Library | None = None


def _runs(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For `rows` (`[n, ...]`): where each run of equal consecutive rows starts, each row's
    run, and the length of each run."""
    n = rows.shape[0]
    starts = torch.ones(n, dtype=torch.bool, device=rows.device)
    if n > 1:
        differs = rows[1:] != rows[:-1]
        starts[1:] = differs.flatten(1).any(1) if differs.dim() > 1 else differs
    run_of_row = starts.cumsum(0) - 1
    first = starts.nonzero().squeeze(1)  # the one host read: how many runs
    ends = torch.cat([first[1:], torch.tensor([n], device=rows.device)])
    return first, run_of_row, ends - first


def unique_consecutive(
    x: torch.Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    long = dict(dtype=torch.long, device=x.device)
    if dim is None:
        rows = x.flatten()
        inverse_shape = x.shape
    else:
        dim = dim % max(x.dim(), 1)
        rows = x.movedim(dim, 0)
        inverse_shape = (x.shape[dim],)
    if rows.shape[0] == 0:
        return (
            rows.clone().movedim(0, dim) if dim is not None else rows.clone(),
            torch.empty(0, **long),
            torch.empty(0, **long),
        )
    first, run_of_row, counts = _runs(rows)
    values = rows.index_select(0, first)
    if dim is not None:
        values = values.movedim(0, dim)
    inverse = run_of_row.reshape(inverse_shape) if return_inverse else torch.empty(0, **long)
    return values, inverse, counts if return_counts else torch.empty(0, **long)


def unique(
    x: torch.Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    long = dict(dtype=torch.long, device=x.device)
    flat = x.flatten()
    if flat.numel() == 0:
        return flat.clone(), torch.empty(x.shape, **long), torch.empty(0, **long)
    ordered, order = flat.sort(stable=True)
    first, run_of_row, counts = _runs(ordered)
    inverse = torch.empty(0, **long)
    if return_inverse:
        inverse = torch.empty_like(run_of_row).index_put_((order,), run_of_row).reshape(x.shape)
    return ordered.index_select(0, first), inverse, counts if return_counts else torch.empty(0, **long)


def install() -> None:
    """Registers both as the tpu kernels of their ops (once)."""
    global _lib
    if _lib is not None:
        return
    _lib = torch.library.Library("aten", "IMPL")
    _lib.impl("_unique2", unique, "PrivateUse1")
    _lib.impl("unique_consecutive", unique_consecutive, "PrivateUse1")
