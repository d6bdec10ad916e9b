"""Loop mode's driver: the program keeps its own `for x, y in loader: ... optimizer.step()` loop, and ftl
still runs every step as agent.execute runs it (the state sync to joiners, a failed step run again in
the next view, the job's step count).

Why a thread: ftl_execute takes the step as a call, and a plain loop has no such call. The driver runs
agent.execute on a thread of its own; its step hands the attempt (the StepInfo) to the loop's thread and
waits for the verdict of the commit point, the optimizer.step() of the ElasticState: "commit" (execute
returns, and the next execute begins the next step), "fail" (a collective of the step lost a peer:
execute waits for the next view and makes a new attempt) or "stop" (the program leaves). The loop's
thread makes the step's collectives, which the agent takes as the running step's. While the driver is
between attempts the loop's thread waits, inside optimizer.step() or in the sampler before its first
batch: ftl's work between steps (a view change, the state sync to a joiner) never runs beside the
program's code.

Which samples a step trained, and which prefetched batches a new view made stale, is _elastic_sampler.py's
business; this module holds what the two share: the committed position and the program's epoch (job
state), the attempt, and the generation (bumped when the batches predicted before are stale).
"""
from __future__ import annotations

import atexit
import threading
import warnings
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch

from .._door import door_of
from ..errors import INVALID, PEER_LOST, Error


class _Stop(Exception):
    """Raised in the driver's step when the program leaves: execute returns, the driver ends."""


class Loop:
    """One per agent (loop_of): made by the first ElasticSampler."""

    def __init__(self, agent: Any):
        self.agent = agent
        self.door = door_of(agent)
        self._cv = threading.Condition()
        self._driver: Optional[threading.Thread] = None
        self._loop_thread: Optional[int] = None
        self._attempt: Optional[Any] = None  # the StepInfo waiting for a verdict
        self._ticket = 0                     # attempts handed out so far
        self._verdict: Optional[str] = None
        self._error: Optional[BaseException] = None  # what ended the driver
        self._stopping = False
        self._view: Optional[int] = None
        self.current: Optional[Any] = None   # the attempt the loop trains in (kept after its verdict)
        self.generation = 0                  # bumped when the batches predicted so far are stale
        self.position: List[int] = [0, 0]    # [data epoch, samples of it committed]: job state
        self.loop_epoch = 0                  # the program's epoch (set_epoch) of the iteration: job state
        self.catching_up = False             # a joiner passes an epoch the job has finished (empty)
        self.stale = 0                       # prefetched batches found stale and skipped
        self.plan: Optional[Any] = None      # the DataLoader iteration being trained (_elastic_sampler)
        self.step_parts: List[Any] = []      # the fresh samples' parts delivered since the last commit
        self.last_commit: Optional[Any] = None  # the StepInfo of the step committed last
        self.dropped = False                 # the commit point dropped the step in progress (until the next batch)
        self.finished = False                # steps(n) has ended: the program's code after its loop runs in a step
                                             # that never commits, so a lost peer raises there (_work.absorbed)
        self.pending: Optional[str] = None   # the commit point's verdict, handed over at the step's end (settle)
        # A trainer that runs the loop for the program (ftl.lightning's strategy), told after each batch how
        # many this iteration has left (batches_left(n)): it counts an epoch's batches from len() at the
        # epoch's start. With one, len() neither waits for the first view (the trainer's own collectives
        # before its loop must not meet the job's steps on a joiner) nor says 0 (a trainer ends an epoch of
        # no batches without iterating it: a finished epoch's iteration ends at once instead).
        self.trainer: Optional[Any] = None
        self.looping = False  # the trainer's loop has begun: before it, the trainer's own collectives (its has-
                              # every-rank-data reduce, its barriers) are absorbed: a joiner makes them while the job trains
        atexit.register(self._at_exit)

    @property
    def running(self) -> bool:
        return self._driver is not None and self._driver.is_alive()

    def begin(self, settle: bool = True) -> Any:
        """The attempt the loop trains now (after handing the driver a verdict the step left, unless not
        settle); the first call starts the driver (and the agent)."""
        state = self.door.elastic_state
        if state is None or state.optimizer is None:
            raise Error("ftl: ElasticSampler trains the program's own loop, whose commit point is the "
                        "optimizer.step() of an ElasticState: make ftl.torch.ElasticState(agent, model, "
                        "optimizer) before iterating the DataLoader", INVALID)
        with self._cv:
            if self._driver is None:
                self._loop_thread = threading.get_ident()
                self._driver = threading.Thread(target=self._drive, name="ftl-loop", daemon=True)
                self._driver.start()
            elif threading.get_ident() != self._loop_thread:
                raise Error("ftl: the training loop runs on one thread: ElasticSampler's DataLoader was "
                            "iterated on another", INVALID)
            if settle:
                self._settle_locked()
            self._cv.wait_for(lambda: self._attempt is not None or self._error is not None)
            if self._attempt is None:
                raise self._error
            return self._attempt

    def settle(self) -> None:
        """At the loop's step boundary (it asks for its next batch): the verdict the commit point gave, to
        the driver (commit: execute returns; fail: execute makes a new attempt in the next view), and the
        next attempt, waited for. Why not in optimizer.step(): the program's code after it (a scheduler's
        step, its own counters) is part of the step, and a joiner must receive the state it leaves."""
        with self._cv:
            self._settle_locked()

    def _settle_locked(self) -> None:
        self.dropped = False
        if self.pending is None:
            return
        if self._attempt is None:
            raise Error("ftl: optimizer.step() outside the training loop's step (iterate the "
                        "ElasticSampler's DataLoader first)", INVALID)
        verdict, self.pending = self.pending, None
        ticket = self._ticket
        self._verdict = verdict
        self._cv.notify_all()
        self._cv.wait_for(lambda: self._ticket != ticket or self._error is not None)
        if self._ticket == ticket:
            raise self._error

    def stop(self) -> None:
        """The program leaves (leave(), close(), its exit): the driver's execute returns, nothing commits. A
        loop that ended before its data epoch's last batches committed says so (they are not trained)."""
        with self._cv:
            if self._driver is None or self._stopping:
                return
            self._stopping = True
            self._verdict = "commit" if self.pending == "commit" else "stop"  # the last step's own
            self.pending = None
            self._cv.notify_all()
        self._driver.join(60)
        plan = self.plan
        if plan is not None and plan.untrained():
            warnings.warn(f"ftl: the training loop ended with {plan.untrained()} samples of data epoch "
                          f"{self.position[0]} not trained: a step among its last prefetched batches failed "
                          "after the DataLoader had handed out the epoch (with num_workers=0 it hands out a batch "
                          "only when the loop asks for it)",
                          RuntimeWarning, stacklevel=2)

    def _at_exit(self) -> None:
        """The program ends: its loop is done, and the others hear a leave rather than find a death."""
        if self._driver is None:
            return
        self.stop()
        try:
            if not self.agent.has_left:
                self.agent.leave()
        except Error:  # closed already
            pass

    # ---- the driver's thread ----

    def _drive(self) -> None:
        error: BaseException = Error("ftl: the training loop's driver stopped: this worker left the job "
                                     "(leave(), close(), ftlctl leave)", INVALID)
        try:
            while not self._stopping:
                self.agent.execute(self._step)
        except _Stop:
            pass
        except BaseException as e:  # the job cannot go on: the loop's thread raises it
            error = e
        finally:
            with self._cv:  # a loop that goes on asks an attempt of no driver: it raises this, never waits
                self._error = error
                self._cv.notify_all()

    def _step(self, info: Any) -> None:
        self.door.step_thread = self._loop_thread  # the step's collectives come from the loop's thread
        with self._cv:
            if self._stopping:
                raise _Stop()
            if info.attempt > 0 or info.view_epoch != self._view:
                self.generation += 1
                self._view = info.view_epoch
            self.current = self._attempt = info
            self._verdict = None
            self._ticket += 1
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._verdict is not None)
            verdict, self._attempt = self._verdict, None
        if verdict == "stop":
            raise _Stop()
        if verdict == "commit":  # final: the update is made, whatever a later collective of it met
            if self.door.torch_works is not None:
                self.door.torch_works.wait_all()
            self.door.peer_failure = None
            return
        if verdict == "fail":
            raise self.door.peer_failure or Error("ftl: a collective of the step lost a peer", PEER_LOST)


def last_commit(agent: Any = None) -> Optional[Any]:
    """The step the program's own loop (ElasticSampler) committed last in this process. After
    optimizer.step(), the same one as before says the step was dropped (a peer was lost, or its batch was
    stale) and its samples come again: log a step's loss only when it changed. Read the step's rank and
    world size here, not from dist.get_rank() then: a view change between steps shows there first.

    Args:
        agent (ftl.Agent, optional): the agent of ftl.torch.init_process_group by default.

    Returns:
        StepInfo: its step, rank, world_size, view_epoch, ...; None before the first commit.
    """
    if agent is None:
        from ._process_group import agent as default_agent
        agent = default_agent()
    loop = door_of(agent).loop
    return loop.last_commit if loop is not None else None


def steps(total: int, agent: Any = None) -> Iterator[int]:
    """range(total) for a program's own loop that counts steps rather than epochs (`for step in
    ftl.torch.steps(n): x, y = next(batches); ... optimizer.step()`, the batches from an ElasticSampler's
    DataLoader): the numbers are the job's steps. A joiner's loop starts at the job's step; a step that loop
    mode dropped (a peer was lost in it) comes again with its number, in the next view; every worker's loop
    ends once the job has committed `total` steps. Each next() ends the step before (the commit point's
    verdict, as the sampler's next batch does) and waits for the next attempt, so make the ElasticState
    first. After the last step the program's own code (a final barrier, an evaluation) runs in the job's
    next step, which never commits, so no commit point is left to drop what a lost peer spoiled: a
    collective there that loses a peer raises PeerLostError (its result would be wrong) instead of
    returning as the loop's own do.

    Args:
        total (int): the job's steps.
        agent (ftl.Agent, optional): the agent of ftl.torch.init_process_group by default.

    Returns:
        An iterator of the job's step numbers.
    """
    if agent is None:
        from ._process_group import agent as default_agent
        agent = default_agent()
    loop = loop_of(agent)
    loop.finished = False
    while True:
        info = loop.begin()
        if info.step >= total:
            loop.finished = True
            return
        yield info.step


def loop_of(agent: Any) -> Loop:
    """The agent's loop driver, made at the first call."""
    door = door_of(agent)
    if door.loop is None:
        door.loop = Loop(agent)
    return door.loop


def commit_point(agent: Any, optimizer: Any) -> None:
    """optimizer.step() becomes loop mode's commit point (while the loop's driver runs; otherwise it is the
    optimizer's own step): a step whose collectives all succeeded in one view is applied and committed;
    one that lost a peer is dropped: the gradients go, nothing changes, and the loop's next batch is the
    step's own samples again, in the next view. The verdict reaches the driver at settle(). A closure
    (step(closure), as Lightning calls it: the forward and backward run inside) runs first, once; the
    update then steps without it, and the closure's loss is returned either way (an optimizer that must
    call its closure again, LBFGS, refuses a step without one: loop mode does not serve it)."""
    step: Callable[..., Any] = optimizer.step
    _refuse_other_optimizers(agent, optimizer)
    door = door_of(agent)

    def step_or_discard(*args: Any, **kwargs: Any) -> Any:
        loop = door.loop
        if loop is None or not loop.running:
            return step(*args, **kwargs)
        loss = None
        closure = kwargs.pop("closure", None) if "closure" in kwargs else (args[0] if args else None)
        args = args[1:] if args and closure is args[0] else args
        if closure is not None:  # optimizer.step(closure), a trainer's form: the step's forward and backward
            with torch.enable_grad():
                loss = closure()
        if door.torch_works is not None:
            door.torch_works.wait_all()  # a collective still running could yet lose a peer
        for hook in door.before_commit:  # HSDP's vote over the view (a failure there drops the step)
            hook()
        if door.peer_failure is not None or loop.catching_up:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            if door.peer_failure is not None:
                loop.pending = "fail"
            loop.step_parts, loop.dropped = [], True
            return loss
        result = step(*args, **kwargs)
        result = loss if closure is not None else result
        loop.dropped = False
        if loop.plan is not None:
            loop.plan.commit(loop.step_parts)
        loop.step_parts = []
        loop.last_commit = loop.current
        loop.pending = "commit"
        return result
    if hasattr(step, "_wrapped_by_lr_sched"):  # a scheduler made before wrapped step(): keep its mark
        step_or_discard._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    optimizer.step = step_or_discard


def loop_is_running(door: Any) -> bool:
    """Loop mode's loop is between its first step and its end: the program's optimizer steps are the job's
    updates, made on the loop's thread, not inside execute()'s step function."""
    loop = door.loop
    return loop is not None and loop.running


def is_dropping(agent: Any) -> bool:
    """Loop mode is dropping the step in progress (it lost a peer, or the commit point dropped it), or a
    joiner passes an epoch the job has finished (a per-epoch scheduler step there is rank 0's already)."""
    door = door_of(agent)
    loop = door.loop
    return loop is not None and loop.running and (loop.dropped or loop.catching_up or door.peer_failure is not None)


_SKIPPING: Dict[tuple, type] = {}
_AGENT_OF: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def skip_when_dropped(agent: Any, obj: Any, method: str) -> None:
    """obj.method() does nothing after a step loop mode drops: a scheduler's step() (the schedule counts
    committed steps) and a GradScaler's update() (its inf check read a dropped step's local gradients, which
    differ between ranks: each rank would scale its next gradients by a scale of its own). Through a
    subclass, not an attribute: a scheduler's state_dict() holds its instance attributes."""
    cls = type(obj)
    key = (cls, method)
    if key not in _SKIPPING:
        original = getattr(cls, method)

        def unless_dropped(self: Any, *args: Any, **kwargs: Any) -> Any:
            owner = _AGENT_OF.get(self)
            if owner is not None and is_dropping(owner):
                return None
            return original(self, *args, **kwargs)
        _SKIPPING[key] = type(cls.__name__, (cls,), {method: unless_dropped, "__module__": cls.__module__})
    _AGENT_OF[obj] = agent
    obj.__class__ = _SKIPPING[key]


def _refuse_other_optimizers(agent: Any, committed: Any) -> None:
    """In loop mode another optimizer's step() would apply a dropped step's gradients: refused, named."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    door = door_of(agent)

    def only_the_committed(optimizer: Any, *_: Any) -> None:
        loop, state = door.loop, door.elastic_state
        if optimizer is not committed and loop is not None and loop.running and \
                state is not None and state.optimizer is committed:
            raise Error(f"ftl: loop mode commits the step of the ElasticState's optimizer only; this "
                        f"{type(optimizer).__name__} would apply the gradients of steps that loop mode drops: give "
                        "ElasticState the one optimizer (one with several param_groups serves several models)",
                        INVALID)
    register_optimizer_step_pre_hook(only_the_committed)
