"""send, recv, isend, irecv and batch_isend_irecv on ftl's process group.

Why the messages are queued: torch's isend and irecv return at once, and a program usually posts both
halves of an exchange (send to the next rank, receive from the previous one) before it waits. ftl's
communicator runs point-to-point as a batch whose messages are all in progress at once (ftl_comm_p2p), so
the posted ops are kept and run together as one batch when the first of their Works is waited on, before
the group's next collective (calls keep the order they were made in), and at the end of a step. dist.send
and dist.recv wait at once: a batch of one. batch_isend_irecv posts its ops and waits: one batch.

Messages match by order, per pair of ranks and direction (the k-th send from a to b is the k-th receive of
b from a), and a send and its receive must have the same number of bytes: a mismatch fails the receiver
(and the sender's next call) with the two sizes. Tags other than 0 and a receive from any source are
refused: they would need matching that the communicator does not do.
"""
from __future__ import annotations

from typing import Any, List

import torch

from .. import _buffers
from .._door import door_of
from .._lib import P2POpC, text
from ..errors import INVALID, Error
from ._tensor_args import as_bytes
from ._work import _failed, _Work, absorbed


class Message:
    """One posted send or receive: its tensor as bytes (a contiguous copy of a strided one, copied back
    after a receive), its peer, and the Work it completes."""

    def __init__(self, group: Any, tensor: torch.Tensor, peer: int, is_recv: bool, work: _Work):
        self.group, self.tensor, self.peer, self.is_recv, self.work = group, tensor, peer, is_recv, work
        self.dense = tensor if tensor.is_contiguous() else tensor.contiguous()


class _MessageWork(_Work):
    """A posted message's Work: the first wait on any of them runs the batch."""

    def __init__(self, queue: "Posted"):
        super().__init__()
        self._queue = queue

    def wait(self, timeout: Any = None) -> bool:
        if not self.future.done():
            self._queue.flush()
        return super().wait(timeout)


class Posted:
    """The agent's posted messages, shared by its groups (they share the communicator)."""

    def __init__(self, agent: Any):
        self._agent = agent
        self._messages: List[Message] = []

    def post(self, group: Any, tensor: torch.Tensor, peer: int, is_recv: bool, tag: int, what: str) -> _Work:
        if tag != 0:
            raise Error(f"ftl: {what}: tag {tag}: messages on ftl's group match by order per pair of ranks, not "
                        "by tag; send and receive them in the same order on both sides, with tag 0", INVALID)
        world = group.size()
        if not 0 <= peer < world or peer == group.rank():
            raise Error(f"ftl: {what}: rank {peer} is not another rank of the group (rank {group.rank()} of "
                        f"{world})", INVALID)
        work = _MessageWork(self)
        self._messages.append(Message(group, tensor, peer, is_recv, work))
        return work

    def flush(self) -> None:
        """Runs every posted message, one batch per group's communicator (blocking); each Work completes,
        failed or not."""
        messages, self._messages = self._messages, []
        groups: List[Any] = []
        for m in messages:
            if not any(g is m.group for g in groups):
                groups.append(m.group)
        for g in groups:
            self._run(g, [m for m in messages if m.group is g])

    def _run(self, group: Any, messages: List[Message]) -> None:
        agent, error = self._agent, None
        try:
            handle = group._handle_for("p2p")
            keep = [_buffers.describe(as_bytes(m.dense), "p2p") for m in messages]
            for b in keep:
                door_of(agent).check_backend(b, "p2p")
                _buffers.wait_for_producer(b)
            ops = (P2POpC * len(messages))(*[P2POpC(int(m.is_recv), m.peer, b.ptr, b.count, b.dtype)
                                              for m, b in zip(messages, keep)])
            if handle is None:
                raise Error("ftl: p2p before the first view: there is no other rank yet", INVALID)
            rc = group._calls.p2p(handle, ops, len(messages))
            if rc != 0:
                error = _failed(agent, rc, text(group._calls.last_error(handle)) or "ftl: p2p failed")
        except Error as e:
            error = e
        for m in messages:
            if error is None and m.is_recv and m.dense is not m.tensor:
                m.tensor.copy_(m.dense)
            m.work.error = error
            m.work.is_absorbed = error is not None and absorbed(agent, error)
            m.work.future.set_result([m.tensor])


def posted(agent: Any) -> Posted:
    """The agent's queue of posted messages (made once; flushed at every step's end)."""
    door = door_of(agent)
    if door.torch_p2p is None:
        door.torch_p2p = Posted(agent)
        door.step_end.append(door.torch_p2p.flush)
    return door.torch_p2p
