"""State to a joining replica, shard by shard: an HSDP model's shards and their optimizer state.

Why not the agent's state sync: that one sends rank 0's registered tensors and bytes to every other rank,
and in a job of replicas rank 0 holds shard 0 only; shard i must come from shard i of a replica that holds
the job's state. So ElasticState keeps an HSDP model's DTensors (and the optimizer state, which is sharded
with them) out of the agent's registry and syncs them here, over the replicate group (the same index of every
replica: _hsdp.py), before the step runs in each new view and on each retry, from one source to the
workers that lack the step only.

Who holds what: every worker counts the job steps its shards hold (`at`: -1 until it took part in a sync,
then the step the sync was at, plus one for every step its step function finished). Before a step of a
new view, the replicate group gathers the counts; the source is the first replica whose count is the job's
step (info.step, which the agent's own sync made rank 0's), and every worker whose count differs takes the
source's shard. So nothing moves when every replica holds the step (a death elsewhere, a view that only
lost replicas); a restarted or returning replica gets every tensor of its shards. At the job's first step
nobody holds anything yet and the first replica's shards are the job's (as rank 0's state is for DDP).
When no replica holds the job's step for some shard (a death in the step's last collectives let one shard
commit it and made another fail it on every replica), the step is refused with a sentence: the model would
otherwise mix two steps without a word.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import torch
import torch.distributed as dist

from .._door import door_of
from ..errors import INVALID, Error
from ._loop import loop_is_running
from ._shard_message import load_optimizer, local, message_of, raise_if_lost, send, take


class ShardSync:
    def __init__(self, agent: Any, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer],
                 copy_shards: bool = False):
        from ._hsdp import REPLICATE
        self.agent, self.optimizer, self.door = agent, optimizer, door_of(agent)
        self.group = self.door.hsdp_groups[0]
        assert self.group._dim == REPLICATE
        self.model = fsdp_root(model)
        self.tensors = sharded_tensors(model)
        check_optimizer(optimizer, self.tensors)
        self.copy = None  # the neighbour's copy of its shard (_shard_copy.py), with copy_shards=True
        if copy_shards:
            from ._shard_copy import ShardCopy
            self.copy = ShardCopy(agent, self.tensors, optimizer)
        optimizer.register_step_pre_hook(self.vote)
        self.door.before_commit.append(self.vote_at_commit)
        self.at = -1            # job steps this worker's shards hold (-1: never synced)
        self.finished = True    # the last run of the step function here ended (False: it failed midway)
        self.synced_view: Optional[int] = None
        self.door.before_step.append(self.before_step)
        self.door.step_done.append(self.step_done)

    def vote(self, *_: Any) -> None:
        """Before the optimizer steps, every rank of the view has finished its step's reductions. The shards'
        collectives run in groups of some ranks, so without it shard 0 of every replica could finish a step
        (and the job's end: leave) while shard 1's last reduction is still in flight, and a death then would
        let one index commit a step that another fails everywhere. An allreduce of one number over the whole
        view makes every rank's update wait for every rank's gradients; PeerLostError (nothing stepped) when
        it fails. In loop mode the commit point has voted already (vote_at_commit)."""
        if self.door.step_thread is None or loop_is_running(self.door):
            return
        self.vote_at_commit()
        raise_if_lost(self.agent)

    def vote_at_commit(self) -> None:
        """The vote itself. In loop mode a collective that loses a peer returns (the step's failure is
        noted, not raised), and the commit point drops the step; in a step loop mode drops anyway (a
        joiner's pass over epochs the job has finished) the call is absorbed and makes no call at all, as
        every collective of that pass."""
        from ._process_group import process_group
        dist.all_reduce(torch.ones(1), group=process_group(self.agent), async_op=False)

    def step_done(self, info: Any) -> None:
        self.finished = True
        if self.at == info.step:
            self.at = info.step + 1

    def before_step(self, info: Any) -> None:
        if not self.finished:  # FSDP2 halfway through a forward or backward that lost a peer: start clean
            self.model.reset_iter_state()
        self.finished = False
        if self.copy is not None:
            self.copy.step = info.step
        if info.view_epoch == self.synced_view and info.attempt == 0:
            return
        counts = torch.tensor([self.at], dtype=torch.int64)
        gathered = torch.empty(self.group.size(), dtype=torch.int64)
        dist.all_gather_into_tensor(gathered, counts, group=self.group)
        raise_if_lost(self.agent)
        counts = gathered.tolist()
        src = source(counts, info.step)
        if src is None and self.copy is None:
            index = self.agent.replica[0]
            raise Error(f"ftl: HSDP: no replica holds shard {index} at the job's step {info.step} (the replicas' "
                        f"shards hold {counts} steps): it was lost with every replica of it, or a death in the last "
                        "collectives of a step let other shards commit it and made this one fail it everywhere; "
                        "resume from your last torch.distributed.checkpoint, and keep a copy of each shard on its "
                        "neighbour with ElasticState(..., copy_shards=True) (docs/guides/sharded.md)", INVALID)
        takers = [rank for rank, held in enumerate(counts) if held != info.step and rank != src]
        if src is not None and takers:
            self._send_or_take(src, takers)
        if self.copy is not None:  # every shard of the replica, lost or not: a shard's copy comes from the next
            self.copy.restore(info.step, src is None)
        self.at = info.step
        self.synced_view = info.view_epoch

    def _send_or_take(self, src: int, takers: List[int]) -> None:
        """The source's shards and their optimizer state to the workers that lack the step (a replica that
        holds it receives nothing), received in place (the parameters) or into fresh tensors (the
        optimizer's): _shard_message.py."""
        me = self.group.rank()
        params = [local(t) for _, t in self.tensors]
        with torch.no_grad():
            if me == src:
                send(self.agent, self.group, message_of(params, self.optimizer), takers)
            elif me in takers:
                layout, tensors = take(self.agent, self.group, src, params)
                load_optimizer(self.optimizer, layout, tensors[len(params):])


def fsdp_root(model: torch.nn.Module) -> Any:
    """The model, when fully_shard made it an FSDP2 root whose failed iterations can be reset; refused
    otherwise with the fix."""
    from torch.distributed.fsdp import FSDPModule
    if not isinstance(model, FSDPModule):
        raise Error("ftl: ElasticState: an HSDP model is given to it whole, fully_shard(model, mesh=mesh) after "
                    "its layers (as FSDP2's docs do): a step that loses a peer resets the root's iteration", INVALID)
    if not hasattr(model, "reset_iter_state"):
        raise Error(f"ftl: ElasticState: this torch ({torch.__version__}) has no FSDPModule.reset_iter_state, which "
                    "an HSDP step that loses a peer needs before it runs again; upgrade torch", INVALID)
    return model


def check_optimizer(optimizer: Optional[torch.optim.Optimizer], tensors: List[Tuple[str, Any]]) -> None:
    """An optimizer made before fully_shard holds the unsharded parameters, which FSDP2 no longer trains:
    it would step tensors nobody reads, and the model would not learn, without an error. And one there must
    be: the step's vote runs before it steps (ShardSync.vote)."""
    if optimizer is None:
        raise Error("ftl: ElasticState: an HSDP model needs its optimizer given too (ElasticState(agent, model, "
                    "optimizer)): its state is sharded with the model, and no shard may step before every rank "
                    "has its gradients", INVALID)
    shards = {id(t) for _, t in tensors}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in shards:
                raise Error("ftl: ElasticState: the optimizer holds a parameter that is not one of the model's shards "
                            "(made before fully_shard?); make the optimizer after fully_shard, from "
                            "model.parameters()", INVALID)


def source(counts: List[int], step: int) -> Optional[int]:
    """The replicate-group rank whose shards are the job's at `step`: the first that holds it; at step 0 the
    first replica whatever it holds (nobody has trained yet); None when nobody holds it."""
    for rank, held in enumerate(counts):
        if held == step:
            return rank
    return 0 if step == 0 else None


def sharded_tensors(model: torch.nn.Module) -> List[Tuple[str, Any]]:
    from torch.distributed.tensor import DTensor
    named = list(model.named_parameters()) + [(n, b) for n, b in model.named_buffers() if b is not None]
    return [(n, t) for n, t in named if isinstance(t, DTensor)]
