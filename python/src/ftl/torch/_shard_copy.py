"""A copy of each shard on its neighbour (ElasticState(..., copy_shards=True)): a sharded model that loses a
shard with every replica of it (FSDP without replicas: one replica of N shards) takes it back from the copy.

Why a copy, and why after the update: a shard is held by the workers of its index only. When no replica of
that index survives, its parameters and optimizer state exist nowhere else, and the job could only go back
to a checkpoint. So every shard sends its state to the next shard of its replica (index i to i + 1, the last
to the first) after each optimizer step, and keeps the copy it takes from the previous one, in host memory.
The copy follows the update (the state at the end of the step, step + 1), so a shard that dies in a later
step, the usual case (its step fails everywhere and runs again), comes back at exactly the job's step with
nothing lost. A copy that did not arrive (its sender died while sending it) leaves the one before; the job's
step then tells whether it is still the job's (the step that sent it was dropped) or not (the sender had
already updated: the shard is lost, and the job stops with a sentence rather than mix two steps).

Cost: one extra message per step of the shard and its optimizer state (with Adam three times the
parameters) to one neighbour, and a copy as large in host memory; bench/rescale/hsdp.py measures it.

A copy that fails to arrive does not fail the step: the update is made on every rank (the step's vote came
before it), so running the step again would apply it twice. The next view sorts it out (_shard_sync.py).
"""
from __future__ import annotations

import logging
from typing import Any, List, Optional, Tuple

import torch
import torch.distributed as dist

from .._door import door_of
from ..errors import INVALID, PEER_CODES, Error
from ._loop import loop_is_running
from ._shard_message import Message, exchange, load_optimizer, local, message_of, raise_if_lost, send, take

log = logging.getLogger("ftl.torch")  # warnings reach stderr without a handler (logging.lastResort)


class ShardCopy:
    """The copy this worker keeps of the previous shard of its replica, and the sending of its own."""

    def __init__(self, agent: Any, tensors: List[Tuple[str, Any]], optimizer: torch.optim.Optimizer):
        from ._hsdp import SHARD
        self.agent, self.optimizer, self.door = agent, optimizer, door_of(agent)
        self.group = self.door.hsdp_groups[1]
        assert self.group._dim == SHARD
        self.index, self.size = agent.replica
        if self.size < 2:
            raise Error("ftl: ElasticState: copy_shards=True keeps each shard's copy on the next shard of its "
                        "replica, and this replica has one shard (FTL_REPLICA_SIZE=1): nothing to copy to",
                        INVALID)
        self.tensors = tensors
        self.held: Optional[Tuple[int, Message]] = None  # (the step it holds, the previous shard's message)
        self.step = -1  # the job's step being run (set before each step)
        optimizer.register_step_post_hook(self.after_update)

    def held_step(self) -> int:
        return self.held[0] if self.held is not None else -1

    def after_update(self, *_: Any) -> None:
        """After the optimizer stepped: this shard's new state to the next shard, the previous one's from it."""
        if self.door.step_thread is None and not loop_is_running(self.door):
            return  # an optimizer step outside the job's steps (never one of the job's updates)
        mine = message_of([local(t) for _, t in self.tensors], self.optimizer)
        nxt, prev = (self.index + 1) % self.size, (self.index - 1) % self.size
        try:
            theirs = exchange(self.agent, self.group, mine, nxt, prev)
        except Error as e:
            if e.code not in PEER_CODES:
                raise
            self.door.peer_failure = None  # the update is made: the step stands (the module's docstring)
            log.warning("ftl: HSDP: the copy of shard %d after step %d did not arrive (a peer was lost); the copy "
                        "held is of step %d", prev, self.step, self.held_step())
            return
        self.held = (self.step + 1, theirs)

    def restore(self, step: int, is_lost: bool) -> None:
        """Before a step of a new view, after the replicas' own sync: every shard of the replica says whether
        its index was lost with every replica (`is_lost`) and which step its copy holds; the neighbour of
        each lost shard sends its copy, if it holds the job's `step`. Refused on every shard, with a
        sentence, when a lost shard's copy is gone too or is of another step."""
        mine = torch.tensor([int(is_lost), self.held_step()], dtype=torch.int64)
        gathered = torch.empty(2 * self.size, dtype=torch.int64)
        dist.all_gather_into_tensor(gathered, mine, group=self.group)
        raise_if_lost(self.agent)
        lost = gathered[0::2].tolist()
        held = gathered[1::2].tolist()
        for j in (i for i in range(self.size) if lost[i]):
            holder = (j + 1) % self.size
            if lost[holder] or held[holder] != step:
                why = ("was lost with it" if lost[holder] else
                       f"holds a copy of step {held[holder]}" if held[holder] >= 0 else "holds no copy yet")
                raise Error(f"ftl: HSDP: shard {j} was lost with every replica of it, and shard {holder}, which keeps "
                            f"its copy, {why}, not the job's step {step}: the model cannot be made whole; resume "
                            "from your last torch.distributed.checkpoint", INVALID)
        for j in (i for i in range(self.size) if lost[i]):
            holder = (j + 1) % self.size
            if self.index == holder:
                send(self.agent, self.group, self.held[1], [j])
            elif self.index == j:
                with torch.no_grad():  # into the model's own shards, in place
                    layout, tensors = take(self.agent, self.group, holder, [local(t) for _, t in self.tensors])
                    load_optimizer(self.optimizer, layout, tensors[len(self.tensors):])
                log.warning("ftl: HSDP: shard %d was lost with every replica of it; it is back at step %d from the "
                            "copy on shard %d", j, step, holder)
