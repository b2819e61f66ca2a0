"""StableHLO written outside tpurs, run as a torch op on tpu tensors.

`torch.tpu.ops.stablehlo(text)` takes a module (or bare `func.func` definitions) whose
`@main` is the entry point and returns a callable over tensors of exactly `@main`'s types.
Each call is `torch.ops.tpurs.stablehlo(id, inputs)`: the function's text joins the program
beside the ops around it (fused eager, compiled graphs) and is cached like them. It has a
fake implementation, so `torch.compile` traces it. It is not differentiable by itself;
`torch.tpu.pallas.jax_op` adds gradients for JAX functions.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import torch

from . import _core
from ._dtypes import DTYPE_CODES

__all__ = ["StableHLOFunction", "stablehlo"]

_CODES = {**DTYPE_CODES, torch.complex64: 9, torch.complex128: 10}
_ELEMENT_TYPES = {
    "i1": torch.bool,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "ui8": torch.uint8,
    "ui16": torch.uint16,
    "ui32": torch.uint32,
    "ui64": torch.uint64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
    "f8E5M2": torch.float8_e5m2,
    "f8E4M3FN": torch.float8_e4m3fn,
    "f8E5M2FNUZ": torch.float8_e5m2fnuz,
    "f8E4M3FNUZ": torch.float8_e4m3fnuz,
    "complex<f32>": torch.complex64,
    "complex<f64>": torch.complex128,
}
_TENSOR_TYPE = re.compile(r"tensor<((?:[^<>]|<[^<>]*>)*)>")
_DEFINED = re.compile(r"func\.func\s+(?:(?:public|private)\s+)?@([\w$.-]+)")
_SYMBOL = re.compile(r"@([\w$.-]+)")
_prefixes = itertools.count()
# Result types by id, for the fake implementation.
_results: dict[int, list[tuple[tuple[int, ...], torch.dtype]]] = {}

Spec = tuple[tuple[int, ...], torch.dtype]


def _spec(text: str) -> Spec:
    """(shape, dtype) of the inside of a `tensor<...>` type: `3x4xf32`, `complex<f32>`."""
    head, complex_, tail = text.partition("complex<")
    if complex_:
        dims, element = [d for d in head.split("x") if d], complex_ + tail
    else:
        *dims, element = text.split("x")
    if element not in _ELEMENT_TYPES or any(not d.isdigit() for d in dims):
        raise ValueError(f"tpurs.stablehlo: unsupported type tensor<{text}> (static shapes only)")
    return tuple(int(d) for d in dims), _ELEMENT_TYPES[element]


def bracket_end(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket matching the one at `start` (strings skipped)."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        c = text[i]
        if c == '"' and text[i - 1] != "\\":
            quoted = not quoted
        elif not quoted and c == open_:
            depth += 1
        elif not quoted and c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("tpurs.stablehlo: unbalanced brackets in the module text")


def _functions(text: str) -> str:
    """The `func.func` definitions of a module (its wrapper and attributes removed)."""
    text = text.strip()
    if not text.startswith("module"):
        return text
    i = len("module")
    while True:  # skip `@name` and `attributes {...}` up to the body's brace
        brace = text.index("{", i)
        if text[i:brace].rstrip().endswith("attributes"):
            i = bracket_end(text, brace, "{", "}")
            continue
        return text[brace + 1 : bracket_end(text, brace, "{", "}") - 1]


def _signature(functions: str) -> tuple[list[Spec], list[Spec]]:
    header = re.search(r"func\.func\s+(?:(?:public|private)\s+)?@main\s*\(", functions)
    if header is None:
        raise ValueError("tpurs.stablehlo: the text defines no func.func @main")
    params_end = bracket_end(functions, header.end() - 1, "(", ")")
    params = [_spec(t) for t in _TENSOR_TYPE.findall(functions[header.end() : params_end - 1])]
    rest = functions[params_end:].lstrip()
    if not rest.startswith("->"):
        return params, []
    rest = rest[2:].lstrip()
    results_text = rest[: bracket_end(rest, 0, "(", ")")] if rest.startswith("(") else rest[: rest.index("{")]
    return params, [_spec(t) for t in _TENSOR_TYPE.findall(results_text)]


class StableHLOFunction:
    """A StableHLO function registered with the runtime, called on tpu tensors."""

    def __init__(self, text: str):
        functions = _functions(text)
        self.params, self.results = _signature(functions)
        defined = set(_DEFINED.findall(functions))
        prefix = f"tpurs_ext{next(_prefixes)}_"
        functions = _SYMBOL.sub(lambda m: f"@{prefix}{m[1]}" if m[1] in defined else m[0], functions)
        functions = re.sub(r"func\.func\s+(?:public\s+)?@", "func.func private @", functions)
        self.id = _core.register_stablehlo(
            prefix + "main",
            functions,
            [(_CODES[d], list(s)) for s, d in self.params],
            [(_CODES[d], list(s)) for s, d in self.results],
        )
        if not _results:  # the op exists once the bridge is loaded; its fake from then on
            torch.library.register_fake("tpurs::stablehlo", _fake)
        _results[self.id] = self.results

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        self._check(inputs)
        outs = torch.ops.tpurs.stablehlo(self.id, list(inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check(self, inputs: Sequence[torch.Tensor]) -> None:
        if len(inputs) != len(self.params):
            raise TypeError(f"tpurs.stablehlo: @main takes {len(self.params)} tensors, got {len(inputs)}")
        for i, (t, (shape, dtype)) in enumerate(zip(inputs, self.params)):
            if tuple(t.shape) != shape or t.dtype != dtype:
                raise TypeError(
                    f"tpurs.stablehlo: input {i} is {t.dtype}{list(t.shape)} where @main takes {dtype}{list(shape)}"
                )


def stablehlo(text: str) -> StableHLOFunction:
    """A callable running the StableHLO module `text` (entry point `@main`) on tpu tensors."""
    return StableHLOFunction(text)


def _fake(id: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    device = inputs[0].device if inputs else torch.device("tpu")
    return [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in _results[id]]
