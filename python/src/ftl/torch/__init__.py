"""ftl.torch: PyTorch on ftl. A DDP training loop becomes elastic in about three places:

    state = ftl.torch.ElasticState(agent, model, optimizer, scheduler=scheduler)  # was: DDP(model)
    grads = ftl.torch.GradientAverager(agent, model)                              # fused buckets, as DDP
    agent.set_sampler(len(dataset), batch_per_rank, seed=0)                       # was: DistributedSampler

    def step(info):
        x, y = ftl.torch.batch(dataset, info)   # this rank's samples of the step
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        grads.average(samples=len(info.indices))  # the allreduce DDP did inside backward()
        optimizer.step()                          # only after every collective succeeded
    with agent:
        while agent.job_status()["step"] < steps:
            agent.execute(step)

ElasticState makes the model and the optimizer job state (a joiner gets rank 0's), GradientAverager
averages gradients over the current world, batch() fetches a step's samples from a Dataset (micro_batches()
in chunks, with a fixed global batch: FTL_GLOBAL_BATCH), and lr_scaling() adapts the learning rate when the
world size changes (for a global batch that grows with it). python/README.md shows the diff.

A normal DataLoader (worker processes, prefetch, pin_memory) in place of batch(): ElasticLoader builds one
on ElasticBatchSampler, which predicts the coming steps' indices; the step takes only a batch whose
indices are its own, so the exactly-once promise holds across rescales:

    loader = ftl.torch.ElasticLoader(agent, dataset, num_workers=2, pin_memory=True)  # before agent.start()
    agent.on_data_epoch_end(lambda epoch: validate_and_save(epoch))  # once per data epoch, outside the step

    def step(info):
        x, y = loader.batch(info)               # None when this rank has no samples in the step

agent.set_sampler(..., order="contiguous") gives each rank whole contiguous streams (sequence models:
streams(info) says which, to carry their hidden state); ElasticLoader(..., epoch_order=fn) visits a
program's own order of samples, fn(data_epoch) -> dataset indices (with order="sequential").
"""
from ._buckets import GradientAverager
from ._data import batch, micro_batches
from ._loader import ElasticLoader
from ._lr import LRScaling, lr_scaling
from ._sampler import ElasticBatchSampler
from ._state import ElasticState
from ._streams import streams

__all__ = ["ElasticState", "GradientAverager", "batch", "micro_batches", "lr_scaling", "LRScaling", "ElasticLoader",
           "ElasticBatchSampler", "streams"]
