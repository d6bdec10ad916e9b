"""HSDP on ftl: a DeviceMesh (replicate x shard) whose two groups follow the views, for FSDP2's fully_shard.

Why groups that follow the view, where a subgroup of some ranks belongs to one view (_subgroup.py): a
subgroup's ranks name workers of one view, and the worker at a rank changes. A job of replicas
(FTL_REPLICA*, docs/guides/sharded.md) is laid out by the rendezvous replica by replica, shard by shard
(rank = replica rank x size + index), in every view. So two groups keep one meaning across views:
- the shard group: the replicas's own workers, at their index (FSDP's all-gather and reduce-scatter); its
  rank and size never change, since a view holds whole replicas only;
- the replicate group: the same index of every replica in the view (the reduction across replicas); its
  size is the view's count of replicas and its rank this replica's place among them.
A group remakes its communicator (a subgroup split from the view's, ftl_subgroup_new) at its first call in
each view, from the layout of that view; the agent aborts it with the view's communicators, so a death
anywhere fails its call with PeerLostError and the step runs again.

Why the mesh is one replica wide: DeviceMesh fixes its shape when it is made, and FSDP2 keeps the mesh.
The mesh here is (1, size), this worker at (0, index): every coordinate it gives is right in every view
(a shard's offset depends on its index only), and nothing on it is sized by the count of replicas, which
changes. What is sized by it reads the replicate group: FSDP2 averages gradients by the groups' size()
at each reduction (AVG, or its divide factors), which is the live view's.
"""
from __future__ import annotations

from typing import Any, List, Optional

import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from .._door import door_of
from .._lib import lib
from ..errors import INVALID, Error
from . import _registry
from ._process_group import Calls, ElasticProcessGroup, check_not_dropped
from ._subgroup import delete_comm, new_comm

SHARD, REPLICATE = "shard", "replicate"


def replica_of(agent: Any, what: str) -> tuple:
    """(index, size) of this worker's replica; refused with a sentence without one."""
    if agent.replica is None:
        raise Error(f"ftl: {what}: this worker declares no replica; set FTL_REPLICA, FTL_REPLICA_INDEX and "
                    "FTL_REPLICA_SIZE (ftlrun --replica-per-node sets them)", INVALID)
    return agent.replica


class LayoutGroup(ElasticProcessGroup):
    """One of the two groups of a job of replicas (the module's docstring): blocking calls on a
    communicator of its own, remade in each view from that view's layout."""
    _is_subgroup = True

    def __init__(self, agent: Any, dim: str):
        index, size = replica_of(agent, "ftl.torch.hsdp_mesh")
        super().__init__(agent, index if dim == SHARD else 0, size if dim == SHARD else 1)
        self._dim, self._index, self._replica_size = dim, index, size
        self._calls = Calls.of_comm(lib())
        self._comm: Optional[int] = None
        self._view = 0                      # the view its layout and communicator are of
        self._rank_now = 0 if dim == REPLICATE else index
        # Before the first view this worker is global rank 0, alone (_process_group.py), so the members'
        # global ranks are counted from it: torch's dist.get_rank(group), and so the mesh's get_local_rank,
        # read this worker's group rank at global rank 0. _follow lays the view's ranks out at the first view.
        n = 1 if dim == REPLICATE else size
        self._ranks: List[int] = [(i - self._rank_now) % n for i in range(n)]
        name = f"ftl-hsdp-{dim}.{next(_registry.SERIAL)}"  # unique: DeviceMesh tells meshes apart by names
        self._set_group_name(name)
        if dist.is_initialized():  # DeviceMesh and torch's helpers look it up by name
            c10d._world.pg_map[self] = ("ftl", None)
            c10d._world.pg_names[self] = name
            c10d._world.pg_backend_config[self] = "cpu:ftl,cuda:ftl"
            c10d._register_process_group(name, self)
            self._record_ranks()

    # ---- where it is ----

    def _place(self) -> tuple:
        """(view, rank, world) of the running step, or between steps of the view in hand."""
        place = self._door.running_place()
        if place is not None:
            return place
        s = self._status()
        return s["view_epoch"], s["rank"], s["world_size"]

    def _follow(self) -> int:
        """Lays the group out for the running view (a new view: a new communicator at the first call);
        returns that view."""
        view, rank, world = self._place()
        if view == self._view or world == 0:
            return view
        size = self._replica_size
        if world % size or rank % size != self._index:
            raise Error(f"ftl: HSDP: view {view} has {world} ranks and this worker is rank {rank}, which is not "
                        f"index {self._index} of replicas of {size}: the view is not laid out in whole replicas "
                        "(every worker of the job must set FTL_REPLICA, FTL_REPLICA_INDEX and FTL_REPLICA_SIZE)",
                        INVALID)
        replica = rank // size
        if self._dim == SHARD:
            self._ranks, self._rank_now = [replica * size + i for i in range(size)], self._index
        else:
            self._ranks, self._rank_now = [r * size + self._index for r in range(world // size)], replica
        self._drop_comm()
        self._view = view
        self._record_ranks()
        return view

    def _record_ranks(self) -> None:
        """torch's record of its members (global rank -> group rank), at the layout's view."""
        if dist.is_initialized() and self in c10d._world.pg_names:
            c10d._world.pg_group_ranks[self] = {g: i for i, g in enumerate(self._ranks)}

    def rank(self) -> int:
        self._follow()
        return self._rank_now

    def size(self) -> int:
        self._follow()
        return len(self._ranks)

    def _view_ranks(self, ranks: List[int]) -> List[int]:
        return [self._ranks[r] for r in ranks]

    def for_view(self, info: Any) -> "LayoutGroup":
        return self  # it follows the views itself

    # ---- its communicator ----

    def _handle_for(self, what: str) -> Optional[int]:
        check_not_dropped(self._agent, what)
        view = self._follow()
        if self._view == 0:
            raise Error(f"ftl: {what} on the HSDP {self._dim} group before the first view: its workers are known "
                        "from a view; call it inside agent.execute(step)", INVALID)
        if len(self._ranks) == 1:
            return None  # alone in it: the collective is this worker's own tensors
        if self._comm is None:
            self._make()
        return self._comm

    def _make(self) -> None:
        self._comm = new_comm(self._agent, self._ranks, f"the HSDP {self._dim} group")

    def _drop_comm(self) -> None:
        if self._comm is not None:
            delete_comm(self._agent, self._comm)
        self._comm = None

    def _rank_in(self, handle: Optional[int]) -> int:
        return self._rank_now if handle is not None else 0

    def __del__(self) -> None:
        if getattr(self, "_agent", None) is not None:
            self._drop_comm()


def hsdp_mesh(agent: Any, device_type: Optional[str] = None) -> Any:
    """A 2-D DeviceMesh ("replicate", "shard") for FSDP2 on a job of replicas: fully_shard(module,
    mesh=ftl.torch.hsdp_mesh(agent)) once, before agent.start(), and the model trains through views that
    lose or gain whole replicas. Its shard dimension is this worker's replica (FTL_REPLICA_SIZE workers,
    this one at FTL_REPLICA_INDEX), its replicate dimension the same index of every replica of the live
    view (the module's docstring says why the mesh's own shape is (1, size)). One per agent.

    Args:
        agent (ftl.Agent): a worker of a replica (FTL_REPLICA, FTL_REPLICA_INDEX, FTL_REPLICA_SIZE).
        device_type (str, optional): the mesh's ("cpu" by default).

    Returns:
        torch.distributed.device_mesh.DeviceMesh: the mesh, made at the first call.

    Raises:
        Error: before init_process_group, without a replica, under FTL_COMM=nccl, or with a torch that makes
            a DeviceMesh otherwise.
    """
    from torch.distributed.device_mesh import DeviceMesh
    door = door_of(agent)
    if door.hsdp_mesh is not None:
        return door.hsdp_mesh
    if not dist.is_initialized():
        raise Error("ftl: ftl.torch.hsdp_mesh: call ftl.torch.init_process_group(agent) first", INVALID)
    index, size = replica_of(agent, "ftl.torch.hsdp_mesh")
    if agent.backend == "nccl":
        raise Error("ftl: ftl.torch.hsdp_mesh: HSDP's groups are subgroups of the view, which are tcp's "
                    "(FTL_COMM=tcp) in this version; under nccl a sharded model trains one view at a time "
                    "(docs/guides/sharded.md)", INVALID)
    groups = [LayoutGroup(agent, REPLICATE), LayoutGroup(agent, SHARD)]
    import torch
    try:  # torch's own constructor, told this worker's place: from_group would ask dist.get_rank(), the view's
        mesh = DeviceMesh(device_type or "cpu", torch.arange(size).reshape(1, size), mesh_dim_names=(REPLICATE, SHARD),
                          _init_backend=False, _rank=index)
    except TypeError as e:
        raise Error(f"ftl: ftl.torch.hsdp_mesh: this torch ({torch.__version__}) makes a DeviceMesh otherwise ({e}); "
                    "ftl's HSDP mesh is made as torch 2.15 makes one", INVALID) from e
    mesh._dim_group_names = [g.group_name for g in groups]
    for g in groups:
        mesh._pg_registry[g.group_name] = g
    door.hsdp_mesh, door.hsdp_groups = mesh, groups
    return mesh
