"""Which contiguous streams a rank reads in a step (agent.set_sampler(order="contiguous")), so that a
sequence model carries each stream's hidden state from step to step.

In the contiguous order the data epoch is cut into S streams (S = global batch / chunk), each a contiguous
stretch of the dataset; a step takes the next chunk of every stream, and each rank takes whole streams,
the same ones at every step while the view stays. A rescale deals the streams anew: a rank then holds
streams whose hidden state another rank had, so reset the state of streams it did not hold in its last
step (a new data epoch starts new streams: reset them all). The streams themselves do not change, so each
sample is still used once per data epoch.
"""
from __future__ import annotations

from typing import Any


def streams(info: Any) -> range:
    """The streams this rank reads in the step.

    Args:
        info (StepInfo): the step's, in the contiguous order.

    Returns:
        range: the stream numbers of info's samples: info.indices holds info.micro_batch samples of each
        (fewer in a data epoch's last step), stream by stream, in this order.
    """
    if not info.micro_batch or not len(info.indices):
        return range(0)
    count = -(-len(info.indices) // info.micro_batch)
    return range(info.first_micro, info.first_micro + count)
