#!/usr/bin/env bash
# Sets up a development environment in .venv at the repo root: torch, the CPU PJRT plugin,
# test tools (pytest, pytest-xdist, hypothesis), Transformers and accelerate (for the model
# and Trainer tests), and tpurs itself (Rust extension built with maturin, editable install).
# The C++ bridge is compiled against the installed torch at first import.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TPURS_TORCH_VERSION:-2.15.0}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==${TORCH_VERSION}" numpy pytest "maturin>=1.5,<2" \
  "fastatomstruct-xla-cpu==2026.6.23" "ruff==0.17.6" "safetensors>=0.4" "transformers==5.25.0" "hypothesis==6.170.27" "expecttest==0.3.0" "pytest-xdist==3.8.0" \
  "torchvision==0.29.2" "diffusers==0.42.1" "jax==0.10.2" "accelerate==1.16.0"
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo (Rust) is required to build tpurs" >&2
  exit 1
fi
(. .venv/bin/activate && maturin develop -q --release)
# First import builds the C++ bridge for this torch and checks the device works.
.venv/bin/python -c "import torch; x = torch.ones(2, device='tpu'); assert (x + 1).sum().item() == 4.0; print('tpurs ready:', torch.tpu.platform(), torch.tpu.device_count(), 'device(s)')"
