import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
# Every test compares the tpu device with CPU PyTorch: an op run on the CPU fallback would
# compare CPU with CPU, so it raises instead. Tests about the fallback run a subprocess
# without this.
os.environ.setdefault("TPURS_FALLBACK", "error")

import tpurs  # noqa: E402,F401  (registers the device even if autoload is disabled)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
