"""loop_mode.py's kill -9, join and leave (lightning), and its join into epochs of two steps (lightning_joins), with PyTorch Lightning's Trainer running the loop
(ftl.lightning.ElasticStrategy): a LightningModule and a DataLoader as Lightning's docs write them
(shuffle=True, two worker processes, a StepLR scheduler stepped by Lightning every step), judged by
loop_mode.py's rules (each sample once per data epoch, one digest per committed step, the joiner in a view
of three). The log lines come from a Callback, as a user's own would.
"""
import json
import os
import sys

from loop_mode import BATCH, EPOCHS, JOINS, SAMPLES, batch_row, numbered, pause, worker_agent


def train_lightning(index, ports, run_dir, log_path, scenario):
    import torch
    from torch.utils.data import DataLoader
    import pytorch_lightning as pl
    import ftl.lightning
    import ftl.torch
    from ftl._door import door_of  # the loop driver's count of stale batches

    name = f"w{index}"
    joins = scenario.startswith("lightning_joins")
    samples, epochs = (JOINS["samples"], JOINS["epochs"]) if joins else (SAMPLES, EPOCHS)

    class Regression(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, _ = batch
            return self.layer(x).square().mean()

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=0.01)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 7, gamma=0.9)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    class LogBatches(pl.Callback):
        """A row per batch the loop got (loop_mode.py's), and w2's leave after 10 steps with w3."""

        def __init__(self):
            self.out = open(log_path, "a", buffering=1)
            self.worlds, self.before = [], None

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            self.before = ftl.torch.last_commit()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            strategy = trainer.strategy
            info = ftl.torch.last_commit()
            scheduler = trainer.lr_scheduler_configs[0].scheduler
            row = batch_row(name, trainer.current_epoch, batch[1].tolist(), self.before, info, strategy.state,
                            scheduler)
            self.out.write(json.dumps(row) + "\n")
            if row["committed"]:
                self.worlds.append(info.world_size)
            if pause(name, self.worlds, joins):
                self.out.write(json.dumps({"worker": name, "left": True}) + "\n")
                ftl.torch.agent().leave()
                os._exit(0)  # a worker scaled away: its Trainer does not finish

        def on_train_epoch_end(self, trainer, module):
            self.out.write(json.dumps({"worker": name, "epoch_end": trainer.current_epoch}) + "\n")

    agent = worker_agent(index, ports, run_dir, joins)
    dataset = numbered(samples)
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=0 if scenario.endswith("0") else 2)
    callback = LogBatches()
    trainer = pl.Trainer(strategy=ftl.lightning.ElasticStrategy(agent), accelerator="cpu", devices=1,
                         max_epochs=epochs, callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regression(), loader)
    callback.out.write(json.dumps({"worker": name, "final": True, "stale": door_of(agent).loop.stale}) + "\n")
    agent.leave()
    return 0


if __name__ == "__main__":
    sys.exit("run through loop_mode.py lightning")
