"""torch_loop: the torchrun tutorial's kind of program (examples/torch_loop_ddp.py is its plain DDP twin),
elastic in loop mode: the training loop stays as it is written, and the job survives kill -9, joins and
leaves. `diff -u examples/torch_loop_ddp.py examples/torch_loop.py` is the whole port:
  - ftl.torch.init_process_group(ftl.Agent()) in place of dist.init_process_group: DDP, dist.get_rank() and
    dist.destroy_process_group() are the twin's lines, on the live view;
  - ftl.torch.ElasticSampler in place of DistributedSampler: each rank takes its share of the job's position
    in the data epoch in the live view, and a failed step's samples come again in the next one;
  - ftl.torch.ElasticState(ftl.torch.agent(), model, optimizer): a joiner gets rank 0's model and optimizer,
    and optimizer.step() is the commit point: a step that lost a peer is dropped, not applied.
    ftlrun --standalone --nproc_per_node 3 examples/torch_loop.py 10 2 --batch_size 32
The snapshot is the program's own (rank 0 of the live view saves it); a job started again with it there
resumes at the epoch after it. A worker that joins a running job passes the epochs the job has finished
(their loops are empty) and trains from the job's position. FTL_STEP_LINES=1: a JSON line per committed step
(examples/models/step_lines.py)."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

import ftl.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models.random_pairs import RandomPairs  # noqa: E402
from models.step_lines import StepLines  # noqa: E402


class Trainer:
    def __init__(self, model, data, optimizer, save_every, snapshot_path):
        self.model, self.data, self.optimizer = model, data, optimizer
        self.save_every, self.snapshot_path = save_every, snapshot_path
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self.load_snapshot()
        self.model = DDP(self.model)
        ftl.torch.ElasticState(ftl.torch.agent(), self.model, self.optimizer)
        self.lines = StepLines(self.model, self.optimizer)

    def load_snapshot(self):
        snapshot = torch.load(self.snapshot_path)
        self.model.load_state_dict(snapshot["model"])
        self.epochs_run = snapshot["epochs_run"]
        print(f"resuming from the snapshot at epoch {self.epochs_run}", flush=True)

    def train_batch(self, x, y):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.lines.after_step(loss, len(x))

    def train_epoch(self, epoch):
        self.data.sampler.set_epoch(epoch)
        steps = len(self.data)
        print(f"[rank {dist.get_rank()}] epoch {epoch} | batch size {self.data.batch_size} | steps {steps}", flush=True)
        for x, y in self.data:
            self.train_batch(x, y)

    def save_snapshot(self, epoch):
        torch.save({"model": self.model.module.state_dict(), "epochs_run": epoch + 1}, self.snapshot_path)
        print(f"epoch {epoch} | snapshot saved at {self.snapshot_path}", flush=True)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self.train_epoch(epoch)
            if dist.get_rank() == 0 and epoch % self.save_every == 0:
                self.save_snapshot(epoch)


def main():
    p = argparse.ArgumentParser(description="a data-parallel training job with snapshots")
    p.add_argument("total_epochs", type=int, help="epochs to train")
    p.add_argument("save_every", type=int, help="save a snapshot every this many epochs")
    p.add_argument("--batch_size", type=int, default=32, help="samples per rank per step (32)")
    p.add_argument("--samples", type=int, default=2048, help="size of the dataset (2048)")
    p.add_argument("--snapshot", default="snapshot.pt", help="the snapshot's path (snapshot.pt)")
    args = p.parse_args()
    ftl.torch.init_process_group(ftl.Agent())
    data = RandomPairs(args.samples)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=ftl.torch.ElasticSampler(data))
    model = torch.nn.Linear(20, 1)
    trainer = Trainer(model, loader, torch.optim.SGD(model.parameters(), lr=1e-3), args.save_every, args.snapshot)
    trainer.train(args.total_epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
