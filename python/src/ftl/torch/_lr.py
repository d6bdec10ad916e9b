"""The learning rate as the world size changes: the usual scaling rules for data parallelism.

With a fixed batch per rank the global batch grows and shrinks with the world, so the learning rate
tuned for `base_world` workers no longer fits. The linear rule (Goyal et al., 2017) scales it by
world/base_world, the square-root rule (Krizhevsky, 2014; often better with Adam) by its square root.
A sudden change can destabilise training, so after each view change the rate moves from where it was
to the new target linearly over `warmup_steps` steps.

Every rank must compute the same rate, a joiner included, whose hook has seen nothing: so the hook keeps
no history of its own that matters. At the first step of each view it starts a ramp from the optimizer's
current rate (job state: ranks hold rank 0's after the view change) at that step, both the same on every
rank. Call it in the step after the collectives succeeded, just before optimizer.step() (the step
contract: the rate is optimizer state).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional

import torch

POLICIES = ("linear", "sqrt", None)


class LRScaling:
    """Sets every param group's lr for the current world size; `hook(info)` once per step. lr_scaling()
    makes one; its arguments are this one's.

    Raises:
        ValueError: a policy other than "linear", "sqrt" or None, base_world below 1, warmup_steps below 0.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, base_lr: float, policy: Optional[str] = "linear",
                 warmup_steps: int = 0, base_world: int = 1):
        if policy not in POLICIES:
            raise ValueError(f"ftl.torch: lr_scaling policy {policy!r}: use 'linear', 'sqrt' or None")
        if base_world < 1 or warmup_steps < 0:
            raise ValueError("ftl.torch: lr_scaling needs base_world >= 1 and warmup_steps >= 0")
        self.optimizer, self.base_lr, self.policy = optimizer, base_lr, policy
        self.warmup_steps, self.base_world = warmup_steps, base_world
        self._view: Optional[int] = None     # the view epoch of the ramp
        self._ramp_from: List[float] = []    # each group's lr at the ramp's start
        self._ramp_step = 0                  # the job step the ramp started at

    def target(self, world_size: int) -> float:
        """base_lr scaled for world_size by the policy."""
        ratio = world_size / self.base_world
        return self.base_lr * {"linear": ratio, "sqrt": math.sqrt(ratio), None: 1.0}[self.policy]

    def __call__(self, info: Any) -> float:
        """Sets the lr for this step.

        Args:
            info (StepInfo): the step's.

        Returns:
            float: the first param group's lr.
        """
        groups = self.optimizer.param_groups
        if info.view_epoch != self._view:
            self._view, self._ramp_step = info.view_epoch, info.step
            self._ramp_from = [g["lr"] for g in groups]
        target = self.target(info.world_size)
        done = 1.0 if self.warmup_steps == 0 else min(1.0, (info.step - self._ramp_step + 1) / self.warmup_steps)
        for g, start in zip(groups, self._ramp_from):
            g["lr"] = start + (target - start) * done
        return groups[0]["lr"] if groups else target


def lr_scaling(optimizer: torch.optim.Optimizer, base_lr: float, policy: Optional[str] = "linear",
               warmup_steps: int = 0, base_world: int = 1) -> LRScaling:
    """The hook that sets the optimizer's lr for the world size. Call it with the step's info before
    optimizer.step(): `scale = lr_scaling(opt, 0.1, "linear", 50, base_world=4)`, then `scale(info)` in the step.

    Args:
        optimizer (torch.optim.Optimizer): whose param groups' lr it sets.
        base_lr (float): the lr tuned for base_world workers.
        policy (str, optional): base_lr x world/base_world ("linear"), x its square root ("sqrt"), or
            base_lr (None).
        warmup_steps (int): the ramp to the new lr after every view change, in steps.
        base_world (int): the world size base_lr was tuned for.

    Returns:
        LRScaling: the hook.
    """
    return LRScaling(optimizer, base_lr, policy, warmup_steps, base_world)
