import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

import tpurs  # noqa: E402,F401  (registers the device even if autoload is disabled)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
