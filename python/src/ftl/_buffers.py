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

from ._names import DTYPE, REDUCE_OP, names, value
from .errors import Error, INVALID

# NumPy's and torch's dtypes, each by its ftl_dtype's name in libftl's table (_names.py gives the value)
_NUMPY = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16",
          np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8",
          np.dtype(np.bool_): "bool"}
_TORCH = {"torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16", "torch.bfloat16": "bf16",
          "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8", "torch.int8": "i8", "torch.bool": "bool"}
TORCH_DTYPES = frozenset(_TORCH)  # the names of the torch dtypes ftl passes as they are
_TORCH_NAMES = "float32, float64, float16, bfloat16, int64, int32, int8, uint8 or bool"


@dataclass(frozen=True)
class Buffer:
    ptr: int
    count: int      # elements
    dtype: int      # ftl_dtype (dtype_code)
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
        return Buffer(x.data_ptr(), x.numel(), dtype_code(dtype), x.numel() * x.element_size(),
                      x.device.type == "cuda", x, x.untyped_storage())
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
        return Buffer(x.ctypes.data, x.size, dtype_code(dtype), x.nbytes, False, x)
    raise Error(f"ftl: {what}: expected a NumPy array or a torch tensor, got {type(x).__name__}", INVALID)


def wait_for_producer(b: Buffer) -> None:
    """A CUDA tensor is written on torch's current stream and read by the nccl communicator on its own
    stream: what torch queued on it must be done before a collective (blocking or not) starts reading."""
    if b.is_device:
        import torch
        torch.cuda.current_stream(b.owner.device).synchronize()


def dtype_code(name: str) -> int:
    """The ftl_dtype of a name in libftl's table ("f32")."""
    return value(DTYPE, name)


def op_code(op: str) -> int:
    """The ftl_reduce_op of a reduction's name in libftl's table (sum, avg, min, max, prod, band, bor, bxor:
    the bitwise three take integers and bool only; avg is refused on bool)."""
    try:
        return value(REDUCE_OP, op)
    except ValueError:
        raise Error(f"ftl: unknown reduction {op!r}; use one of {', '.join(names(REDUCE_OP))}", INVALID) from None
