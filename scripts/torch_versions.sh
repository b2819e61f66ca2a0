#!/usr/bin/env bash
# Builds the tpurs wheel once and runs a smoke sample of the tests against each torch version
# given (default: every minor version the package accepts), each in its own virtualenv under
# $TPURS_VERSIONS_DIR (default /tmp/tpurs-torch-versions). One line per version:
#   torch X.Y.Z: N passed, M failed (...)
# The bridge is compiled against each torch at its first import.
#   bash scripts/torch_versions.sh [VERSION...]
set -uo pipefail
cd "$(dirname "$0")/.."
VERSIONS=("$@")
[ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(2.11.0 2.12.1 2.13.0 2.14.1 2.15.0)
ROOT="${TPURS_VERSIONS_DIR:-/tmp/tpurs-torch-versions}"
SAMPLE=(tests/test_device.py tests/test_elementwise.py tests/test_nn.py tests/test_index.py tests/test_amp.py tests/test_profiler.py
  tests/test_compile.py)
mkdir -p "$ROOT/wheel"
rm -f "$ROOT"/wheel/tpurs-*.whl
(. .venv/bin/activate && maturin build --release -q -o "$ROOT/wheel") || exit 1
for version in "${VERSIONS[@]}"; do
  venv="$ROOT/torch-$version"
  log="$ROOT/torch-$version.log"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "torch==$version" numpy pytest "fastatomstruct-xla-cpu==2026.6.23" \
      "safetensors>=0.4" "hypothesis==6.170.27" >"$log" 2>&1 || { echo "torch $version: install failed"; continue; }
  fi
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$ROOT"/wheel/tpurs-*.whl >>"$log" 2>&1
  TPURS_BRIDGE_CACHE="$ROOT/bridge" "$venv/bin/python" -m pytest -q -p no:cacheprovider "${SAMPLE[@]}" >>"$log" 2>&1
  summary=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)" "$log" | tail -n 1 | tr -d '=')
  echo "torch $version: ${summary:-no result (see $log)}"
done
