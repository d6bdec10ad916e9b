"""torch_resnet_digits_ddp: examples/torch_resnet_digits.py on plain torch.distributed, as torchrun
starts it.

The same model, data, optimizer, schedule, settings and output as the ftl program: `diff -u
examples/torch_resnet_digits_ddp.py examples/torch_resnet_digits.py` shows what ftl changes
(examples/README.md counts it). Here the world is fixed when the job starts: a worker that dies stops the
job (the others' gloo collectives fail or hang), and a new one cannot join it.
    torchrun --nproc-per-node 2 examples/torch_resnet_digits_ddp.py
Output: the ftl program's lines; "epoch" is always 1 (one process group for the whole run)."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from models import resnet_digits, run


def main():
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), resnet_digits.settings()
    train, val = resnet_digits.datasets()
    dist.init_process_group("gloo")
    torch.manual_seed(s["seed"])
    model = DistributedDataParallel(resnet_digits.ResNet(s["width"], s["depth"]))
    optimizer = torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=0.9, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, s["steps"])
    sampler = DistributedSampler(train, seed=s["seed"])
    batches = run.forever(DataLoader(train, batch_size=s["batch"], sampler=sampler), sampler)

    def train_step():
        x, y = next(batches)
        optimizer.zero_grad(set_to_none=True)
        loss, stats = run.loss_and_stats(model(x), y)
        loss.backward()  # DDP averages the gradients over the ranks meanwhile
        run.pause()
        dist.all_reduce(stats)  # the step's loss over every rank, for the output
        optimizer.step()
        schedule.step()
        return stats

    for step in range(s["steps"]):
        if stop.requested():
            print(f"torch_resnet_digits: {name}: stopping after step {step}", file=sys.stderr)
            dist.destroy_process_group()
            return 0
        stats = train_step()
        run.print_step(name, step, stats, run.digest(model.module, optimizer))
    dist.barrier()  # every rank has finished training
    run.print_final(name, s["steps"], model.module, val, run.digest(model.module, optimizer))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(run.exit_status(main))
