"""Ops on runs of equal values, written with ops tpurs lowers: a stable sort, a flag where
each run of equal values starts, the run of each element.
- `torch.unique` (`aten::_unique2`, `aten::unique_dim`, and the older `aten::_unique`) and
  `torch.unique_consecutive`: one host read, the number of runs, sizes the outputs (as
  `nonzero` does); values sorted as on CPU whatever `sorted` says, NaNs each their own
  value.
- `torch.mode`: no host read; the most frequent value (the smallest on ties) and the last
  index where it occurs, as on CPU."""

from __future__ import annotations

import warnings

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
            torch.empty(inverse_shape if return_inverse else 0, **long),
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


def unique_dim(
    x: torch.Tensor, dim: int, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`aten::unique_dim`: the distinct slices along `dim`, in lexicographic order (sorted
    whatever `sorted` says, as on CPU)."""
    long = dict(dtype=torch.long, device=x.device)
    rows = x.movedim(dim, 0)  # IndexError for a bad dim, as on CPU
    n = rows.shape[0]
    if n == 0:
        if sum(s == 0 for s in x.shape) > 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
        return x.clone(), torch.empty(0, **long), torch.empty(0, **long)
    if x.numel() == 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    flat = rows.reshape(n, -1)
    # Lexicographic order: stable sorts by each column, the last column first.
    order = torch.arange(n, **long)
    for j in reversed(range(flat.shape[1])):
        key = flat[:, j].index_select(0, order)
        order = order.index_select(0, key.sort(stable=True).indices)
    first, run_of_row, counts = _runs(flat.index_select(0, order))
    values = rows.index_select(0, order.index_select(0, first)).movedim(0, dim)
    inverse = torch.empty(0, **long)
    if return_inverse:
        inverse = torch.empty_like(run_of_row).index_put_((order,), run_of_row)
    return values, inverse, counts if return_counts else torch.empty(0, **long)


def _unique(x: torch.Tensor, sorted: bool = True, return_inverse: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`aten::_unique` (what `index_fill`'s backward calls): values and inverse."""
    values, inverse, _ = unique(x, sorted, return_inverse)
    return values, inverse


def mode(x: torch.Tensor, dim: int = -1, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.long, device=x.device)
    dim = dim % x.dim()
    if x.shape[dim] == 0:
        raise IndexError(f"mode(): Expected reduction dim {dim} to have non-zero size.")
    ordered, order = x.movedim(dim, -1).sort(stable=True, dim=-1)
    starts = torch.ones_like(ordered, dtype=torch.bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    run = starts.cumsum(-1) - 1
    length = torch.zeros_like(run).scatter_add_(-1, run, torch.ones_like(run)).gather(-1, run)
    # Runs are in ascending order and every element of a run has its length: the first
    # longest element starts the smallest most frequent value; its run's last element was
    # its last occurrence (the sort is stable).
    first = length.argmax(-1, keepdim=True)
    last = first + length.gather(-1, first) - 1
    values, indices = ordered.gather(-1, first), order.gather(-1, last)
    if keepdim:
        return values.movedim(-1, dim), indices.movedim(-1, dim)
    return values.squeeze(-1), indices.squeeze(-1)


def mode_out(
    x: torch.Tensor, dim: int = -1, keepdim: bool = False, *, values: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """`aten::mode.values`: `mode` written into `out=` tensors, with CPU's checks."""
    for out, dtype, name in ((values, x.dtype, "values"), (indices, torch.long, "indices")):
        if out.dtype != dtype:
            raise RuntimeError(
                f"expected scalar type '{_NAMES[dtype]}' but got '{_NAMES.get(out.dtype, out.dtype)}' for {name} output"
            )
    v, i = mode(x, dim, keepdim)
    for out, result in ((values, v), (indices, i)):
        if out.shape != result.shape:
            if out.numel() != 0:
                warnings.warn(
                    f"An output with one or more elements was resized since it had shape {list(out.shape)}, which "
                    f"does not match the required output shape {list(result.shape)}. This behavior is deprecated, "
                    "and in a future PyTorch release outputs will not be resized unless they have zero elements.",
                    UserWarning,
                    stacklevel=2,
                )
            out.resize_(result.shape)
        out.copy_(result)
    return values, indices


_NAMES = {
    torch.uint8: "Byte",
    torch.int8: "Char",
    torch.int16: "Short",
    torch.int32: "Int",
    torch.int64: "Long",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.float32: "Float",
    torch.float64: "Double",
    torch.bool: "Bool",
}


def install() -> None:
    """Registers them as the tpu kernels of their ops (once)."""
    global _lib
    if _lib is not None:
        return
    _lib = torch.library.Library("aten", "IMPL")
    _lib.impl("_unique2", unique, "PrivateUse1")
    _lib.impl("_unique", _unique, "PrivateUse1")
    _lib.impl("unique_dim", unique_dim, "PrivateUse1")
    _lib.impl("unique_consecutive", unique_consecutive, "PrivateUse1")
    _lib.impl("mode", mode, "PrivateUse1")
    _lib.impl("mode.values", mode_out, "PrivateUse1")
