"""What ftl's process group makes of the tensors and options torch hands it: the reduction, a contiguous
copy of a strided tensor (copied back after, as gloo does), a complex tensor as its real parts, a tensor
of a dtype ftl does not reduce as its bytes where only bytes move. Shared by the group's files."""
from __future__ import annotations

from typing import Any, List

import torch
import torch.distributed as dist

from .. import _buffers
from ..errors import INVALID, Error

_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.AVG: "avg", dist.ReduceOp.MIN: "min", dist.ReduceOp.MAX: "max",
        dist.ReduceOp.PRODUCT: "prod", dist.ReduceOp.BAND: "band", dist.ReduceOp.BOR: "bor",
        dist.ReduceOp.BXOR: "bxor"}


def op_code(opts: Any, what: str) -> int:
    """The reduction's code for the C calls; PREMUL_SUM is a SUM of the inputs multiplied by its factor
    (premul_factor) first."""
    reduce_op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
    if reduce_op == dist.ReduceOp.PREMUL_SUM:
        return _buffers.op_code("sum")
    for known, name in _OPS.items():
        if reduce_op == known:
            return _buffers.op_code(name)
    raise Error(f"ftl: {what}: the reduction {op_name(reduce_op)} is not supported; use SUM, AVG, PRODUCT, MIN, "
                "MAX, BAND, BOR, BXOR or PREMUL_SUM", INVALID)


def premul_factor(opts: Any, tensors: List[torch.Tensor], what: str) -> Any:
    """The factor of a PREMUL_SUM (ReduceOp.PREMUL_SUM(f): FSDP2's gradient divide factor, a number or a
    one-element tensor), by which each input is multiplied before the sum; None for any other reduction.
    Defined on floating-point tensors only, as under NCCL."""
    reduce_op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
    if reduce_op != dist.ReduceOp.PREMUL_SUM:
        return None
    for t in tensors:
        if not (t.is_floating_point() or t.is_complex()):
            raise Error(f"ftl: {what}: PREMUL_SUM multiplies by a factor, and is not defined on {t.dtype}", INVALID)
    if hasattr(reduce_op, "factor"):
        return reduce_op.factor
    # Older torches (2.11) show the factor only in the pickled state: (RedOpType.PREMUL_SUM, factor).
    state = reduce_op.__getstate__() if hasattr(reduce_op, "__getstate__") else None
    if isinstance(state, tuple) and len(state) == 2 and state[0] == dist.ReduceOp.PREMUL_SUM:
        return state[1]
    raise Error(f"ftl: {what}: this torch ({torch.__version__}) does not show a PREMUL_SUM's factor, so ftl cannot "
                "multiply by it; upgrade torch, or scale the tensor and use SUM", INVALID)


def op_name(reduce_op: Any) -> str:
    """ReduceOp.X's name (a ReduceOp prints as <ReduceOp object at ...>)."""
    for name, member in dist.ReduceOp.RedOpType.__members__.items():
        if reduce_op == member:
            return f"ReduceOp.{name}"
    return str(reduce_op)


def dense_all(tensors: List[torch.Tensor]) -> tuple:
    """The tensors as ftl can pass them (contiguous), and the (original, copy) pairs to copy back after."""
    if all(t.is_contiguous() for t in tensors):
        return tensors, []
    dense = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    return dense, [(t, d) for t, d in zip(tensors, dense) if d is not t]


def real(t: torch.Tensor, op: int) -> torch.Tensor:
    """A complex tensor as its real and imaginary parts (what gloo reduces), for a sum or an average."""
    if not t.is_complex():
        return t
    if op not in (_buffers.op_code("sum"), _buffers.op_code("avg")):
        raise Error(f"ftl: allreduce: a complex tensor ({t.dtype}) reduces with SUM or AVG only", INVALID)
    return torch.view_as_real(t)


def movable(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor whose elements are only moved (broadcast, gathered), as bytes where ftl has no
    such dtype (complex, uint16 ...): moving bytes is exact whatever they hold."""
    if str(t.dtype) in _buffers.TORCH_DTYPES or t.numel() == 0:
        return t
    return as_bytes(t)


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's memory as a flat uint8 tensor (no copy)."""
    return t.reshape(-1).view(torch.uint8)
