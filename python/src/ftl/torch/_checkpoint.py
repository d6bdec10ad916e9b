"""ftl checkpoints as PyTorch state dicts: load_checkpoint reads a file through libftl (ftl.read_checkpoint)
and puts the model's tensors back under model.state_dict()'s keys, beside the optimizer state and extras
that ElasticState saved.

The registered buffers are raw bytes; what makes them tensors is the layout ElasticState saves with its
state (_layout.py). A checkpoint written before layouts were saved has none: then the model it was written
from (its dtypes, shapes and packing) says the same, so `model` is required.
"""
from __future__ import annotations

import io
import os
from typing import Any, Dict, Optional, Union

import torch

from .._checkpoint import read_checkpoint
from ..errors import Error
from ._layout import IN_SAVED_BYTES, layout_of


def load_checkpoint(path: Union[str, os.PathLike], model: Optional[torch.nn.Module] = None) -> Dict[str, Any]:
    """An ftl checkpoint written by a job whose state is an ElasticState, in PyTorch's form; tensors on the CPU.

    Args:
        path (str or os.PathLike): a file, or a checkpoint directory: its newest file that verifies.
        model (torch.nn.Module, optional): the program's (any values), for a checkpoint saved without a layout.

    Returns:
        dict: {"model": state dict, "optimizer", "scaler", "extras", "rng", "step", "sampler", "file"};
        `model.load_state_dict(ck["model"])` takes it.

    Raises:
        Error: the file is missing or damaged, holds no ElasticState, or does not match `model`.
    """
    ck = read_checkpoint(path)
    saved = torch.load(io.BytesIO(ck.state), map_location="cpu", weights_only=False) if ck.state else {}
    if not isinstance(saved, dict) or "extras" not in saved:
        raise Error(f"ftl: checkpoint {ck.file} holds no ftl.torch.ElasticState (its job registered buffers "
                    f"{sorted(ck.buffers)} itself): read it with ftl.read_checkpoint")
    where = saved.get("layout")
    if where is None:
        if model is None:
            packed = [n for n in ck.buffers if n.startswith("model.packed.")]
            raise Error(f"ftl: checkpoint {ck.file} was saved without its tensors' layout"
                        + (f" and holds packed tensors ({', '.join(packed)})" if packed else "")
                        + ": pass the model it was written from, load_checkpoint(path, model=model), to unpack it")
        where, sizes = layout_of(model)
        if sizes != _sizes(ck.buffers):
            raise Error(f"ftl: checkpoint {ck.file} does not match the model: it holds buffers "
                        f"{_sizes(ck.buffers)}, the model would register {sizes}")
    in_buffers = {w[0] for w in where.values() if w[1] != IN_SAVED_BYTES}
    flat = {name: _flat(ck.file, name, ck.buffers, where) for name in in_buffers}
    state = {}
    for key, (name, offset, dtype, shape) in where.items():
        if offset == IN_SAVED_BYTES:
            state[key] = saved["tensors"][name]
        else:
            state[key] = flat[name].view(getattr(torch, dtype))[offset:offset + _numel(shape)].view(shape)
    if model is not None:
        _check_keys(ck.file, state, model)
    return {"model": state, "optimizer": saved.get("optimizer"), "scaler": saved.get("scaler"),
            "extras": saved.get("extras", {}), "rng": saved.get("rng"), "step": ck.step,
            "sampler": {"data_epoch": ck.data_epoch, "sample_pos": ck.sample_pos}, "file": ck.file}


def _flat(file: str, name: str, buffers: Dict[str, bytearray], where: Dict[str, tuple]) -> torch.Tensor:
    """Buffer `name` as bytes (uint8), checked against the layout's extent."""
    if name not in buffers:
        raise Error(f"ftl: checkpoint {file} has no buffer {name!r} (it holds {sorted(buffers)}): it was written "
                    "by another model")
    need = max((w[1] + _numel(w[3])) * _itemsize(w[2]) for w in where.values() if w[0] == name)
    if len(buffers[name]) < need:
        raise Error(f"ftl: checkpoint {file}: buffer {name!r} has {len(buffers[name])} bytes, the model's tensors "
                    f"take {need}: it was written by another model")
    if not buffers[name]:
        return torch.empty(0, dtype=torch.uint8)  # frombuffer refuses an empty buffer
    return torch.frombuffer(buffers[name], dtype=torch.uint8)  # no copy: the bytearray is ours


def _check_keys(file: str, state: Dict[str, torch.Tensor], model: torch.nn.Module) -> None:
    want = model.state_dict().keys()
    if set(want) != set(state):
        missing, unknown = sorted(set(want) - set(state)), sorted(set(state) - set(want))
        raise Error(f"ftl: checkpoint {file} does not match the model: missing {missing[:5]}, unexpected {unknown[:5]}")


def _sizes(buffers: Dict[str, bytearray]) -> Dict[str, int]:
    return {name: len(b) for name, b in buffers.items()}


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _itemsize(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()
