"""A step's samples from a torch.utils.data Dataset: the indices ftl's elastic sampler chose for this rank.

ftl decides which samples each rank uses (StepInfo.indices, from a global position that survives
rescales), so a DistributedSampler and a DataLoader's own shuffling have no say: batch() fetches exactly
those samples and collates them as a DataLoader would. With a fixed global batch whose share is more than
a rank can hold (FTL_MAX_BATCH_PER_RANK), micro_batches() yields it in chunks for gradient accumulation.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

from torch.utils.data import default_collate


def batch(dataset: Any, info: Any, collate_fn: Callable[[Sequence[Any]], Any] = default_collate) -> Optional[Any]:
    """This rank's samples of the step, collated as a DataLoader would.

    Args:
        dataset (torch.utils.data.Dataset): indexed by ftl's indices.
        info (StepInfo): the step's; its indices are this rank's.
        collate_fn (callable): as a DataLoader's.

    Returns:
        The collated samples dataset[i] for i in info.indices, or None when this rank has no samples in the
        step (the end of a data epoch can leave a rank without any; it must still take part in the step's
        collectives, with zero samples).
    """
    return _collated(dataset, info.indices, collate_fn)


def _collated(dataset: Any, chosen: Sequence[Any], collate_fn: Callable[[Sequence[Any]], Any]) -> Optional[Any]:
    indices = [int(i) for i in chosen]
    if not indices:
        return None
    fetch_many = getattr(dataset, "__getitems__", None)  # a Dataset may fetch a batch at once (Subset does)
    samples = fetch_many(indices) if fetch_many else [dataset[i] for i in indices]
    return collate_fn(samples)


def micro_batches(dataset: Any, info: Any,
                  collate_fn: Callable[[Sequence[Any]], Any] = default_collate) -> Iterator[Any]:
    """This rank's samples of the step in chunks of info.micro_batch (all at once when it is 0): run forward
    and backward on each, scaling each chunk's loss by its share of the rank's samples (or summing, then
    dividing once), so the accumulated gradient is the rank's mean, as with one batch().

    Args:
        dataset, info, collate_fn: as batch()'s.

    Returns:
        An iterator of the collated chunks.
    """
    size = max(getattr(info, "micro_batch", 0) or len(info.indices), 1)
    for start in range(0, len(info.indices), size):
        yield _collated(dataset, info.indices[start:start + size], collate_fn)
