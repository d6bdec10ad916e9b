#!/usr/bin/env bash
# The README's test command: install what is missing (Debian packages, then the Python side's venv),
# configure, build, run every test with ctest.
# Extra arguments go to ctest (for example -R sim_ to run only the simulator tests).
# FTL_BUILD_DIR (default build), FTL_WERROR=ON and FTL_SANITIZE=ON (ASan+UBSan) or FTL_SANITIZE=thread
# (TSan; both with CC=clang) select other builds; CI uses all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python=$(scripts/install-python-deps.sh)
build="${FTL_BUILD_DIR:-build}"
cmake -S . -B "$build" -DFTL_WERROR="${FTL_WERROR:-OFF}" -DFTL_SANITIZE="${FTL_SANITIZE:-OFF}" -DFTL_PYTHON="$python" \
  >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
grep -E '^-- ftl:' "$build.configure.log" || true
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 600 "$@"
