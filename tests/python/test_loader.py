"""ftl.torch.ElasticLoader: a DataLoader with worker processes and prefetch that hands a step exactly
info.indices, drops its stale prefetches after a rescale or a retried step, and keeps each sample once
per data epoch; the contiguous and custom orders; data_epoch in job_status and on_data_epoch_end.
    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python -m pytest tests/python/test_loader.py"""
import collections
import time

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset

import ftl
import ftl.torch
from conftest import free_port, on_threads, two_agents

torch.set_num_threads(1)


class Indexed(Dataset):
    """Sample i is the tensor i: a batch says which samples the DataLoader fetched."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(i)


def solo(run_dir, name="solo", **settings):
    return ftl.Agent(name=name, bind=f"127.0.0.1:{free_port()}", run_dir=run_dir, insecure=True,
                     log_level="warn", **settings)


def fetched(batch):
    return [] if batch is None else batch.tolist()


def test_workers_hand_each_step_its_indices_and_epochs_end_once(run_dir):
    """100 samples, 8 a step, one worker: every batch the two DataLoader workers fetched ahead is the
    step's own; the prediction never restarts after the first step; data epochs 0 and 1 end at steps 12
    and 25, each calling the callback once (outside the step), and job_status follows."""
    agent = solo(run_dir)
    agent.set_sampler(100, 8, seed=3)
    loader = ftl.torch.ElasticLoader(agent, Indexed(100), num_workers=2)
    restarts, ended, seen = [], [], collections.Counter()
    restart = loader.sampler.restart
    loader.sampler.restart = lambda info: (restarts.append(info.step), restart(info))

    def epoch_end(epoch):
        ended.append((epoch, agent.job_status()["step"]))
        with pytest.raises(ftl.Error, match="outside a step"):  # it runs after the step, not inside it
            agent.barrier()
    agent.on_data_epoch_end(epoch_end)

    def step(info):
        got = fetched(loader.batch(info))
        assert got == info.indices.tolist(), f"step {info.step}: fetched {got}, the step's are {info.indices}"
        seen.update((info.data_epoch, i) for i in got)
    with agent:
        epochs = []
        for _ in range(30):
            agent.execute(step)
            epochs.append(agent.job_status()["data_epoch"])
    assert restarts == [0], f"the prefetched batches were dropped at steps {restarts[1:]}"
    assert ended == [(0, 13), (1, 26)]
    assert epochs == [0] * 12 + [1] * 13 + [2] * 5
    assert all(seen[(e, i)] == 1 for e in (0, 1) for i in range(100))


def test_a_custom_order_is_visited_in_its_order(run_dir):
    """order="sequential" and epoch_order: each data epoch reads the program's own order, batch by batch."""
    agent = solo(run_dir)
    agent.set_sampler(40, 6, order="sequential")
    order = {e: np.random.default_rng(e).permutation(40) for e in range(3)}
    loader = ftl.torch.ElasticLoader(agent, Indexed(40), epoch_order=lambda e: order[e], num_workers=2)
    read = collections.defaultdict(list)

    def step(info):
        got = fetched(loader.batch(info))
        assert got == loader.indices(info)
        read[info.data_epoch] += got
    with agent:
        for _ in range(14):  # 7 steps an epoch
            agent.execute(step)
    assert read[0] == order[0].tolist() and read[1] == order[1].tolist()


def elastic_pair(run_dir, order):
    """Two agents of one job that may go on alone (min_workers 1), each with a DataLoader over 60 samples;
    the contiguous order in 4 streams of chunks of 2."""
    agents = two_agents(run_dir, "e", min_workers=1, expected_workers=2)
    loaders = []
    for a, workers in zip(agents, (2, 0)):
        a.set_sampler(60, 4, seed=5, order=order)
        if order == "contiguous":
            a.set_batch(8, 2)
        loaders.append(ftl.torch.ElasticLoader(a, Indexed(60), num_workers=workers, timeout=60 * workers))
    # e0's worker processes are forked here, while this process runs one Python thread: forked inside a
    # step, with e1's thread running torch code beside (both agents live in this process), a worker can
    # inherit a lock that thread held and hang (once in CI). A worker of a real job forks from a process
    # with one Python thread; the persistent workers started here serve every later iter(). The timeout
    # makes a hung worker an error rather than a silent wait.
    iter(loaders[0].loader)
    return agents, loaders


@pytest.mark.parametrize("order", ["shuffle", "contiguous"])
def test_a_rescale_drops_stale_prefetches_and_keeps_each_sample_once(run_dir, order):
    """e0 and e1 train three steps together, then e1 leaves: e0's batches prefetched for rank 0 of 2 are
    stale (its step in flight fails and runs again alone): they are dropped, and data epoch 0 still uses
    each of its 60 samples once over both workers. Each step records its samples only once its allreduce
    succeeded (the step contract), as a real step changes its state."""
    agents, loaders = elastic_pair(run_dir, order)
    used = [[], []]
    ended = []
    agents[0].on_data_epoch_end(ended.append)

    def worker(r):
        a, loader = agents[r], loaders[r]

        def step(info):
            got = fetched(loader.batch(info))
            assert got == info.indices.tolist()
            if order == "contiguous":  # whole chunks of 2 consecutive samples, one per stream
                assert all(got[k + 1] == got[k] + 1 for k in range(0, len(got) - 1, 2))
                assert len(ftl.torch.streams(info)) == -(-len(got) // 2)
            a.allreduce(np.zeros(1))
            used[r].append((info.data_epoch, info.world_size, got))
        a.start()
        if r == 1:
            for _ in range(3):
                a.execute(step)
            a.leave()
            return
        while a.job_status()["data_epoch"] == 0:
            a.execute(step)
    try:
        on_threads(lambda: worker(0), lambda: worker(1), timeout=120)
    finally:
        for a in agents:
            a.close()
    assert {w for _, w, _ in used[0]} == {1, 2}, f"e0 did not train both with 2 and alone: {used[0]}"
    assert loaders[0].dropped > 0, "no prefetched batch was dropped after the rescale"
    counts = collections.Counter(i for rows in used for e, _, got in rows if e == 0 for i in got)
    assert sorted(counts) == list(range(60)) and set(counts.values()) == {1}, f"data epoch 0 used {counts}"
    assert ended == [0]


def test_a_retried_step_gets_its_own_batch_again(run_dir):
    """The same step twice (a retry in the same view): the second call drops the next step's prefetched
    batch and fetches the step's own again."""
    agent = solo(run_dir)
    agent.set_sampler(50, 5, seed=1)
    loader = ftl.torch.ElasticLoader(agent, Indexed(50), num_workers=2)
    infos = []
    with agent:
        for _ in range(2):
            agent.execute(infos.append)
        first, again = (fetched(loader.batch(infos[0])) for _ in range(2))
        assert first == again == infos[0].indices.tolist()
        assert loader.dropped >= 1
        assert fetched(loader.batch(infos[1])) == infos[1].indices.tolist()


def test_rebalanced_shares_reach_the_loader_and_the_average(run_dir):
    """FTL_SLOW_POLICY=rebalance in step mode, as a PyTorch program writes it: two workers, a fixed global batch
    of 32, e1 four times as slow per sample. The shares move (the status says e1 takes the least); every step's
    batch is its own indices (ElasticLoader refetches when the shares move); each sample is trained once per
    data epoch; GradientAverager weighs by sample count, so both workers hold the same parameters."""
    agents = two_agents(run_dir, "r", slow_policy="rebalance", global_batch=32, expected_workers=2)
    models, seen, counts = [], collections.Counter(), collections.defaultdict(list)
    for a in agents:
        a.set_sampler(320, 16, seed=2)
        torch.manual_seed(0)
        models.append(torch.nn.Linear(1, 1))
        a.register("model", models[-1].weight.data)
    loaders = [ftl.torch.ElasticLoader(a, Indexed(320)) for a in agents]

    def train(i):
        agent, model, loader = agents[i], models[i], loaders[i]
        grads = ftl.torch.GradientAverager(agent, model)
        cost = 0.0002 if i == 0 else 0.0008

        def step(info):
            x = loader.batch(info)
            got = fetched(x)
            assert got == info.indices.tolist()
            time.sleep(cost * len(got))  # the work per sample
            model.zero_grad()
            if x is not None:
                model(x.float().unsqueeze(1) / 320).pow(2).mean().backward()
            grads.average(samples=len(got))
            with torch.no_grad():
                model.weight -= 0.1 * model.weight.grad
            seen.update((info.data_epoch, j) for j in got)
            counts[f"r{i}"].append(len(got))
        for _ in range(80):
            agent.execute(step)
        return agent.status()["view"]["pace"]["ranks"]
    for a in agents:
        a.start()
    try:
        ranks = on_threads(lambda: train(0), lambda: train(1), timeout=120)[0]
    finally:
        for a in agents:
            a.close()
    shares = {r["name"]: r["share"] for r in ranks}
    assert shares["r1"] < shares["r0"], f"the slow worker's share did not shrink: {shares}"
    assert sum(counts["r1"][-10:]) < sum(counts["r0"][-10:]), dict(counts)
    assert all(seen[(e, j)] == 1 for e in range(7) for j in range(320)), "a sample trained twice or never"
    assert torch.equal(models[0].weight, models[1].weight)
