"""ftl.torch: PyTorch on ftl. A DDP script becomes elastic with its training loop as written (loop mode):

    ftl.torch.init_process_group(ftl.Agent())                            # was: dist.init_process_group
    model = DDP(model)
    sampler = ftl.torch.ElasticSampler(dataset, shuffle=True, seed=0)    # was: DistributedSampler
    ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer)          # a joiner's state; the commit point
    loader = DataLoader(dataset, batch_size=B, sampler=sampler, num_workers=2)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:                     # the live view's share of the job's position
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()     # a lost peer's collectives return; nothing raises
            optimizer.step()                    # commits the step, or drops it: its samples come again

ftl.torch.last_commit() is the StepInfo of the step committed last (docs/concepts/step-contract.md, "Loop
mode", says what is dropped and when); a loop that counts steps, not epochs, counts the job's with
`for step in ftl.torch.steps(n)` (was: range(n)). Or, in about three places, with a step function (step mode):

    agent = ftl.Agent()                                                   # an elastic world (FTL_*)
    ftl.torch.init_process_group(agent)                                   # was: dist.init_process_group
    model = DDP(model)                                                    # DDP on ftl's views
    state = ftl.torch.ElasticState(agent, model, optimizer)              # what a joiner receives
    agent.set_sampler(len(dataset), batch_per_rank, seed=0)              # was: DistributedSampler

    def step(info):
        x, y = ftl.torch.batch(dataset, info)   # this rank's samples of the step
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()         # DDP's bucketed allreduces, on the view's communicator
        optimizer.step()                        # refused if a collective of the step lost a peer
    with agent:
        while agent.job_status()["step"] < steps:
            agent.execute(step)                 # runs the step again on the next view when a peer dies

init_process_group() makes process_group(), a torch.distributed group over the agent's current view, torch's
default group (any dist.* collective on it, inside a step or between steps; rank and size are the live
view's); ElasticState makes the model (a DDP module's), the optimizer and extras
job state (a joiner gets rank 0's) and re-points DDP at each view's group. Without DDP, GradientAverager
averages the gradients in fused buckets (weighted by sample counts; FTL_GLOBAL_BATCH micro-batches,
FTL_COMM_COMPRESS), and lr_scaling() adapts the learning rate when the world size changes. batch() fetches
a step's samples from a Dataset (micro_batches() in chunks). load_checkpoint() makes a PyTorch state dict
of an ftl checkpoint; ElasticState saves and loads torch.save files and DCP directories. The guide
docs/guides/port-ddp.md shows the diff.

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
from ._checkpoint import load_checkpoint
from ._data import batch, micro_batches
from ._elastic_sampler import ElasticSampler
from ._hsdp import hsdp_mesh
from ._loader import ElasticLoader
from ._loop import last_commit, steps
from ._lr import LRScaling, lr_scaling
from ._process_group import ElasticProcessGroup, agent, init_process_group, process_group
from ._sampler import ElasticBatchSampler
from ._state import ElasticState
from ._streams import streams

__all__ = ["ElasticState", "ElasticProcessGroup", "init_process_group", "process_group", "GradientAverager", "load_checkpoint", "batch",
           "micro_batches", "lr_scaling", "LRScaling", "ElasticLoader", "ElasticBatchSampler", "streams", "ElasticSampler", "agent", "last_commit",
           "steps", "hsdp_mesh"]
