"""Loop mode in one process: the program's own epoch and batch loops over a DataLoader on
ftl.torch.ElasticSampler, optimizer.step() of the ElasticState as the commit point (a worker alone: every
step commits); the refusals that name what to change. The kill, join and leave: loop_mode.py (ctest
torch_loop_mode).
    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python -m pytest tests/python/test_loop.py"""
import collections
import os
import subprocess
import sys
import warnings

import numpy as np

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import ftl
import ftl.torch
from conftest import free_port
from ftl._door import door_of

torch.set_num_threads(1)


class Numbered(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((3,), float(i)), i


def solo(run_dir, name="solo"):
    return ftl.Agent(name=name, bind=f"127.0.0.1:{free_port()}", run_dir=run_dir, insecure=True, log_level="warn")


def trained(agent, loader, sampler, epochs, first=0):
    """Runs the program's loop; {epoch: [indices of its committed batches]}, and the batches per epoch."""
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ftl.torch.ElasticState(agent, model, optimizer)
    used, lengths = collections.defaultdict(list), []
    for epoch in range(first, epochs):
        sampler.set_epoch(epoch)
        lengths.append(len(loader))
        for x, i in loader:
            before = ftl.torch.last_commit(agent)
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            after = ftl.torch.last_commit(agent)
            assert after is not before and after.step == (before.step + 1 if before else 0), "no step committed"
            used[epoch] += i.tolist()
    return used, lengths


@pytest.mark.parametrize("workers", [0, 2])
def test_each_sample_once_an_epoch_in_the_programs_own_loop(run_dir, workers):
    """25 samples in batches of 4 (the last one 1), 3 epochs, a DataLoader with 0 or 2 worker processes:
    every epoch uses each sample once, in a new order each epoch; len(loader) is 7."""
    agent = solo(run_dir)
    data = Numbered(25)
    sampler = ftl.torch.ElasticSampler(data, shuffle=True, seed=3, agent=agent)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=workers)
    try:
        used, lengths = trained(agent, loader, sampler, 3)
        assert agent.job_status()["step"] == 21
    finally:
        agent.close()
    assert lengths == [7, 7, 7]
    for epoch in range(3):
        assert sorted(used[epoch]) == list(range(25)), f"epoch {epoch} used {sorted(used[epoch])}"
    assert used[0] != used[1] != used[2]


def test_a_loop_resumed_from_its_own_snapshot_starts_at_its_epoch(run_dir):
    """The tutorial's pattern: range(epochs_run, max_epochs) after loading the program's snapshot. A new job
    whose loop starts at epoch 2 trains epoch 2's order, whole."""
    agent = solo(run_dir)
    data = Numbered(12)
    sampler = ftl.torch.ElasticSampler(data, shuffle=True, seed=5, agent=agent)
    loader = DataLoader(data, batch_size=5, sampler=sampler)
    try:
        used, _ = trained(agent, loader, sampler, 3, first=2)
    finally:
        agent.close()
    expected = torch.randperm(12, generator=torch.Generator().manual_seed(5 + 2)).tolist()
    assert used[2] == expected


def test_drop_last_drops_the_batch_the_dataloader_drops(run_dir):
    """DataLoader(drop_last=True): 10 samples in batches of 4 train 8; the epoch still ends (the next one
    starts at its beginning)."""
    agent = solo(run_dir)
    data = Numbered(10)
    sampler = ftl.torch.ElasticSampler(data, shuffle=False, agent=agent)
    loader = DataLoader(data, batch_size=4, sampler=sampler, drop_last=True)
    try:
        used, _ = trained(agent, loader, sampler, 2)
    finally:
        agent.close()
    assert used[0] == list(range(8)) and used[1] == list(range(8))


def test_refusals_name_what_to_change(run_dir):
    agent = solo(run_dir)
    data = Numbered(8)
    try:
        with pytest.raises(ftl.Error, match="leave num_replicas and rank out"):
            ftl.torch.ElasticSampler(data, num_replicas=2, rank=0, agent=agent)
        sampler = ftl.torch.ElasticSampler(data, agent=agent)
        with pytest.raises(ftl.Error, match="make ftl.torch.ElasticState"):
            next(iter(DataLoader(data, batch_size=2, sampler=sampler)))
        with pytest.raises(ftl.Error, match="a torch DataLoader's sampler, with a batch size"):
            next(iter(sampler))
        with pytest.raises(ftl.Error, match="a torch DataLoader's sampler, with a batch size"):
            next(iter(DataLoader(data, batch_size=None, sampler=sampler)))
    finally:
        agent.close()


def test_a_loop_that_counts_steps_counts_the_jobs_committed_steps(run_dir):
    """for step in ftl.torch.steps(7) over an endless stream of the DataLoader's epochs (10 samples, batches
    of 4: 3 a data epoch): the numbers are 0..6, each one committed before the next, the loop ends when the
    job has committed 7 (no eighth batch taken), and the epochs it passed were each trained whole.
    Without an ElasticState, steps() names it."""
    agent = solo(run_dir)
    data = Numbered(10)
    sampler = ftl.torch.ElasticSampler(data, shuffle=False, agent=agent)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    try:
        with pytest.raises(ftl.Error, match="make ftl.torch.ElasticState"):
            next(iter(ftl.torch.steps(3, agent=agent)))
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        ftl.torch.ElasticState(agent, model, optimizer)

        def stream():
            for epoch in range(100):
                sampler.set_epoch(epoch)
                yield from ((epoch, i) for _, i in loader)
        batches, numbers, used = stream(), [], collections.defaultdict(list)
        for step in ftl.torch.steps(7, agent=agent):
            epoch, i = next(batches)
            optimizer.zero_grad()
            model(torch.zeros(len(i), 3)).sum().backward()
            optimizer.step()
            assert ftl.torch.last_commit(agent).step == step
            numbers.append(step)
            used[epoch] += i.tolist()
        assert numbers == list(range(7))
        assert list(ftl.torch.steps(7, agent=agent)) == [], "a finished loop ran again"
        assert agent.job_status()["step"] == 7
    finally:
        agent.close()
    assert sorted(used[0]) == sorted(used[1]) == list(range(10)) and used[2] == [0, 1, 2, 3], dict(used)


def test_close_ends_the_loop_and_nothing_is_left_untrained(run_dir):
    """close() after the loop stops the driver (its pending step commits nothing) and says nothing: every
    epoch was trained whole."""
    agent = solo(run_dir)
    data = Numbered(6)
    sampler = ftl.torch.ElasticSampler(data, agent=agent)
    loader = DataLoader(data, batch_size=3, sampler=sampler)
    trained(agent, loader, sampler, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.close()
    assert not door_of(agent).loop.running


def test_in_the_loop_agent_collectives_and_other_optimizers_are_refused(run_dir):
    """Loop mode drops a step by dropping torch.distributed's collectives on ftl's group and the ElasticState
    optimizer's update: an agent-level collective, or another optimizer's step, would not be dropped with it."""
    agent = solo(run_dir)
    data = Numbered(8)
    sampler = ftl.torch.ElasticSampler(data, agent=agent)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    model, other = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
    optimizer, stray = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(other.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
    ftl.torch.ElasticState(agent, model, optimizer, scheduler=scheduler)
    try:
        for x, _ in loader:
            with pytest.raises(ftl.Error, match="in loop mode"):
                agent.allreduce(np.zeros(1))
            (model(x).sum() + other(x).sum()).backward()
            with pytest.raises(ftl.Error, match="commits the step of the ElasticState's optimizer only"):
                stray.step()
            optimizer.step()
            scheduler.step()
    finally:
        agent.close()
    assert scheduler.last_epoch == 2  # both steps committed: the schedule moved twice


AFTER_THE_LOOP = r"""
import os, signal, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
import ftl, ftl.torch

index, seed, port, run_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
agent = ftl.Agent(name=f"w{index}", bind=f"127.0.0.1:{port}", seeds=seed, insecure=1, run_dir=run_dir,
                  min_workers=1, expected_workers=2, settle_ms=100, log_level="warn", collective_timeout_ms=20000)
ftl.torch.init_process_group(agent)
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
ftl.torch.ElasticState(agent, model, optimizer)
data = TensorDataset(torch.arange(16.0).reshape(16, 1))
sampler = ftl.torch.ElasticSampler(data, agent=agent)
batches = iter(DataLoader(data, batch_size=2, sampler=sampler))
for step in ftl.torch.steps(3):
    (x,) = next(batches)
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
dist.barrier()  # both have left the loop
if index == 1:
    os.kill(os.getpid(), signal.SIGKILL)  # lost while its peer's evaluation waits for it
total = torch.ones(1)
try:
    dist.all_reduce(total)
    print("returned", total.item(), flush=True)
except ftl.PeerLostError as e:
    print("raised", e, flush=True)
"""


def test_a_peer_lost_after_the_loop_of_steps_raises_rather_than_answers(run_dir):
    """After `for step in ftl.torch.steps(n)` the program's code (a final evaluation) runs in a step that never
    commits: a collective there that loses a peer raises PeerLostError, since no commit point is left to drop
    its result (inside the loop it returns and the step is dropped). Two processes: both train 3 steps and
    meet at a barrier, then w1 is killed and w0's all_reduce must raise, not return its own tensor as the sum."""
    seed_port = free_port()
    procs = [subprocess.Popen([sys.executable, "-c", AFTER_THE_LOOP, str(i), f"127.0.0.1:{seed_port}",
                               str(seed_port if i == 0 else free_port()), os.path.join(run_dir, f"w{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        out, err = procs[0].communicate(timeout=120)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert out.startswith("raised"), f"w0's all_reduce after the loop: {out!r}\n{err[-2000:]}"
    assert "after the training loop" in out, out
