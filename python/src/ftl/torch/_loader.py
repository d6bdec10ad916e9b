"""ElasticLoader: a normal torch DataLoader (worker processes, prefetch, pin_memory) fed by ftl's elastic
sampler, keeping its promise that each sample is used once per data epoch across rescales.

The DataLoader fetches the batches ElasticBatchSampler predicts for the coming steps. Inside a step,
batch(info) hands out the oldest prefetched batch only if its indices are info.indices; otherwise (the
view changed, a step runs again, the job resumed elsewhere) the prefetched batches are stale: they are
dropped, the prediction restarts from info's position and view, and the step waits for its own batch. The
step thus only ever gets info.indices, whatever the guesses were: exactly-once holds by construction, and
a wrong guess costs a fetch.

Why persistent workers by default: restarting the prediction then reuses the worker processes (the old
iteration's outstanding fetches are drained and dropped) instead of starting new ones.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
from torch.utils.data import DataLoader

from ._sampler import ElasticBatchSampler


class ElasticLoader:
    """loader = ElasticLoader(agent, dataset, num_workers=2, pin_memory=True); inside a step,
    batch = loader.batch(info). The DataLoader is self.loader; self.dropped counts the prefetched batches
    dropped as stale.

    Args:
        agent (ftl.Agent): the agent, whose sampler (agent.set_sampler, set_batch) chooses the samples.
        dataset (torch.utils.data.Dataset): indexed by ftl's indices.
        epoch_order (callable, optional): a custom order of samples (ElasticBatchSampler says how).
        **dataloader_args: go to DataLoader (collate_fn, num_workers, pin_memory, prefetch_factor,
            worker_init_fn, ...), except those that choose samples (batch_size, shuffle, sampler,
            batch_sampler, drop_last): ftl chooses them.
    """

    def __init__(self, agent: Any, dataset: Any, epoch_order: Optional[Callable[[int], Sequence[int]]] = None,
                 **dataloader_args: Any):
        if dataloader_args.get("num_workers", 0) > 0:
            dataloader_args.setdefault("persistent_workers", True)
        self.sampler = ElasticBatchSampler(agent, epoch_order)
        self.loader = DataLoader(dataset, batch_sampler=self.sampler, **dataloader_args)
        self._batches: Optional[Any] = None  # the DataLoader's iterator
        self.dropped = 0

    def batch(self, info: Any) -> Optional[Any]:
        """This rank's samples of a step, as the DataLoader fetched them.

        Args:
            info (StepInfo): the step's.

        Returns:
            The collated samples; None when this rank has no samples in the step (it still takes part in
            the step's collectives).
        """
        if not len(info.indices):
            return None
        if self._batches is not None:
            taken = self._take()
            if taken is not None and np.array_equal(taken[0], info.indices):
                return taken[1]
            self.dropped += (taken is not None) + len(self.sampler.predicted)
        self.sampler.restart(info)
        self._batches = iter(self.loader)
        taken = self._take()
        if taken is None or not np.array_equal(taken[0], info.indices):
            raise RuntimeError("ftl: ElasticLoader: the sampler's look-ahead from the step's own position gave "
                               "other indices than the step's (a bug: ftl_sampler_peek must compute what "
                               "ftl_execute hands out)")
        return taken[1]

    def indices(self, info: Any) -> list:
        """The dataset indices of a step's samples.

        Args:
            info (StepInfo): the step's.

        Returns:
            list: info.indices through epoch_order, if any.
        """
        return self.sampler.dataset_indices(info.indices, info.data_epoch)

    def _take(self) -> Optional[tuple]:
        """(ftl's indices, the batch) of the oldest prefetched batch; None when the prediction ran out."""
        try:
            data = next(self._batches)
        except StopIteration:
            return None
        return self.sampler.predicted.popleft(), data
