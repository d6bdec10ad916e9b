"""Asynchronous allreduces as Python sees them: a Request, and the step's requests still in flight.

Why the agent holds them: C writes the result into x's memory until the request is consumed (ftl_wait or
ftl_test). A Request dropped without wait(), or a tensor given other storage meanwhile (set_, resize_,
.data =), would leave C writing into freed memory. So a request holds its buffer's memory (the array, or
the tensor's storage itself, not only the tensor object), the agent holds every request its step made,
and the step's end waits for those the program did not wait for (the contract says to wait inside the
step; this makes it so, and frees the C request too). wait() says so when x no longer shows the memory
the result went to.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional

from ._buffers import Buffer
from ._door import door_of
from ._lib import lib, text
from .errors import INVALID, Error, from_code


class Request:
    """An allreduce in flight (Agent.allreduce_async). wait() blocks with the GIL released (other Python
    threads run meanwhile) and returns the reduced x, or raises the collective's error; done() never
    blocks. Both may be called again once it is done (also after the step, which waited for it): they
    answer from the recorded outcome."""

    def __init__(self, agent: Any, buf: Buffer, req: ctypes.c_void_p, keep: Any = None):
        self._door, self._buf, self._req, self._keep = door_of(agent), buf, req, keep
        self._x = buf.owner
        self._rc: Optional[int] = None
        self._error = ""
        self._door.in_flight.add(self)

    def _finish(self, rc: int, handle: int) -> None:
        if rc != 0:
            self._error = text(lib().ftl_last_error(handle))
        elif self._buf.is_moved(self._x):
            rc, self._error = INVALID, ("ftl: allreduce_async: the tensor was given other storage (set_, resize_ "
                                        "or .data =) while its allreduce ran, so the result is not in it: leave "
                                        "x alone until wait() returns")
        self._rc, self._buf, self._keep = rc, None, None  # the C request is consumed: the memory is ours again

    def _outcome(self) -> Any:
        if self._rc:
            raise from_code(self._rc, self._error)
        return self._x

    def done(self) -> bool:
        """True once the allreduce has completed (or failed: wait() then raises)."""
        if self._rc is None:
            handle = self._door.collective("Request.done")
            flag = ctypes.c_int(0)
            rc = lib().ftl_test(handle, ctypes.byref(self._req), ctypes.byref(flag))
            if flag.value or rc != 0:
                self._finish(rc, handle)
        return self._rc is not None

    def wait(self) -> Any:
        """Blocks until every rank has reduced x; returns x, or raises the collective's error."""
        if self._rc is None:
            handle = self._door.collective("Request.wait")
            self._finish(lib().ftl_wait(handle, ctypes.byref(self._req)), handle)
        return self._outcome()


class InFlight:
    """The requests one step made, in order; the step's end waits for those not yet done."""

    def __init__(self) -> None:
        self._requests: List[Request] = []

    def add(self, r: Request) -> None:
        self._requests.append(r)

    def is_using(self, keep: Any) -> bool:
        """True while a request made with keep (a GradientBucket) is not done."""
        return any(r._keep is keep for r in self._requests if r._rc is None)

    def wait_all(self) -> Optional[Error]:
        """Waits for every request not yet consumed (on the step's thread, in order: every rank made them
        in the same order) and forgets them all; returns the first one's error, if one failed."""
        first = None
        for r in self._requests:
            if r._rc is None:
                try:
                    r.wait()
                except Error as e:
                    first = first or e
        self._requests = []
        return first
