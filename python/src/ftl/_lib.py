"""Loading libftl.so and declaring the C API for ctypes.

Why ctypes (and not a compiled extension or cffi): the package then contains no Python-version-specific
binary, only libftl.so, which the same CMake build that makes the C library produces; ctypes releases
the GIL around every foreign call, which is exactly what blocking collectives need, and it is part of
the standard library. The cost is a few hundred nanoseconds per call, far below a collective's.

Where the library comes from, first match wins: $FTL_LIBRARY (a path; what tests and developers use
with a build tree), the copy installed inside this package by `pip install ./python`, then the system's
(`ldconfig`, LD_LIBRARY_PATH). Its NCCL and CUDA runtime are torch's where torch's wheels are installed
(_cuda_deps.py says why), so importing ftl before torch or after makes no difference.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path

from ._cuda_deps import load_torchs_copies
from .errors import ConfigError, LibraryNotFoundError

c_u64 = ctypes.c_uint64
c_size = ctypes.c_size_t
c_agent_p = ctypes.c_void_p


class StepInfoC(ctypes.Structure):
    """struct ftl_step_info (include/ftl/execute.h)."""
    _fields_ = [("rank", ctypes.c_int), ("world_size", ctypes.c_int), ("step", c_u64), ("view_epoch", c_u64),
                ("attempt", ctypes.c_int), ("indices", ctypes.POINTER(c_u64)), ("n_indices", c_size),
                ("data_epoch", c_u64), ("sample_pos", c_u64), ("global_batch", c_u64),
                ("micro_batch", ctypes.c_uint32), ("first_micro", ctypes.c_uint32), ("total_micro", ctypes.c_uint32)]


class AllreduceOptsC(ctypes.Structure):
    """ftl_allreduce_opts (include/ftl/comm.h), the options of the one allreduce call. Size-stamped: struct_size
    is this mirror's size and the library reads only that many bytes, so a library whose struct has grown at
    its end reads it unchanged (the same rule as the C configs')."""
    _fields_ = [("struct_size", c_size), ("kind", ctypes.c_int), ("residual", ctypes.c_void_p),
                ("n_rows", c_size), ("total_rows", c_u64), ("bucket", ctypes.c_void_p)]

    def __init__(self, **fields):
        super().__init__(struct_size=ctypes.sizeof(AllreduceOptsC), **fields)


class P2POpC(ctypes.Structure):
    """ftl_p2p_op (include/ftl/comm.h): one send or receive of a point-to-point batch."""
    _fields_ = [("is_recv", ctypes.c_int), ("peer", ctypes.c_int), ("buf", ctypes.c_void_p), ("count", c_size),
                ("dtype", ctypes.c_int)]


class SizedOutC(ctypes.Structure):
    """An output struct that carries its size (struct_size first): made with it set, so that the library
    writes only the fields this mirror has."""

    def __init__(self) -> None:
        super().__init__()
        self.struct_size = ctypes.sizeof(self)


class JobStatusC(SizedOutC):
    """struct ftl_job_status (include/ftl/execute.h)."""
    _fields_ = [("struct_size", c_size), ("step", c_u64), ("view_epoch", c_u64), ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
                ("views_seen", c_u64), ("retries", c_u64), ("data_epoch", c_u64)]


class LogValueC(ctypes.Union):
    """The value of struct ftl_log_field (include/ftl/log.h)."""
    _fields_ = [("str", ctypes.c_char_p), ("i", ctypes.c_int64), ("u", c_u64), ("d", ctypes.c_double), ("b", ctypes.c_bool)]


class LogFieldC(ctypes.Structure):
    """struct ftl_log_field (include/ftl/log.h); type is enum ftl_log_field_type."""
    _fields_ = [("key", ctypes.c_char_p), ("type", ctypes.c_int), ("value", LogValueC)]


class LogRecordC(ctypes.Structure):
    """struct ftl_log_record (include/ftl/log.h); level is enum ftl_log_level."""
    _fields_ = [("time_us", ctypes.c_int64), ("level", ctypes.c_int), ("agent", ctypes.c_char_p),
                ("component", ctypes.c_char_p), ("message", ctypes.c_char_p), ("fields", ctypes.POINTER(LogFieldC)),
                ("n_fields", c_size)]


class CheckpointInfoC(SizedOutC):
    """struct ftl_checkpoint_info (include/ftl/checkpoint.h)."""
    _fields_ = [("struct_size", c_size), ("step", c_u64), ("data_epoch", c_u64), ("sample_pos", c_u64), ("view_epoch", c_u64),
                ("world_size", ctypes.c_uint32), ("n_buffers", ctypes.c_uint32), ("job_id", c_u64), ("state_bytes", c_u64)]


STEP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(StepInfoC))
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(LogRecordC), ctypes.c_void_p)
SAVE_FN = ctypes.CFUNCTYPE(c_size, ctypes.c_void_p, ctypes.c_void_p, c_size)
LOAD_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, c_size)

# name: (restype, argtypes)
_PROTOTYPES = {
    "ftl_version": (ctypes.c_char_p, []),
    "ftl_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "ftl_error_code": (ctypes.c_int, []),
    "ftl_error_message": (ctypes.c_char_p, []),
    "ftl_error_setting": (ctypes.c_char_p, []),
    "ftl_comm_backend_is_available": (ctypes.c_int, [ctypes.c_int]),
    "ftl_settings_new": (ctypes.c_void_p, []),
    "ftl_settings_delete": (None, [ctypes.c_void_p]),
    "ftl_settings_set": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
    "ftl_settings_get": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_char_p]),
    "ftl_settings_load_env": (ctypes.c_int, [ctypes.c_void_p]),
    "ftl_agent_new_from_settings": (c_agent_p, [ctypes.c_void_p, LOG_FN, ctypes.c_void_p]),
    "ftl_agent_start": (ctypes.c_int, [c_agent_p]),
    "ftl_agent_leave": (ctypes.c_int, [c_agent_p, ctypes.c_int]),
    "ftl_agent_has_left": (ctypes.c_bool, [c_agent_p]),
    "ftl_agent_stop": (None, [c_agent_p]),
    "ftl_agent_delete": (None, [c_agent_p]),
    "ftl_agent_control_path": (ctypes.c_char_p, [c_agent_p]),
    "ftl_agent_status": (ctypes.c_int, [c_agent_p, ctypes.c_char_p, c_size, ctypes.POINTER(c_size), ctypes.c_int]),
    "ftl_execute": (ctypes.c_int, [c_agent_p, STEP_FN, ctypes.c_void_p]),
    "ftl_last_error": (ctypes.c_char_p, [c_agent_p]),
    "ftl_allreduce": (ctypes.c_int, [c_agent_p, ctypes.c_void_p, ctypes.c_void_p, c_size, ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(AllreduceOptsC), ctypes.POINTER(ctypes.c_void_p)]),
    "ftl_broadcast": (ctypes.c_int, [c_agent_p, ctypes.c_void_p, c_size, ctypes.c_int, ctypes.c_int]),
    "ftl_allgather": (ctypes.c_int, [c_agent_p, ctypes.c_void_p, ctypes.c_void_p, c_size, ctypes.c_int]),
    "ftl_barrier": (ctypes.c_int, [c_agent_p]),
    "ftl_p2p": (ctypes.c_int, [c_agent_p, ctypes.POINTER(P2POpC), ctypes.c_int]),
    "ftl_subgroup_new": (ctypes.c_int, [c_agent_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_void_p)]),
    "ftl_subgroup_delete": (None, [c_agent_p, ctypes.c_void_p]),
    # a subgroup's communicator (ftl/comm.h): the same arguments as the agent's calls, a comm in place of it
    "ftl_comm_allreduce": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, c_size, ctypes.c_int,
                                          ctypes.c_int, ctypes.POINTER(AllreduceOptsC), ctypes.POINTER(ctypes.c_void_p)]),
    "ftl_comm_broadcast": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, c_size, ctypes.c_int, ctypes.c_int]),
    "ftl_comm_allgather": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, c_size, ctypes.c_int]),
    "ftl_comm_barrier": (ctypes.c_int, [ctypes.c_void_p]),
    "ftl_comm_p2p": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(P2POpC), ctypes.c_int]),
    "ftl_comm_alltoall": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(c_size), ctypes.c_void_p,
                                         ctypes.POINTER(c_size), c_size, ctypes.c_int]),
    "ftl_comm_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "ftl_alltoall": (ctypes.c_int, [c_agent_p, ctypes.c_void_p, ctypes.POINTER(c_size), ctypes.c_void_p,
                                    ctypes.POINTER(c_size), c_size, ctypes.c_int]),
    "ftl_wait": (ctypes.c_int, [c_agent_p, ctypes.POINTER(ctypes.c_void_p)]),
    "ftl_test": (ctypes.c_int, [c_agent_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)]),
    "ftl_grad_bucket_new": (ctypes.c_void_p, [c_agent_p, ctypes.c_int]),
    "ftl_grad_bucket_delete": (None, [ctypes.c_void_p]),
    "ftl_grad_bucket_compress": (ctypes.c_int, [ctypes.c_void_p]),
    "ftl_register_buffer": (ctypes.c_int, [c_agent_p, ctypes.c_char_p, ctypes.c_void_p, c_size, ctypes.c_bool]),
    "ftl_register_callbacks": (ctypes.c_int, [c_agent_p, SAVE_FN, LOAD_FN, ctypes.c_void_p]),
    "ftl_set_sampler": (ctypes.c_int, [c_agent_p, c_u64, ctypes.c_uint32, c_u64]),
    "ftl_set_batch_from_settings": (ctypes.c_int, [c_agent_p, ctypes.c_void_p]),
    "ftl_set_sampler_order": (ctypes.c_int, [c_agent_p, ctypes.c_int]),
    "ftl_sampler_peek": (ctypes.c_int, [c_agent_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(c_u64),
                                        ctypes.POINTER(c_u64), ctypes.POINTER(c_u64), c_size, ctypes.POINTER(c_size)]),
    "ftl_get_job_status": (ctypes.c_int, [c_agent_p, ctypes.POINTER(JobStatusC)]),
    "ftl_env_add_known_name": (ctypes.c_int, [ctypes.c_char_p]),
    "ftl_checkpoint_reader_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "ftl_checkpoint_reader_delete": (None, [ctypes.c_void_p]),
    "ftl_checkpoint_reader_file": (ctypes.c_char_p, [ctypes.c_void_p]),
    "ftl_checkpoint_reader_info": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(CheckpointInfoC)]),
    "ftl_checkpoint_reader_buffer": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p),
                                                    ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(c_u64)]),
    "ftl_checkpoint_reader_state": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.POINTER(c_u64)]),
}

_lock = threading.Lock()
_lib = None


def _candidates():
    explicit = os.environ.get("FTL_LIBRARY")
    if explicit:
        yield explicit
        return
    here = Path(__file__).resolve().parent
    for name in ("libftl.so", "libftl.so.0"):
        for folder in (here / "lib", here):
            if (folder / name).exists():
                yield str(folder / name)
    found = ctypes.util.find_library("ftl")
    if found:
        yield found
    yield "libftl.so.0"


def lib() -> ctypes.CDLL:
    """libftl, loaded once, with every function's prototype declared."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        reasons = []
        for path in _candidates():
            try:
                load_torchs_copies(path)  # one NCCL in the process whichever of ftl and torch loads first
                loaded = ctypes.CDLL(path)
                break
            except OSError as e:
                reasons.append(f"{path}: {e}")
        else:
            raise LibraryNotFoundError(
                "ftl: libftl.so not found (" + "; ".join(reasons) + "): install the package with "
                "`pip install ./python`, which builds it, or set FTL_LIBRARY to a built libftl.so "
                "(`cmake --build build` makes build/lib/libftl.so)")
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(loaded, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = loaded
        return _lib


def text(raw) -> str:
    return raw.decode("utf-8", "replace") if raw else ""


def config_error(lib_, fallback: str = "") -> ConfigError:
    """The refusal libftl just recorded on this thread: its message, and the FTL_* setting it is about from
    ftl_error_setting (None when the error names no one setting), not read out of the message."""
    return ConfigError(text(lib_.ftl_error_message()) or fallback, text(lib_.ftl_error_setting()) or None)
