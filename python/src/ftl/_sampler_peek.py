"""The sampler's look-ahead (ftl_sampler_peek): the indices a coming step will hand a rank, computed by the
C library exactly as ftl_execute will, so that a data loader can fetch them before the step runs without
a second copy of the permutation in Python."""
from __future__ import annotations

import ctypes
from typing import Any, Tuple

import numpy as np

from ._door import door_of
from ._lib import c_size, c_u64, lib, text
from .errors import INVALID, Error


class SamplerPeek:
    """peek(world, rank, data_epoch, sample_pos) -> (indices, data_epoch, sample_pos): rank of world's
    indices (uint64) for a step at (data_epoch, sample_pos), and where that step leaves the sampler."""

    def __init__(self, agent: Any):
        self._door = door_of(agent)
        self._cap = 256  # grows to what the C side says a step may take

    def __call__(self, world: int, rank: int, data_epoch: int, sample_pos: int) -> Tuple[np.ndarray, int, int]:
        handle = self._door.handle()
        while True:
            out = np.empty(self._cap, dtype=np.uint64)
            epoch, pos, n = c_u64(data_epoch), c_u64(sample_pos), c_size(0)
            rc = lib().ftl_sampler_peek(handle, world, rank, ctypes.byref(epoch), ctypes.byref(pos),
                                        out.ctypes.data_as(ctypes.POINTER(c_u64)), self._cap, ctypes.byref(n))
            if rc == 0:
                return out[:n.value], epoch.value, pos.value
            if n.value <= self._cap:  # not a question of room
                raise Error(f"ftl: {text(lib().ftl_error_message())}", rc or INVALID)
            self._cap = n.value
