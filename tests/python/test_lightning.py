"""ftl.lightning.ElasticStrategy in one process (a worker alone: every step commits): Lightning's own loop
trains each sample once an epoch through the ElasticSampler the strategy puts in its DataLoader, and the
strategy refuses, with a sentence, what it cannot make elastic. The kill, join and leave: loop_mode.py
lightning (ctest torch_lightning).
    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python -m pytest tests/python/test_lightning.py"""
import collections

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, SequentialSampler

pl = pytest.importorskip("pytorch_lightning")

import ftl  # noqa: E402
import ftl.lightning  # noqa: E402
import ftl.torch  # noqa: E402
from conftest import free_port  # noqa: E402

torch.set_num_threads(1)


class Numbered(Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        return torch.full((3,), float(i)), i


class Regression(pl.LightningModule):
    def __init__(self, optimizers=1):
        super().__init__()
        self.layer, self.optimizers_made = torch.nn.Linear(3, 1), optimizers
        self.automatic_optimization = optimizers == 1  # Lightning takes several in manual optimization only

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).square().mean()

    def configure_optimizers(self):
        made = [torch.optim.SGD(self.parameters(), lr=0.01) for _ in range(self.optimizers_made)]
        return made[0] if len(made) == 1 else made


class Indices(pl.Callback):
    def __init__(self):
        self.used = collections.defaultdict(list)

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.used[trainer.current_epoch] += batch[1].tolist()


@pytest.fixture
def agent(run_dir):
    a = ftl.Agent(name="solo", bind=f"127.0.0.1:{free_port()}", run_dir=run_dir, insecure=True, log_level="warn")
    yield a
    if dist.is_initialized():
        dist.destroy_process_group()
    if not a.has_left:
        a.leave()


def fit(agent, module, loader, **trainer_args):
    callback = Indices()
    trainer = pl.Trainer(strategy=ftl.lightning.ElasticStrategy(agent), accelerator="cpu", devices=1,
                         callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, **trainer_args)
    trainer.fit(module, loader)
    return trainer, callback.used


def test_lightnings_loop_trains_each_sample_once_an_epoch(agent):
    """24 samples, batches of 5 (the last of each epoch 4), 3 epochs, shuffled: each epoch uses every sample
    once; ftl committed one step per batch, and Lightning counted 5 batches an epoch."""
    trainer, used = fit(agent, Regression(), DataLoader(Numbered(), batch_size=5, shuffle=True), max_epochs=3)
    assert sorted(used) == [0, 1, 2]
    for epoch, indices in used.items():
        assert sorted(indices) == list(range(24)), f"epoch {epoch}: {indices}"
    assert used[0] != used[1], "the same order in two epochs: shuffle is lost"
    assert ftl.torch.last_commit(agent).step == 14
    assert trainer.num_training_batches == 5
    assert isinstance(trainer.train_dataloader.sampler, ftl.torch.ElasticSampler)


def test_two_optimizers_are_refused_with_a_sentence(agent):
    """Manual optimization with two: refused at setup, before a step."""
    with pytest.raises(ftl.Error, match="one optimizer"):
        fit(agent, Regression(optimizers=2), DataLoader(Numbered(), batch_size=4), max_epochs=1)


def test_a_sampler_of_the_programs_own_is_refused(agent):
    loader = DataLoader(Numbered(), batch_size=4, sampler=SequentialSampler(range(24)))
    with pytest.raises(ftl.Error, match="ElasticSampler"):
        fit(agent, Regression(), loader, max_epochs=1, use_distributed_sampler=False)


def test_limit_train_batches_is_refused(agent):
    with pytest.raises(ftl.Error, match="limit_train_batches"):
        fit(agent, Regression(), DataLoader(Numbered(), batch_size=4), max_epochs=1, limit_train_batches=0.5)


def test_ftls_own_settings_are_refused_as_arguments():
    with pytest.raises(ftl.Error, match="cluster_environment"):
        ftl.lightning.ElasticStrategy(cluster_environment=None)


def test_the_gpu_is_the_agents_cuda_device_not_a_variable_read_behind_its_back(run_dir, monkeypatch):
    """FTL_CUDA_DEVICE as the agent took it (a keyword too); before there is an agent, as the FTL_* environment
    it will be made from gives it, read by libftl's settings object."""
    from ftl.lightning import _cuda_device
    monkeypatch.setenv("FTL_CUDA_DEVICE", "2")
    assert _cuda_device(None) == 2
    a = ftl.Agent(name="gpu", bind=f"127.0.0.1:{free_port()}", run_dir=run_dir, insecure=True, log_level="warn",
                  cuda_device=3)
    assert _cuda_device(a) == 3
    a.close()
    monkeypatch.delenv("FTL_CUDA_DEVICE")
    assert _cuda_device(None) is None
