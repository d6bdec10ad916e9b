"""Gradient averaging over the world in fused buckets, as DDP does it.

One allreduce per parameter would pay the collective's latency (a ring: 2(n-1) network hops) once per
tensor; a model has hundreds. So the gradients are packed into a few flat buffers ("buckets", one dtype
and device each, at most bucket_cap_mb, DDP's 25 MB by default), allocated once: each step copies the
gradients in, runs one allreduce (sum) per bucket, and copies the averages back.

The average is weighted by sample counts: each rank scales its gradient (the mean over its own samples)
by its count and adds the count into one extra slot of the first float32/float64 bucket, so one sum
gives both; dividing by the summed count is the mean over the global batch, even when the ranks had
unequal counts. Without counts every rank weighs 1: the plain average over the world size.

A parameter that has no gradient on a rank counts as zeros there, and every rank then gets the same
averaged gradient for it (zeros if no rank had one), so the optimizer makes the same update everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Tuple, Union

import torch

_WEIGHT_DTYPES = (torch.float32, torch.float64)


@dataclass
class _Bucket:
    flat: torch.Tensor                                   # the fused buffer, allocated once
    slots: List[Tuple[torch.nn.Parameter, int, int]] = field(default_factory=list)  # (param, offset, numel)
    used: int = 0                                        # elements holding gradients (then maybe the weight)


def _plan(params: List[torch.nn.Parameter], cap_bytes: int) -> List[Tuple[List[torch.nn.Parameter], Any]]:
    """Parameters grouped by (dtype, device) in model order, each group cut where it passes cap_bytes."""
    groups: dict = {}
    for p in params:
        groups.setdefault((p.dtype, p.device), []).append(p)
    plans = []
    for key, members in groups.items():
        current, size = [], 0
        for p in members:
            nbytes = p.numel() * p.element_size()
            if current and size + nbytes > cap_bytes:
                plans.append((current, key))
                current, size = [], 0
            current.append(p)
            size += nbytes
        plans.append((current, key))
    return plans


class GradientAverager:
    """Averages the gradients of `model` (a Module, or an iterable of parameters) over the world.

    Call average() in the step after backward() and before optimizer.step(); it raises PeerLostError when
    a peer is lost (let it propagate: the step runs again on the next view)."""

    def __init__(self, agent: Any, model: Union[torch.nn.Module, Iterable[torch.nn.Parameter]],
                 bucket_cap_mb: float = 25):
        params = model.parameters() if isinstance(model, torch.nn.Module) else model
        params = [p for p in params if p.requires_grad]
        if bucket_cap_mb <= 0:
            raise ValueError("ftl.torch: bucket_cap_mb must be positive")
        self.agent = agent
        self.buckets: List[_Bucket] = []
        for members, (dtype, device) in _plan(params, int(bucket_cap_mb * 2**20)):
            bucket = _Bucket(flat=torch.empty(0))
            for p in members:
                bucket.slots.append((p, bucket.used, p.numel()))
                bucket.used += p.numel()
            self.buckets.append(bucket)
            bucket.flat = torch.zeros(bucket.used, dtype=dtype, device=device)
        self._weight_at = self._weight_slot(params)

    def _weight_slot(self, params: List[torch.nn.Parameter]) -> _Bucket:
        """The bucket whose last element carries the rank's weight: the first float32/float64 one, grown by
        one element, or a bucket of its own when the model has none (a float16-only model)."""
        bucket = next((b for b in self.buckets if b.flat.dtype in _WEIGHT_DTYPES), None)
        if bucket is None:
            device = params[0].device if params else torch.device("cpu")
            bucket = _Bucket(flat=torch.zeros(1, dtype=torch.float64, device=device))
            self.buckets.append(bucket)
        else:
            bucket.flat = torch.zeros(bucket.used + 1, dtype=bucket.flat.dtype, device=bucket.flat.device)
        return bucket

    def average(self, samples: Optional[float] = None) -> float:
        """Replaces every parameter's gradient by the world's average. With `samples` (this rank's sample
        count in the step, which may be 0) the average is weighted by the counts: the gradient of the mean
        loss over the global batch, when each rank's gradient is that of its own mean loss. Returns the
        summed weight: the global sample count, or the world size without counts."""
        weight = 1.0 if samples is None else float(samples)
        with torch.no_grad():
            for b in self.buckets:
                self._copy_in(b, weight)
            self._weight_at.flat[-1] = weight
            for b in self.buckets:  # one allreduce per bucket: the whole point
                self.agent.allreduce(b.flat, op="sum")
            total = float(self._weight_at.flat[-1])
            for b in self.buckets:
                self._copy_out(b, total)
        return total

    @staticmethod
    def _copy_in(b: _Bucket, weight: float) -> None:
        for p, offset, n in b.slots:
            if p.grad is None:
                b.flat[offset:offset + n].zero_()
            else:
                if p.grad.is_sparse:
                    raise ValueError("ftl.torch: sparse gradients are not supported by GradientAverager")
                b.flat[offset:offset + n].copy_(p.grad.reshape(-1))
        if weight != 1.0:
            b.flat[:b.used].mul_(weight)

    @staticmethod
    def _copy_out(b: _Bucket, total: float) -> None:
        if total > 0:
            b.flat[:b.used].div_(total)
        for p, offset, n in b.slots:
            averaged = b.flat[offset:offset + n].view_as(p)
            if p.grad is None:
                p.grad = averaged.clone()
            else:
                p.grad.copy_(averaged)
