"""A shard's state as a message: its parameters' local shards and its optimizer's state, sent point-to-point.

Why one form for both of its uses: a returning replica takes a shard from the same index of a replica that
holds the job's step (_shard_sync.py), and a shard whose every replica was lost takes it from the copy its
neighbour keeps (_shard_copy.py). Either way the bytes must make the receiver's shard and optimizer state
equal to the sender's, and the sender and receiver must agree on the tensors' number, shapes and order
before the tensors move. So a message is a small layout (the optimizer's param_groups and scalars, the
shape and dtype of every tensor that follows), its length first, then the tensors in one batch.

A DTensor names its mesh, which does not travel: its local shard goes as a tensor, and the receiver makes
it a DTensor again on its own parameter's mesh (load_optimizer).
"""
from __future__ import annotations

import io
import math
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .._door import door_of
from ._tensor_args import as_bytes

_DTENSOR = "ftl.dtensor"  # marks an optimizer state value that was a DTensor (its local shard travels)


class Message:
    """What travels: the layout's bytes and the tensors it describes, parameters first."""

    def __init__(self, layout: bytes, tensors: List[torch.Tensor]):
        self.layout, self.tensors = layout, tensors


def message_of(params: List[torch.Tensor], optimizer: torch.optim.Optimizer) -> Message:
    """This worker's shards (`params`: their local tensors, sent as they are) and its optimizer state."""
    layout, values = optimizer_layout(optimizer)
    layout["params"] = [(tuple(p.shape), p.dtype) for p in params]
    out = io.BytesIO()
    torch.save(layout, out)
    return Message(out.getvalue(), list(params) + values)


def send(agent: Any, group: Any, message: Message, takers: List[int]) -> None:
    """The message to each of `takers` (ranks of `group`); PeerLostError when a peer was lost."""
    data = torch.frombuffer(bytearray(message.layout), dtype=torch.uint8)
    length = torch.tensor([len(message.layout)], dtype=torch.int64)
    for part in ([length], [data], message.tensors):  # batch by batch as take() receives them
        wait_all(agent, [dist.P2POp(dist.isend, x, group=group, group_peer=t) for t in takers for x in part])


def take(agent: Any, group: Any, src: int, params: Optional[List[torch.Tensor]] = None) -> Tuple[Dict[str, Any],
                                                                                             List[torch.Tensor]]:
    """A message from `src`: (its layout, its tensors). The parameters land in `params` (this worker's own
    shards, in place) when given, in fresh tensors otherwise; the optimizer's values always in fresh ones."""
    length = torch.empty(1, dtype=torch.int64)
    wait_all(agent, [dist.P2POp(dist.irecv, length, group=group, group_peer=src)])
    data = torch.empty(int(length), dtype=torch.uint8)
    wait_all(agent, [dist.P2POp(dist.irecv, data, group=group, group_peer=src)])
    layout = torch.load(io.BytesIO(data.numpy().tobytes()), map_location="cpu", weights_only=False)
    if params is None:
        params = [torch.empty(shape, dtype=dtype) for shape, dtype in layout["params"]]
    elif [tuple(p.shape) for p in params] != [tuple(s) for s, _ in layout["params"]]:
        raise RuntimeError(f"ftl: HSDP: a shard's message holds parameters of shapes {layout['params']}, this "
                           f"worker's are {[tuple(p.shape) for p in params]}")  # a bug, never a peer's doing
    tensors = list(params) + [torch.empty(shape, dtype=dtype) for shape, dtype in layout["sharded"]]
    wait_all(agent, [dist.P2POp(dist.irecv, x, group=group, group_peer=src) for x in tensors])
    return layout, tensors


def exchange(agent: Any, group: Any, message: Message, to: int, frm: int) -> Message:
    """Sends `message` to `to` while taking one from `frm` (a ring: every rank sends and receives at once, so
    no send waits for a receive that waits for it); returns what was taken. Every step makes one, so it goes
    in two rounds of one message each way: the two lengths, then every tensor's bytes and the layout in one
    buffer (a message per tensor costs more than the copy into one). The tensors taken are views of it, each
    at an offset aligned for its dtype (_ALIGN)."""
    parts = []
    for t in message.tensors:
        b = as_bytes(t.detach().contiguous())
        parts += [b, torch.zeros(_padding(b.numel()), dtype=torch.uint8)]
    mine = torch.cat(parts + [torch.frombuffer(bytearray(message.layout), dtype=torch.uint8)])
    lengths = torch.tensor([len(message.layout), mine.numel()], dtype=torch.int64)
    theirs = torch.empty(2, dtype=torch.int64)
    wait_all(agent, [dist.P2POp(dist.isend, lengths, group=group, group_peer=to),
                     dist.P2POp(dist.irecv, theirs, group=group, group_peer=frm)])
    layout_len, total = (int(x) for x in theirs)
    data = torch.empty(total, dtype=torch.uint8)
    wait_all(agent, [dist.P2POp(dist.isend, mine, group=group, group_peer=to),
                     dist.P2POp(dist.irecv, data, group=group, group_peer=frm)])
    layout_bytes = data[total - layout_len:].numpy().tobytes()
    layout = torch.load(io.BytesIO(layout_bytes), map_location="cpu", weights_only=False)
    tensors, at = [], 0
    for shape, dtype in layout["params"] + layout["sharded"]:
        n = math.prod(shape) * dtype.itemsize
        tensors.append(data[at:at + n].view(dtype).view(shape))
        at += n + _padding(n)
    return Message(layout_bytes, tensors)


_ALIGN = 16  # bytes: every dtype's element size divides it


def _padding(n: int) -> int:
    return -n % _ALIGN


def wait_all(agent: Any, ops: List[Any]) -> None:
    """One batch of messages, all in flight at once, waited for; PeerLostError when it lost a peer."""
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    raise_if_lost(agent)


def raise_if_lost(agent: Any) -> None:
    """PeerLostError when a collective of the step lost a peer. In loop mode such a call returns with its
    tensors as they were (the commit point drops the step): what it received must not be read (a length,
    the replicas' counts)."""
    failure = door_of(agent).peer_failure
    if failure is not None:
        raise failure


def local(t: Any) -> torch.Tensor:
    """A DTensor's shard on this worker, the tensor itself (writes land in the model's storage)."""
    return t._local_tensor if hasattr(t, "_local_tensor") else t


def optimizer_layout(optimizer: torch.optim.Optimizer) -> Tuple[Dict[str, Any], List[torch.Tensor]]:
    """optimizer.state_dict() in two parts: everything but its DTensor values (each marked with its place in
    the list, its shape and dtype) and the list of those values' local shards."""
    sd = optimizer.state_dict()
    values: List[torch.Tensor] = []
    state: Dict[Any, Dict[str, Any]] = {}
    for k, s in sd["state"].items():
        state[k] = {}
        for n, v in s.items():
            if _is_dtensor(v):
                values.append(local(v).detach().contiguous())
                v = (_DTENSOR, len(values) - 1)
            state[k][n] = v
    return {"state": state, "param_groups": sd["param_groups"],
            "sharded": [(tuple(v.shape), v.dtype) for v in values]}, values


def load_optimizer(optimizer: torch.optim.Optimizer, layout: Dict[str, Any], values: List[torch.Tensor]) -> None:
    """The inverse of optimizer_layout: each shard made a DTensor again on its parameter's mesh."""
    from torch.distributed.tensor import DTensor
    params = [p for g in optimizer.param_groups for p in g["params"]]
    state: Dict[Any, Dict[str, Any]] = {}
    for k, s in layout["state"].items():
        p = params[int(k)]
        state[k] = {n: DTensor.from_local(values[v[1]].to(local(p).device), p.device_mesh, p.placements,
                                          run_check=False, shape=p.shape, stride=p.stride())
                    if isinstance(v, tuple) and v and v[0] == _DTENSOR else v for n, v in s.items()}
    optimizer.load_state_dict({"state": state, "param_groups": layout["param_groups"]})


def _is_dtensor(v: Any) -> bool:
    from torch.distributed.tensor import DTensor
    return isinstance(v, DTensor)
