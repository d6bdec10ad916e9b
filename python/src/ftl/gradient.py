"""ftl.GradientBucket: a gradient buffer's allreduce, which the job may compress (include/ftl/gradient.h).

A gradient is a noisy minibatch estimate already, so it may travel as bf16 (half the bytes) with f32
accumulation; FTL_COMM_COMPRESS=bf16 turns that on for the job, bf16-ef adds error feedback (what rounding
dropped goes into the next step's gradient of the same bucket). Every other collective stays exact. A
bucket holds the wire copy and the residual of one buffer: use one per gradient buffer, every step.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, TypeVar

from . import _buffers
from ._door import door_of
from ._lib import AllreduceOptsC, lib, text
from ._names import COMPRESS, names, value
from ._requests import Request
from .errors import ConfigError, Error, INVALID

T = TypeVar("T")
_DEFAULT = -1  # FTL_COMPRESS_DEFAULT (include/ftl/execute.h): the job's FTL_COMM_COMPRESS


def mode_code(compress: Optional[str]) -> int:
    """The ftl_compress of a mode's name in libftl's table; None is the job's setting."""
    if compress is None:
        return _DEFAULT
    try:
        return value(COMPRESS, compress)
    except ValueError:
        raise ConfigError(f"ftl: compress={compress!r}: expected None (the job's FTL_COMM_COMPRESS), "
                          f"{', '.join(names(COMPRESS))}") from None


class GradientBucket:
    """The allreduce of one float32 gradient buffer, compressed; `bucket.compress` is the mode in force.

    Args:
        agent (ftl.Agent): the agent.
        compress (str, optional): None (the job's FTL_COMM_COMPRESS), "off", "bf16" or "bf16-ef".

    Raises:
        ConfigError: an unknown mode, or compression under FTL_COMM=nccl or in reproducible mode.
    """

    def __init__(self, agent: Any, compress: Optional[str] = None):
        self._agent, self._door, self._lib = agent, door_of(agent), lib()
        handle = self._door.handle()
        self._ptr = self._lib.ftl_grad_bucket_new(handle, mode_code(compress))
        if not self._ptr:
            raise ConfigError(f"ftl: GradientBucket: {text(self._lib.ftl_last_error(handle))}")
        self.compress = names(COMPRESS)[self._lib.ftl_grad_bucket_compress(self._ptr)]
        self._opts = AllreduceOptsC(bucket=self._ptr)  # ftl_allreduce with this bucket

    def _describe(self, x: Any, what: str) -> _buffers.Buffer:
        b = _buffers.describe(x, what)
        if b.dtype != _buffers.dtype_code("f32"):
            raise Error(f"ftl: {what}: a gradient bucket reduces float32; use agent.allreduce for others", INVALID)
        self._door.check_backend(b, what)
        return b

    def allreduce(self, x: T, op: str = "sum") -> T:
        """x = the sum (or avg) over every rank's x, in place, inside a step; returns x."""
        handle = self._door.collective("GradientBucket.allreduce")
        b = self._describe(x, "GradientBucket.allreduce")
        self._door.raise_if_failed(self._lib.ftl_allreduce(handle, b.ptr, b.ptr, b.count, b.dtype,
                                                           _buffers.op_code(op), ctypes.byref(self._opts), None),
                                   handle)
        return x

    def allreduce_async(self, x: T, op: str = "sum") -> Any:
        """The same, started at once (Agent.allreduce_async's rules); one request per bucket at a time."""
        handle = self._door.collective("GradientBucket.allreduce_async")
        b = self._describe(x, "GradientBucket.allreduce_async")
        req = ctypes.c_void_p()
        self._door.raise_if_failed(self._lib.ftl_allreduce(handle, b.ptr, b.ptr, b.count, b.dtype,
                                                           _buffers.op_code(op), ctypes.byref(self._opts),
                                                           ctypes.byref(req)), handle)
        return Request(self._agent, b, req, keep=self)  # the request keeps the bucket alive

    def close(self) -> None:
        """Frees the bucket; refused while a request made with it is outstanding (C still uses the bucket)."""
        if self._ptr and self._door.in_flight.is_using(self):
            raise Error("ftl: GradientBucket.close() while its allreduce_async is in flight: wait() for the request "
                        "first (the step's end waits for it too)", INVALID)
        if self._ptr:
            self._lib.ftl_grad_bucket_delete(self._ptr)
            self._ptr = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
