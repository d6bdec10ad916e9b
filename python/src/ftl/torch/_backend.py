"""The C++-side backend every ftl group carries, so that torch's code that asks a group for its backend or
its name gets an answer.

A torch group written in Python (ElasticProcessGroup) runs its collectives itself, but torch keeps two
facts about a group on its per-device C++ backends, not on the group: the group's name (group.group_name,
what DeviceMesh, the functional collectives and the flight recorder file a group under; "ProcessGroup
name not set" without one) and what the backend supports (dist.split_group asks supports_splitting,
batch_isend_irecv supports_coalescing). So each group registers one FtlBackend for the CPU and CUDA
devices: a torch Backend that holds the name torch gives the group and answers those questions. It runs no
collective: the group's own methods take every call before torch would reach a backend.
"""
from typing import Any

import torch
from torch._C._distributed_c10d import Backend as _CppBackend
from torch._C._distributed_c10d import ProcessGroup as _CppGroup


class FtlBackend(_CppBackend):
    # What torch asks of a backend; the answers stand in for the C++ properties (which, on a subclass
    # made in Python, would call back into Python without end).
    supports_splitting = True        # dist.split_group: ElasticProcessGroup.split_group makes the subgroup
    supports_coalescing = False      # batch_isend_irecv posts op by op (the group runs them as one batch)
    supports_tensor_alloc = False
    supports_shrinking = False
    supports_reconfigure = False
    supports_window = False
    _supports_time_estimate = False

    def getBackendName(self) -> str:  # noqa: N802 (torch's name)
        return "ftl"


def attach(group: Any, rank: int, size: int) -> FtlBackend:
    """A new FtlBackend registered on group for the CPU and CUDA devices, and made its default."""
    backend = FtlBackend(rank, size)
    for device in ("cpu", "cuda"):
        group._register_backend(torch.device(device), _CppGroup.BackendType.CUSTOM, backend)
    group._set_default_backend(_CppGroup.BackendType.CUSTOM)
    return backend
