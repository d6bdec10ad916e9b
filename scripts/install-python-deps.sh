#!/usr/bin/env bash
# The Python side's dependencies, from PyPI, in a virtual environment (default .venv; FTL_VENV picks
# another): numpy, torch (the CPU is all the tests use; PyPI's Linux wheel also brings CUDA libraries,
# about 3 GB to download and 5.6 GB installed, a few minutes the first time), scikit-learn (the digits
# data of the PyTorch example), pytest, scikit-build-core (the package's build backend, for the
# `pip install ./python` test), mkdocs with mkdocs-material (the documentation site, docs/), matplotlib
# (its pictures, docs/gen/figures.py; bench/ charts) and pytorch-lightning (ftl.lightning's tests). Prints
# the path of the environment's python last.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FTL_VENV:-.venv}"
packages=(numpy torch scikit-learn pytest "scikit-build-core>=0.10" mkdocs mkdocs-material matplotlib pytorch-lightning)
start=$(date +%s)
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
if ! "$venv/bin/python" -c 'import numpy, torch, sklearn, pytest, scikit_build_core, mkdocs, material, matplotlib, pytorch_lightning' 2>/dev/null; then
  echo "install-python-deps: installing ${packages[*]} into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2
  echo "install-python-deps: done in $(( $(date +%s) - start )) s" >&2
fi
echo "$(cd "$venv" && pwd)/bin/python"
