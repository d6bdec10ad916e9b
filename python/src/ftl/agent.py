"""ftl.Agent: one training worker's membership agent and elastic step runner, over libftl's C API.

The C API is the one implementation; this class gives it Python's idiom: settings as FTL_* variables or
keyword arguments, exceptions that carry the C message, a context manager for the agent's lifetime,
and collectives on NumPy arrays and torch tensors in place, without copies. Every blocking call (start,
execute, the collectives, leave) releases the GIL (ctypes does so around each foreign call), so other
Python threads run while this one waits on the network.

The step contract is the C one (ftl/execute.h): a step may run more than once for the same step number,
so it changes the registered state only after its collectives succeeded. A collective that loses a peer
raises PeerLostError; left to propagate out of the step, it makes execute() wait for the next view and
run the step again. Any other exception leaves execute() as it is.
"""
from __future__ import annotations

import ctypes
import json
import logging
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

import numpy as np

from . import _buffers, _logging
from ._door import AgentDoor
from ._lib import LOAD_FN, LOG_FN, SAVE_FN, STEP_FN, JobStatusC, config_error, lib, text
from ._names import SAMPLER_ORDER, names
from ._requests import InFlight, Request
from ._settings import settings
from .errors import INVALID, PEER_CODES, ConfigError, Error, from_code

T = TypeVar("T")


@dataclass(frozen=True)
class StepInfo:
    """What a step knows about itself (struct ftl_step_info)."""
    rank: int
    world_size: int
    step: int            # steps the job completed before this one
    view_epoch: int
    attempt: int         # 0 the first time this step runs, 1.. on retries
    indices: np.ndarray  # this rank's dataset indices for the step (uint64; empty without a sampler)
    data_epoch: int
    sample_pos: int
    global_batch: int = 0  # a fixed global batch: the step's samples over all ranks (0: it grows with the world)
    micro_batch: int = 0   # compute indices in chunks of this many and accumulate the gradients (0: at once)
    first_micro: int = 0   # reproducible mode: this rank's first micro-shard; contiguous order: its first stream


# The settings Agent reads back from the settings object it was made from (the C agent refused bad values).
_READ_BACK = ("comm", "replica_index", "replica_size", "checkpoint_dir", "slow_policy", "cuda_device")


def _new_agent(lib_, values: Dict[str, Any], log_fn) -> Tuple[int, Dict[str, str]]:
    """A C agent from the FTL_* environment overlaid with the keyword settings (_settings.py), and the text of
    each setting in _READ_BACK as the agent took it ("" where unset)."""
    with settings(lib_, values, with_env=True) as s:
        ptr = lib_.ftl_agent_new_from_settings(s, log_fn if log_fn is not None else LOG_FN(), None)
        if not ptr:
            raise config_error(lib_, "ftl: the agent could not be created")
        return ptr, {name: text(lib_.ftl_settings_get(s, name.encode())) for name in _READ_BACK}


class Agent:
    """A worker of an elastic job. `with ftl.Agent() as agent:` starts it and, at the end, leaves the
    cluster gracefully (others go on at once, without waiting to detect a failure).

    Register state (register, register_state, set_sampler) before start() (or before the first
    execute(), which starts the agent when nothing did).

    `agent.replica` is (FTL_REPLICA_INDEX, FTL_REPLICA_SIZE) for a worker of a replica (a sharded model's:
    ftl.torch.hsdp_mesh), else None.

    Args:
        logger (logging.Logger, bool or None): where the agent's log records go: lines on stderr (None),
            or Python's logging, with their fields as values (a Logger, or True for "ftl"; ftl/_logging.py
            says how).
        **settings: override the FTL_* environment, which the settings come from as in the C API
            (docs/reference/settings.md): `ftl.Agent(name="w1", min_workers=2)`. They go to libftl's
            settings object (ftl/settings.h), never into os.environ.

    Raises:
        ConfigError: a setting was refused; it names the variable.
        LibraryNotFoundError: libftl.so could not be loaded.
    """

    def __init__(self, logger: Union[logging.Logger, bool, None] = None, **settings: Any):
        self._lib = lib()
        self._ptr: Optional[int] = None
        target = _logging.resolve(logger)
        self._log_fn = _logging.callback(target) if target is not None else None  # alive while the agent is
        self._ptr, taken = _new_agent(self._lib, settings, self._log_fn)
        # backend: FTL_COMM; replica: (FTL_REPLICA_INDEX, FTL_REPLICA_SIZE) of a worker of a replica (HSDP),
        # else None; checkpointing: FTL_CHECKPOINT_DIR is set; slow_policy: FTL_SLOW_POLICY (report, replace
        # or rebalance: ranks' shares of the batch then differ); cuda_device: FTL_CUDA_DEVICE, None when unset
        self.backend = taken["comm"] or "tcp"
        size = taken["replica_size"]
        self.replica = (int(taken["replica_index"]), int(size)) if size and int(size) else None
        self.checkpointing = bool(taken["checkpoint_dir"])
        self.slow_policy = taken["slow_policy"] or "report"
        self.cuda_device = int(taken["cuda_device"]) if taken["cuda_device"] else None
        if self._log_fn is not None:
            _logging.track(self)
        self._started = False
        self._keep: list = []            # registered arrays and callbacks: alive as long as C holds them
        self._registered: list = []      # (name, where the watched tensor starts now (a call), where it started)
        self._in_flight = InFlight()     # the running step's asynchronous requests
        self._executing = threading.Lock()  # one execute at a time: ftl_execute is not reentrant
        self._step: Optional[Callable[[StepInfo], Any]] = None
        self._before_run: Optional[Callable[[StepInfo], Any]] = None  # execute(before=): runs ahead of the step
        self._outcome: Dict[str, Any] = {}
        self._trampoline = STEP_FN(self._run_step)  # one C callback for every execute()
        self._door = AgentDoor(self)     # the running step and its hooks, as ftl.torch sees them (_door.py)
        self._saved = b""
        self._epoch_end: list = []       # on_data_epoch_end's functions

    # ---- lifetime ----

    def _handle(self) -> int:
        if self._ptr is None:
            raise Error("ftl: the agent is closed", INVALID)
        return self._ptr

    def start(self) -> "Agent":
        """Binds, starts gossip and joins the seeds (FTL_SEEDS).

        Returns:
            The agent.

        Raises:
            ConfigError: it could not start (a port in use, a second agent with this name).
        """
        if self._lib.ftl_agent_start(self._handle()) != 0:
            raise config_error(self._lib, "ftl: the agent could not start")
        self._started = True
        return self

    def leave(self, timeout: float = 5.0) -> bool:
        """Leaves the cluster gracefully.

        Args:
            timeout (float): seconds to wait for the leave to go out.

        Returns:
            True once the leave went out within timeout seconds.
        """
        if self._door.loop is not None:
            self._door.loop.stop()
        return self._lib.ftl_agent_leave(self._handle(), int(timeout * 1000)) == 0

    @property
    def has_left(self) -> bool:
        """True once this worker left (leave(), or `ftlctl leave`, e.g. a Kubernetes preStop hook)."""
        return bool(self._lib.ftl_agent_has_left(self._handle()))

    def close(self) -> None:
        """Stops the agent (without a leave) and frees it; later calls raise Error.

        Raises:
            Error: another thread is in execute().
        """
        if self._ptr is not None:
            if self._door.loop is not None:
                self._door.loop.stop()
            if not self._executing.acquire(blocking=False):
                raise Error("ftl: close() while execute() runs on another thread: let the step finish (or "
                            "leave() to make the job go on without this worker), then close", INVALID)
            try:
                self._lib.ftl_agent_delete(self._ptr)  # its threads are gone: nothing calls _log_fn any more
                self._ptr = None
                self._log_fn = None
            finally:
                self._executing.release()

    def __enter__(self) -> "Agent":
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._ptr is not None and self._started and not self.has_left:
                self.leave()
        finally:
            self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # ---- state ----

    def register(self, name: str, buf: Any) -> None:
        """Registers an array or tensor as job state, by reference (no copy): after a view change every
        worker gets rank 0's contents in place, and checkpoints hold it.

        Args:
            name (str): the buffer's name, the same on every worker.
            buf (numpy.ndarray or torch.Tensor): its memory. Change its values in place (x.copy_(new),
                x[:] = new): a tensor given other storage (set_, resize_, .data =) is refused at the next
                execute(), since ftl would sync memory the program no longer uses.

        Raises:
            Error: the buffer cannot be passed as it is (the sentence says why), or the agent refused it.
        """
        self._register(name, buf, buf)

    def _register(self, name: str, buf: Any, watched: Any) -> None:
        """register(), watching `watched` for a change of storage (buf may be a detached view of it)."""
        b = _buffers.describe(buf, f"register({name!r})")
        self._check_backend(b, f"register({name!r})")
        handle = self._handle()
        if self._lib.ftl_register_buffer(handle, name.encode(), b.ptr, b.nbytes, b.is_device) != 0:
            raise Error(f"ftl: register({name!r}) refused: {text(self._lib.ftl_error_message())}", INVALID)
        self._keep.append(b)  # the Buffer holds the memory (a tensor's storage too) as long as C may use it
        start = _buffers.start_of(watched)
        if start is not None:
            self._registered.append((name, start, b.ptr))

    def _check_registered(self) -> None:
        """Refuses to go on when a registered tensor or array no longer lies at the memory ftl was given."""
        for name, start, ptr in self._registered:  # every execute: one cheap call per registered buffer
            if start() != ptr:
                raise Error(f"ftl: register({name!r}): the tensor was given other storage (set_, resize_ or "
                            ".data =) after it was registered, so ftl would sync and checkpoint memory it no "
                            "longer uses: change its values in place (x.copy_(new)) instead", INVALID)

    def register_state(self, save: Callable[[], bytes], load: Callable[[bytes], None]) -> None:
        """Registers state that is not a flat buffer (an optimizer's, a data loader's); checkpoints hold it too.

        Args:
            save (callable): returns the state as bytes, on rank 0.
            load (callable): takes those bytes, on the others after a view change.

        Raises:
            Error: called twice, or after start().
        """
        def save_c(_ctx, buf, cap):
            if not buf or cap == 0:       # the size query comes first; the copy follows
                self._saved = bytes(save())
            n = len(self._saved)
            if buf and cap >= n:
                ctypes.memmove(buf, self._saved, n)
            return n

        def load_c(_ctx, buf, length):
            load(ctypes.string_at(buf, length))

        callbacks = (SAVE_FN(save_c), LOAD_FN(load_c))
        if self._lib.ftl_register_callbacks(self._handle(), callbacks[0], callbacks[1], None) != 0:
            raise Error("ftl: register_state refused: call it once, before start()", INVALID)
        self._keep.append(callbacks)

    def set_sampler(self, dataset_size: int, batch_per_rank: int, seed: int = 0, order: str = "shuffle") -> None:
        """The elastic sampler: each step hands every rank its slice (StepInfo.indices) of a seeded
        permutation, so each sample is used once per data epoch at any world size.

        Args:
            dataset_size (int): samples in the dataset.
            batch_per_rank (int): samples a rank takes in a step.
            seed (int): the permutations' seed.
            order (str): "shuffle"; "sequential": the indices are the positions themselves (a program's own
                order maps them, ftl.torch.ElasticLoader's epoch_order); "contiguous": each rank reads whole
                contiguous streams, for sequence models (needs set_batch(streams * chunk, chunk);
                ftl/execute.h, FTL_SAMPLER_CONTIGUOUS, says how).

        Raises:
            ConfigError: an order the library does not know.
            Error: the library refused the sampler (the sentence says why).
        """
        handle = self._handle()
        orders = names(SAMPLER_ORDER)
        if order not in orders:
            raise ConfigError(f"ftl: set_sampler: order={order!r}, expected one of {', '.join(orders)}")
        if (self._lib.ftl_set_sampler(handle, dataset_size, batch_per_rank, seed) != 0 or
                self._lib.ftl_set_sampler_order(handle, orders.index(order)) != 0):
            raise Error(f"ftl: set_sampler refused: {text(self._lib.ftl_error_message())}", INVALID)

    def set_batch(self, global_batch: int, max_batch_per_rank: int = 0, reproducible: bool = False) -> None:
        """A fixed global batch (FTL_GLOBAL_BATCH, FTL_MAX_BATCH_PER_RANK, FTL_REPRODUCIBLE do the same).
        Before start().

        Args:
            global_batch (int): samples every step takes at any world size, split across the ranks
                (StepInfo.indices); average the gradients by sample count (GradientAverager.average(samples=...)).
            max_batch_per_rank (int): sets StepInfo.micro_batch: compute the share in chunks of that many,
                accumulating gradients (0: at once).
            reproducible (bool): the parameters after each step bit for bit the same at any world size
                (fixed micro-shards of max_batch_per_rank, summed exactly; ftl/execute.h says how).

        Raises:
            ConfigError: a value was refused; it names the variable.
        """
        values = {"global_batch": global_batch, "max_batch_per_rank": max_batch_per_rank, "reproducible": reproducible}
        with settings(self._lib, values) as s:
            if self._lib.ftl_set_batch_from_settings(self._handle(), s) != 0:
                raise config_error(self._lib)

    # ---- steps ----

    def execute(self, step: Callable[[StepInfo], T], before: Optional[Callable[[StepInfo], Any]] = None) -> T:
        """Runs one training step across the current view.

        Starts the agent if it is not started yet (start(): register state before the first execute).
        Waits for a view with this worker in it, syncs state to joiners, calls step(info); when a peer is
        lost during the step, waits for the next view and calls it again.

        Args:
            step (callable): step(info: StepInfo), under the step contract (ftl/execute.h): it may run more
                than once for the same step number.
            before (callable, optional): before(info), run first in every attempt, after the state sync:
                work between steps that needs collectives (validation with an all-reduced loss, a best-model
                save on rank 0) with the step's re-run contract, and no step or samples of its own. Decide
                whether to do it from info (the same on every rank, a joiner's too): `info.step % 500 == 0`,
                or `info.sample_pos == 0` for the first step of a data epoch. Why not a call of its own
                between steps: a worker that joins meanwhile runs the step function, and a re-run would need
                it to run code it never reached.

        Returns:
            What step returned.

        Raises:
            Exception: the step's own exception.
            Error: the job cannot go on (not enough workers for too long, retries exhausted), or execute()
                is already running.
        """
        if not self._executing.acquire(blocking=False):
            raise Error("ftl: execute() is already running (on another thread, or this step called it): one "
                        "execute() at a time per agent; run the training loop on one thread", INVALID)
        try:
            handle = self._handle()  # under the lock: close() cannot free the agent meanwhile
            if not self._started:  # the first execute starts the agent (registrations come before it)
                self.start()
            self._check_registered()  # before ftl_execute syncs the registered memory to a joiner
            self._step, self._before_run, self._outcome = step, before, {}
            rc = self._lib.ftl_execute(handle, self._trampoline, None)
            self._step = None
            outcome = self._outcome
            why = text(self._lib.ftl_last_error(handle)) if rc != 0 else ""
        finally:
            self._executing.release()
        if "exception" in outcome:
            raise outcome["exception"]
        if rc != 0:
            raise from_code(rc, why)
        if self._epoch_end and self.job_status()["data_epoch"] != outcome["data_epoch"]:
            for fn in self._epoch_end:  # the step finished its data epoch, on every rank that ran it
                fn(outcome["data_epoch"])
        return outcome.get("result")

    def on_data_epoch_end(self, fn: Callable[[int], Any]) -> None:
        """Calls fn when a step completes a data epoch: once on every rank that ran the step, inside execute()
        after the step succeeded, outside the step. For validation, annealing, saving.

        Args:
            fn (callable): fn(data_epoch). No collectives in it (and no execute(): every step moves the
                sampler past its samples): compute on this rank, and combine results in the next step's
                collectives if the ranks must agree. An exception from fn leaves execute() (the step itself
                is done).
        """
        self._epoch_end.append(fn)

    def _run_step(self, _ctx, info_p) -> int:
        c = info_p.contents
        indices = (np.ctypeslib.as_array(c.indices, shape=(c.n_indices,)).copy() if c.n_indices
                   else np.empty(0, dtype=np.uint64))
        info = StepInfo(c.rank, c.world_size, c.step, c.view_epoch, c.attempt, indices, c.data_epoch, c.sample_pos,
                        c.global_batch, c.micro_batch, c.first_micro)
        self._outcome["data_epoch"] = info.data_epoch  # the run that succeeds says which data epoch it drew from
        door = self._door
        door.step_thread = threading.get_ident()
        door.step_place = (info.view_epoch, info.rank, info.world_size)
        door.peer_failure = None
        try:
            try:
                for hook in door.before_step:
                    hook(info)
                if self._before_run is not None:
                    self._before_run(info)
                self._outcome["result"] = self._step(info)
            finally:
                unwaited = self._in_flight.wait_all()  # before the step's memory may go
                for wait in door.step_end:
                    wait()
            if unwaited is not None:       # a request the step did not wait for failed: so did the step
                raise unwaited
            if door.peer_failure is not None:  # a process-group collective lost a peer, caught or not
                raise door.peer_failure
            for hook in door.step_done:  # the step is done on this worker (HSDP's shards count it)
                hook(info)
            return 0  # a registered tensor the step gave other storage is refused by the next execute
        except Error as e:
            if e.code in PEER_CODES:   # lost a peer: ftl_execute waits for a new view and runs the step again
                return e.code
            self._outcome["exception"] = e
            return e.code or INVALID
        except BaseException as e:     # the program's own error (or KeyboardInterrupt): out of execute()
            if door.peer_failure is not None:  # ... unless it came from a collective that lost a peer
                self._outcome.pop("result", None)
                return door.peer_failure.code
            self._outcome["exception"] = e
            return INVALID
        finally:
            door.step_thread = None

    # ---- collectives (inside a step) ----

    def _collective(self, what: str) -> int:
        if self._door.loop is not None and self._door.loop.running:
            raise Error(f"ftl: agent.{what} in loop mode (ftl.torch.ElasticSampler): the step's collectives are "
                        "torch.distributed's on ftl's group (DDP's, dist.all_reduce), which loop mode drops with "
                        "a step that does not commit; call those instead", INVALID)
        if self._door.step_thread != threading.get_ident():
            raise Error(f"ftl: {what} called outside a step: call collectives inside agent.execute(step), "
                        "on the thread that runs it", INVALID)
        return self._handle()

    def _check_backend(self, b: _buffers.Buffer, what: str) -> None:
        """The buffer's memory suits the backend; a CUDA tensor's pending writes are done before ftl reads."""
        if b.is_device and self.backend != "nccl":
            raise Error(f"ftl: {what}: a CUDA tensor needs FTL_COMM=nccl, and this agent uses "
                        f"{self.backend}: move it to the CPU or set FTL_COMM=nccl", INVALID)
        if not b.is_device and self.backend == "nccl":
            raise Error(f"ftl: {what}: FTL_COMM=nccl works on CUDA tensors, and this is host memory: "
                        "move it to the GPU", INVALID)
        _buffers.wait_for_producer(b)

    def _call(self, rc: int, handle: int) -> None:
        if rc != 0:
            raise from_code(rc, text(self._lib.ftl_last_error(handle)))

    def allreduce(self, x: T, op: str = "sum") -> T:
        """x = op over every rank's x, in place. Inside a step, as every collective here.

        Args:
            x (numpy.ndarray or torch.Tensor): input and output.
            op (str): the reduction: sum, avg, min, max, prod, band, bor or bxor.

        Returns:
            x.

        Raises:
            PeerLostError: a peer was lost (let it propagate: execute() runs the step again).
            Error: outside a step, or x cannot be passed as it is (the sentence says why).
        """
        handle = self._collective("allreduce")
        b = _buffers.describe(x, "allreduce")
        self._check_backend(b, "allreduce")
        self._call(self._lib.ftl_allreduce(handle, b.ptr, b.ptr, b.count, b.dtype, _buffers.op_code(op), None, None),
                   handle)
        return x

    def allreduce_async(self, x: T, op: str = "sum") -> "Request":
        """Starts x = op over every rank's x, in place, and returns at once. Requests run in the order they
        were made (every rank makes them in the same order), blocking collectives queue behind them; x must
        not be touched until the request is done. Wait for every request inside the step that made it.

        Args:
            x, op: as allreduce's.

        Returns:
            Request: wait() returns x once it is done, done() tells without blocking. A lost peer fails
            every outstanding request: wait() raises PeerLostError (let it propagate, as with allreduce).
        """
        handle = self._collective("allreduce_async")
        b = _buffers.describe(x, "allreduce_async")
        self._check_backend(b, "allreduce_async")
        req = ctypes.c_void_p()
        self._call(self._lib.ftl_allreduce(handle, b.ptr, b.ptr, b.count, b.dtype, _buffers.op_code(op), None,
                                           ctypes.byref(req)), handle)
        return Request(self, b, req)

    def broadcast(self, x: T, root: int = 0) -> T:
        """x on every rank = x on rank root, in place.

        Args:
            x (numpy.ndarray or torch.Tensor): the data on root, the output elsewhere.
            root (int): the rank that sends.

        Returns:
            x.

        Raises:
            PeerLostError, Error: as allreduce.
        """
        handle = self._collective("broadcast")
        b = _buffers.describe(x, "broadcast")
        self._check_backend(b, "broadcast")
        self._call(self._lib.ftl_broadcast(handle, b.ptr, b.count, b.dtype, root), handle)
        return x

    def allgather(self, x: Any, out: T) -> T:
        """out = every rank's x, concatenated in rank order.

        Args:
            x (numpy.ndarray or torch.Tensor): this rank's part.
            out (numpy.ndarray or torch.Tensor): world_size times x's elements, of x's dtype.

        Returns:
            out.

        Raises:
            PeerLostError, Error: as allreduce; Error also when out's size or dtype does not fit.
        """
        handle = self._collective("allgather")
        src = _buffers.describe(x, "allgather (x)", writable=False)
        dst = _buffers.describe(out, "allgather (out)")
        self._check_backend(src, "allgather (x)")
        self._check_backend(dst, "allgather (out)")
        if src.dtype != dst.dtype:
            raise Error("ftl: allgather: x and out have different dtypes", INVALID)
        status = self.job_status()
        if dst.count != src.count * status["world_size"]:
            raise Error(f"ftl: allgather: out has {dst.count} elements, and needs {src.count} x world size "
                        f"{status['world_size']} = {src.count * status['world_size']}", INVALID)
        self._call(self._lib.ftl_allgather(handle, src.ptr, dst.ptr, src.count, src.dtype), handle)
        return out

    def barrier(self) -> None:
        """Returns once every rank reached it.

        Raises:
            PeerLostError, Error: as allreduce.
        """
        handle = self._collective("barrier")
        self._call(self._lib.ftl_barrier(handle), handle)

    # ---- where things stand ----

    def job_status(self) -> Dict[str, int]:
        """Where the job stands, from any thread.

        Returns:
            dict: step, view_epoch, rank, world_size, views_seen, retries, data_epoch.
        """
        s = JobStatusC()
        rc = self._lib.ftl_get_job_status(self._handle(), ctypes.byref(s))
        if rc != 0:
            raise from_code(rc, text(self._lib.ftl_error_message()))
        return {name: getattr(s, name) for name, _ in JobStatusC._fields_ if name != "struct_size"}

    @property
    def rank(self) -> int:
        """This worker's rank in the current view (job_status()'s)."""
        return self.job_status()["rank"]

    @property
    def world_size(self) -> int:
        """The current view's size (job_status()'s)."""
        return self.job_status()["world_size"]

    @property
    def control_path(self) -> str:
        """The control socket (`ftlctl` talks to it)."""
        return text(self._lib.ftl_agent_control_path(self._handle()))

    def status(self, timeout: float = 5.0) -> Dict[str, Any]:
        """What `ftlctl status --json` shows.

        Args:
            timeout (float): seconds to wait for the answer.

        Returns:
            dict: the cluster, this member, the view, counts, counters.

        Raises:
            Error: before start(), or after the agent stopped.
            TimeoutError: the agent's loop did not answer within timeout.
        """
        if not self._started:
            raise Error("ftl: status() before start(): the agent's loop builds it", INVALID)
        size = 1 << 16
        while True:  # ftl_agent_status says what it needs when the buffer is too small
            buf, need = ctypes.create_string_buffer(size), ctypes.c_size_t()
            rc = self._lib.ftl_agent_status(self._handle(), buf, size, ctypes.byref(need), int(timeout * 1000))
            if rc == INVALID and need.value >= size:
                size = need.value + 4096
                continue
            if rc != 0:
                raise from_code(rc, text(self._lib.ftl_error_message()))
            return json.loads(buf.value)

    def members(self, timeout: float = 5.0) -> list:
        """Every member this agent knows.

        Args:
            timeout (float): seconds to wait for the answer.

        Returns:
            list: a dict per member, with status, address, incarnation and rank.
        """
        return self._control({"cmd": "members"}, timeout)["members"]

    def _control(self, request: Dict[str, Any], timeout: float) -> Dict[str, Any]:
        if not self._started:
            raise Error("ftl: status() before start(): the control socket is not open yet", INVALID)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.control_path)
            s.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data)
        if not reply.get("ok"):
            raise Error("ftl: " + reply.get("error", "the agent refused the request"), INVALID)
        return reply
