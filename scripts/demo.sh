#!/usr/bin/env bash
# The README's first command: an elastic training job on this machine. Builds ftl-train-example and
# ftlctl into build/ (FTL_BUILD_DIR) when needed, then runs examples/demo.py: 4 workers, one killed
# with kill -9 partway, a new one joining later, a summary at the end. Arguments go to demo.py
# (--help lists them). Exit status non-zero if a worker failed or the ranks' parameters differed.
# --torch: the workers run examples/torch_digits.py (PyTorch) on libftl.so, with the Python of
# FTL_PYTHON if set, else the venv scripts/install-python-deps.sh makes (torch, scikit-learn; the first
# time it downloads them from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FTL_BUILD_DIR:-build}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
targets=(ftl-train-example ftlctl)
python=python3
if [[ " $* " == *" --torch "* ]]; then
  targets+=(ftl)
  python="${FTL_PYTHON:-$(scripts/install-python-deps.sh)}"
  export FTL_LIBRARY="$PWD/$build/lib/libftl.so" PYTHONPATH="$PWD/python/src${PYTHONPATH:+:$PYTHONPATH}"
fi
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)" >"$build/demo-build.log" 2>&1 \
  || { tail -40 "$build/demo-build.log"; exit 1; }
exec "$python" examples/demo.py --train "$build/examples/ftl-train-example" --ctl "$build/ctl/ftlctl" "$@"
