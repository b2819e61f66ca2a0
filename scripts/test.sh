#!/usr/bin/env bash
# Every check: Rust format and lints, Rust tests (against the CPU PJRT plugin), and the
# Python test suite comparing the tpu device with CPU PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv/bin/python -c "import tpurs, xdist" >/dev/null 2>&1 || [ ! -x .venv/bin/ruff ]; then
  bash scripts/setup.sh
fi
TPURS_PJRT_PLUGIN="$(.venv/bin/python -c 'import tpurs._plugin as p; print(p.find_plugin())')"
export TPURS_PJRT_PLUGIN
cargo fmt --all -- --check
.venv/bin/ruff format --check -q python tests bench tools examples
.venv/bin/ruff check -q --isolated --select F,E9,I python tests bench tools examples
cargo clippy -q --workspace --all-targets -- -D warnings
cargo test -q --workspace
# Tests run in parallel processes (pytest-xdist), one per core up to 4 (TPURS_TEST_WORKERS
# overrides): compiling programs is most of their time, and the processes share the compile
# cache directory, where one waits for another's compile of the same program.
WORKERS="${TPURS_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
# Strict eager on the integration and training tests (less the bridge build, which does not
# depend on the mode), then everything in the default mode (fused eager).
TORCH_TPU_DEFER_AND_FUSE=0 .venv/bin/python -m pytest -q -n "$WORKERS" tests/test_device.py tests/test_training.py \
  --deselect tests/test_device.py::test_the_bridge_build_says_one_line_once "$@"
.venv/bin/python -m pytest -q -n "$WORKERS" tests "$@"
# A fixed sample of PyTorch's own device-generic test files, beside CPU PyTorch.
bash scripts/pytorch_tests.sh
