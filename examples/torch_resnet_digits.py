"""torch_resnet_digits: a small ResNet (GroupNorm, no BatchNorm) learns scikit-learn's handwritten digits,
trained data-parallel with ftl through torch's own DistributedDataParallel on ftl's process group;
elastic in loop mode: the training loop stays as it is written, and the job survives kill -9, joins and
leaves.

examples/torch_resnet_digits_ddp.py is the same program on plain torch.distributed: `diff -u
examples/torch_resnet_digits_ddp.py examples/torch_resnet_digits.py` is the whole port (examples/README.md).
What examples/torch_char_gpt.py says of the process group, the commit point, the sampler and steps()
holds here too; in addition the learning-rate schedule is job state: ElasticState carries the scheduler
as an extra (its state_dict), so a joiner continues the cosine curve where the job is, and its step() does
nothing after a step that loop mode dropped (the schedule counts committed steps).
The model and the data (1797 8x8 images shipped in scikit-learn): examples/models/resnet_digits.py.
    ftlrun --nproc-per-node 2 examples/torch_resnet_digits.py
Settings: the agent's and the job's FTL_* variables, and FTL_STEPS (300, also the cosine schedule's
length), FTL_BATCH images per rank per step (32), FTL_WIDTH channels of the first stage (16), FTL_DEPTH
residual blocks per stage (2), FTL_LR (0.05, SGD with momentum 0.9), FTL_TRAIN_SEED (0: initialisation and
sample order), FTL_STEP_SLEEP_MS extra time per step (0).
Output: examples/torch_char_gpt.py's lines (accuracy: of the digit classes; the final line on the
validation split). SIGTERM or SIGINT: stop between steps, leave the job, exit 0. Exit 1 when training
cannot go on, 2 for a bad setting."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

import ftl.torch

from models import resnet_digits, run


def main():
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), resnet_digits.settings()
    train, val = resnet_digits.datasets()
    ftl.torch.init_process_group(ftl.Agent())
    torch.manual_seed(s["seed"])
    model = DistributedDataParallel(resnet_digits.ResNet(s["width"], s["depth"]))
    optimizer = torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=0.9, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, s["steps"])
    ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer, schedule=schedule)  # job state; the commit point
    sampler = ftl.torch.ElasticSampler(train, seed=s["seed"])
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

    for step in ftl.torch.steps(s["steps"]):
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
