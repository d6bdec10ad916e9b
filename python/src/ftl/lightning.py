"""ftl.lightning: PyTorch Lightning's Trainer made elastic through its own extension point, a Strategy. The
LightningModule, the DataLoaders and trainer.fit() stay as written; the Trainer gets one argument:

    trainer = L.Trainer(strategy=ftl.lightning.ElasticStrategy(), accelerator="cpu", devices=1, max_epochs=3)
    trainer.fit(model, DataLoader(dataset, batch_size=32, shuffle=True))

and each worker runs the script (ftlrun --standalone --nproc_per_node 3 train.py, or one pod each). It is
loop mode (docs/concepts/step-contract.md, "Loop mode") with Lightning's loop as the program's:
- the process group is ftl's (ftl.torch.init_process_group), so Lightning's DDP, its barriers, broadcasts and
  self.log(..., sync_dist=True) run on the live view; global_rank and world_size are the live view's (a
  ClusterEnvironment that asks the group), so rank 0's checkpoint saving follows the view;
- the training DataLoader's sampler (Lightning's DistributedSampler, or an ElasticSampler given) becomes an
  ElasticSampler: each rank takes its share of the job's position, and a dropped step's samples come again;
- the one optimizer and its schedulers (and AMP's GradScaler) are an ElasticState with the DDP model: a
  joiner gets rank 0's, and optimizer.step(closure), which Lightning calls with the forward and backward in
  the closure, is the commit point;
- Lightning counts an epoch's batches from len() at the epoch's start, and the live view changes it: after
  each batch the strategy gives Lightning the count the sampler has left, and a dropped last batch gets one
  more, so that every sample of an epoch is trained in that epoch.

Why a Strategy: it is where Lightning lets a plugin own the process group, the model's wrapping, the
optimizer step and the DataLoaders (Lightning's docs: "Strategy controls the model distribution across
training, evaluation, and prediction"), so nothing of the user's code changes. What is left out, refused or
said: one optimizer (manual optimization with several is refused at setup); limit_train_batches other than
1.0 is refused (ftl's epoch is the data's); trainer.global_step counts Lightning's optimizer calls, dropped
steps included (ftl.torch.last_commit() counts committed ones); validation loaders keep Lightning's
DistributedSampler of the view at their setup. Works with pytorch_lightning or lightning.pytorch, whichever
the program imported (lightning.pytorch when neither yet).
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Optional

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from ._lib import lib
from ._settings import from_environment
from .errors import INVALID, Error
from .torch import ElasticSampler, ElasticState, init_process_group
from .torch import agent as default_agent
from .torch._loop import loop_of

__all__ = ["ElasticStrategy"]


def _lightning() -> Any:
    """The Lightning package the program uses: its Trainer takes strategies of its own classes only."""
    for name in ("pytorch_lightning", "lightning.pytorch"):
        if name in sys.modules:
            return sys.modules[name]
    try:
        return importlib.import_module("lightning.pytorch")
    except ImportError:
        try:
            return importlib.import_module("pytorch_lightning")
        except ImportError:
            raise ImportError("ftl.lightning needs PyTorch Lightning: pip install \"ftl[lightning]\" (or "
                              "pytorch-lightning, or lightning)") from None


_pl = _lightning()
_fabric = importlib.import_module("lightning_fabric" if _pl.__name__ == "pytorch_lightning" else "lightning.fabric")
_ClusterEnvironment = importlib.import_module(_fabric.__name__ + ".plugins.environments").ClusterEnvironment
_TrainerFn = importlib.import_module(_pl.__name__ + ".trainer.states").TrainerFn
_RunningStage = importlib.import_module(_pl.__name__ + ".trainer.states").RunningStage
_SIGTERMException = importlib.import_module(_pl.__name__ + ".utilities.exceptions").SIGTERMException
_update_dataloader = importlib.import_module(_pl.__name__ + ".utilities.data")._update_dataloader
_RANK_ZERO_ONLY = [importlib.import_module(m).rank_zero_only for m in
                   (_pl.__name__ + ".utilities.rank_zero", _fabric.__name__ + ".utilities.rank_zero",
                    "lightning_utilities.core.rank_zero")]


class _LiveView(_ClusterEnvironment):
    """Lightning's ranks, read from ftl's group at each ask: the view changes under a running fit. The
    processes are started by ftlrun or Kubernetes, never by Lightning."""

    @property
    def creates_processes_externally(self) -> bool:
        return True

    @property
    def main_address(self) -> str:
        return "127.0.0.1"  # unused: ftl's membership finds the peers (FTL_SEEDS)

    @property
    def main_port(self) -> int:
        return 0

    @staticmethod
    def detect() -> bool:
        return False

    def world_size(self) -> int:
        return dist.get_world_size() if dist.is_initialized() else 1

    def set_world_size(self, size: int) -> None:
        pass  # the live view's

    def global_rank(self) -> int:
        return dist.get_rank() if dist.is_initialized() else 0

    def set_global_rank(self, rank: int) -> None:
        pass  # the live view's

    def local_rank(self) -> int:
        # The launcher's variable, not an ftl setting: ftlrun sets it for each worker as torchrun does, and
        # Lightning's own environments read it the same way.
        return int(os.environ.get("LOCAL_RANK", "0"))

    def node_rank(self) -> int:
        return 0


def _cuda_device(agent: Any) -> Optional[int]:
    """The agent's FTL_CUDA_DEVICE (None when unset); before there is an agent (Lightning asks for the device
    before it sets up the process group), the one of the FTL_* environment the agent will be made from."""
    if agent is not None:
        return agent.cuda_device
    value = from_environment(lib(), "cuda_device")
    return int(value) if value else None


class ElasticStrategy(_pl.strategies.DDPStrategy):
    """Lightning's DDPStrategy on ftl's live view (module docstring). agent: the ftl.Agent to train with
    (ftl.Agent() from FTL_* by default, or the one of an ftl.torch.init_process_group made before);
    other keyword arguments are DDPStrategy's (DistributedDataParallel's find_unused_parameters, ...)."""

    strategy_name = "ftl"

    def __init__(self, agent: Any = None, **kwargs: Any):
        for ftls in ("cluster_environment", "process_group_backend", "start_method", "timeout"):
            if ftls in kwargs:
                raise Error(f"ftl: ElasticStrategy: {ftls} is ftl's (the live view, its group, processes "
                            "started by ftlrun, FTL_COLLECTIVE_TIMEOUT_MS): leave it out", INVALID)
        super().__init__(cluster_environment=_LiveView(), **kwargs)
        self._agent = agent
        self.state: Optional[ElasticState] = None  # the model, optimizer and schedulers, once fitting
        self._elastic: Optional[ElasticSampler] = None  # the training DataLoader's
        self._ended_plan: Any = None  # the sampler's iteration of the epoch that ended last

    @property
    def root_device(self) -> torch.device:
        """This worker's device: on GPUs, ftl's (FTL_CUDA_DEVICE, which ftlrun gives each worker), else
        Lightning's device of this local rank (devices=1: the one)."""
        devices = self.parallel_devices or [torch.device("cpu")]
        cuda_device = _cuda_device(self._agent) if devices[0].type == "cuda" else None
        if cuda_device is not None:
            return torch.device("cuda", cuda_device)
        return devices[min(self.local_rank, len(devices) - 1)]

    def setup_distributed(self) -> None:
        if not dist.is_initialized():
            import ftl
            init_process_group(self._agent if self._agent is not None else ftl.Agent())
        self._agent = default_agent()  # refuses a default group that is not ftl's, with a sentence
        self._process_group_backend = "ftl"
        self._follow_rank()

    def _follow_rank(self) -> None:
        for rank_zero_only in _RANK_ZERO_ONLY:  # Lightning's rank_zero_* printing and logging
            rank_zero_only.rank = self.global_rank

    def setup(self, trainer: Any) -> None:
        fitting = trainer.state.fn == _TrainerFn.FITTING
        if fitting and trainer.limit_train_batches != 1.0:
            raise Error(f"ftl: ElasticStrategy trains every batch of a data epoch (the view decides how many a rank "
                        f"gets): leave limit_train_batches out (it is {trainer.limit_train_batches})", INVALID)
        super().setup(trainer)
        if not fitting:
            return
        if len(self.optimizers) != 1:
            raise Error(f"ftl: ElasticStrategy commits the step of one optimizer (loop mode); configure_optimizers "
                        f"gave {len(self.optimizers)}: use one with a param_group per model", INVALID)
        schedulers = {f"lr_scheduler_{i}": config.scheduler for i, config in enumerate(self.lr_scheduler_configs)}
        scaler = getattr(self.precision_plugin, "scaler", None)
        self.state = ElasticState(self._agent, self.model, self.optimizers[0], scaler=scaler, **schedulers)
        loop_of(self._agent).trainer = self
        trainer.callbacks.append(_LiveEpoch(self))
        self._step_boundary_at_advance(trainer.fit_loop.epoch_loop)
        trainer.fit_loop.epoch_loop._broadcast_sigterm_tensor = lambda: self._sigterm_leaves(trainer)

    def _sigterm_leaves(self, trainer: Any) -> None:
        """In Lightning's place at each batch (its rank 0 broadcasts whether it got SIGTERM, and then every rank
        stops): a worker sent SIGTERM (a pod scaled away) leaves the job, and the others train on. Made locally,
        it also keeps a collective out of the gap between two steps, where a survivor whose epoch ended early
        (its prefetched batches stale after a view change) would make one more than a joiner."""
        if getattr(trainer, "received_sigterm", False):
            self._agent.leave()
            raise _SIGTERMException()

    def _step_boundary_at_advance(self, epoch_loop: Any) -> None:
        """The step boundary (loop mode's settle: the verdict to ftl, the next step's view, a joiner let in) is
        where Lightning's loop starts a batch, before anything of it: the collectives Lightning makes there
        (a SIGTERM flag broadcast from rank 0 at each batch) belong to the step they begin, on every rank,
        the joiner included. Mid-epoch the sampler settles when the batch is fetched, later; at an epoch's
        start, when its iteration begins, earlier: both are moved here."""
        advance = epoch_loop.advance
        strategy = self

        def settled_advance(data_fetcher: Any) -> Any:
            loop = loop_of(strategy._agent)
            loop.looping = True  # the trainer's own collectives before this were its setup's
            if loop.running:
                loop.settle()
                if strategy._elastic is not None and loop.plan is strategy._ended_plan:
                    loop.catching_up = strategy._elastic.passes_epoch()  # the epoch's iteration has not begun
            return advance(data_fetcher)
        epoch_loop.advance = settled_advance

    def process_dataloader(self, dataloader: Any) -> Any:
        """The training DataLoader's sampler becomes an ElasticSampler (with the DistributedSampler's shuffle,
        seed and drop_last, which Lightning made from the DataLoader's shuffle)."""
        dataloader = super().process_dataloader(dataloader)
        trainer = self.lightning_module.trainer
        if not trainer.training or not isinstance(dataloader, DataLoader):
            return dataloader
        sampler = dataloader.sampler
        wrapped = getattr(getattr(sampler, "dataset", None), "_sampler", None)  # DistributedSamplerWrapper's
        if isinstance(sampler, ElasticSampler):
            self._elastic = sampler
            return dataloader
        if isinstance(wrapped, ElasticSampler):
            self._elastic = wrapped
            return _update_dataloader(dataloader, wrapped, mode=_RunningStage.TRAINING)
        if type(sampler) is DistributedSampler:
            self._elastic = ElasticSampler(dataloader.dataset, shuffle=sampler.shuffle, seed=sampler.seed,
                                           drop_last=sampler.drop_last, agent=self._agent)
            return _update_dataloader(dataloader, self._elastic, mode=_RunningStage.TRAINING)
        raise Error(f"ftl: ElasticStrategy trains the training DataLoader through ftl.torch.ElasticSampler, "
                    f"which orders the dataset itself; this DataLoader's sampler is a {type(sampler).__name__}: "
                    "give DataLoader(dataset, shuffle=True or False) (with use_distributed_sampler left on), "
                    "or DataLoader(dataset, sampler=ftl.torch.ElasticSampler(dataset))", INVALID)

    def batches_left(self, left: int) -> None:
        """The sampler handed a batch out (after the view of its step was settled), with left more to come in
        this epoch: Lightning's epoch ends after exactly those."""
        fit = self.lightning_module.trainer.fit_loop
        ready = fit.epoch_loop.batch_progress.current.ready  # the batches before this one
        fetcher = fit._data_fetcher
        if fetcher is not None:
            fetcher.length = fetcher.fetched + 1 + left
        fit.max_batches = ready + 1 + left
        self._follow_rank()

    def optimizer_step(self, optimizer: Any, closure: Any, model: Any = None, **kwargs: Any) -> Any:
        output = super().optimizer_step(optimizer, closure, model, **kwargs)
        if loop_of(self._agent).dropped:  # its samples come again: the epoch has a batch more than Lightning counted
            fit = self.lightning_module.trainer.fit_loop
            progress = fit.epoch_loop.batch_progress
            progress.is_last_batch = False
            fetcher = fit._data_fetcher
            if fetcher is not None:
                fetcher.done = False
                fetcher.length = max(fetcher.length or 0, fetcher.fetched + 1)
            fit.max_batches = max(fit.max_batches, progress.current.ready + 1)
        return output


class _LiveEpoch(_pl.Callback):
    """At an epoch's start, Lightning's count of its batches is len() of the view then (it counted once, at
    fit's start, and capped the loader at that count)."""

    def __init__(self, strategy: ElasticStrategy):
        self.strategy = strategy

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        fit = trainer.fit_loop
        loaders = fit._combined_loader
        if loaders is not None:
            loaders.limits = None
            fit.max_batches = max(1, len(loaders))
        self.strategy._follow_rank()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.strategy._ended_plan = loop_of(self.strategy._agent).plan
