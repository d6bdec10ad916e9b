"""ElasticSampler: DistributedSampler's place in the program's own loop, with each sample of a data epoch
trained once across kills, joins and leaves (loop mode; the driver is _loop.py).

What a rank takes: from the job's committed position p of data epoch e (a global count of that epoch's
order), rank r of a view of W takes the order's entries p + r, p + r + W, p + r + 2W, ... (interleaved,
as DistributedSampler does), and its DataLoader batches them. Every step then trains one contiguous block
of the order across the ranks, whatever the batch size, so a commit moves p by W times the samples per
rank of the step, and the next view starts from there: the failed step's samples are handed out again,
split over the new view. The tail of an epoch is padded (drop_last=False: up to W - 1 samples repeated
from the view's first ones, as DistributedSampler pads) or dropped (drop_last=True), so that every rank
has as many batches as the others.

What a DataLoader prefetched for the old view is stale once the view changes: the sampler records what
it yielded, and the DataLoader's iterator (its class swapped for a subclass that does this) skips a stale
batch and hands the loop the next one, so the loop never sees it; a stale batch costs its fetch only (at
most num_workers * prefetch_factor of them a view change; none with num_workers=0, whose DataLoader asks
for a batch's indices only when the loop wants the batch).
"""
from __future__ import annotations

import collections
import sys
from typing import Any, Dict, Iterator, List, Optional

import torch
from torch.utils.data import BatchSampler, Sampler
from torch.utils.data.dataloader import _BaseDataLoaderIter

from ..errors import INVALID, Error
from ._loop import Loop, loop_of


class _Part:
    """A run of one rank's samples from one committed position in one view: data epoch, the position it
    starts at, the view's world size and this rank's, how many samples per rank it holds, and how many of
    them have committed."""

    def __init__(self, epoch: int, start: int, world: int, rank: int, length: int, generation: int):
        self.epoch, self.start, self.world, self.rank = epoch, start, world, rank
        self.length = self.usable = length
        self.generation = generation
        self.committed = self.delivered = 0


class _Plan:
    """One iteration of a DataLoader over the sampler: what it yielded, in order, not yet handed to the loop."""

    def __init__(self, sampler: "ElasticSampler", batch_size: int, loader_drops_last: bool):
        self.sampler, self.batch_size, self.loader_drops_last = sampler, batch_size, loader_drops_last
        self.yielded: collections.deque = collections.deque()  # the _Part of each sample yielded
        self.ended = False
        self.last: Optional[_Part] = None
        self.wanted: Optional[int] = None  # the data epoch this iteration trains
        # The DataLoader asked for the first batch's indices inside the __next__ that hands it over (no
        # worker processes): that __next__ was not yet watched, so the batch is delivered as it is complete.
        self.delivers_first = False

    def items(self) -> Iterator[int]:
        loop = self.sampler.loop
        loop.begin()  # a joiner waits here for its first view, and rank 0's position
        epoch, start = loop.position
        wanted = self.sampler.wanted_epoch()
        loop.catching_up = self.sampler.passes_epoch()
        if loop.catching_up:
            self.ended = True
            return
        loop.loop_epoch = self.wanted = wanted
        if wanted > epoch and loop.current.step == 0:  # a new job resumed from the program's own snapshot
            epoch = loop.position[0] = wanted
        total = 0
        while True:
            generation, info = loop.generation, loop.current
            part = self._part(epoch, start, info.world_size, info.rank, generation)
            if self.loader_drops_last and epoch == wanted:  # the DataLoader drops the plan's partial last batch
                part.usable = part.length - (total + part.length) % self.batch_size
            self.last = part
            restarted = False
            for i in range(part.length):
                if loop.generation != generation:
                    restarted = True
                    break
                self.yielded.append(part)
                total += 1
                if self.delivers_first and total == self.batch_size:
                    self._deliver_first(loop)
                yield self.sampler.index(part, i)
            restarted = restarted or loop.generation != generation  # its last step dropped, asked again
            if restarted:
                epoch, start = loop.position
                if epoch > wanted:
                    break
                continue
            if part.epoch >= wanted:
                break
            epoch, start = wanted, 0  # the tail of an unfinished earlier epoch came first: now the wanted one
        self.ended = True
        loop.loop_epoch = wanted + 1  # handed out whole: the job's loop goes on to the next epoch
        if self.delivers_first and total and not self.loader_drops_last:
            self._deliver_first(loop)

    def _deliver_first(self, loop: Loop) -> None:
        self.delivers_first = False
        self.deliver(loop)  # fresh: this plan's first batch, asked for in this attempt

    def _part(self, epoch: int, start: int, world: int, rank: int, generation: int) -> _Part:
        remaining = self.sampler.size - start
        length = remaining // world if self.sampler.drop_last else -(-remaining // world)
        return _Part(epoch, start, world, rank, length, generation)

    def deliver(self, loop: Loop) -> bool:
        """The DataLoader handed out its next batch: its samples' parts go to the step; False (and nothing
        kept) when it was prefetched for a view or an attempt that is gone (stale)."""
        n = len(self.yielded) if self.ended and len(self.yielded) < self.batch_size else self.batch_size
        parts = [self.yielded.popleft() for _ in range(min(n, len(self.yielded)))]
        if any(p.generation != loop.generation for p in parts):
            loop.stale += 1
            return False
        for p in parts:
            p.delivered += 1
        loop.step_parts.extend(parts)
        return True

    def batches_left(self) -> int:
        """The batches this iteration still hands out after the last one delivered, if the view stays (a
        trainer that counts an epoch's batches is told, since len() was the view's at the epoch's start)."""
        last = self.sampler.loop.step_parts[-1] if self.sampler.loop.step_parts else self.last
        if last is None:
            return 0
        left = last.length - last.delivered
        if self.wanted is not None and last.epoch < self.wanted:  # an earlier epoch's tail: the wanted one follows
            left += self._part(self.wanted, 0, last.world, last.rank, last.generation).length
        return left // self.batch_size if self.loader_drops_last else -(-left // self.batch_size)

    def commit(self, parts: List[_Part]) -> None:
        """The step's samples committed: the job's position moves past them."""
        if not parts:
            return
        for p in parts:
            p.committed += 1
        last = parts[-1]
        loop = self.sampler.loop
        if last.committed >= last.usable:
            loop.position = [last.epoch + 1, 0]
        else:
            loop.position = [last.epoch, min(self.sampler.size, last.start + last.world * last.committed)]

    def untrained(self) -> int:
        """Samples of the wanted epoch left without a commit after the DataLoader ran out (0 when none)."""
        last = self.last
        if not self.ended or last is None or self.sampler.loop.position[0] > last.epoch:
            return 0
        return max(0, self.sampler.size - self.sampler.loop.position[1])


class ElasticSampler(Sampler):
    """In place of DistributedSampler: DataLoader(dataset, batch_size=B, sampler=ElasticSampler(dataset)),
    then the program's own loop (sampler.set_epoch(epoch); for batch in loader: ... optimizer.step()). Each
    rank takes B samples a step from the job's position in the live view; a step whose collectives lost a
    peer is dropped by the optimizer of the ElasticState (the commit point) and its samples come again in
    the next view, so each sample of a data epoch is trained once (drop_last=False pads an epoch's tail by
    up to world - 1 samples, as DistributedSampler does). len() is this rank's share of what is left of
    the epoch in the live view: once there is an ElasticState, the first len() waits for the job's first
    view, as iterating does (before it, len() counts this worker alone).

    A joiner's loop starts at the job's data epoch: its iterations of the epochs the job has finished are
    empty.

    Args:
        dataset (torch.utils.data.Dataset): the training data (its len()).
        shuffle (bool), seed (int): a permutation per epoch, the same on every rank (set_epoch's epoch, or
            the job's data epoch if set_epoch is never called).
        drop_last (bool): as DistributedSampler's.
        agent (ftl.Agent, optional): the agent of ftl.torch.init_process_group by default.
        num_replicas, rank: DistributedSampler's, refused: the live view gives them.

    Raises:
        Error: num_replicas or rank given, no agent, FTL_SLOW_POLICY=rebalance, or a second ElasticSampler
            while the first one's DataLoader is in an epoch.
    """

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0, drop_last: bool = False,
                 agent: Any = None, num_replicas: Optional[int] = None, rank: Optional[int] = None):
        if num_replicas is not None or rank is not None:
            raise Error("ftl: ElasticSampler: the live view gives the world size and the rank, which change as "
                        "workers come and go: leave num_replicas and rank out", INVALID)
        if agent is None:
            from ._process_group import _default_group
            if _default_group is None:
                raise Error("ftl: ElasticSampler: call ftl.torch.init_process_group(agent) first, or pass agent=",
                            INVALID)
            agent = _default_group._agent
        if getattr(agent, "slow_policy", None) == "rebalance":
            raise Error("ftl: ElasticSampler gives every rank an equal part of a step (a DDP loop averages over "
                        "ranks), and FTL_SLOW_POLICY=rebalance would give a slow rank fewer samples: use "
                        "FTL_SLOW_POLICY=replace, or step mode with a fixed global batch (agent.execute, "
                        "ElasticLoader, GradientAverager with sample counts)", INVALID)
        self.size = len(dataset)
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch: Optional[int] = None
        self.loop = loop_of(agent)
        plan = self.loop.plan
        if plan is not None and plan.sampler is not self and not plan.ended:
            raise Error("ftl: a second ElasticSampler on this agent while the first one's DataLoader is in an "
                        "epoch: one ElasticSampler per job, the training data's (its commits are the job's "
                        "steps); give an evaluation DataLoader a sampler of its own (SequentialSampler)", INVALID)
        self._order: Dict[int, torch.Tensor] = {}

    def wanted_epoch(self) -> int:
        """The data epoch an iteration starting now trains: set_epoch's, or the job's."""
        return self.epoch if self.epoch is not None else max(self.loop.position[0], self.loop.loop_epoch)

    def passes_epoch(self) -> bool:
        """An iteration starting now passes its epoch, empty: the job's loop is past it (it iterates a later
        one, or has handed this one out whole, or its data is all committed), and this is a joiner's loop.
        The rule sees what a survivor's own iteration does after the same state sync, so both take the same
        samples next."""
        wanted = self.wanted_epoch()
        return wanted < self.loop.loop_epoch or wanted < self.loop.position[0]

    def set_epoch(self, epoch: int) -> None:
        """The data epoch the next iteration trains, as DistributedSampler's set_epoch."""
        self.epoch = int(epoch)

    def index(self, part: _Part, i: int) -> int:
        """The dataset index of part's i-th sample (padding wraps to the part's first ones)."""
        offset = part.rank + part.world * i
        remaining = self.size - part.start
        if offset >= remaining:
            offset %= remaining
        return int(self._epoch_order(part.epoch)[part.start + offset])

    def _epoch_order(self, epoch: int) -> torch.Tensor:
        if epoch not in self._order:
            self._order = {epoch: (torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + epoch))
                                   if self.shuffle else torch.arange(self.size))}
        return self._order[epoch]

    def __len__(self) -> int:
        trainer = self.loop.trainer is not None  # see Loop.trainer: no wait, and never 0
        if self.loop.door.elastic_state is not None and not trainer:
            self.loop.begin(settle=False)  # the first view (and a joiner's position) first: the live view's
        epoch, start = self.loop.position
        if self.epoch is not None and self.epoch < epoch:
            return int(trainer)  # an epoch the job has finished: a joiner's loop passes it empty
        remaining = self.size - start if self.epoch in (None, epoch) else self.size
        current = self.loop.current
        world = current.world_size if current is not None else 1
        return remaining // world if self.drop_last else -(-remaining // world)

    def __iter__(self) -> Iterator[int]:
        batching, iterator, in_next = _dataloader_of(self, sys._getframe(1))
        plan = _Plan(self, batching.batch_size, batching.drop_last)
        plan.delivers_first = in_next and not getattr(type(iterator), "_ftl_watched", False)
        _watch(iterator, plan)
        self.loop.plan = plan
        return plan.items()


def _dataloader_of(sampler: ElasticSampler, frame: Any) -> tuple:
    """(the DataLoader's BatchSampler over sampler, the DataLoader iterator asking, whether it asks from its
    __next__): found on the calling frames, since a Sampler is not told which DataLoader iterates it."""
    batching = iterator = None
    in_next = False
    for _ in range(12):
        if frame is None:
            break
        me = frame.f_locals.get("self")
        if isinstance(me, BatchSampler) and me.sampler is sampler:
            batching = me
        elif isinstance(me, _BaseDataLoaderIter):
            iterator = me
            in_next = in_next or frame.f_code.co_name == "__next__"
        frame = frame.f_back
    if batching is None or iterator is None:
        raise Error("ftl: ElasticSampler is a torch DataLoader's sampler, with a batch size: "
                    "DataLoader(dataset, batch_size=B, sampler=ElasticSampler(dataset))", INVALID)
    return batching, iterator, in_next


_WATCHED: Dict[type, type] = {}


def _watch(iterator: Any, plan: _Plan) -> None:
    """The DataLoader iterator tells plan each time it hands the loop a batch."""
    cls = type(iterator)
    if not getattr(cls, "_ftl_watched", False):
        if cls not in _WATCHED:
            def next_batch(self: Any, base: type = cls) -> Any:
                loop = self._ftl_plan.sampler.loop
                loop.settle()  # the step before ends here
                while True:  # a batch prefetched for a view or an attempt that is gone is skipped, unseen
                    batch = base.__next__(self)
                    plan = self._ftl_plan
                    if plan is not loop.plan:
                        return batch
                    if plan.deliver(loop):
                        if loop.trainer is not None:
                            loop.trainer.batches_left(plan.batches_left())
                        return batch
            _WATCHED[cls] = type(cls.__name__, (cls,), {"__next__": next_batch, "_ftl_watched": True})
        iterator.__class__ = _WATCHED[cls]
    iterator._ftl_plan = plan
