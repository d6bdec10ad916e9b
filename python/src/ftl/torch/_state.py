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
program itself. They also carry the layout of the model's tensors in the registered buffers (_layout.py),
which is what lets ftl.torch.load_checkpoint make a model state dict of a checkpoint.
"""
from __future__ import annotations

import hashlib
import io
import os
from typing import Any, Dict, List, Optional, Union

import torch

from .._door import door_of
from ..errors import INVALID, Error
from . import _formats
from ._layout import Buffer, layout, named_tensors, plan
from ._loop import commit_point, loop_of, skip_when_dropped
from ._process_group import follow_views, guard_optimizer
from ._rng import get_rng_state, set_rng_state


def _refuse_zero(optimizer: Any) -> None:
    """ZeroRedundancyOptimizer partitions the optimizer state by the world size and ranks it saw when it
    was made, and its state_dict() needs a consolidation on every rank first: neither follows a view
    change, so it is refused rather than synced wrong."""
    from torch.distributed.optim import ZeroRedundancyOptimizer
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        raise Error("ftl: ElasticState: ZeroRedundancyOptimizer shards its state over the world it was built "
                    "in, which an elastic job does not keep; give ElasticState the plain optimizer (every rank "
                    "holds the whole optimizer state)", INVALID)


def _sharding_of(agent: Any, model: torch.nn.Module) -> bool:
    """True for a model of FSDP2 modules on ftl's HSDP mesh (ftl.torch.hsdp_mesh): its shards sync shard by
    shard (_shard_sync.py). Any other sharded model (FSDP2 or tensor parallelism on another mesh: DTensor
    parameters; FSDP1's flat parameters) holds a different part of each tensor on each rank, sized by the
    world it was sharded over; ElasticState syncs rank 0's tensors to the others and keeps their sizes, which
    would copy rank 0's shards over everyone's, silently: refused."""
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.tensor import DTensor
    why = ("sized by the world it was sharded over, which ElasticState does not re-shard at a view change; give it "
           "an unsharded model (DDP), shard it on ftl.torch.hsdp_mesh(agent) (HSDP over replicas), or save and "
           "resume with torch.distributed.checkpoint")
    if isinstance(model, FullyShardedDataParallel):
        raise Error(f"ftl: ElasticState: a FullyShardedDataParallel model holds a different shard on each rank, {why}",
                    INVALID)
    mesh = door_of(agent).hsdp_mesh
    sharded = False
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if isinstance(t, DTensor):
            if mesh is None or t.device_mesh != mesh:
                raise Error(f"ftl: ElasticState: the model's {name} is a DTensor (FSDP2's fully_shard or tensor "
                            f"parallelism) on a mesh that is not ftl.torch.hsdp_mesh(agent): each rank holds a "
                            f"different shard, {why}", INVALID)
            sharded = True
    if sharded and agent.checkpointing:
        raise Error("ftl: ElasticState: an HSDP model with FTL_CHECKPOINT_DIR set: ftl's checkpoints hold rank 0's "
                    "state, which is shard 0 only; unset FTL_CHECKPOINT_DIR and save the shards with "
                    "torch.distributed.checkpoint (every rank, in a step)", INVALID)
    return sharded


def _refuse_rebalanced_ddp(agent: Any) -> None:
    """DDP averages gradients over the ranks; under FTL_SLOW_POLICY=rebalance the ranks' shares of the global
    batch differ, so a slow rank's few samples would weigh as much as a fast rank's many: refused, named."""
    if getattr(agent, "slow_policy", None) == "rebalance":
        raise Error("ftl: DistributedDataParallel averages gradients over the ranks, and FTL_SLOW_POLICY=rebalance "
                    "gives the ranks unequal shares of the global batch, so each sample would not weigh the same: "
                    "use ftl.torch.GradientAverager with sample counts, or FTL_SLOW_POLICY=replace", INVALID)


class ElasticState:
    """Registers a model, its optimizer and a few extras with `agent` before it starts: after a view change
    every rank has rank 0's, and checkpoints hold them.

    The step contract applies: change the model, the optimizer and the extras only after the step's
    collectives succeeded (optimizer.step() after GradientAverager.average()). A model whose forward
    pass changes its buffers (BatchNorm's running statistics) breaks it on a retried step; use
    model.eval() statistics or GroupNorm/LayerNorm with ftl, or accept that a retry counts twice.

    PyTorch's formats:
    - state.state_dict() is {"model": model.state_dict(), "optimizer", "scaler", "extras", "rng", "step"};
      state.save(path) writes it with torch.save, state.save_dcp(dir) as a torch.distributed.checkpoint
      directory (one process, no process group). Call them on rank 0 only (info.rank == 0 in a step,
      agent.rank == 0 outside), between steps or inside one (it saves what the tensors hold then).
    - state.load(path), or init_from=path, loads a torch.save file, a DCP directory or an ftl checkpoint
      (ftl.torch.load_checkpoint) as the job's initial state: call it on every rank before the first
      execute (ftl syncs rank 0's state to the others anyway). The job's step counter is ftl's: it starts
      at 0 whatever the file's "step" says; a checkpoint of this job in FTL_CHECKPOINT_DIR wins over it.
      Files are unpickled (RNG states and extras are Python objects): load only files you trust.

    Args:
        agent (ftl.Agent): the agent, not started yet.
        model (torch.nn.Module): its parameters and buffers. A DistributedDataParallel on
            ftl.torch.process_group(agent): its module is the state, and before the first step of every view
            (and every retry) DDP gets a new reducer on that view's group. FSDP2 modules on
            ftl.torch.hsdp_mesh(agent) (HSDP over replicas), with the optimizer made after fully_shard: then
            shard i and its optimizer state come from shard i of a replica that holds the job's step
            (_shard_sync.py), not from rank 0, and ftl's own checkpoints and save() are refused (use
            torch.distributed.checkpoint); docs/guides/sharded.md.
        optimizer (torch.optim.Optimizer, optional): never steps after a collective of the step lost a peer
            (its step() raises PeerLostError, and execute() runs the step again); loop mode's commit point.
        scaler (torch.amp.GradScaler, optional): its state too.
        rng (bool): the random number generators too (torch's CPU and CUDA, NumPy's, Python's random): every
            rank draws rank 0's random numbers after a view change; seed from info.rank inside the step where
            ranks must differ (dropout masks per rank, say).
        init_from (str or os.PathLike, optional): state.load(init_from) at once.
        copy_shards (bool): for an HSDP model, each shard also keeps a copy of the previous shard of its
            replica (its parameters and optimizer state, sent after every optimizer step, held in host
            memory), so a shard lost with every replica of it (FSDP without replicas: one replica of N
            shards) comes back from its neighbour at the job's step when its worker is started again
            (_shard_copy.py). Costs one message of a shard's state per step.
        **extras: picklable values. A rank that receives rank 0's updates its own IN PLACE where it can:
            an object with load_state_dict() (a scheduler) is loaded, a dict is cleared and updated, a list
            gets rank 0's items; anything else (an int, a tuple) is replaced in `state.extras`, so read it
            from there.

    Raises:
        Error: a model or optimizer ftl cannot keep consistent across views (ZeroRedundancyOptimizer, FSDP1,
            a DTensor on another mesh, DDP under FTL_SLOW_POLICY=rebalance, ...), with the sentence why.
    """

    def __init__(self, agent: Any, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None,
                 scaler: Any = None, rng: bool = False, init_from: Union[str, os.PathLike, None] = None,
                 copy_shards: bool = False, **extras: Any):
        _refuse_zero(optimizer)
        self._shards = None  # an HSDP model's own sync (_shard_sync.py), or None
        is_sharded = _sharding_of(agent, model)
        if copy_shards and not is_sharded:
            raise Error("ftl: ElasticState: copy_shards=True keeps a copy of each shard of a sharded model on its "
                        "neighbour, and this model is not sharded on ftl.torch.hsdp_mesh(agent): every rank holds "
                        "the whole of it already; leave copy_shards out", INVALID)
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):  # on ftl's process group: re-pointed
            _refuse_rebalanced_ddp(agent)
            follow_views(agent, model)                                    # at each view's group
            model = model.module
        self.agent, self.model, self.optimizer, self.extras = agent, model, optimizer, dict(extras)
        if optimizer is not None:
            guard_optimizer(agent, optimizer)
            commit_point(agent, optimizer)  # loop mode's (ElasticSampler); the optimizer's own step otherwise
        door_of(agent).elastic_state = self
        loop_of(agent)  # loop mode's position travels with this state (a checkpoint's too) from now on
        self.scaler, self.rng = scaler, rng
        if scaler is not None:
            skip_when_dropped(agent, scaler, "update")
        for extra in self.extras.values():
            if isinstance(extra, torch.optim.lr_scheduler.LRScheduler):
                skip_when_dropped(agent, extra, "step")
        if is_sharded:
            from ._shard_sync import ShardSync
            self._shards = ShardSync(agent, model, optimizer, copy_shards)
        tensors, self._unregistered = named_tensors(model, skip_dtensors=is_sharded)  # unregistered: bool etc.
        buffers = plan(tensors)
        self.registered = self._register(buffers)
        self._layout = layout(model, buffers, self._unregistered)
        agent.register_state(self._save, self._load)
        if init_from is not None:
            self.load(init_from)

    def _register(self, buffers: List[Buffer]) -> Dict[str, torch.Tensor]:
        """name -> the tensor the agent holds: the model's own ones, or flat packs of them."""
        registered = {b.name: _packed(b) if b.is_pack else b.members[0][0] for b in buffers}
        for name, t in registered.items():
            door_of(self.agent).register(name, t.detach(), t)  # a set_() on the model's own tensor is refused
        return registered

    # ---- what travels besides the registered tensors ----

    def _extra_state(self) -> Dict[str, Any]:
        loop = loop_of(self.agent)
        return {"optimizer": self.optimizer.state_dict() if self.optimizer and not self._shards else None,
                "loop": [*loop.position, loop.loop_epoch],
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                "extras": {k: v.state_dict() if hasattr(v, "state_dict") else v for k, v in self.extras.items()},
                "rng": get_rng_state() if self.rng else None}

    def _apply_extra_state(self, saved: Dict[str, Any]) -> None:
        if self.optimizer is not None and saved.get("optimizer") is not None and not self._shards:
            self.optimizer.load_state_dict(saved["optimizer"])  # casts to each parameter's device and dtype
        if self.scaler is not None and saved.get("scaler"):
            self.scaler.load_state_dict(saved["scaler"])
        for k, v in (saved.get("extras") or {}).items():
            self._apply_extra(k, v)
        if self.rng and saved.get("rng"):
            set_rng_state(saved["rng"])
        if saved.get("loop") is not None:  # loop mode's position in the data, and the program's epoch
            loop = loop_of(self.agent)
            loop.position, loop.loop_epoch = list(saved["loop"][:2]), saved["loop"][2]

    def _apply_extra(self, key: str, value: Any) -> None:
        """In place where the receiver's object allows it (the rule in the class docstring)."""
        mine = self.extras.get(key)
        if hasattr(mine, "load_state_dict"):
            mine.load_state_dict(value)
        elif isinstance(mine, dict) and isinstance(value, dict):
            mine.clear()
            mine.update(value)
        elif isinstance(mine, list) and isinstance(value, (list, tuple)):
            mine[:] = value
        else:
            self.extras[key] = value

    def _save(self) -> bytes:
        out = io.BytesIO()
        torch.save({**self._extra_state(), "tensors": {n: t.detach().cpu() for n, t in self._unregistered},
                    "layout": self._layout}, out)
        return out.getvalue()

    def _load(self, data: bytes) -> None:
        saved = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        self._apply_extra_state(saved)
        with torch.no_grad():
            for n, t in self._unregistered:
                t.copy_(saved["tensors"][n])

    # ---- PyTorch's formats ----

    def state_dict(self) -> Dict[str, Any]:
        """The state in PyTorch's form.

        Returns:
            dict: {"model": model.state_dict(), "optimizer", "scaler", "extras", "rng", "step"} (the job's step).
        """
        return {"model": self.model.state_dict(), **self._extra_state(), "step": self.agent.job_status()["step"]}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Copies state["model"] into the model's own tensors (so what ftl registered stays registered) and
        loads the rest as a joiner does. Before the first execute, on every rank (see the class docstring).

        Args:
            state (dict): as state_dict() makes it.
        """
        self.model.load_state_dict(state["model"])
        self._apply_extra_state(state)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """torch.save(state.state_dict(), path), atomically. On rank 0 only.

        Raises:
            Error: the model is HSDP's (rank 0 holds one shard).
        """
        self._refuse_on_one_rank("save")
        _formats.save_torch(self.state_dict(), path)

    def save_dcp(self, path: Union[str, os.PathLike]) -> None:
        """state.state_dict() as a torch.distributed.checkpoint directory. On rank 0 only.

        Raises:
            Error: the model is HSDP's (rank 0 holds one shard).
        """
        self._refuse_on_one_rank("save_dcp")
        _formats.save_dcp(self.state_dict(), path)

    def _refuse_on_one_rank(self, what: str) -> None:
        if self._shards is not None:
            raise Error(f"ftl: ElasticState.{what}: rank 0 holds one shard of an HSDP model; save every rank's with "
                        "torch.distributed.checkpoint.save(state.state_dict(), checkpoint_id=...), called by every "
                        "rank in a step", INVALID)

    def load(self, path: Union[str, os.PathLike]) -> Dict[str, Any]:
        """Loads a torch.save file, a DCP directory or an ftl checkpoint (load_state_dict).

        Args:
            path (str or os.PathLike): the file or directory.

        Returns:
            dict: the state it loaded.
        """
        state = _formats.read(path, self.model)
        self.load_state_dict(state)
        return state

    def digest(self) -> str:
        """A hash of the parameters, buffers, optimizer state and hyperparameters.

        Returns:
            str: 16 hex digits of a BLAKE2b hash, equal on every rank after every step when the job is
            consistent.
        """
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


def _hash_tensor(h: Any, t: torch.Tensor) -> None:
    t = getattr(t, "_local_tensor", t)  # a DTensor: this worker's shard (HSDP: equal across replicas)
    h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).cpu().numpy().tobytes())


def _packed(buffer: Buffer) -> torch.Tensor:
    """A flat tensor holding the members' data; they become views into it (no copy per sync)."""
    first = buffer.members[0][0]
    flat = torch.empty(sum(t.numel() for t, _ in buffer.members), dtype=first.dtype, device=first.device)
    with torch.no_grad():
        for t, offset in buffer.members:
            view = flat[offset:offset + t.numel()].view_as(t)
            view.copy_(t)
            t.data = view
    return flat
