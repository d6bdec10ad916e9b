"""A model, its optimizer and a few extras as ftl job state, so a joiner starts where the job is.

The model's parameters and buffers are registered with the agent by reference (agent.register, no copy):
after a view change ftl broadcasts rank 0's contents into every rank's tensors in place (CPU tensors
under FTL_COMM=tcp, CUDA tensors under nccl), and checkpoints hold them. The agent takes at most 64
buffers, and a model may have more tensors: then each dtype's tensors are packed once into one flat
tensor, registered instead, and the model's tensors become views into it (still no copy per sync).

The optimizer's state cannot be registered that way: PyTorch creates it lazily (Adam's exp_avg appears
at the first step), so a joiner has none. It travels through agent.register_state as bytes instead
(torch.save of optimizer.state_dict(), with the extras: a scheduler's state_dict, an epoch counter),
and load_state_dict replaces whatever the receiver had, empty or not. The bytes are unpickled: they come
from rank 0 over the sealed cluster channel (or a checkpoint of this job), both as trusted as the
program itself.
"""
from __future__ import annotations

import hashlib
import io
from typing import Any, Dict, List, Optional, Tuple

import torch

from .._buffers import _TORCH
from ._process_group import follow_views, guard_optimizer

_MAX_BY_NAME = 48  # of the agent's 64 buffers: registered one by one up to here, packed beyond


class ElasticState:
    """Registers `model` (parameters and buffers), `optimizer` and `extras` with `agent` before it
    starts. Extras are picklable values: objects with state_dict()/load_state_dict() (a scheduler) are
    loaded in place; anything else (an int, a dict) is replaced in `state.extras` on load.

    The step contract applies: change the model, the optimizer and the extras only after the step's
    collectives succeeded (optimizer.step() after GradientAverager.average()). A model whose forward
    pass changes its buffers (BatchNorm's running statistics) breaks it on a retried step; use
    model.eval() statistics or GroupNorm/LayerNorm with ftl, or accept that a retry counts twice."""

    def __init__(self, agent: Any, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None,
                 **extras: Any):
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):  # on ftl's process group: re-pointed
            follow_views(agent, model)                                    # at each view's group
            model = model.module
        self.agent, self.model, self.optimizer, self.extras = agent, model, optimizer, dict(extras)
        if optimizer is not None:
            guard_optimizer(agent, optimizer)
        named = list(model.named_parameters()) + [(n, t) for n, t in model.named_buffers() if t is not None]
        named = [(_buffer_name(i, n), t) for i, (n, t) in enumerate(named)]
        self._unregistered = [(n, t) for n, t in named if str(t.dtype) not in _TORCH]  # bool buffers etc.
        tensors = [(n, t) for n, t in named if str(t.dtype) in _TORCH]
        self.registered = self._register(tensors)
        agent.register_state(self._save, self._load)

    def _register(self, tensors: List[Tuple[str, torch.Tensor]]) -> Dict[str, torch.Tensor]:
        """name -> the tensor the agent holds: the model's own ones, or flat packs of them."""
        if len(tensors) > _MAX_BY_NAME:
            tensors = _pack(tensors)
        for name, t in tensors:
            self.agent._register(name, t.detach(), t)  # a set_() on the model's own tensor is refused
        return dict(tensors)

    def _save(self) -> bytes:
        out = io.BytesIO()
        torch.save({"optimizer": self.optimizer.state_dict() if self.optimizer else None,
                    "extras": {k: v.state_dict() if hasattr(v, "state_dict") else v for k, v in self.extras.items()},
                    "tensors": {n: t.detach().cpu() for n, t in self._unregistered}}, out)
        return out.getvalue()

    def _load(self, data: bytes) -> None:
        saved = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        if self.optimizer is not None and saved["optimizer"] is not None:
            self.optimizer.load_state_dict(saved["optimizer"])  # casts to each parameter's device and dtype
        for k, v in saved["extras"].items():
            if hasattr(self.extras.get(k), "load_state_dict"):
                self.extras[k].load_state_dict(v)
            else:
                self.extras[k] = v
        with torch.no_grad():
            for n, t in self._unregistered:
                t.copy_(saved["tensors"][n])

    def digest(self) -> str:
        """16 hex digits of a BLAKE2b hash of the parameters, buffers, optimizer state and hyperparameters:
        equal on every rank after every step when the job is consistent."""
        h = hashlib.blake2b(digest_size=8)
        for t in list(self.model.parameters()) + [b for b in self.model.buffers() if b is not None]:
            _hash_tensor(h, t)
        if self.optimizer is not None:
            for group in self.optimizer.param_groups:
                h.update(repr(sorted((k, v) for k, v in group.items() if k != "params")).encode())
                for p in group["params"]:
                    for key, value in sorted(self.optimizer.state.get(p, {}).items()):
                        h.update(str(key).encode())
                        if torch.is_tensor(value):
                            _hash_tensor(h, value)
                        else:
                            h.update(repr(value).encode())
        return h.hexdigest()


def _buffer_name(index: int, name: str) -> str:
    """model.<name>, or model#<index> where that is too long for the agent (63 bytes)."""
    full = f"model.{name}"
    return full if len(full.encode()) < 64 else f"model#{index}"


def _hash_tensor(h: Any, t: torch.Tensor) -> None:
    h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).cpu().numpy().tobytes())


def _pack(tensors: List[Tuple[str, torch.Tensor]]) -> List[Tuple[str, torch.Tensor]]:
    """One flat tensor per (dtype, device) holding the given tensors' data; they become views into it."""
    groups: Dict[Any, List[torch.Tensor]] = {}
    for _, t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    packs = []
    for (dtype, device), members in groups.items():
        flat = torch.empty(sum(t.numel() for t in members), dtype=dtype, device=device)
        offset = 0
        with torch.no_grad():
            for t in members:
                view = flat[offset:offset + t.numel()].view_as(t)
                view.copy_(t)
                t.data = view
                offset += t.numel()
        packs.append((f"model.packed.{str(dtype).replace('torch.', '')}.{device}", flat))
    return packs
