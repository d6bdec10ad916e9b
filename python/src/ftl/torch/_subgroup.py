"""A torch group of some ranks of the view: dist.new_group(ranks=[...]) on ftl.

What a subgroup means when the world changes: torch fixes a group's members when it is made (the ranks
outside it get GroupMember.NON_GROUP_MEMBER, on which torch's calls do nothing), and in an elastic job the
worker at a rank changes with the view. So a subgroup belongs to the view it was made in: its own
communicator, split from that view's (ftl_subgroup_new: the same listener, a comm id of its own), made at
its first call, and aborted by the agent with the view's communicators. A call on it
- in the view it was made in: runs (blocking);
- in that view after the job moved on (a member died mid-step): PeerLostError, and the step runs again;
- in a later view: refused with a sentence (FTL_ERR_INVALID): the ranks may be other workers now, and a
  worker that was outside it holds torch's non-member handle, which would silently skip the call. Make
  subgroups for the step's view, in the step: `if info.view_epoch != made_in: group = dist.new_group(...)`.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional

from .._door import door_of
from .._lib import lib, text
from ..errors import INVALID, PEER_LOST, Error
from ._process_group import Calls, ElasticProcessGroup, check_not_dropped
from ._work import _failed


def new_comm(agent: Any, ranks: List[int], what: str) -> int:
    """A communicator over these view ranks, split from the view's (ftl_subgroup_new); PeerLostError and the
    like when it cannot be made."""
    handle = door_of(agent).handle()
    out = ctypes.c_void_p()
    rc = lib().ftl_subgroup_new(handle, (ctypes.c_int * len(ranks))(*ranks), len(ranks), ctypes.byref(out))
    if rc != 0:
        raise _failed(agent, rc, text(lib().ftl_last_error(handle)) or f"ftl: {what} was not made")
    return out.value


def delete_comm(agent: Any, comm: int) -> None:
    """Frees a communicator of new_comm; nothing to do once the agent is closed (it freed them all)."""
    handle = door_of(agent).handle_if_open()
    if handle is not None:
        lib().ftl_subgroup_delete(handle, comm)


class ElasticSubgroup(ElasticProcessGroup):
    _is_subgroup = True

    def __init__(self, agent: Any, ranks: List[int], group_rank: int):
        super().__init__(agent, group_rank, len(ranks))
        self._ranks = list(ranks)
        self._group_rank = group_rank
        self._calls = Calls.of_comm(lib())
        self._comm: Optional[int] = None
        self._view = self._running_view()  # the view it belongs to

    def _running_view(self) -> int:
        """The view of the running step, or between steps the job's."""
        place = self._door.running_place()
        return place[0] if place is not None else self._status()["view_epoch"]

    def rank(self) -> int:
        return self._group_rank

    def size(self) -> int:
        return len(self._ranks)

    def _handle_for(self, what: str) -> Optional[int]:
        check_not_dropped(self._agent, what)
        running = self._running_view()
        if running != self._view:
            raise Error(f"ftl: {what} on a subgroup (view ranks {self._ranks}) made in view {self._view}, and this "
                        f"runs in view {running}: the workers at those ranks may have changed; make subgroups for "
                        "the step's view, in the step (if info.view_epoch != made_in: group = dist.new_group(...))",
                        INVALID)
        if self._status()["view_epoch"] != self._view:
            raise _failed(self._agent, PEER_LOST, f"ftl: {what} on a subgroup of view {self._view}: the job moved on "
                                                  "to another view during the step, which runs again there")
        if self._comm is None:
            self._make()
        return self._comm

    def _make(self) -> None:
        self._comm = new_comm(self._agent, self._ranks, "the subgroup")

    def _view_ranks(self, ranks: List[int]) -> List[int]:
        return [self._ranks[r] for r in ranks]

    def for_view(self, info: Any) -> "ElasticSubgroup":
        return self  # it follows the views itself

    def __del__(self) -> None:
        agent = getattr(self, "_agent", None)
        if getattr(self, "_comm", None) is not None and agent is not None:
            delete_comm(agent, self._comm)
