"""The agent's inner door: what ftl's own packages (ftl.torch, ftl.lightning, GradientBucket, Request, the
sampler's look-ahead) need of an ftl.Agent beyond its public API, in one object, door_of(agent).

Why a door. Those packages work from inside the agent's step: a process group whose collectives are the
running step's and whose first lost peer fails it, loop mode's driver that lets the program's own loop be
the step, hooks at the step's edges; and each hangs an object of its own on the agent (one process group,
one loop driver, one HSDP mesh per agent). They used to reach into Agent's private attributes for that,
twenty-three names in fourteen files, slots set on the agent ad hoc: nothing said what they relied on,
and Agent could not change its insides without breaking them. Here is the list, each with a name that says
what it is. agent.py and this module are the only ones that read an Agent attribute starting with "_"
(tests/python/test_door.py checks it).

The door holds what the agent and the packages share (the running step's facts, the hooks at its edges,
the slots) and passes the rest through to the agent: its C handle, the requests in flight, the checks a
collective makes.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .errors import Error

Place = Tuple[int, int, int]  # (view_epoch, rank, world_size)


class AgentDoor:
    """One per Agent, made with it; door_of(agent) hands it out."""

    def __init__(self, agent: Any):
        self._agent = agent
        # ---- the running step: Agent._run_step sets them, loop mode's driver moves step_thread ----
        self.step_thread: Optional[int] = None  # the thread whose collectives are the step's; None between steps
        self.step_place: Place = (0, 0, 0)      # where the running step runs (HSDP's groups, a subgroup's check)
        self.peer_failure: Optional[Error] = None  # the first peer error a collective of the step met: it fails
                                                   # the step, whatever the step made of it (DDP: a RuntimeError)
        # ---- hooks at the step's edges ----
        # before_step(info): ahead of the step (a DDP re-pointed at the view's group, HSDP's shard sync);
        # step_end(): after it, failed or not, before C may drop the communicator (the group's asynchronous
        # work and posted messages waited for); step_done(info): once it succeeded on this worker (HSDP's
        # shards count it); before_commit(): loop mode, at optimizer.step() before its verdict (HSDP's vote)
        self.before_step: List[Callable[[Any], None]] = []
        self.step_end: List[Callable[[], None]] = []
        self.step_done: List[Callable[[Any], None]] = []
        self.before_commit: List[Callable[[], None]] = []
        # ---- what other packages hang on the agent: one of each, made by its first user ----
        self.loop: Any = None           # loop mode's driver (ftl.torch's loop_of); Agent stops it at leave/close
        self.elastic_state: Any = None  # the ElasticState made with this agent (loop mode's commit point)
        self.torch_group: Any = None    # ftl.torch.process_group(agent)
        self.torch_works: Any = None    # the thread that completes the group's asynchronous Works
        self.torch_p2p: Any = None      # the group's posted point-to-point messages
        self.hsdp_mesh: Any = None      # ftl.torch.hsdp_mesh(agent) ...
        self.hsdp_groups: List[Any] = []  # ... and its replicate and shard groups, in that order

    def running_place(self) -> Optional[Place]:
        """Where the running step runs; None between steps."""
        return self.step_place if self.step_thread is not None else None

    def note_peer_failure(self, error: Error) -> None:
        """A collective lost a peer: inside a step the first such error is kept, and fails the step."""
        if self.step_thread is not None and self.peer_failure is None:
            self.peer_failure = error

    # ---- the agent's own, passed through ----

    def handle(self) -> int:
        """The C agent (ftl_agent *); Error once the agent is closed."""
        return self._agent._handle()

    def handle_if_open(self) -> Optional[int]:
        """The C agent, or None once it is closed (for clean-ups that then have nothing to do)."""
        return self._agent._ptr

    def collective(self, what: str) -> int:
        """The handle for one of the agent's own collectives (ftl_allreduce(agent, ...)); refused outside a
        step, off its thread and in loop mode."""
        return self._agent._collective(what)

    def raise_if_failed(self, rc: int, handle: int) -> None:
        """The error of a collective that returned rc (ftl_last_error's message); nothing when it is 0."""
        self._agent._call(rc, handle)

    def check_backend(self, buffer: Any, what: str) -> None:
        """The buffer's memory suits the agent's backend (host for tcp, CUDA for nccl); Error otherwise."""
        self._agent._check_backend(buffer, what)

    def register(self, name: str, buf: Any, watched: Any) -> None:
        """agent.register(name, buf), watching `watched` for a change of storage (buf may be a view of it)."""
        self._agent._register(name, buf, watched)

    @property
    def in_flight(self) -> Any:
        """The running step's asynchronous requests (_requests.InFlight), waited for at its end."""
        return self._agent._in_flight


def door_of(agent: Any) -> AgentDoor:
    """The agent's door."""
    return agent._door
