"""A collective's handle as torch sees it (Work, with a torch Future), and the error of a collective that
failed: one module, since the group's files all make them."""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch
import torch.distributed as dist

from .._door import door_of
from ..errors import PEER_CODES, Error, from_code


def _failed(agent: Any, rc: int, why: str) -> Error:
    """The error of a failed collective; a peer error also fails the running step (the first one is kept).
    After the loop of ftl.torch.steps(n) a peer error is raised (absorbed), and says why."""
    door = door_of(agent)
    if rc in PEER_CODES and door.loop is not None and door.loop.finished:
        why += " (after the training loop: nothing is left to drop the step, so its result would be wrong)"
    error = from_code(rc, why)
    if rc in PEER_CODES:
        door.note_peer_failure(error)
    return error


def absorbed(agent: Any, error: Error) -> bool:
    """Loop mode (ElasticSampler): a collective that lost a peer returns, its tensors as they were, instead
    of raising into the program's own loop; the step's commit point (optimizer.step) then drops the step,
    and the loop trains its samples again in the next view. Its results are not valid: the step that
    made it never commits. Not after the loop of ftl.torch.steps(n) has ended: no commit point is left to
    drop the program's use of them, so the error is raised."""
    loop = door_of(agent).loop
    return loop is not None and loop.running and not loop.finished and error.code in PEER_CODES


class ChainedFuture(torch.futures.Future):
    """A Work's future that says when Python code chains a callback to it (then(): a DDP comm hook such as
    PowerSGD's), since that callback runs on the thread that completes the future and may make collectives
    of its own (_completions.py orders them)."""

    def __init__(self) -> None:
        super().__init__()
        # Completions' hook: True when the future is being completed right now (then the callback is chained
        # once it is done, and runs at once, on this thread)
        self.on_chained: Optional[Callable[["ChainedFuture"], bool]] = None
        self.is_counted = False     # a callback was chained before it began to complete
        self.is_completing = False

    def then(self, callback: Callable[..., Any]) -> torch.futures.Future:
        if self.on_chained is not None and self.on_chained(self):
            self.wait()
        return super().then(callback)


class _Work(dist._Work):
    """A collective's handle. Its future always completes with the result tensors, also when the collective
    failed: torch crashes (SIGSEGV, torch 2.15) when a Python-made future that DDP's reducer waits on in
    backward() completes with an exception. A failure is reported instead by wait() (raises the
    PeerLostError), by the step (execute() runs it again) and, before anything is changed, by the
    optimizer of an ElasticState (its step() raises; see guard_optimizer)."""

    def __init__(self, result: Any = None, done: bool = False):
        super().__init__()
        self.future = ChainedFuture()
        self.error: Optional[Error] = None
        self.is_absorbed = False  # loop mode: wait() does not raise the error (absorbed)
        if done:
            self.future.set_result(result)

    def get_future(self) -> torch.futures.Future:
        return self.future

    def is_completed(self) -> bool:
        return self.future.done()

    def is_success(self) -> bool:
        return self.future.done() and self.error is None

    def exception(self) -> Optional[Error]:
        return self.error

    def wait(self, timeout: Any = None) -> bool:
        self.future.wait()
        if self.error is not None and not self.is_absorbed:
            raise self.error
        return True
