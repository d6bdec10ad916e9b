"""torch_char_gpt_hsdp_torchrun: examples/torch_char_gpt_hsdp.py on plain torch.distributed, as torchrun
starts it: the char GPT sharded with FSDP2's fully_shard over a 2-D DeviceMesh (replicate x shard), HSDP.

The same model, data, optimizer, settings and output as the ftl program: `diff -u
examples/torch_char_gpt_hsdp_torchrun.py examples/torch_char_gpt_hsdp.py` shows what ftl changes
(examples/README.md counts it). Here the world is fixed when the job starts: a worker that dies stops the
job, and a replica cannot rejoin it.
    FTL_REPLICA_SIZE=2 torchrun --standalone --nproc-per-node 4 examples/torch_char_gpt_hsdp_torchrun.py
FTL_REPLICA_SIZE: shards per replica (2); the world is replicas x shards. Output: the ftl program's lines;
"epoch" is always 1 (one process group for the whole run)."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from models import char_gpt, run


def main():
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), char_gpt.settings()
    train, val, vocab = char_gpt.datasets(s["context"])
    dist.init_process_group("gloo")
    shards = run.setting("FTL_REPLICA_SIZE", 2)
    mesh = init_device_mesh("cpu", (dist.get_world_size() // shards, shards), mesh_dim_names=("replicate", "shard"))
    torch.manual_seed(s["seed"])
    model = char_gpt.CharGPT(vocab, s["width"], s["depth"], s["heads"], s["context"])
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.01)  # on the shards
    sampler = DistributedSampler(train, seed=s["seed"])
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

    for step in range(s["steps"]):
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
