"""The runtime's dtype codes (c10::ScalarType numbering), shared by everything that hands
types to `_core`."""

import torch

DTYPE_CODES = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bool: 11,
    torch.bfloat16: 15,
    torch.float8_e5m2: 23,
    torch.float8_e4m3fn: 24,
    torch.float8_e5m2fnuz: 25,
    torch.float8_e4m3fnuz: 26,
    torch.uint16: 27,
    torch.uint32: 28,
    torch.uint64: 29,
}
