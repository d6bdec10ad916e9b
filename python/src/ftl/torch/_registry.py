"""torch's record of the groups ftl makes for one view, so torch code that looks a group up accepts them.

DDP's group inside a step is the view's (ElasticProcessGroup.for_view: its rank and size fixed, as the
reducer needs). torch.distributed's helpers look a group up in their own tables before they use it:
dist.get_rank(group) and get_global_rank read _world.pg_group_ranks (torch.distributed.algorithms.Join
calls get_rank on DDP's group at its start), dist.get_backend(group) reads _world.pg_map, and
DeviceMesh and the functional collectives resolve a group by the name it was registered under. So each
view's group is entered in those tables under a name of its own, as dist.new_group enters the groups it
makes, and taken out when the next view's replaces it (a view's group is never used again): torch's
tables hold one view group at a time, whatever the number of views a job goes through.
"""
import itertools
from typing import Any, Optional

import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d


SERIAL = itertools.count(1)  # names of groups ftl enters in torch's tables (HSDP's too: _hsdp.py)


def enter(group: Any, view_epoch: int, world: int) -> None:
    """group in torch's tables as a group of every rank of a view of world ranks (view rank i is global
    rank i, as for the default group), under a name of its own: the view's, and a serial (two groups that
    follow the agent, the default one and a whole-world new_group, each have a group per view)."""
    name = f"ftl-view-{view_epoch}.{next(SERIAL)}"
    group._set_group_name(name)
    c10d._world.pg_map[group] = ("ftl", None)
    c10d._world.pg_names[group] = name
    c10d._world.pg_group_ranks[group] = {i: i for i in range(world)}
    c10d._world.pg_backend_config[group] = "cpu:ftl,cuda:ftl"
    c10d._register_process_group(name, group)


def leave(group: Optional[Any]) -> None:
    """group out of torch's tables (nothing where it was never entered, or torch.distributed has been
    destroyed since: destroy_process_group clears every table)."""
    if group is None or not dist.is_initialized():
        return
    name = c10d._world.pg_names.pop(group, None)
    for table in (c10d._world.pg_map, c10d._world.pg_group_ranks, c10d._world.pg_backend_config):
        table.pop(group, None)
    if name is not None:
        c10d._unregister_process_group(name)
