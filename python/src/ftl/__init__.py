"""ftl: elastic, fault-tolerant data-parallel training (the Python face of libftl).

    import ftl
    with ftl.Agent() as agent:            # settings from FTL_* (or keyword arguments)
        agent.register("params", params)  # synced from rank 0 to joiners, checkpointed
        while agent.job_status()["step"] < steps:
            agent.execute(step)           # runs the step; a lost peer makes it run again on the new view

`ftl.GradientBucket` is a gradient's allreduce, compressed as FTL_COMM_COMPRESS says.
`ftl.torch` adds PyTorch: model and optimizer state, bucketed gradient averaging, a sampler for a Dataset.
`python -m ftl.run --nproc N script.py` starts N local workers.
"""
from ._version import __version__
from .agent import Agent, StepInfo
from .errors import ConfigError, Error, LibraryNotFoundError, PeerLostError
from .gradient import GradientBucket


def library_version() -> str:
    """The version of the libftl that was loaded (the package's own is __version__)."""
    from ._lib import lib, text
    return text(lib().ftl_version())


__all__ = ["Agent", "StepInfo", "GradientBucket", "Error", "ConfigError", "PeerLostError", "LibraryNotFoundError",
           "library_version", "__version__"]
