"""The C++-side backend every ftl group carries, so that torch's code that asks a group for its backend or
its name gets an answer.

A torch group written in Python (ElasticProcessGroup) runs its collectives itself, but torch keeps two
facts about a group on its per-device C++ backends, not on the group: the group's name (group.group_name,
what DeviceMesh, the functional collectives and the flight recorder file a group under; "ProcessGroup
name not set" without one) and what the backend supports (dist.split_group asks supports_splitting,
batch_isend_irecv supports_coalescing). So each group registers one backend for the CPU and CUDA devices,
which holds the name torch gives the group, and answers those questions. It runs no collective: the
group's own methods (torch's Python API and its C++ callers reach them alike) take every call before torch
would reach a backend. A collective that reached it anyway raises; on torch 2.11 a send or recv called on
the registered backend itself (torch.ops.c10d.send, not dist.send) would not, since FakeProcessGroup's
point-to-point calls ignore error_on_collective.

Which backend depends on the torch: where Python can make a torch Backend (newer torches), an FtlBackend;
where it cannot (torch 2.11: "No constructor defined!"), torch's own FakeProcessGroup told to raise on every
collective, behind a BackendFacade that gives torch's Python code the same answers.
"""
from typing import Any

import torch
from torch._C._distributed_c10d import Backend as _CppBackend
from torch._C._distributed_c10d import ProcessGroup as _CppGroup

from ..errors import INVALID, Error


class _Answers:
    """What torch asks of a backend; the answers stand in for the C++ properties (which, on a subclass made
    in Python, would call back into Python without end)."""
    supports_splitting = True        # dist.split_group: ElasticProcessGroup.split_group makes the subgroup
    supports_coalescing = False      # batch_isend_irecv posts op by op (the group runs them as one batch)
    supports_tensor_alloc = False
    supports_shrinking = False
    supports_reconfigure = False
    supports_window = False
    _supports_time_estimate = False
    supports_time_estimate = False

    def getBackendName(self) -> str:  # noqa: N802 (torch's name)
        return "ftl"

    def name(self) -> str:
        return "ftl"


class FtlBackend(_Answers, _CppBackend):
    pass


class BackendFacade(_Answers):
    """Where torch's Backend cannot be made in Python: the answers above, the rest (rank, size, a
    collective, which raises) from the backend registered in its place."""

    def __init__(self, registered: Any):
        self._registered = registered

    def __getattr__(self, attr: str) -> Any:
        if attr == "_registered" or attr.startswith("__"):  # a copy or unpickling probes before __init__
            raise AttributeError(attr)
        return getattr(self._registered, attr)

    def _set_sequence_number_for_group(self) -> None:
        """dist.split_group sets one on the new group's backend; FakeProcessGroup raises for it."""

    def eager_connect_single_device(self, device: Any) -> None:
        """Nothing to connect: the group's communicator is the agent's."""


def _made(rank: int, size: int) -> Any:
    """(the C++ backend to register, what the group's _get_backend answers)."""
    try:
        backend = FtlBackend(rank, size)
        return backend, backend
    except TypeError:
        pass  # this torch binds no constructor of Backend for Python
    from torch._C._distributed_c10d import FakeProcessGroup
    options = FakeProcessGroup.Options()
    if not hasattr(options, "error_on_collective") or not hasattr(FakeProcessGroup, "_create_internal"):
        raise Error(f"ftl: torch {torch.__version__} offers no backend object ftl's group can register (neither a "
                    f"torch Backend made in Python nor FakeProcessGroup's error_on_collective): upgrade torch "
                    f"(2.11 or newer)", INVALID)
    options.error_on_collective = True  # a collective that reached it would fail, not pretend
    registered = FakeProcessGroup._create_internal(rank, size, options)
    return registered, BackendFacade(registered)


def attach(group: Any, rank: int, size: int) -> Any:
    """A new backend registered on group for the CPU and CUDA devices and made its default; returns what the
    group's _get_backend hands torch (an FtlBackend, or a BackendFacade)."""
    registered, answered = _made(rank, size)
    for device in ("cpu", "cuda"):
        group._register_backend(torch.device(device), _CppGroup.BackendType.CUSTOM, registered)
    group._set_default_backend(_CppGroup.BackendType.CUSTOM)
    return answered
