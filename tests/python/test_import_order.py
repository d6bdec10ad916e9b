"""Importing ftl (and loading libftl) before torch or after makes no difference (issue 24, item 6): a
libftl linked against the system's NCCL, loaded first, used to bind torch to that older NCCL (the loader
keeps one library per SONAME) and `import torch` failed with `undefined symbol: ncclCommResume`. Each
order runs in a fresh interpreter; the process must end with one NCCL and one CUDA runtime mapped."""
import functools
import os
import subprocess
import sys

import pytest

ORDERS = {
    "ftl_first": "import ftl; ftl.library_version(); import torch",
    "torch_first": "import torch, ftl; ftl.library_version()",
}
MAPPED = ("import collections; seen = collections.defaultdict(set)\n"
          "for line in open('/proc/self/maps'):\n"
          "    path = line.split()[-1]\n"
          "    for name in ('libnccl.so', 'libcudart.so'):\n"
          "        if '/' + name in path: seen[name].add(path)\n"
          "print({k: sorted(v) for k, v in seen.items()})\n")


@functools.lru_cache(maxsize=None)  # each order once per session: an import of torch takes seconds
def mapped_after(order):
    p = subprocess.run([sys.executable, "-c", ORDERS[order] + "\n" + MAPPED], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"{order}: exit status {p.returncode}\n{p.stderr[-3000:]}"
    return eval(p.stdout.strip().splitlines()[-1])  # noqa: S307 (our own child's dict of paths)


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_import_order_never_matters(order):
    mapped = mapped_after(order)
    assert all(len(paths) == 1 for paths in mapped.values()), f"{order}: two copies of a library: {mapped}"
    assert mapped == mapped_after("torch_first"), "the order changed which NCCL or CUDA runtime the process uses"


def test_libftls_cuda_dependencies_are_read_from_its_elf_header():
    from ftl import _cuda_deps
    needed = _cuda_deps.needed(os.environ["FTL_LIBRARY"])
    assert "libc.so.6" in needed, needed
    assert _cuda_deps.needed(__file__) == []  # not an ELF file: nothing, no exception
