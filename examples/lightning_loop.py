"""lightning_loop: a PyTorch Lightning program (examples/lightning_loop_ddp.py is its plain DDP twin), elastic
through ftl.lightning.ElasticStrategy, Lightning's own extension point: the LightningModule, the DataLoader
and trainer.fit() are the twin's, and the job survives kill -9, joins and leaves.
`diff -u examples/lightning_loop_ddp.py examples/lightning_loop.py` is the whole port: the import, and the
Trainer's strategy.
    ftlrun --standalone --nproc_per_node 3 examples/lightning_loop.py --epochs 10
    ftlrun --join                                  # from another shell: one more worker
Each worker is one process (--devices 1; ftlrun or Kubernetes starts them, not Lightning). The strategy makes
the training DataLoader's sampler an ftl.torch.ElasticSampler (each sample of an epoch trained once across
view changes), optimizer.step() its commit point, and the model, optimizer and scheduler what a joiner
receives. FTL_STEP_LINES=1: a JSON line per committed step (examples/models/step_lines.py)."""
import argparse
import os
import sys

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

import ftl.lightning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models.random_pairs import RandomPairs  # noqa: E402
from models.step_lines import StepLines  # noqa: E402


class Regression(pl.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr
        self.layer = torch.nn.Linear(20, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 5, gamma=0.9)}


class PrintSteps(pl.Callback):
    """examples/models/step_lines.py's line per step, for the tests and benchmarks (FTL_STEP_LINES=1)."""

    def on_train_start(self, trainer, module):
        self.lines = StepLines(trainer.model, trainer.optimizers[0])

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.lines.after_step(outputs["loss"], len(batch[0]))


def main():
    p = argparse.ArgumentParser(description="a data-parallel PyTorch Lightning job")
    p.add_argument("--epochs", type=int, default=10, help="epochs to train (10)")
    p.add_argument("--batch_size", type=int, default=32, help="samples per rank per step (32)")
    p.add_argument("--samples", type=int, default=2048, help="size of the dataset (2048)")
    p.add_argument("--root", default="lightning_runs", help="Lightning's default_root_dir (lightning_runs)")
    p.add_argument("--devices", type=int, default=1, help="Lightning's devices: the processes a node runs (1)")
    args = p.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(RandomPairs(args.samples), batch_size=args.batch_size, shuffle=True)
    trainer = pl.Trainer(strategy=ftl.lightning.ElasticStrategy(), accelerator="cpu", devices=args.devices,
                         max_epochs=args.epochs, default_root_dir=args.root, callbacks=[PrintSteps()],
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regression(lr=1e-3), loader)


if __name__ == "__main__":
    main()
