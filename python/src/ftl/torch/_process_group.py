"""A torch.distributed process group whose collectives run on libftl's communicator of the current view.

Why a Python subclass of torch's ProcessGroup, not a C++ extension: torch lets a Python class be a process
group (its collectives return Work objects made from torch Futures), DDP's reducer calls it from C++ like
any other, and the package stays a ctypes face of the one C library: nothing to compile against a torch
version, nothing that breaks when torch is upgraded. The cost is a Python call per collective (a few
microseconds; DDP makes one per 25 MB bucket).

Why two kinds of group. torch fixes a group's rank and size when it is made, and DDP's reducer divides
the gradients by that size; ftl's world changes with every view. So the group a program holds
(process_group(agent)) follows the agent: rank() and size() are the live view's, and a collective runs on
whatever communicator the agent has now. DDP gets, in each view, a group made for that view (its C++
size is the view's world size), swapped in before the step runs by DistributedDataParallel's own
_update_process_group, which also resets the reducer that a failed backward left half done.
ElasticState does that for a DDP module it is given. Before the first view exists the group is this worker
alone (rank 0 of 1), which is what DDP's constructor sees: its broadcast of rank 0's parameters is ftl's
state sync, done at the first view.

Asynchronous collectives: an allreduce made inside a step (DDP's buckets, dist.all_reduce(async_op=True))
starts at once on the communicator's progress thread and returns a Work; one thread per agent waits for
them in order and completes their futures, so backward goes on while buckets travel. The step's end
waits for all of them before ftl may replace the communicator. A collective that loses a peer fails its
Work with PeerLostError and marks the step failed, however the program (or DDP) reported it: execute()
then waits for the next view and runs the step again. Outside a step, collectives run on the view in
hand (no joiner enters until the next execute), blocking, and a lost peer raises PeerLostError there.

The group's other rooms: _tensor_args.py (what the group makes of torch's tensors and options), _rooted.py
(reduce, gather, scatter, all-to-all, point-to-point), _p2p.py (posted messages run as batches),
_completions.py (the futures' thread, and the order of comm hooks' collectives), _subgroup.py (groups of
some ranks, for one view: new_group, split_group), _hsdp.py (HSDP's two groups, which follow the views, and
their mesh), _work.py (Work and its future), _backend.py (the backend
object torch reads a group's name and abilities from), _registry.py (each view's group in torch's tables).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from .. import _buffers
from .._door import door_of
from .._lib import lib, text
from ..errors import INVALID, PEER_LOST, Error
from . import _backend, _registry
from ._completions import Completions
from ._p2p import posted
from ._rooted import RootedCollectives
from ._tensor_args import dense_all, movable, op_code, premul_factor, real
from ._work import _failed, _Work, absorbed



def process_group(agent: Any) -> "ElasticProcessGroup":
    """The agent's torch.distributed group: DDP(model, process_group=process_group(agent)), and
    dist.all_reduce(x, group=...) and the like inside a step. One per agent.

    Args:
        agent (ftl.Agent): the agent.

    Returns:
        ElasticProcessGroup: the group, made at the first call.
    """
    door = door_of(agent)
    if door.torch_group is None:
        door.torch_group = ElasticProcessGroup(agent)
    return door.torch_group


def init_process_group(agent: Any) -> "ElasticProcessGroup":
    """Makes process_group(agent) torch.distributed's default group, in place of
    dist.init_process_group("gloo" or "nccl"): then DistributedDataParallel(model), dist.all_reduce(t),
    dist.barrier(), dist.get_rank() and dist.get_world_size() run on ftl's live view unchanged. Through
    torch's own door: a backend named "ftl" whose creator returns the agent's group (torch takes a Python
    ProcessGroup that a backend returns as the group itself). Once per process, before DDP;
    dist.destroy_process_group() ends it, the agent goes on.

    Args:
        agent (ftl.Agent): the agent.

    Returns:
        ElasticProcessGroup: process_group(agent).

    Raises:
        Error: torch.distributed already has a default group.
    """
    global _default_group
    if dist.is_initialized():
        raise Error("ftl: init_process_group: torch.distributed already has a default group "
                    "(dist.destroy_process_group() first)", INVALID)
    _default_group = process_group(agent)
    if "ftl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("ftl", _make_group, extended_api=True, devices=["cpu", "cuda"])
    # rank 0 of 1 is what torch records; rank() and size() are the live view's (the group follows the agent)
    dist.init_process_group("ftl", store=dist.HashStore(), rank=0, world_size=1)
    _default_group._track_ranks()
    return _default_group


def check_not_dropped(agent: Any, what: str) -> None:
    """Loop mode, in a step that lost a peer or in a joiner's pass over epochs the job has finished: the
    collective makes no call (its peers are gone, or are in another step) and returns at once, absorbed
    (_work.absorbed: its tensors as they were), and the commit point drops the step. So is a trainer's own
    collective before its loop begins (Loop.looping): a joiner makes it while the job trains."""
    door = door_of(agent)
    loop = door.loop
    if loop is not None and loop.running and (door.peer_failure is not None or loop.catching_up or
                                              (loop.trainer is not None and not loop.looping)):
        if loop.finished:
            raise Error(f"ftl: {what} after the training loop, where a collective has lost a peer: its result "
                        f"would be wrong ({door.peer_failure})", PEER_LOST)
        raise Error(f"ftl: {what} in a step that loop mode drops", PEER_LOST)


def agent() -> Any:
    """The agent of init_process_group, for a script that holds only torch's default group:
    ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer).

    Returns:
        ftl.Agent: the agent.

    Raises:
        Error: init_process_group was not called.
    """
    if _default_group is None:
        raise Error("ftl: ftl.torch.agent(): call ftl.torch.init_process_group(agent) first", INVALID)
    return _default_group._agent


def _make_group(opts: Any, backend_options: Any) -> "ElasticProcessGroup":
    """torch's call for a group on the "ftl" backend (its extended form: opts says which ranks): the default
    group at init_process_group, then one per dist.new_group on its members. A group of every rank of the
    live view follows the agent as the default group does; a group of some ranks is a subgroup of view
    ranks with a communicator of its own (_subgroup.py)."""
    if _default_group is None:
        raise Error("ftl: the \"ftl\" backend makes groups for ftl.torch.init_process_group(agent) only", INVALID)
    if not dist.is_initialized():
        return _default_group
    agent = _default_group._agent
    ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
    if len(ranks) == _default_group.size():
        group = ElasticProcessGroup(agent)
        group._tracks_ranks = True
        return group
    from ._subgroup import ElasticSubgroup
    return ElasticSubgroup(agent, ranks, opts.group_rank)


_default_group: Optional["ElasticProcessGroup"] = None


class Calls:
    """The C calls a group runs its collectives with: the agent's (ftl_allreduce(agent, ...): the view's
    communicator) or a subgroup communicator's (ftl_comm_allreduce(comm, ...)), whose arguments are the
    same but for that first one."""

    def __init__(self, lib: Any, prefix: str, last_error: str):
        for name in ("allreduce", "broadcast", "allgather", "barrier", "p2p", "alltoall"):
            setattr(self, name, getattr(lib, prefix + name))
        self.last_error = getattr(lib, last_error)

    @staticmethod
    def of_agent(lib: Any) -> "Calls":
        return Calls(lib, "ftl_", "ftl_last_error")

    @staticmethod
    def of_comm(lib: Any) -> "Calls":
        return Calls(lib, "ftl_comm_", "ftl_comm_error")


class ElasticProcessGroup(RootedCollectives, dist.ProcessGroup):
    """A torch.distributed process group over an ftl agent's current view (see the module's docstring).
    Here: allreduce (every ReduceOp), broadcast, allgather and reduce_scatter (lists or
    tensors), barrier; in RootedCollectives (_rooted.py): reduce, gather, scatter, all-to-all, send/recv.
    dtypes: float32, float64, float16, bfloat16, int64, int32, int8, uint8, bool (others moved as bytes);
    CPU tensors under FTL_COMM=tcp, CUDA tensors under nccl. docs/concepts/torch-distributed.md has it all.

    Made by process_group(agent), not by hand.

    Args:
        agent (ftl.Agent): the agent whose views it runs on.
        rank, size (int): torch's record of it: the view's, for a group of one view (for_view); 0 and 1 for
            the group that follows the agent, whose rank() and size() are the live view's.
        view_epoch (int): the view it belongs to; 0: it follows the agent's views.
    """
    _is_subgroup = False  # ElasticSubgroup (_subgroup.py): its own communicator, blocking calls

    def __init__(self, agent: Any, rank: int = 0, size: int = 1, view_epoch: int = 0):
        super().__init__(rank, size)
        self._backend = _backend.attach(self, rank, size)  # its name and what torch asks of a backend
        self._agent = agent
        self._door = door_of(agent)
        self._view_epoch = view_epoch  # 0: follows the agent's views; else this view only
        self._tracks_ranks = False     # keeps torch's record of its ranks at the live view (_sync_ranks)
        self._calls = Calls.of_agent(lib())
        self._lock = threading.Lock()   # one submission at a time: every rank starts collectives in one order
        self._views: Dict[int, "ElasticProcessGroup"] = {}
        if self._door.torch_works is None:
            self._door.torch_works = Completions(agent)
            self._door.step_end.append(self._door.torch_works.wait_all)

    # ---- who is in it ----

    def _status(self) -> Dict[str, int]:
        return self._agent.job_status()

    def rank(self) -> int:
        return self._status()["rank"] if self._view_epoch == 0 else super().rank()

    def size(self) -> int:
        if self._view_epoch:
            return super().size()
        world = max(self._status()["world_size"], 1)
        self._sync_ranks(world)
        return world

    @property
    def _device_types(self) -> List[torch.device]:
        """The devices torch may hand this group (monitored_barrier asks for the CPU, split_group for
        one)."""
        return [torch.device("cuda" if self._agent.backend == "nccl" else "cpu")]

    def _track_ranks(self) -> None:
        self._tracks_ranks = True
        self._sync_ranks(self.size())

    def _sync_ranks(self, world: int) -> None:
        """torch's own record of a registered group's members (global rank -> group rank, what
        dist.get_process_group_ranks, get_global_rank and DeviceMesh read), kept at the live view: rank i
        of the view is global rank i. Refreshed wherever the group reads the view (size(), every
        collective)."""
        if not self._tracks_ranks:
            return
        ranks = dist.distributed_c10d._world.pg_group_ranks
        entry = ranks.get(self)
        if entry is not None and len(entry) != world:
            ranks[self] = {i: i for i in range(world)}

    def getBackendName(self) -> str:  # noqa: N802 (torch's name)
        return "ftl"

    def for_view(self, info: Any) -> "ElasticProcessGroup":
        """The group of one view (a StepInfo's): its rank and size fixed, as DDP's reducer needs them; its
        collectives fail with PeerLostError once the agent has moved on to another view."""
        group = self._views.get(info.view_epoch)
        if group is None:
            group = ElasticProcessGroup(self._agent, info.rank, info.world_size, info.view_epoch)
            for old in self._views.values():  # older views' groups are never used again
                _registry.leave(old)
            self._views = {info.view_epoch: group}
            if dist.is_initialized():  # torch's lookups (Join, get_rank, DeviceMesh) accept it (_registry.py)
                _registry.enter(group, info.view_epoch, info.world_size)
        return group

    def split_group(self, ranks: List[int], timeout: Any = None, opts: Any = None, group_name: str = "",
                    group_desc: Optional[str] = None, device_types: Any = None) -> Any:
        """dist.split_group's call on its parent (this group): the subgroup of this group's ranks that
        holds this rank (None where it holds none: torch gives it GroupMember.NON_GROUP_MEMBER), in ranks'
        order, a subgroup of the view like dist.new_group's (_subgroup.py: for this view only)."""
        if self.rank() not in ranks:
            return None
        from ._subgroup import ElasticSubgroup
        group = ElasticSubgroup(self._agent, self._view_ranks(list(ranks)), list(ranks).index(self.rank()))
        group._set_group_name(group_name)
        if group_desc:
            group._set_group_desc(group_desc)
        return group

    def _view_ranks(self, ranks: List[int]) -> List[int]:
        """The view ranks of some of this group's ranks: the same, for a group of the whole view."""
        return ranks

    # ---- running a collective ----

    def _where(self, what: str) -> Optional[int]:
        """The handle of the calls (the agent's) when the collective has peers to run with; None when this
        worker is alone (before the first view); PeerLostError when this group's view is gone."""
        posted(self._agent).flush()  # messages posted before this collective go first
        return self._handle_for(what)

    def _handle_for(self, what: str) -> Optional[int]:
        check_not_dropped(self._agent, what)
        status = self._status()
        if self._view_epoch and status["view_epoch"] != self._view_epoch:
            raise _failed(self._agent, PEER_LOST, f"ftl: {what} on the group of view {self._view_epoch}, and the "
                                                  f"job is in view {status['view_epoch']} now")
        self._sync_ranks(max(status["world_size"], 1))
        if status["world_size"] == 0:
            return None
        return self._door.handle()

    def _buffer(self, t: torch.Tensor, what: str, writable: bool = True) -> _buffers.Buffer:
        b = _buffers.describe(t, what, writable=writable)
        self._door.check_backend(b, what)
        return b

    def _check(self, rc: int, handle: int) -> None:
        if rc != 0:
            raise _failed(self._agent, rc, text(self._calls.last_error(handle)))

    def _run(self, what: str, body: Any) -> Any:
        """A blocking collective, as a completed Work; its error is raised here, to the caller."""
        self._door.torch_works.wait_chained()
        with self._lock:
            try:
                return _Work(body(self._where(what)), done=True)
            except Error as e:
                if not absorbed(self._agent, e):
                    raise
                return _Work(None, done=True)

    # ---- the collectives torch calls ----

    def allreduce(self, tensors: List[torch.Tensor], opts: Any = None) -> Any:
        op = op_code(opts, "allreduce")
        if self._view_epoch == 0 and not self._is_subgroup:
            _refuse_unregistered_ddp(sys._getframe().f_back)
        dense, back = dense_all(tensors)
        if back:  # a non-contiguous tensor: reduced in a contiguous copy, copied back when done (as gloo does)
            return _copied_back(self.allreduce(dense, opts), tensors, back)
        factor = premul_factor(opts, tensors, "allreduce")
        if factor is not None:
            for t in tensors:
                t.mul_(factor)
        flat = [real(t, op) for t in tensors]
        works = self._door.torch_works
        in_callback = works.is_this_thread()  # a comm hook's callback: blocking, at once (_completions.py)
        works.wait_chained()
        with self._lock:
            try:
                return self._allreduce_locked(flat, op, tensors, opts, in_callback)
            except Error as e:
                if not absorbed(self._agent, e):
                    raise
                return _Work(tensors, done=True)

    def _allreduce_locked(self, flat: List[torch.Tensor], op: int, tensors: List[torch.Tensor], opts: Any,
                          in_callback: bool) -> Any:
        handle = self._where("allreduce")
        if handle is None:
            return _Work(tensors, done=True)
        is_blocking = opts is not None and not getattr(opts, "asyncOp", True)  # dist.all_reduce(async_op=False)
        if is_blocking or in_callback or self._is_subgroup or self._door.step_thread is None:  # between steps too
            for t in flat:
                b = self._buffer(t, "allreduce")
                self._check(self._calls.allreduce(handle, b.ptr, b.ptr, b.count, b.dtype, op, None,
                                                           None), handle)
            return _Work(tensors, done=True)
        return self._allreduce_async(handle, flat, op, tensors)

    def _allreduce_async(self, handle: int, flat: List[torch.Tensor], op: int, tensors: List[torch.Tensor]) -> Any:
        work = _Work()
        for i, t in enumerate(flat):
            b = self._buffer(t, "allreduce")
            req = ctypes.c_void_p()
            self._check(self._calls.allreduce(handle, b.ptr, b.ptr, b.count, b.dtype, op, None,
                                                       ctypes.byref(req)), handle)
            last = i == len(flat) - 1  # requests finish in order: the last one completes the Work
            self._door.torch_works.add(req, [b], work if last else None, tensors)
        return work

    def allreduce_coalesced(self, tensors: List[torch.Tensor], opts: Any = None) -> Any:
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors: List[torch.Tensor], opts: Any = None) -> Any:
        root = opts.rootRank if opts is not None else 0
        dense, back = dense_all(tensors)

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for t in dense if handle is not None else ():
                self._broadcast_one(movable(t), root, handle)
            for orig, copy in back:
                orig.copy_(copy)
            return tensors
        return self._run("broadcast", body)

    def _broadcast_one(self, t: torch.Tensor, root: int, handle: int) -> None:
        b = self._buffer(t, "broadcast")
        self._check(self._calls.broadcast(handle, b.ptr, b.count, b.dtype, root), handle)

    def _gather_into(self, out: torch.Tensor, x: torch.Tensor, handle: Optional[int]) -> None:
        if handle is None:
            out.copy_(x.reshape(out.shape))
            return
        if not out.is_contiguous():
            dense = out.contiguous()
            self._gather_into(dense, x, handle)
            out.copy_(dense)
            return
        out, x = movable(out), movable(x)
        src, dst = self._buffer(x, "allgather (input)", writable=False), self._buffer(out, "allgather (output)")
        if dst.count != src.count * self.size():
            if dst.count == src.count and self._view_epoch == 0:  # sized by torch's C++ size of the group: 1
                raise Error("ftl: allgather: the output is sized for a group of 1, the size torch recorded for ftl's "
                            f"group, and the job has {self.size()} ranks: a DistributedDataParallel made after the first "
                            "view; make it before agent.start() and give it to ftl.torch.ElasticState(agent, "
                            "ddp_model, optimizer), which puts it on each view's group", INVALID)
            raise Error(f"ftl: allgather: the output has {dst.count} elements, and needs {src.count} x world size "
                        f"{self.size()}", INVALID)
        self._check(self._calls.allgather(handle, src.ptr, dst.ptr, src.count, src.dtype), handle)

    def allgather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor],
                  opts: Any = None) -> Any:
        def body(handle: Optional[int]) -> List[List[torch.Tensor]]:
            for outs, x in zip(output_tensors, input_tensors):
                flat = torch.empty((len(outs),) + tuple(x.shape), dtype=x.dtype, device=x.device)
                self._gather_into(flat, x.contiguous(), handle)
                for o, part in zip(outs, flat):
                    o.copy_(part)
            return output_tensors
        return self._run("allgather", body)

    def _allgather_base(self, output: torch.Tensor, x: torch.Tensor, opts: Any = None) -> Any:
        return self.all_gather_single_coalesced([output], [x], opts)

    all_gather_single = _allgather_base  # torch's newer name (all_gather_into_tensor calls it)

    def all_gather_single_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                    opts: Any = None) -> Any:
        """Each input gathered into its output, one after the other (the functional collectives' call:
        DTensor's redistribution, FSDP's unsharding)."""
        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for output, x in zip(outputs, inputs):
                self._gather_into(output, x.contiguous(), handle)
            return outputs
        return self._run("allgather", body)

    allgather_into_tensor_coalesced = all_gather_single_coalesced  # torch's older name

    def reduce_scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]],
                       opts: Any = None) -> Any:
        op = op_code(opts, "reduce_scatter")
        factor = premul_factor(opts, output_tensors, "reduce_scatter")

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for out, parts in zip(output_tensors, input_tensors):
                whole = self._reduced(torch.stack(list(parts)), op, handle, factor=factor)
                out.copy_(whole[self._rank_in(handle)])
            return output_tensors
        return self._run("reduce_scatter", body)

    def _reduce_scatter_base(self, output: torch.Tensor, x: torch.Tensor, opts: Any = None) -> Any:
        return self.reduce_scatter_single_coalesced([output], [x], opts)

    reduce_scatter_single = _reduce_scatter_base  # torch's newer name (reduce_scatter_tensor calls it)

    def reduce_scatter_single_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                        opts: Any = None) -> Any:
        """Each input reduced over every rank, this rank's block of it into its output, one after the
        other (the functional collectives' call)."""
        op = op_code(opts, "reduce_scatter")
        factor = premul_factor(opts, outputs, "reduce_scatter")

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for output, x in zip(outputs, inputs):
                whole = self._reduced(x.reshape((-1,) + tuple(output.shape)), op, handle, factor=factor)
                output.copy_(whole[self._rank_in(handle)])
            return outputs
        return self._run("reduce_scatter", body)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced  # torch's older name

    def _reduced(self, x: torch.Tensor, op: int, handle: Optional[int], what: str = "reduce_scatter",
                 factor: Any = None) -> torch.Tensor:
        """x (times a PREMUL_SUM's factor) reduced over every rank, in a copy (the input stays as it was)."""
        y = x.contiguous().clone()
        if factor is not None:
            y.mul_(factor)
        if handle is not None:
            b = self._buffer(real(y, op), what)
            self._check(self._calls.allreduce(handle, b.ptr, b.ptr, b.count, b.dtype, op, None, None),
                        handle)
        return y

    def _rank_in(self, handle: Optional[int]) -> int:
        return self.rank() if handle is not None else 0

    def barrier(self, opts: Any = None) -> Any:
        def body(handle: Optional[int]) -> List[torch.Tensor]:
            if handle is not None:
                self._check(self._calls.barrier(handle), handle)
            return []
        return self._run("barrier", body)


_AUTOGRAD_DIR = os.sep + os.path.join("torch", "autograd") + os.sep


def _refuse_unregistered_ddp(caller: Any) -> None:
    """A DistributedDataParallel built on the group that follows the agent divides its gradients by the
    size that group had in torch's eyes when DDP was made (1, before the first view), so its allreduce
    would sum the gradients instead of averaging them, and no joiner would receive its parameters. Its
    reducer's own allreduce (no comm hook) is refused here: one made from a gradient accumulator's hook
    in backward(), by C++ with no Python caller of its own (the frame that called into autograd, or none
    on the engine's thread). A Python comm hook's collectives (PowerSGD's, on a state's process_group)
    have a Python caller and go on."""
    node = torch._C._current_autograd_node()
    if node is None or "AccumulateGrad" not in node.name():
        return
    if caller is None or _AUTOGRAD_DIR in caller.f_code.co_filename:
        raise Error("ftl: a DistributedDataParallel on ftl's group that is not given to ftl.torch.ElasticState: its "
                    "gradients would be summed over the world, not averaged, and joiners would not get its "
                    "parameters; pass the DDP module itself: ftl.torch.ElasticState(agent, ddp_model, optimizer)",
                    INVALID)


def _copied_back(inner: "_Work", tensors: List[torch.Tensor], back: List[tuple]) -> "_Work":
    """A Work that completes when inner does, once its results are copied into the caller's tensors."""
    outer = _Work()

    def done(_: Any) -> None:
        if inner.error is None:
            for orig, dense in back:
                orig.copy_(dense)
        outer.error = inner.error
        outer.future.set_result(tensors)
    inner.future.add_done_callback(done)
    return outer


def follow_views(agent: Any, ddp: torch.nn.parallel.DistributedDataParallel) -> None:
    """Before every step, a DDP module on an ftl group gets a new reducer on the group of the step's view,
    when the view is new or the step is a retry."""
    seen = {"epoch": None}

    def before_step(info: Any) -> None:
        if info.view_epoch != seen["epoch"] or info.attempt > 0:
            repoint(agent, ddp, info)
            seen["epoch"] = info.view_epoch
    door_of(agent).before_step.append(before_step)


def repoint(agent: Any, ddp: torch.nn.parallel.DistributedDataParallel, info: Any) -> None:
    """DDP gets a new reducer on the group of info's view (when it is on an ftl group)."""
    group = ddp.process_group
    if isinstance(group, ElasticProcessGroup):
        root = group if group._view_epoch == 0 else process_group(agent)
        _rebuild_reducer(ddp, root.for_view(info))


def _rebuild_reducer(ddp: torch.nn.parallel.DistributedDataParallel, group: ElasticProcessGroup) -> None:
    """A new reducer on group, built as DDP's constructor builds one (its unpickling does the same).

    Why not DDP's own _update_process_group: it keeps the reducer's buckets, and after a join they differ
    between ranks: the members' were rebuilt in autograd order after their first iteration, a joiner's are
    still in parameter order, and one allreduce of the same size then adds different parameters' gradients
    (silently: the joiner's model drifted from the first step). A new reducer everywhere puts every rank
    on the constructor's assignment, and DDP rebuilds the buckets after the first iteration, on every rank
    at once, in rank 0's order. It also drops the half-done state a failed backward left. Comm hooks
    registered with register_comm_hook are registered again on the new reducer."""
    hooks = list(getattr(ddp, "_comm_hooks", []))
    ddp.process_group = group
    parameters, expect_sparse_gradient = ddp._build_params_for_reducer()
    names = ddp._build_debug_param_to_name_mapping(parameters)
    ddp._ddp_init_helper(parameters, expect_sparse_gradient, names, ddp.static_graph)
    ddp._has_rebuilt_buckets = False
    if ddp.static_graph:
        ddp.reducer._set_static_graph()
        ddp.logger._set_static_graph()
    for hook, state in hooks:
        ddp.register_comm_hook(state, hook)


def guard_optimizer(agent: Any, optimizer: torch.optim.Optimizer) -> None:
    """optimizer.step() raises, changing nothing, when a process-group collective of the running step lost
    a peer (its Work completed with the tensors as they were: see _Work), so a failed allreduce can never
    become an update; execute() then runs the step again on the next view."""
    door = door_of(agent)

    def before_step(*_: Any) -> None:
        if door.peer_failure is not None and door.step_thread is not None:
            raise door.peer_failure
    optimizer.register_step_pre_hook(before_step)
