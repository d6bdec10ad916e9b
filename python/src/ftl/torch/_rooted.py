"""reduce, gather, scatter and all-to-all on ftl's process group, and what it refuses (send/recv).

Why they are built here from the communicator's allreduce, allgather and broadcast: those are the calls
every backend of the C library has, with its abort-on-death and deadline contract, so the new calls keep
it unchanged (a lost peer fails them with PeerLostError within the timeout, on every rank). What it costs,
against a rooted algorithm: reduce is an allreduce on a copy (non-roots keep their input unchanged, as
under NCCL); gather an allgather that only the root keeps; scatter a broadcast of every part, which each
rank cuts its own from; all-to-all an allgather of every rank's parts, padded to the longest, with the
split sizes exchanged first. Each moves up to world-size times the bytes of a point-to-point exchange, so
they are for control data and small tensors (torch.distributed.checkpoint's plans, metrics, MoE routing at
small scale), not for bulk transfers.

Point-to-point (send, recv, batch_isend_irecv) needs a link between two ranks that the others do not
join, which the communicator does not have yet: those calls are refused with a sentence, never emulated.
"""
from __future__ import annotations

from typing import Any, List, Optional

import torch

from ..errors import INVALID, UNSUPPORTED, Error
from ._tensor_args import as_bytes, dense_all, movable, op_code

_P2P_REFUSAL = ("ftl: {what}: point-to-point messages are not in ftl's communicator yet; use the collectives "
                "(all_to_all_single, scatter, gather, broadcast), or a gloo group for a fixed set of ranks")


class RootedCollectives:
    """The mixin of ElasticProcessGroup that holds these calls; it relies on the group's _run, _where,
    _buffer, _check, _gather_into, _broadcast_one, _reduced and _rank_in."""

    def _world_in(self, handle: Optional[int]) -> int:
        return self.size() if handle is not None else 1

    def reduce(self, tensors: List[torch.Tensor], opts: Any = None) -> Any:
        op = op_code(opts, "reduce")
        root = opts.rootRank if opts is not None else 0

        def body(handle: Optional[int]) -> List[torch.Tensor]:
            for t in tensors:
                whole = self._reduced(t, op, handle, "reduce")
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

    # ---- all-to-all ----

    def _exchange(self, parts: List[torch.Tensor], handle: Optional[int], what: str) -> List[torch.Tensor]:
        """parts[q] (flat bytes) goes to rank q; returns the bytes each rank sent this one, in rank order."""
        if handle is None:
            return parts
        n, rank = len(parts), self._rank_in(handle)
        device = parts[0].device
        sizes = torch.tensor([p.numel() for p in parts], dtype=torch.int64, device=device)
        table = torch.empty((n, n), dtype=torch.int64, device=device)
        self._gather_into(table, sizes, handle)  # table[q][r]: bytes q sends r
        table = table.cpu()
        longest = int(table.sum(dim=1).max())
        mine = torch.zeros(max(longest, 1), dtype=torch.uint8, device=device)
        if parts:
            joined = torch.cat(parts) if any(p.numel() for p in parts) else mine[:0]
            mine[:joined.numel()] = joined
        everything = torch.empty((n, mine.numel()), dtype=torch.uint8, device=device)
        self._gather_into(everything, mine, handle)
        starts = torch.cumsum(table, dim=1) - table
        return [everything[q, int(starts[q, rank]):int(starts[q, rank] + table[q, rank])] for q in range(n)]

    def _deliver(self, outs: List[torch.Tensor], got: List[torch.Tensor], what: str) -> None:
        for q, (o, data) in enumerate(zip(outs, got)):
            if o.numel() * o.element_size() != data.numel():
                raise Error(f"ftl: {what}: rank {q} sends this rank {data.numel()} bytes, and the output "
                            f"expects {o.numel() * o.element_size()}: the ranks' split sizes disagree", INVALID)
            if o.numel() == 0:
                continue
            if o.is_contiguous():
                as_bytes(o).copy_(data)
            else:
                o.copy_(data.view(o.dtype).view(o.shape))

    def alltoall_base(self, output: torch.Tensor, x: torch.Tensor, output_split_sizes: List[int],
                      input_split_sizes: List[int], opts: Any = None) -> Any:
        def body(handle: Optional[int]) -> List[torch.Tensor]:
            n = self._world_in(handle)
            ins = _split(x.contiguous(), input_split_sizes, n, "all_to_all_single (input)")
            dense, back = dense_all([output])
            outs = _split(dense[0], output_split_sizes, n, "all_to_all_single (output)")
            got = self._exchange([as_bytes(p.contiguous()) for p in ins], handle, "all_to_all_single")
            self._deliver(outs, got, "all_to_all_single")
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
            got = self._exchange([as_bytes(t.contiguous()) for t in input_tensors], handle, "all_to_all")
            self._deliver(output_tensors, got, "all_to_all")
            return output_tensors
        return self._run("all_to_all", body)

    # ---- refused ----

    def send(self, tensors: List[torch.Tensor], dst: int, tag: int = 0) -> Any:
        raise Error(_P2P_REFUSAL.format(what="send"), INVALID)

    def recv(self, tensors: List[torch.Tensor], src: int, tag: int = 0) -> Any:
        raise Error(_P2P_REFUSAL.format(what="recv"), INVALID)

    def recv_anysource(self, tensors: List[torch.Tensor], tag: int = 0) -> Any:
        raise Error(_P2P_REFUSAL.format(what="recv"), INVALID)

    def _get_backend(self, device: Any) -> Any:
        raise Error(f"ftl: torch asked ftl's group for its C++ backend on {device}, and a group written in Python has "
                    "none: the call that needs one (batch_isend_irecv, split_group, a coalescing manager) is not "
                    "supported on ftl's group yet", UNSUPPORTED)

    def monitored_barrier(self, timeout: Any = None, wait_all_ranks: bool = False) -> None:
        """A barrier under the communicator's deadline: a rank that does not come fails it on every rank
        with the error that names the lost peer (not a list of every missing rank, as gloo's can)."""
        self.barrier().wait()


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
