#!/usr/bin/env bash
# Every check: Rust format and lints, Rust tests (against the CPU PJRT plugin), and the
# Python test suite comparing the tpu device with CPU PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv/bin/python -c "import tpurs" >/dev/null 2>&1 || [ ! -x .venv/bin/ruff ]; then
  bash scripts/setup.sh
fi
TPURS_PJRT_PLUGIN="$(.venv/bin/python -c 'import tpurs._plugin as p; print(p.find_plugin())')"
export TPURS_PJRT_PLUGIN
cargo fmt --all -- --check
.venv/bin/ruff format --check -q python tests bench tools examples
.venv/bin/ruff check -q --isolated --select F,E9,I python tests bench tools examples
cargo clippy -q --workspace --all-targets -- -D warnings
cargo test -q --workspace
# Strict eager on the integration and training tests, then everything in the default mode
# (fused eager).
TORCH_TPU_DEFER_AND_FUSE=0 .venv/bin/python -m pytest -q tests/test_device.py tests/test_training.py "$@"
.venv/bin/python -m pytest -q tests "$@"
# A fixed sample of PyTorch's own device-generic test files, beside CPU PyTorch.
bash scripts/pytorch_tests.sh
