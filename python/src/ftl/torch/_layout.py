"""Where each of a model's tensors lies in the buffers ElasticState registers, as one pure plan.

ElasticState registers a model's parameters and buffers one by one ("model.<name>", or "model#<i>" where
that is longer than the agent's 63 bytes), or, beyond 48 of them, packs each (dtype, device) group into one
flat buffer ("model.packed.<dtype>.<device>"); tensors of a dtype the agent cannot register (bool) travel in
the save bytes instead. The plan is computed here once, so that registering (_state.py) and reading a
checkpoint back (_checkpoint.py) cannot disagree: the layout, saved with the state, maps every
model.state_dict() key to (buffer name, element offset, dtype, shape).
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

import torch


MAX_BY_NAME = 48  # of the agent's 64 buffers: registered one by one up to here, packed beyond
IN_SAVED_BYTES = -1  # a layout offset: the tensor is in the save bytes' "tensors", under the buffer name


class Buffer(NamedTuple):
    """One buffer to register: its name and its members (tensor, element offset); a pack is a new flat
    tensor of the members' dtype and device, else the one member is registered itself."""
    name: str
    members: List[Tuple[torch.Tensor, int]]
    is_pack: bool


Named = List[Tuple[str, torch.Tensor]]


# The dtypes registered by reference. bool, int8 and uint8 tensors (masks, quantisation tables) travel in
# the saved bytes instead, as they always have: checkpoints keep one layout whatever the library's dtypes.
REGISTERED_DTYPES = frozenset(("torch.float32", "torch.float64", "torch.float16", "torch.bfloat16", "torch.int32",
                               "torch.int64"))


def named_tensors(model: torch.nn.Module, skip_dtensors: bool = False) -> Tuple[Named, Named]:
    """(registrable, unregistrable): the model's parameters and buffers under their buffer names; without the
    DTensors with skip_dtensors (an HSDP model's shards sync shard by shard: _shard_sync.py)."""
    named = list(model.named_parameters()) + [(n, t) for n, t in model.named_buffers() if t is not None]
    named = [(_buffer_name(i, n), t) for i, (n, t) in enumerate(named)]
    if skip_dtensors:
        from torch.distributed.tensor import DTensor
        named = [(n, t) for n, t in named if not isinstance(t, DTensor)]
    is_registrable = [str(t.dtype) in REGISTERED_DTYPES for _, t in named]
    return ([x for x, ok in zip(named, is_registrable) if ok], [x for x, ok in zip(named, is_registrable) if not ok])


def plan(tensors: Named) -> List[Buffer]:
    """The buffers for these tensors: one each up to MAX_BY_NAME, else one pack per (dtype, device)."""
    if len(tensors) <= MAX_BY_NAME:
        return [Buffer(n, [(t, 0)], False) for n, t in tensors]
    groups: Dict[Any, List[Tuple[torch.Tensor, int]]] = {}
    ends: Dict[Any, int] = {}
    for _, t in tensors:
        key = (t.dtype, t.device)
        groups.setdefault(key, []).append((t, ends.get(key, 0)))
        ends[key] = ends.get(key, 0) + t.numel()
    return [Buffer(f"model.packed.{str(dtype).replace('torch.', '')}.{device}", members, True)
            for (dtype, device), members in groups.items()]


def layout(model: torch.nn.Module, buffers: List[Buffer], unregistered: Named) -> Dict[str, tuple]:
    """model.state_dict() key -> (buffer name, element offset or IN_SAVED_BYTES, dtype name, shape)."""
    where = {id(t): (b.name, offset) for b in buffers for t, offset in b.members}
    where.update({id(t): (n, IN_SAVED_BYTES) for n, t in unregistered})
    return {key: (*where[id(t)], str(t.dtype).replace("torch.", ""), list(t.shape))
            for key, t in model.state_dict(keep_vars=True).items() if id(t) in where}


def layout_of(model: torch.nn.Module) -> Tuple[Dict[str, tuple], Dict[str, int]]:
    """The layout ElasticState(agent, model) would register, and the bytes of each buffer it would
    register (for checkpoints saved without a layout: the file's buffers must be exactly these)."""
    tensors, unregistered = named_tensors(model)
    buffers = plan(tensors)
    sizes = {b.name: sum(t.numel() * t.element_size() for t, _ in b.members) for b in buffers}
    return layout(model, buffers, unregistered), sizes


def _buffer_name(index: int, name: str) -> str:
    """model.<name>, or model#<index> where that is too long for the agent (63 bytes)."""
    full = f"model.{name}"
    return full if len(full.encode()) < 64 else f"model#{index}"
