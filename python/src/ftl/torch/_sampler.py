"""ElasticBatchSampler: a DataLoader's batch_sampler that predicts the coming steps' indices.

A step's real indices are known only when it runs (they depend on the view's world size and rank), yet a
DataLoader wants its batches ahead, to fetch them in worker processes. From the position of a step that
ran, this sampler yields the batches of the steps after it, computed by ftl_sampler_peek exactly as
ftl_execute will hand them if the view stays as it is. Whether a prediction held is ElasticLoader's
business: it uses a batch only when its indices are the step's, so a wrong guess costs a fetch, never a
sample used twice or skipped.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Iterator, List, Optional, Sequence

from torch.utils.data import Sampler

from .._sampler_peek import SamplerPeek

# A rank may take no samples in a step (the end of a data epoch, a global batch smaller than the world):
# such steps are skipped, and after this many in a row the prediction stops rather than spin.
MAX_EMPTY_STEPS = 64


class ElasticBatchSampler(Sampler):
    """Yields, for each coming step in which this rank has samples, the dataset indices of its share.
    predicted holds ftl's indices of the batches yielded and not yet taken.

    Args:
        agent (ftl.Agent): the agent whose sampler it predicts.
        epoch_order (callable, optional): epoch_order(data_epoch) -> a sequence of dataset_size dataset
            indices: a custom order, through which ftl's indices are mapped (with
            set_sampler(order="sequential") it is visited as given; it must be the same on every rank).
    """

    def __init__(self, agent: Any, epoch_order: Optional[Callable[[int], Sequence[int]]] = None):
        self._peek = SamplerPeek(agent)
        self._epoch_order = epoch_order
        self._order_of: tuple = (None, None)  # (data_epoch, its order): one epoch's order at a time
        self._start: Optional[tuple] = None   # (data_epoch, sample_pos, world_size, rank) of the next step
        self.predicted: collections.deque = collections.deque()

    def restart(self, info: Any) -> None:
        """The next iteration starts at the step of info (a StepInfo), in its view."""
        self._start = (info.data_epoch, info.sample_pos, info.world_size, info.rank)
        self.predicted.clear()

    def dataset_indices(self, indices: Sequence[int], data_epoch: int) -> List[int]:
        """ftl's indices of data epoch data_epoch as dataset indices (through epoch_order, if any)."""
        if self._epoch_order is None:
            return [int(i) for i in indices]
        if self._order_of[0] != data_epoch:
            self._order_of = (data_epoch, self._epoch_order(data_epoch))
        order = self._order_of[1]
        return [int(order[int(i)]) for i in indices]

    def __iter__(self) -> Iterator[List[int]]:
        if self._start is None:
            return
        epoch, pos, world, rank = self._start
        empty = 0
        while empty < MAX_EMPTY_STEPS:
            indices, next_epoch, pos = self._peek(world, rank, epoch, pos)
            if len(indices):
                empty = 0
                self.predicted.append(indices)
                yield self.dataset_indices(indices, epoch)
            else:
                empty += 1
            epoch = next_epoch
