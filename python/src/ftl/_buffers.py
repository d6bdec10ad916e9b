"""Arrays and tensors as the C API sees them: a pointer, an element count, an ftl_dtype, host or device.

Nothing is copied: the collectives work on the array's own memory (NumPy arrays and torch tensors on the
CPU for the tcp backend, CUDA tensors for nccl). What cannot be passed that way (a non-contiguous view, a
read-only array, a dtype ftl does not reduce) is refused with one sentence that says what to do. torch is
not imported here: a tensor is recognised by its type's module, so the package works without torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .errors import Error, INVALID

# ftl_dtype values (include/ftl/comm.h).
F32, F64, F16, BF16, I32, I64, U8, I8, BOOL = range(9)
_NUMPY = {np.dtype(np.float32): F32, np.dtype(np.float64): F64, np.dtype(np.float16): F16,
          np.dtype(np.int32): I32, np.dtype(np.int64): I64, np.dtype(np.uint8): U8, np.dtype(np.int8): I8,
          np.dtype(np.bool_): BOOL}
_TORCH = {"torch.float32": F32, "torch.float64": F64, "torch.float16": F16, "torch.bfloat16": BF16,
          "torch.int32": I32, "torch.int64": I64, "torch.uint8": U8, "torch.int8": I8, "torch.bool": BOOL}
TORCH_DTYPES = frozenset(_TORCH)  # the names of the torch dtypes ftl passes as they are
_TORCH_NAMES = "float32, float64, float16, bfloat16, int64, int32, int8, uint8 or bool"
# ftl_reduce_op values: the bitwise three take integers and bool only; avg is refused on bool.
OPS = {"sum": 0, "avg": 1, "min": 2, "max": 3, "prod": 4, "band": 5, "bor": 6, "bxor": 7}


@dataclass(frozen=True)
class Buffer:
    ptr: int
    count: int      # elements
    dtype: int      # ftl_dtype
    nbytes: int
    is_device: bool
    owner: Any      # the array or tensor; with storage, keeps the memory alive while C holds the pointer
    storage: Any = None  # a tensor's storage: x.set_() gives x other storage and would free this one

    def is_moved(self, x: Any) -> bool:
        """True when x no longer lies at this memory: a tensor given new storage (set_, resize_, .data =)
        or an array resized; the old memory is still alive (owner holds it), but x no longer shows it."""
        return address(x) != (self.ptr, self.nbytes)


def start_of(x: Any) -> Optional[Callable[[], int]]:
    """A cheap call that says where a tensor's elements start now, for a check before every step (its bound
    data_ptr, about 0.15 us). A tensor given other storage (set_, .data =, resize_ beyond its storage) starts
    elsewhere; one shrunk in place keeps its storage, which stays as large as ftl was told. None for a NumPy
    array: it cannot move while ftl holds a reference to it (ndarray.resize refuses), and asking where it
    lies costs a microsecond or more."""
    return x.data_ptr if is_tensor(x) else None


def address(x: Any) -> tuple:
    """Where x's elements are now: (pointer, bytes)."""
    if is_tensor(x):
        return x.data_ptr(), x.numel() * x.element_size()
    return x.ctypes.data, x.nbytes


def is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def describe(x: Any, what: str, writable: bool = True) -> Buffer:
    """The C view of a NumPy array or torch tensor, or an Error saying why it has none."""
    if is_tensor(x):
        dtype = _TORCH.get(str(x.dtype))
        if dtype is None:
            raise Error(f"ftl: {what}: dtype {x.dtype} is not supported; use {_TORCH_NAMES} (a complex tensor: "
                        "torch.view_as_real(x))", INVALID)
        if not x.is_contiguous():
            raise Error(f"ftl: {what}: the tensor is not contiguous; pass x.contiguous() (and copy the "
                        "result back), since ftl works in place on the tensor's memory", INVALID)
        if writable and x.requires_grad and x.is_leaf:
            raise Error(f"ftl: {what}: the tensor requires grad; pass x.detach() or x.grad", INVALID)
        return Buffer(x.data_ptr(), x.numel(), dtype, x.numel() * x.element_size(), x.device.type == "cuda", x,
                      x.untyped_storage())
    if isinstance(x, np.ndarray):
        dtype = _NUMPY.get(x.dtype)
        if dtype is None:
            raise Error(f"ftl: {what}: dtype {x.dtype} is not supported; use float32, float64, float16, "
                        "int64, int32, int8, uint8 or bool", INVALID)
        if not x.flags.c_contiguous:
            raise Error(f"ftl: {what}: the array is not C-contiguous; pass np.ascontiguousarray(x) (and "
                        "copy the result back), since ftl works in place on the array's memory", INVALID)
        if writable and not x.flags.writeable:
            raise Error(f"ftl: {what}: the array is read-only; ftl writes the result into it", INVALID)
        return Buffer(x.ctypes.data, x.size, dtype, x.nbytes, False, x)
    raise Error(f"ftl: {what}: expected a NumPy array or a torch tensor, got {type(x).__name__}", INVALID)


def wait_for_producer(b: Buffer) -> None:
    """A CUDA tensor is written on torch's current stream and read by the nccl communicator on its own
    stream: what torch queued on it must be done before a collective (blocking or not) starts reading."""
    if b.is_device:
        import torch
        torch.cuda.current_stream(b.owner.device).synchronize()


def op_code(op: str) -> int:
    try:
        return OPS[op]
    except KeyError:
        raise Error(f"ftl: unknown reduction {op!r}; use one of {', '.join(OPS)}", INVALID) from None
