"""torch_resnet_digits: a small ResNet (GroupNorm, no BatchNorm) learns scikit-learn's handwritten digits,
trained data-parallel with ftl through torch's own DistributedDataParallel on ftl's process group;
elastic: it survives kill -9, joins and leaves.

examples/torch_resnet_digits_ddp.py is the same program on plain torch.distributed: `diff -u
examples/torch_resnet_digits_ddp.py examples/torch_resnet_digits.py` shows what ftl changes
(examples/README.md). What examples/torch_char_gpt.py says of the process group, the sampler and the step
holds here too; in addition the learning-rate schedule is job state: ElasticState carries the scheduler
as an extra (its state_dict), so a joiner continues the cosine curve where the job is, and the schedule
steps inside the step, after the optimizer, only once the step's collectives succeeded.
The model and the data (1797 8x8 images shipped in scikit-learn): examples/models/resnet_digits.py.
    ftlrun --nproc-per-node 2 examples/torch_resnet_digits.py
Settings: the agent's and the job's FTL_* variables, and FTL_STEPS (300, also the cosine schedule's
length), FTL_BATCH images per rank per step (32), FTL_WIDTH channels of the first stage (16), FTL_DEPTH
residual blocks per stage (2), FTL_LR (0.05, SGD with momentum 0.9), FTL_TRAIN_SEED (0: initialisation and
sample order), FTL_STEP_SLEEP_MS extra time per step (0).
Output: examples/torch_char_gpt.py's lines (accuracy: of the digit classes; the final line on the
validation split). SIGTERM or SIGINT: finish the step, leave the job, exit 0. Exit 1 when training cannot
go on, 2 for a bad setting."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import ftl.torch
from models import ftl_main, resnet_digits, run


def main(agent):
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), resnet_digits.settings()
    train, val = resnet_digits.datasets()
    ftl.torch.init_process_group(agent)
    torch.manual_seed(s["seed"])
    model = DistributedDataParallel(resnet_digits.ResNet(s["width"], s["depth"]))
    optimizer = torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=0.9, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, s["steps"])
    ftl.torch.ElasticState(agent, model, optimizer, schedule=schedule)  # the agent keeps it
    agent.set_sampler(len(train), s["batch"], s["seed"])

    def train_step(info):
        x, y = ftl.torch.batch(train, info) or train[0:0]
        optimizer.zero_grad(set_to_none=True)
        loss, stats = run.loss_and_stats(model(x), y)
        loss.backward()  # DDP averages the gradients over the ranks meanwhile
        run.pause()
        dist.all_reduce(stats)  # the step's loss over every rank, for the output
        optimizer.step()
        schedule.step()
        return (info.step, info.rank, info.world_size, info.view_epoch), stats

    while (step := agent.job_status()["step"]) < s["steps"]:
        if stop.requested():
            print(f"torch_resnet_digits: {name}: stopping after step {step}", file=sys.stderr)
            dist.destroy_process_group()
            return 0
        where, stats = agent.execute(train_step)
        run.print_step(name, *where, stats, run.digest(model.module, optimizer))
    agent.execute(lambda info: agent.barrier())  # every rank has finished training
    run.print_final(name, s["steps"], model.module, val, run.digest(model.module, optimizer))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(ftl_main.run(main))
