"""torch_char_gpt: a character-level GPT trained data-parallel with ftl, through torch's own
DistributedDataParallel on ftl's process group; elastic in loop mode: the training loop stays as it is
written, and the job survives kill -9, joins and leaves.

examples/torch_char_gpt_ddp.py is the same program on plain torch.distributed: `diff -u
examples/torch_char_gpt_ddp.py examples/torch_char_gpt.py` is the whole port (examples/README.md counts it):
  - ftl.torch.init_process_group(ftl.Agent()) makes ftl's group torch's default one, so DDP(net),
    dist.all_reduce and dist.destroy_process_group are the twin's lines, on the live view;
  - ElasticState makes the model and AdamW's moments job state (a joiner gets rank 0's), re-points DDP at
    the group of each new view, and makes optimizer.step() the commit point: a step that lost a peer is
    dropped, not applied, and its batch comes again in the next view;
  - ftl.torch.ElasticSampler in place of DistributedSampler: each rank takes its share of the job's
    position in the data epoch in the live view, so every window of a data epoch is trained once;
  - ftl.torch.steps(n) in place of range(n): the loop counts the job's committed steps (a joiner starts at
    the job's, a dropped step comes again with its number).
The model and the text (Debian's licence texts, ~200 kB, no download): examples/models/char_gpt.py.
    ftlrun --nproc-per-node 2 examples/torch_char_gpt.py
Settings: the agent's and the job's FTL_* variables, and FTL_STEPS (1500: about a minute for 2 workers on
2 cores), FTL_BATCH windows per rank per step (16), FTL_CONTEXT characters per window (64), FTL_WIDTH (64),
FTL_DEPTH blocks (2), FTL_LR (0.003), FTL_TRAIN_SEED (0: model initialisation and sample order),
FTL_STEP_SLEEP_MS extra time per step (0).
Output on stdout, one JSON object per line (tests/agent/workers.py reads them): a line per committed step
{"worker","step","rank","world","epoch","samples","loss","accuracy","digest","t"} (loss and next-character
accuracy over the step's targets on every rank; epoch: the view it committed in; digest: run.digest() of
the model and the optimizer, equal on every rank after every step), and at the end
{"worker","final":true,"steps","test_loss","test_accuracy","digest","t"} on the validation split. SIGTERM
or SIGINT: stop between steps, leave the job, exit 0. Exit 1 when training cannot go on, 2 for a bad
setting, 0 after `ftlctl leave` (models/run.py's exit_status)."""
import sys

from models import stop  # first: SIGTERM and SIGINT blocked before torch starts threads

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

import ftl.torch

from models import char_gpt, run


def main():
    torch.set_num_threads(1)  # one core per worker: the workers share the machine
    name, s = run.worker_name(), char_gpt.settings()
    train, val, vocab = char_gpt.datasets(s["context"])
    ftl.torch.init_process_group(ftl.Agent())
    torch.manual_seed(s["seed"])
    net = char_gpt.CharGPT(vocab, s["width"], s["depth"], s["heads"], s["context"])
    model = DistributedDataParallel(net)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.01)
    ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer)  # what a joiner receives; the commit point
    sampler = ftl.torch.ElasticSampler(train, seed=s["seed"])
    batches = run.forever(DataLoader(train, batch_size=s["batch"], sampler=sampler), sampler)

    def train_step():
        x, y = next(batches)
        optimizer.zero_grad(set_to_none=True)
        loss, stats = run.loss_and_stats(model(x), y)
        loss.backward()  # DDP averages the gradients over the ranks meanwhile
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        run.pause()
        dist.all_reduce(stats)  # the step's loss over every rank, for the output
        optimizer.step()
        return stats

    for step in ftl.torch.steps(s["steps"]):
        if stop.requested():
            print(f"torch_char_gpt: {name}: stopping after step {step}", file=sys.stderr)
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
