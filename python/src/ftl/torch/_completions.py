"""Completes the futures of a step's asynchronous collectives, on one thread, in order, and keeps the
collectives that their callbacks make in one order on every rank.

The thread ("ftl-torch-works", one per agent) waits the C requests in the order they were made and sets
each Work's future; torch runs the callbacks chained to it with then() right there, on this thread. A DDP
comm hook (PowerSGD) chains callbacks that make collectives of their own and wait for them. Two rules
keep that from deadlocking and from a silent wrong answer:

- A collective made on this thread (inside a callback) runs blocking, at once: waiting for it on its own
  asynchronous queue would wait for this very thread.
- Collectives must start in the same order on every rank, and a callback's collectives would otherwise
  interleave with the training thread's next ones by timing. So while a Work that has a Python callback
  chained to it is not yet complete (with its callbacks run), the training thread's next collective
  waits. Then on every rank a callback's collectives come right after the collective it was chained to
  completes, before anything the training thread makes later. It costs overlap only to programs whose
  hooks chain callbacks; DDP's default hook chains none from Python.
"""
from __future__ import annotations

import ctypes
import queue
import threading
from typing import Any, List, Optional

from .._door import door_of
from .._lib import lib, text
from ..errors import PEER_LOST
from ._work import ChainedFuture, _failed, _Work, absorbed


class Completions:
    def __init__(self, agent: Any):
        self._agent = agent
        self._queue: "queue.Queue[tuple]" = queue.Queue()
        self._pending = 0           # requests not yet completed
        self._chained = 0           # ... of which have a Python callback chained (ordering, above)
        self._idle = threading.Condition()
        self._thread: Optional[threading.Thread] = None

    def add(self, req: ctypes.c_void_p, keep: List[Any], work: Optional[_Work], result: Any) -> None:
        with self._idle:
            self._pending += 1
            if work is not None:
                work.future.on_chained = self._on_chained
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ftl-torch-works", daemon=True)
                self._thread.start()
        self._queue.put((req, keep, work, result))

    def _on_chained(self, future: ChainedFuture) -> bool:
        """A callback is being chained to a future of ours: counted once while the future is not completing
        yet. True while it is completing: then the caller waits for it to be done, so that the callback runs
        at once on the caller's thread, in its program order, not on this one untracked."""
        with self._idle:
            if future.is_completing:
                return not future.done()
            if not future.is_counted and not future.done():
                future.is_counted = True
                self._chained += 1
            return False

    def is_this_thread(self) -> bool:
        """Whether the caller is this thread: a callback chained to one of its futures."""
        return self._thread is not None and threading.current_thread() is self._thread

    def wait_chained(self) -> None:
        """Before the training thread's next collective: every earlier Work with a chained callback is complete,
        its callbacks run (and their collectives made)."""
        if self.is_this_thread():
            return
        with self._idle:
            while self._chained:
                self._idle.wait()

    def _run(self) -> None:
        libftl, door = lib(), door_of(self._agent)
        while True:
            req, keep, work, result = self._queue.get()
            handle = door.handle_if_open()
            rc = libftl.ftl_wait(handle, ctypes.byref(req)) if handle else PEER_LOST
            error = None
            if rc != 0:  # every failed request fails the step, the Work's last one or not
                error = _failed(self._agent, rc, (text(libftl.ftl_last_error(handle)) if handle else "") or
                                "ftl: the collective failed")
            is_counted = False
            if work is not None:
                with self._idle:
                    work.future.is_completing = True  # a callback chained from now on waits, then runs at once
                    is_counted = work.future.is_counted
                work.error = error
                work.is_absorbed = error is not None and absorbed(self._agent, error)
                work.future.set_result(result)  # a failure too: see _Work; chained callbacks run here
            del keep
            with self._idle:
                self._pending -= 1
                self._chained -= is_counted
                self._idle.notify_all()

    def wait_all(self) -> None:
        with self._idle:
            while self._pending:
                self._idle.wait()
