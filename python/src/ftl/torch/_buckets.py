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

Overlapped mode (overlap=True) hides the allreduces behind the backward pass, as DDP's hooks do: a hook
on every parameter (register_post_accumulate_grad_hook) counts the gradients that have arrived; when a
bucket is complete its gradients are copied in and its allreduce starts asynchronously while backward
goes on with the earlier layers; average() starts what is left and waits for all. Buckets start in one
fixed order on every rank (reverse model order, the order backward produces them: a bucket starts only
after those before it), since every rank must make its collectives in the same order, even when a rank
leaves some parameters without a gradient. The buckets, the copies and the reductions are the very same
as without overlap, so the result is equal bit for bit. The weight must then be known before backward:
set_samples(n) in the step before backward() (or pass samples to average() when no bucket filled early).
One backward per average(); backward must run inside the step (the hooks make collectives).

Compression (compress=, by default the job's FTL_COMM_COMPRESS): each float32 bucket's allreduce goes
through an ftl.GradientBucket, bf16 on the wire (half the bytes) with f32 accumulation, with error
feedback under "bf16-ef" (the bucket keeps what rounding dropped for the next step). Only gradients are
rounded: the weight slot then lives in an uncompressed bucket (a float64 one, or one of its own), so the
sample counts stay exact. Other dtypes are never compressed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Tuple, Union

import torch

from ..errors import INVALID, Error
from ..gradient import GradientBucket

_WEIGHT_DTYPES = (torch.float32, torch.float64)


@dataclass
class _Bucket:
    flat: torch.Tensor                                   # the fused buffer, allocated once
    slots: List[Tuple[torch.nn.Parameter, int, int]] = field(default_factory=list)  # (param, offset, numel)
    used: int = 0                                        # elements holding gradients (then maybe the weight)
    ready: int = 0                                       # overlap: gradients arrived in this backward
    reducer: Optional[GradientBucket] = None             # compressed float32 bucket: its allreduce


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
    """Averages a model's gradients over the world, in fused buckets. Call average() in the step after
    backward() and before optimizer.step().

    Args:
        agent (ftl.Agent): the agent.
        model (torch.nn.Module or iterable of parameters): whose gradients (those that require grad).
        bucket_cap_mb (float): a bucket's size.
        overlap (bool): the allreduces start during backward (see the module's notes; call set_samples()
            before backward).
        compress (str, optional): None (the job's FTL_COMM_COMPRESS), "off", "bf16" or "bf16-ef", for the
            float32 buckets.

    Raises:
        ValueError: bucket_cap_mb is not positive.
        ConfigError: compression this job cannot do (under nccl, in reproducible mode).
    """

    def __init__(self, agent: Any, model: Union[torch.nn.Module, Iterable[torch.nn.Parameter]],
                 bucket_cap_mb: float = 25, overlap: bool = False, compress: Optional[str] = None):
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
            if dtype == torch.float32:
                bucket.reducer = self._compressed(compress)
        self._weight_at = self._weight_slot(params)
        self.overlap = overlap
        # Overlap: the start order (buckets with parameters in reverse, then a weight-only one), the next to
        # start, the requests in flight, the weight the started buckets were scaled by.
        self._order = [b for b in reversed(self.buckets) if b.slots] + [b for b in self.buckets if not b.slots]
        self._next = 0
        self._requests: List[Any] = []
        self._weight: Optional[float] = None
        self._hooks = []
        if overlap:
            for b in self.buckets:
                for p, _, _ in b.slots:
                    self._hooks.append(p.register_post_accumulate_grad_hook(
                        lambda _p, b=b: self._on_gradient(b)))

    def _compressed(self, compress: Optional[str]) -> Optional[GradientBucket]:
        """A compressing GradientBucket, or None when the mode is off (the plain allreduce)."""
        reducer = GradientBucket(self.agent, compress)
        if reducer.compress == "off":
            reducer.close()
            return None
        return reducer

    def _allreduce(self, b: _Bucket) -> None:
        (b.reducer or self.agent).allreduce(b.flat, op="sum")

    def _allreduce_async(self, b: _Bucket) -> Any:
        return (b.reducer or self.agent).allreduce_async(b.flat, op="sum")

    def set_samples(self, samples: Optional[float]) -> None:
        """Overlap: this rank's sample count for the coming backward.

        Args:
            samples (float, optional): the weight the buckets are scaled by as they start; None weighs 1.
        """
        self._weight = self._weight_of(samples)

    def _weight_of(self, samples: Optional[float]) -> float:
        """The weight of this rank's gradient: its sample count, or 1 without one, which the rebalance policy
        refuses (ranks' shares differ there, so an average over ranks would weigh a slow rank's few samples
        as much as a fast rank's many)."""
        if samples is not None:
            return float(samples)
        if getattr(self.agent, "slow_policy", None) == "rebalance":
            raise Error("ftl.torch: GradientAverager without a sample count under FTL_SLOW_POLICY=rebalance, where "
                        "the ranks' shares of the global batch differ: pass this rank's count "
                        "(average(samples=len(info.indices)), or set_samples() before backward with overlap)",
                        INVALID)
        return 1.0

    def _on_gradient(self, b: _Bucket) -> None:
        if b.ready == len(b.slots):  # a second backward without average(): the first was abandoned
            self.reset()
        b.ready += 1
        self._start_ready(everything=False)

    def _start_ready(self, everything: bool) -> None:
        """Starts the buckets whose turn it is: complete ones (or every one left, at average())."""
        if self._weight is None:
            self._weight = self._weight_of(None)
        while self._next < len(self._order):
            b = self._order[self._next]
            if not everything and (not b.slots or b.ready < len(b.slots)):
                return
            with torch.no_grad():
                self._copy_in(b, self._weight)
                if b is self._weight_at:
                    b.flat[-1] = self._weight
            self._next += 1
            self._requests.append(self._allreduce_async(b))

    def _average_overlapped(self, samples: Optional[float]) -> float:
        try:
            if samples is not None:
                if self._next > 0 and self._weight != float(samples):
                    raise ValueError(f"ftl.torch: average(samples={samples}) but the buckets started during "
                                     f"backward were weighted {self._weight}: call set_samples() before backward()")
                self._weight = float(samples)
            self._start_ready(everything=True)
            first = None
            for r in self._requests:  # every one, even after a failure: each must be consumed
                try:
                    r.wait()
                except Exception as e:  # noqa: BLE001 (re-raised below)
                    first = first or e
            if first is not None:
                raise first
            with torch.no_grad():
                total = float(self._weight_at.flat[-1])
                for b in self.buckets:
                    self._copy_out(b, total)
            return total
        finally:
            self.reset()

    def reset(self) -> None:
        """Overlap: forgets a backward whose average() will not come (the step failed before it): waits
        for what it started, ignoring errors, so the next backward starts clean."""
        for r in self._requests:
            try:
                r.wait()
            except Exception:  # noqa: BLE001 (the step is being abandoned)
                pass
        self._requests, self._next, self._weight = [], 0, None
        for b in self.buckets:
            b.ready = 0

    def _weight_slot(self, params: List[torch.nn.Parameter]) -> _Bucket:
        """The bucket whose last element carries the rank's weight: the first uncompressed float32/float64
        one, grown by one element, or a bucket of its own when the model has none (a float16-only model,
        or compressed float32 buckets only)."""
        bucket = next((b for b in self.buckets if b.flat.dtype in _WEIGHT_DTYPES and b.reducer is None), None)
        if bucket is None:
            device = params[0].device if params else torch.device("cpu")
            bucket = _Bucket(flat=torch.zeros(1, dtype=torch.float64, device=device))
            self.buckets.append(bucket)
        else:
            bucket.flat = torch.zeros(bucket.used + 1, dtype=bucket.flat.dtype, device=bucket.flat.device)
        return bucket

    def average(self, samples: Optional[float] = None) -> float:
        """Replaces every parameter's gradient by the world's average.

        Args:
            samples (float, optional): this rank's sample count in the step, which may be 0: the average is
                then weighted by the counts (the gradient of the mean loss over the global batch, when each
                rank's gradient is that of its own mean loss).

        Returns:
            float: the summed weight: the global sample count, or the world size without counts.

        Raises:
            PeerLostError: a peer was lost (let it propagate: the step runs again on the next view).
            Error: no sample count under FTL_SLOW_POLICY=rebalance.
        """
        if self.overlap:
            return self._average_overlapped(samples)
        weight = self._weight_of(samples)
        with torch.no_grad():
            for b in self.buckets:
                self._copy_in(b, weight)
            self._weight_at.flat[-1] = weight
            for b in self.buckets:  # one allreduce per bucket: the whole point
                self._allreduce(b)
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
