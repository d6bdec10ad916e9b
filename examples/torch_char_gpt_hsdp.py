"""torch_char_gpt_hsdp: the char GPT sharded with FSDP2 (fully_shard over a replicate x shard mesh: HSDP) on
ftl, in loop mode: the training loop stays as written, and the job survives kill -9 of any shard (its
replica steps out, the others train on) and the return of a whole replica (it takes every shard's
parameters and AdamW state from the same shard of a replica that holds the job's step).

examples/torch_char_gpt_hsdp_torchrun.py is the same program on plain torch.distributed: `diff -u
examples/torch_char_gpt_hsdp_torchrun.py examples/torch_char_gpt_hsdp.py` is the whole port
(examples/README.md counts it):
  - ftl.torch.init_process_group(ftl.Agent()) makes ftl's group torch's default one;
  - ftl.torch.hsdp_mesh(agent) in place of init_device_mesh: its shard dimension is this worker's replica
    (FTL_REPLICA, FTL_REPLICA_INDEX, FTL_REPLICA_SIZE; ftlrun --replica-per-node sets them), its
    replicate dimension the same index of every replica in the live view;
  - ElasticState makes the shards and AdamW's moments job state, shard by shard, and optimizer.step() the
    commit point (after a vote over the view: a step that lost a peer is dropped and comes again);
  - ftl.torch.ElasticSampler in place of DistributedSampler, ftl.torch.steps(n) in place of range(n), as in
    examples/torch_char_gpt.py.
Two replicas of two shards on one machine (each ftlrun is one replica, "a host"):
    ftlrun --nproc 2 --replica-per-node --name-prefix host0 examples/torch_char_gpt_hsdp.py &
    ftlrun --nproc 2 --replica-per-node --name-prefix host1 --join examples/torch_char_gpt_hsdp.py
Settings and output: examples/torch_char_gpt.py's, and each step's line names the rank's shard ("shard"),
whose digest (run.shard_digest) is equal on that shard of every replica after every step."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader

import ftl.torch

from models import char_gpt, run


def main():
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), char_gpt.settings()
    train, val, vocab = char_gpt.datasets(s["context"])
    ftl.torch.init_process_group(ftl.Agent())
    mesh = ftl.torch.hsdp_mesh(ftl.torch.agent())
    torch.manual_seed(s["seed"])
    model = char_gpt.CharGPT(vocab, s["width"], s["depth"], s["heads"], s["context"])
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.01)  # on the shards
    ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer)  # what a returning replica receives; the commit point
    sampler = ftl.torch.ElasticSampler(train, seed=s["seed"])
    batches = run.forever(DataLoader(train, batch_size=s["batch"], sampler=sampler), sampler)

    def train_step():
        x, y = next(batches)
        optimizer.zero_grad(set_to_none=True)
        loss, stats = run.loss_and_stats(model(x), y)
        loss.backward()  # reduce-scatters in the replica, allreduces across the replicas
        run.pause()
        dist.all_reduce(stats)  # the step's loss over every rank, for the output
        optimizer.step()
        return stats

    for step in ftl.torch.steps(s["steps"]):
        if stop.requested():
            print(f"torch_char_gpt_hsdp: {name}: stopping after step {step}", file=sys.stderr)
            dist.destroy_process_group()
            return 0
        stats = train_step()
        run.print_step(name, step, stats, run.shard_digest(model, optimizer), shard=mesh["shard"].get_local_rank())
    dist.barrier()  # every rank has finished training
    run.print_final(name, s["steps"], model, val, run.shard_digest(model, optimizer),
                    shard=mesh["shard"].get_local_rank())
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(run.exit_status(main))
