"""The lowering table names real torch ops: a name without a schema would be skipped by the
bridge without a word, and its rule would never run."""

import torch
import torch._inductor.inductor_prims  # noqa: F401  (defines prims.fma, which the table names)
from tpurs import _core


def schema_of(full_name):
    namespace, _, rest = full_name.rpartition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, namespace or "aten"), name)
    return getattr(packet, overload or "default")._schema


def test_every_table_name_resolves_to_a_torch_schema():
    missing = []
    for name in _core.op_names():
        try:
            schema_of(name)
        except (AttributeError, RuntimeError):
            missing.append(name)
    assert not missing, f"table names without a torch schema: {missing}"


def test_out_overloads_are_the_tensor_out_ones():
    names = set(_core.op_names())
    for op in ("remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor"):
        assert f"{op}.Tensor_out" in names
        assert "out" in schema_of(f"{op}.Tensor_out").overload_name
