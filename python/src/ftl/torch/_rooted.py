"""reduce, gather, scatter, all-to-all and point-to-point on ftl's process group.

reduce, gather and scatter are built from the communicator's allreduce, allgather and broadcast: the calls
every backend of the C library has, with its abort-on-death and deadline contract, so these keep it (a
lost peer fails them with PeerLostError within the timeout, on every rank). What it costs, against a
rooted algorithm: reduce is an allreduce on a copy (non-roots keep their input unchanged, as under NCCL);
gather an allgather that only the root keeps; scatter a broadcast of every part, which each rank cuts its
own from. They suit control data and small tensors (torch.distributed.checkpoint's plans, metrics).

all-to-all (all_to_all_single, all_to_all) is the communicator's own (ftl_alltoall: each block straight
to its rank), on the tensors' bytes; send, recv, isend, irecv and batch_isend_irecv are its point-to-point
batches (_p2p.py says how posted ops become one batch).
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional

import torch

from ..errors import INVALID, Error
from ._p2p import posted
from ._tensor_args import as_bytes, dense_all, movable, op_code, premul_factor

class RootedCollectives:
    """The mixin of ElasticProcessGroup that holds these calls; it relies on the group's _run, _where,
    _buffer, _check, _gather_into, _broadcast_one, _reduced and _rank_in."""

    def _world_in(self, handle: Optional[int]) -> int:
        return self.size() if handle is not None else 1

    def reduce(self, tensors: List[torch.Tensor], opts: Any = None) -> Any:
        op = op_code(opts, "reduce")
        factor = premul_factor(opts, tensors, "reduce")
        root = opts.rootRank if opts is not None else 0

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for t in tensors:
                whole = self._reduced(t, op, handle, "reduce", factor)
                if self._rank_in(handle) == root or handle is None:
                    t.copy_(whole.reshape(t.shape))
            return tensors
        return self._run("reduce", body)

    def gather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor],
               opts: Any = None) -> Any:
        root = opts.rootRank if opts is not None else 0

        def body(handle: Optional[int]) -> List[List[torch.Tensor]]:
            x = input_tensors[0].contiguous()
            flat = torch.empty((self._world_in(handle),) + tuple(x.shape), dtype=x.dtype, device=x.device)
            self._gather_into(flat, x, handle)
            if self._rank_in(handle) == root:
                outs = output_tensors[0]
                if len(outs) != len(flat):
                    raise Error(f"ftl: gather: the root's gather_list has {len(outs)} tensors, and the world "
                                f"{len(flat)} ranks", INVALID)
                for o, part in zip(outs, flat):
                    o.copy_(part)
            return output_tensors
        return self._run("gather", body)

    def scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]],
                opts: Any = None) -> Any:
        root = opts.rootRank if opts is not None else 0

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            out, n, rank = output_tensors[0], self._world_in(handle), self._rank_in(handle)
            if rank == root:
                parts = input_tensors[0]
                if len(parts) != n or any(p.shape != out.shape for p in parts):
                    raise Error(f"ftl: scatter: the root's scatter_list needs {n} tensors of shape "
                                f"{tuple(out.shape)}", INVALID)
                whole = torch.stack([p.to(out.dtype) for p in parts])
            else:
                whole = torch.empty((n,) + tuple(out.shape), dtype=out.dtype, device=out.device)
            if handle is not None:
                self._broadcast_one(movable(whole), root, handle)
            out.copy_(whole[rank])
            return output_tensors
        return self._run("scatter", body)

    # ---- all-to-all: one C call (ftl_alltoall), on bytes ----

    def _alltoall_bytes(self, send: torch.Tensor, send_counts: List[int], recv: torch.Tensor,
                        recv_counts: List[int], handle: Optional[int]) -> None:
        """send (flat bytes, blocks of send_counts) to the ranks, recv (blocks of recv_counts) from them."""
        if handle is None:
            recv.copy_(send)
            return
        src, dst = self._buffer(send, "all_to_all (input)", writable=False), self._buffer(recv, "all_to_all (output)")
        sc, rc = (ctypes.c_size_t * len(send_counts))(*send_counts), (ctypes.c_size_t * len(recv_counts))(*recv_counts)
        self._check(self._calls.alltoall(handle, src.ptr, sc, dst.ptr, rc, 0, src.dtype), handle)

    def alltoall_base(self, output: torch.Tensor, x: torch.Tensor, output_split_sizes: List[int],
                      input_split_sizes: List[int], opts: Any = None) -> Any:
        def body(handle: Optional[int]) -> List[torch.Tensor]:
            n = self._world_in(handle)
            ins = _split(x.contiguous(), input_split_sizes, n, "all_to_all_single (input)")
            dense, back = dense_all([output])
            outs = _split(dense[0], output_split_sizes, n, "all_to_all_single (output)")
            self._alltoall_bytes(as_bytes(x.contiguous()), [_nbytes(p) for p in ins], as_bytes(dense[0]),
                                 [_nbytes(p) for p in outs], handle)
            for orig, copy in back:
                orig.copy_(copy)
            return [output]
        return self._run("all_to_all_single", body)

    def alltoall(self, output_tensors: List[torch.Tensor], input_tensors: List[torch.Tensor],
                 opts: Any = None) -> Any:
        def body(handle: Optional[int]) -> List[torch.Tensor]:
            n = self._world_in(handle)
            if len(input_tensors) != n or len(output_tensors) != n:
                raise Error(f"ftl: all_to_all: {len(input_tensors)} inputs and {len(output_tensors)} outputs in "
                            f"a world of {n}: one of each per rank", INVALID)
            send = torch.cat([as_bytes(t.contiguous()) for t in input_tensors])
            recv = torch.empty(sum(_nbytes(t) for t in output_tensors), dtype=torch.uint8, device=send.device)
            self._alltoall_bytes(send, [_nbytes(t) for t in input_tensors], recv,
                                 [_nbytes(t) for t in output_tensors], handle)
            at = 0
            for o in output_tensors:
                o.copy_(recv[at:at + _nbytes(o)].view(o.dtype).view(o.shape))
                at += _nbytes(o)
            return output_tensors
        return self._run("all_to_all", body)

    # ---- point-to-point: posted, run as a batch (_p2p.py) ----

    def send(self, tensors: List[torch.Tensor], dst: int, tag: int = 0) -> Any:
        return posted(self._agent).post(self, tensors[0], dst, False, tag, "send")

    def recv(self, tensors: List[torch.Tensor], src: int, tag: int = 0) -> Any:
        return posted(self._agent).post(self, tensors[0], src, True, tag, "recv")

    # ---- refused ----

    def recv_anysource(self, tensors: List[torch.Tensor], tag: int = 0) -> Any:
        raise Error("ftl: recv from any source: messages on ftl's group match by order per pair of ranks; "
                    "name the sender (dist.recv(tensor, src=...))", INVALID)

    def _get_backend(self, device: Any) -> Any:
        """The group's FtlBackend (_backend.py) for any device: what torch asks of a backend (no coalescing:
        batch_isend_irecv then posts its ops one by one, which _p2p.py runs as one batch; splitting:
        dist.split_group calls ElasticProcessGroup.split_group)."""
        return self._backend

    def monitored_barrier(self, timeout: Any = None, wait_all_ranks: bool = False) -> None:
        """A barrier under the communicator's deadline: a rank that does not come fails it on every rank
        with the error that names the lost peer (not a list of every missing rank, as gloo's can)."""
        self.barrier().wait()


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _split(t: torch.Tensor, sizes: List[int], n: int, what: str) -> List[torch.Tensor]:
    """t cut along its first dimension into n parts of sizes (equal parts when sizes is empty)."""
    rows = t.shape[0] if t.dim() else t.numel()
    flat = t if t.dim() else t.reshape(1)
    if not sizes:
        if rows % n:
            raise Error(f"ftl: {what}: {rows} rows do not split into {n} equal parts; give split sizes", INVALID)
        sizes = [rows // n] * n
    if len(sizes) != n or sum(sizes) != rows:
        raise Error(f"ftl: {what}: split sizes {list(sizes)} for {rows} rows in a world of {n}", INVALID)
    return list(torch.split(flat, list(sizes)))
