"""Loading a safetensors checkpoint straight into sharded parameters.

Parameters that are DTensors (FSDP2's `fully_shard`, `parallelize_module`) are filled shard
by shard: each rank memory-maps the files and reads only the slices its shards cover, so no
process holds a full tensor and no device receives one. Plain tensors are read whole."""

from __future__ import annotations

import json
import math
import os
from contextlib import ExitStack
from dataclasses import dataclass

import torch
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset


@dataclass
class LoadReport:
    """What one rank read: bytes of tensor data, against the checkpoint's total."""

    bytes_read: int
    checkpoint_bytes: int
    tensors: int


def weight_files(path: str) -> dict[str, str]:
    """Tensor name -> file for a `.safetensors` file, a Hugging Face index
    (`*.safetensors.index.json`), or a directory holding either."""
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        index = [n for n in names if n.endswith(".safetensors.index.json")]
        if index:
            path = os.path.join(path, index[0])
        else:
            files = [os.path.join(path, n) for n in names if n.endswith(".safetensors")]
            if len(files) != 1:
                raise FileNotFoundError(f"{path}: expected one .safetensors file or an index, found {len(files)}")
            path = files[0]
    if path.endswith(".json"):
        with open(path) as f:
            weight_map = json.load(f)["weight_map"]
        base = os.path.dirname(path)
        return {name: os.path.join(base, file) for name, file in weight_map.items()}
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        return dict.fromkeys(f.keys(), path)


@torch.no_grad()
def load_safetensors(module: torch.nn.Module, path: str, strict: bool = True) -> LoadReport:
    """Copies the checkpoint at `path` into `module`'s parameters and buffers in place,
    sharded ones shard by shard. With `strict`, names missing on either side raise a
    `KeyError`; a shape that differs from the module's raises a `ValueError`."""
    from safetensors import safe_open

    files = weight_files(path)
    state = module.state_dict()
    if strict:
        missing, unexpected = state.keys() - files.keys(), files.keys() - state.keys()
        if missing or unexpected:
            raise KeyError(f"load_safetensors: missing {sorted(missing)}, unexpected {sorted(unexpected)}")
    read = total = count = 0
    with ExitStack() as stack:
        handles = {}
        for file in sorted(set(files.values())):
            handles[file] = stack.enter_context(safe_open(file, framework="pt"))
        for name, file in files.items():
            stored = handles[file].get_slice(name)
            shape = tuple(stored.get_shape())
            total += math.prod(shape) * _itemsize(stored.get_dtype(), name)
            if name not in state:
                continue
            target = state[name]
            if shape != tuple(target.shape):
                raise ValueError(
                    f"load_safetensors: {name} is {list(shape)} in the checkpoint, {list(target.shape)} in the module"
                )
            if isinstance(target, DTensor):
                local = target.to_local()
                local_shape, offset = compute_local_shape_and_global_offset(
                    target.shape, target.device_mesh, target.placements
                )
                if math.prod(local_shape) == 0:
                    continue
                part = stored[tuple(slice(o, o + n) for o, n in zip(offset, local_shape))]
                local.copy_(part.view(local.shape))
            else:
                part = handles[file].get_tensor(name)
                target.copy_(part)
            read += part.numel() * part.element_size()
            count += 1
    return LoadReport(bytes_read=read, checkpoint_bytes=total, tensors=count)


def _itemsize(safetensors_dtype: str, name: str) -> int:
    """Bytes per element of a safetensors dtype tag ("F32", "BF16", "F8_E4M3", ...)."""
    sizes = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2}
    if safetensors_dtype in sizes:
        return sizes[safetensors_dtype]
    if safetensors_dtype in ("I8", "U8", "BOOL") or safetensors_dtype.startswith("F8_"):
        return 1
    raise ValueError(f"load_safetensors: {name} has dtype {safetensors_dtype}, which torch cannot hold")
