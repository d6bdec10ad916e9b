"""Reading an ftl checkpoint file through libftl (include/ftl/checkpoint.h).

The C library that writes checkpoints is the only parser of their format: this module asks it to open and
verify a file (or a directory's newest valid one) and copies out what it holds. What the bytes mean (a
model's tensors, an optimizer) is for the caller: ftl.torch.load_checkpoint makes a state dict of them.
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Dict, Union

from ._lib import CheckpointInfoC, c_u64, lib, text
from .errors import from_code


@dataclass
class Checkpoint:
    """One verified checkpoint: the job position, the registered buffers (name -> bytes, in registration
    order, each a bytearray: torch.frombuffer takes it without a copy) and the save callback's bytes
    (agent.register_state; b"" when none)."""
    file: str
    step: int
    data_epoch: int
    sample_pos: int
    view_epoch: int
    world_size: int
    job_id: int
    buffers: Dict[str, bytearray] = field(default_factory=dict)
    state: bytes = b""


def read_checkpoint(path: Union[str, os.PathLike]) -> Checkpoint:
    """The checkpoint at path, a file or a directory (FTL_CHECKPOINT_DIR: its newest file that verifies).
    Raises ftl.Error naming the file and the reason when none can be read (missing, corrupt, truncated)."""
    c = lib()
    reader = ctypes.c_void_p()
    rc = c.ftl_checkpoint_reader_new(os.fsencode(path), ctypes.byref(reader))
    if rc != 0:
        raise from_code(rc, text(c.ftl_error_message()))
    try:
        info = CheckpointInfoC()
        rc = c.ftl_checkpoint_reader_info(reader, ctypes.byref(info))
        if rc != 0:
            raise from_code(rc, text(c.ftl_error_message()))
        out = Checkpoint(file=text(c.ftl_checkpoint_reader_file(reader)), step=info.step, data_epoch=info.data_epoch,
                         sample_pos=info.sample_pos, view_epoch=info.view_epoch, world_size=info.world_size,
                         job_id=info.job_id)
        name, data, size = ctypes.c_char_p(), ctypes.c_void_p(), c_u64()
        for i in range(info.n_buffers):
            rc = c.ftl_checkpoint_reader_buffer(reader, i, ctypes.byref(name), ctypes.byref(data), ctypes.byref(size))
            if rc != 0:
                raise from_code(rc, text(c.ftl_error_message()))
            copy = bytearray(size.value)
            if size.value:
                ctypes.memmove((ctypes.c_char * size.value).from_buffer(copy), data, size.value)
            out.buffers[text(name.value)] = copy
        state = c.ftl_checkpoint_reader_state(reader, ctypes.byref(size))
        out.state = ctypes.string_at(state, size.value) if size.value else b""
        return out
    finally:
        c.ftl_checkpoint_reader_delete(reader)
