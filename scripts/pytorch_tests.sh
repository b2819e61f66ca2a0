#!/usr/bin/env bash
# PyTorch's own device-generic test files on tpu: a fixed sample of each of eight files, run
# beside CPU PyTorch (--control); fails when a file passes less than 90% of the sampled tests
# that pass on the CPU. The files come from Debian's source package of PyTorch 2.6 (a package
# registry, so CI reaches it), checked by SHA-256 and unpacked outside the repository: PyTorch's
# code is not vendored. Extra arguments go to tools/pytorch_tests.py.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${TPURS_PYTORCH_TESTS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tpurs/pytorch-2.6-tests}"
URL=https://deb.debian.org/debian/pool/main/p/pytorch/pytorch_2.6.0+dfsg.orig.tar.xz
SHA256=099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff
FILES=(view_ops indexing shape_ops sort_and_select tensor_creation_ops reductions binary_ufuncs
  unary_ufuncs)
if [ ! -f "$DIR/.unpacked" ]; then
  mkdir -p "$DIR"
  tarball="$DIR/pytorch.orig.tar.xz"
  curl -fsSL --retry 3 -o "$tarball" "$URL"
  echo "$SHA256  $tarball" | sha256sum -c --quiet
  members=()
  for f in "${FILES[@]}"; do members+=("pytorch-v2.6.0/test/test_$f.py"); done
  tar -xJf "$tarball" -C "$DIR" --strip-components=2 "${members[@]}"
  rm "$tarball"
  touch "$DIR/.unpacked"
fi
# About a dozen tests of each file (1 in N by a hash of the test id: the same tests every run).
.venv/bin/python tools/pytorch_tests.py "$DIR" \
  test_view_ops:20 test_indexing:8 test_shape_ops:8 test_sort_and_select:8 \
  test_tensor_creation_ops:32 test_reductions:200 test_binary_ufuncs:1000 test_unary_ufuncs:2000 \
  --control --timeout 120 --wall 600 --require 90 --out "$DIR/results.json" "$@"
