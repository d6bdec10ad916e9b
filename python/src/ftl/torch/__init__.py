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
world size changes (for a global batch that grows with it). load_checkpoint() makes a PyTorch state dict of
an ftl checkpoint; ElasticState saves and loads torch.save files and DCP directories. python/README.md shows
the diff.
"""
from ._buckets import GradientAverager
from ._checkpoint import load_checkpoint
from ._data import batch, micro_batches
from ._lr import LRScaling, lr_scaling
from ._process_group import ElasticProcessGroup, process_group
from ._state import ElasticState

__all__ = ["ElasticState", "ElasticProcessGroup", "process_group", "GradientAverager", "load_checkpoint", "batch",
           "micro_batches", "lr_scaling", "LRScaling"]
