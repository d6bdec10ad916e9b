"""The job's state in PyTorch's own formats: a torch.save file, a torch.distributed.checkpoint (DCP)
directory, and reading either (or an ftl checkpoint) back as one state dict.

The state dict is ElasticState.state_dict()'s: {"model", "optimizer", "scaler", "extras", "rng", "step"}.
DCP runs here in one process (no_dist): rank 0 writes the whole state, as with torch.save; under a process
group of the user's own, a DCP call on rank 0 alone would otherwise wait for the other ranks. Files are
unpickled (weights_only=False: RNG states and extras are Python objects): load only files you trust.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Optional, Union

import torch

from ._checkpoint import load_checkpoint

_FTL_MAGIC = b"FTLCKPT\0"
_SINGLE_PROCESS = "torch.distributed is disabled"  # DCP's warning when no_dist: that is what we ask for


def save_torch(state: Dict[str, Any], path: Union[str, os.PathLike]) -> None:
    """torch.save, to a temp file renamed over path: a reader never sees half a file."""
    tmp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)


def save_dcp(state: Dict[str, Any], path: Union[str, os.PathLike]) -> None:
    import torch.distributed.checkpoint as dcp
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SINGLE_PROCESS)
        dcp.save(state, checkpoint_id=os.fspath(path), no_dist=True)


def read(path: Union[str, os.PathLike], model: Optional[torch.nn.Module] = None) -> Dict[str, Any]:
    """The state dict in path: a DCP directory, an ftl checkpoint (file or directory) or a torch.save file."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return _read_dcp(path) if os.path.exists(os.path.join(path, ".metadata")) else load_checkpoint(path, model)
    with open(path, "rb") as f:
        if f.read(len(_FTL_MAGIC)) == _FTL_MAGIC:
            return load_checkpoint(path, model)
    return torch.load(path, map_location="cpu", weights_only=False)


def _read_dcp(path: str) -> Dict[str, Any]:
    """A whole DCP directory without a template to load into: what torch's own dcp_to_torch_save does
    (format_utils.py), without its temp file."""
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict
    state: Dict[str, Any] = {}
    _load_state_dict(state, storage_reader=FileSystemReader(path), planner=_EmptyStateDictLoadPlanner(), no_dist=True)
    optimizer = state.get("optimizer")
    if isinstance(optimizer, dict) and isinstance(optimizer.get("state"), dict):
        # DCP keys nested entries by strings; an optimizer's state is keyed by parameter index
        optimizer["state"] = {int(k) if isinstance(k, str) and k.isdigit() else k: v
                              for k, v in optimizer["state"].items()}
    return state
