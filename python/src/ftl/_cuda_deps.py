"""Which NCCL and CUDA runtime libftl gets: the copies PyTorch loads, where the environment has them.

Why: the dynamic loader keeps one library per SONAME. libftl.so needs libnccl.so.2 and libcudart.so.N
(its DT_NEEDED entries), and the first object loaded under such a name serves every later request for
that name, whatever path or RPATH the later one would have found; RTLD_LOCAL does not change that (it
scopes symbols, not names). So with libftl loaded first, linked against the system's NCCL
(/usr/local/cuda), torch's libtorch_cuda.so was bound to that older NCCL and its import failed
(`undefined symbol: ncclCommResume`), while torch first made libftl use torch's NCCL. LD_DEBUG=files
shows it: torch's own copy is loaded beside, unused. Loading libftl's CUDA dependencies from the NVIDIA
wheels (site-packages/nvidia/*/lib, where torch preloads them from) before libftl makes both orders end
alike: one NCCL and one CUDA runtime in the process, torch's. libftl calls only NCCL functions older than
any NCCL 2 torch ships; where a wheel's copy lacks one, loading libftl fails naming the symbol.
"""
from __future__ import annotations

import ctypes
import glob
import mmap
import os
import struct
import sys
from typing import List, Optional

# The libraries of which a process must hold one copy (torch ships its own in the NVIDIA wheels).
SHARED_WITH_TORCH = ("libnccl.so", "libcudart.so")
_preloaded: List[ctypes.CDLL] = []  # kept loaded for the process's life, as libftl is


def needed(path: str) -> List[str]:
    """The SONAMEs an ELF64 little-endian shared library names as DT_NEEDED ([] for anything else)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as elf:
            if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
                return []
            shoff, = struct.unpack_from("<Q", elf, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
            sections = [struct.unpack_from("<IIQQQQI", elf, shoff + i * shentsize) for i in range(shnum)]
            names = []
            for _, sh_type, _, _, offset, size, link in sections:
                if sh_type != 6:  # SHT_DYNAMIC; its sh_link is the section of its strings
                    continue
                strings = sections[link][4]
                for at in range(offset, offset + size, 16):
                    tag, value = struct.unpack_from("<qQ", elf, at)
                    if tag == 1:  # DT_NEEDED
                        names.append(elf[strings + value:elf.find(b"\0", strings + value)].decode())
            return names
    except (OSError, ValueError, struct.error, IndexError):
        return []


def wheel_copy(soname: str) -> Optional[str]:
    """The copy of soname an NVIDIA wheel (or torch's own lib folder) holds on sys.path, if any."""
    for entry in sys.path:
        for pattern in ("nvidia/*/lib", "torch/lib"):
            found = sorted(glob.glob(os.path.join(entry or ".", pattern, soname)))
            if found:
                return found[0]
    return None


def load_torchs_copies(library: str) -> None:
    """Loads, before library, the wheel copies of its NCCL and CUDA runtime (see the module's notes)."""
    for soname in needed(library):
        if soname.startswith(SHARED_WITH_TORCH):
            path = wheel_copy(soname)
            if path:
                try:
                    _preloaded.append(ctypes.CDLL(path))
                except OSError:
                    pass  # libftl then loads the system's copy, as before
