"""torch_loop_ddp: the torchrun tutorial's kind of program (pytorch/examples, distributed/ddp-tutorial-series,
multigpu_torchrun.py: a Trainer class, a DistributedSampler, a snapshot on rank 0 that a restarted job resumes
from), written here on the CPU from its published behaviour: the plain DDP twin of examples/torch_loop.py.
    torchrun --standalone --nproc_per_node 2 examples/torch_loop_ddp.py 10 2 --batch_size 32
A Linear(20, 1) learns random pairs (2048, the same on every worker) with SGD and a mean squared error. Each
epoch prints a line on every rank; every save_every epochs rank 0 saves {"model", "epochs_run"} to
--snapshot (snapshot.pt), and a job started again with that file there resumes at the epoch after it.
FTL_STEP_LINES=1: a JSON line per step (examples/models/step_lines.py)."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

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
    dist.init_process_group("gloo")
    data = RandomPairs(args.samples)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=DistributedSampler(data))
    model = torch.nn.Linear(20, 1)
    trainer = Trainer(model, loader, torch.optim.SGD(model.parameters(), lr=1e-3), args.save_every, args.snapshot)
    trainer.train(args.total_epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
