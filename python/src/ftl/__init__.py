"""ftl: elastic, fault-tolerant data-parallel training (the Python face of libftl).

    import ftl
    with ftl.Agent() as agent:            # settings from FTL_* (or keyword arguments)
        agent.register("params", params)  # synced from rank 0 to joiners, checkpointed
        while agent.job_status()["step"] < steps:
            agent.execute(step)           # runs the step; a lost peer makes it run again on the new view

`ftl.GradientBucket` is a gradient's allreduce, compressed as FTL_COMM_COMPRESS says.
`ftl.torch` adds PyTorch: model and optimizer state, bucketed gradient averaging, a sampler for a Dataset.
`ftl.read_checkpoint(path)` reads a checkpoint file (or a directory's newest valid one) through libftl.
`python -m ftl.run --nproc N script.py` starts N local workers.
"""
from ._version import __version__
from ._checkpoint import Checkpoint, read_checkpoint
from .agent import Agent, StepInfo
from .errors import ConfigError, Error, LibraryNotFoundError, PeerLostError, TimeoutError
from .gradient import GradientBucket


def add_known_setting(name: str) -> None:
    """Declares a program's own FTL_* variable (FTL_EPOCHS, say): ftl.Agent() refuses any FTL_* name that
    neither ftl nor the program knows, naming the closest known one, so a misspelled setting stops the
    worker instead of leaving it on a default. Call it before making the Agent."""
    from ._lib import lib, text
    from .errors import ConfigError
    if lib().ftl_env_add_known_name(name.encode()) != 0:
        raise ConfigError(text(lib().ftl_error_message()), name)


def library_version() -> str:
    """The version of the libftl that was loaded (the package's own is __version__)."""
    from ._lib import lib, text
    return text(lib().ftl_version())


__all__ = ["Agent", "StepInfo", "GradientBucket", "Error", "ConfigError", "PeerLostError", "TimeoutError",
           "LibraryNotFoundError",
           "Checkpoint", "read_checkpoint", "add_known_setting", "library_version", "__version__"]
