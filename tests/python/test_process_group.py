"""ftl.torch.process_group: torch.distributed collectives and an unchanged DistributedDataParallel on an ftl
agent's views. Two real agents of one job in this process (conftest's pair: loopback sockets, one thread
each); the kill, join and leave of DDP workers are test_torch_training.py's ddp_* scenarios."""
import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import ftl
import ftl.torch
from conftest import free_port, on_threads, two_agents
from ftl._door import door_of


def each(pair, body):
    """body(agent, group, info) inside one step on both agents; returns both results."""
    def run(agent):
        group = ftl.torch.process_group(agent)
        return agent.execute(lambda info: body(agent, group, info))
    return on_threads(*[lambda a=a: run(a) for a in pair])


def test_before_the_first_view_the_group_is_this_worker_alone(run_dir):
    agent = ftl.Agent(name="alone", bind=f"127.0.0.1:{free_port()}", insecure=1, run_dir=run_dir, log_level="warn")
    group = ftl.torch.process_group(agent)
    assert (group.rank(), group.size(), group.getBackendName()) == (0, 1, "ftl")
    x = torch.arange(4.0)
    dist.all_reduce(x, group=group)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    DistributedDataParallel(torch.nn.Linear(2, 2), process_group=group)  # its init collectives are local
    agent.close()


def test_init_process_group_makes_the_agents_group_torchs_default(run_dir):
    """dist.* without a group, DDP without process_group=, on the agent's group; one default at a time, and
    destroy_process_group ends it without ending the agent. (With several ranks: the examples' kill and join,
    torch_char_gpt_join and torch_resnet_digits_kill9, whose programs use the default group.)"""
    agent = ftl.Agent(name="default", bind=f"127.0.0.1:{free_port()}", insecure=1, run_dir=run_dir, log_level="warn")
    group = ftl.torch.init_process_group(agent)
    try:
        assert group is ftl.torch.process_group(agent) and dist.get_backend() == "ftl"
        assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
        with pytest.raises(ftl.Error, match="already has a default group"):
            ftl.torch.init_process_group(agent)
        ddp = DistributedDataParallel(torch.nn.Linear(2, 2))
        assert ddp.process_group is group
        ftl.torch.ElasticState(agent, ddp, None)

        def step(info):
            ddp(torch.ones(1, 2)).sum().backward()
            x = torch.tensor([float(info.rank + 1)])
            dist.all_reduce(x)
            return dist.get_rank(), dist.get_world_size(), x.item(), isinstance(ddp.process_group, type(group))
        with agent:
            assert agent.execute(step) == (0, 1, 1.0, True)
            dist.barrier()  # between steps, on the view in hand
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    other = ftl.Agent(name="again", bind=f"127.0.0.1:{free_port()}", insecure=1, run_dir=run_dir, log_level="warn")
    assert ftl.torch.init_process_group(other) is ftl.torch.process_group(other)  # a new default after destroy
    dist.destroy_process_group()
    other.close()


def test_collectives_inside_a_step_reach_every_rank(pair):
    def body(agent, group, info):
        r = info.rank
        assert (group.rank(), group.size()) == (r, 2)
        total = torch.full((3,), float(r + 1))
        dist.all_reduce(total, group=group)                          # 1 + 2
        biggest = torch.tensor([float(r)])
        dist.all_reduce(biggest, op=dist.ReduceOp.MAX, group=group)
        mean = torch.tensor([float(r) * 4])
        dist.all_reduce(mean, op=dist.ReduceOp.AVG, group=group)
        root = torch.tensor([float(r + 10)])
        dist.broadcast(root, group_src=1, group=group)  # ranks of the view: group_src
        parts = [torch.zeros(2) for _ in range(2)]
        dist.all_gather(parts, torch.full((2,), float(r)), group=group)
        flat = torch.zeros(4, dtype=torch.int64)
        dist.all_gather_into_tensor(flat, torch.full((2,), r, dtype=torch.int64), group=group)
        mine = torch.zeros(2)
        dist.reduce_scatter(mine, [torch.full((2,), float(r + 1)), torch.full((2,), float(10 * (r + 1)))], group=group)
        slab = torch.zeros(1)
        dist.reduce_scatter_tensor(slab, torch.tensor([1.0, 100.0]) * (r + 1), group=group)
        work = dist.all_reduce(torch.ones(5), group=group, async_op=True)
        work.wait()
        dist.barrier(group=group)
        return r, total.tolist(), biggest.item(), mean.item(), root.item(), [p.tolist() for p in parts], \
            flat.tolist(), mine.tolist(), slab.item()

    for r, total, biggest, mean, root, parts, flat, mine, slab in each(pair, body):
        assert total == [3.0] * 3 and biggest == 1.0 and mean == 2.0 and root == 11.0
        assert parts == [[0.0, 0.0], [1.0, 1.0]] and flat == [0, 0, 1, 1]
        assert mine == ([3.0, 3.0] if r == 0 else [30.0, 30.0])
        assert slab == (3.0 if r == 0 else 300.0)


def test_an_undefined_reduction_is_one_sentence_that_names_it(pair):
    def body(agent, group, info):
        with pytest.raises(ftl.Error, match="PREMUL_SUM multiplies by a factor, and is not defined on torch.int64"):
            dist.all_reduce(torch.ones(1, dtype=torch.int64), op=dist._make_nccl_premul_sum(2.0), group=group)
        with pytest.raises(ftl.Error, match="bxor is not defined on f32"):
            dist.all_reduce(torch.ones(1), op=dist.ReduceOp.BXOR, group=group)
        x = torch.tensor([info.rank + 2, 6], dtype=torch.int32)
        dist.all_reduce(x, op=dist.ReduceOp.PRODUCT, group=group)
        y = torch.ones(2)
        dist.all_reduce(y, op=dist._make_nccl_premul_sum(0.5), group=group)  # the sum of the halves
        return x.tolist(), y.tolist()
    assert each(pair, body) == [([6, 36], [1.0, 1.0]), ([6, 36], [1.0, 1.0])]


def test_ddp_averages_gradients_over_the_view(pair):
    """Each rank's gradient of its own input; DDP (on the group of the step's view, which ElasticState puts
    in) leaves both ranks with their mean, and the same parameters after the optimizer's step."""
    models, inputs = {}, {0: torch.ones(1, 4), 1: 3 * torch.ones(1, 4)}

    def setup(agent):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        ddp = DistributedDataParallel(model, process_group=ftl.torch.process_group(agent))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ftl.torch.ElasticState(agent, ddp, opt)
        models[agent] = (model, ddp, opt)

    for a in pair:
        setup(a)

    def step(agent, group, info):
        model, ddp, opt = models[agent]
        opt.zero_grad()
        ddp(inputs[info.rank]).sum().backward()
        opt.step()
        return model.weight.grad.clone(), model.weight.detach().clone()

    (g0, w0), (g1, w1) = each(pair, step)
    assert torch.equal(g0, g1) and torch.allclose(g0, 2 * torch.ones(1, 4))  # the mean of 1s and 3s
    assert torch.equal(w0, w1)
    (g0, w0), (g1, w1) = each(pair, step)  # the second step: buckets rebuilt in autograd order, same result
    assert torch.equal(g0, g1) and torch.equal(w0, w1)


def test_a_group_of_an_old_view_refuses_to_run(pair):
    def body(agent, group, info):
        old = group.for_view(type("Info", (), {"view_epoch": info.view_epoch + 1000, "rank": info.rank,
                                               "world_size": 2})())
        with pytest.raises(ftl.PeerLostError, match="group of view"):
            dist.all_reduce(torch.ones(1), group=old)
        door_of(agent).peer_failure = None  # the step itself goes on: this test made the stale call on purpose
    each(pair, body)


def test_an_optimizer_never_steps_after_a_collective_lost_a_peer(run_dir):
    agent = ftl.Agent(name="guard", bind=f"127.0.0.1:{free_port()}", insecure=1, run_dir=run_dir, log_level="warn")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    ftl.torch.ElasticState(agent, model, opt)
    with agent:
        before = model.weight.detach().clone()

        def step(info):
            model(torch.ones(1, 2)).sum().backward()
            door_of(agent).peer_failure = ftl.PeerLostError("ftl: a peer was lost (injected)", ftl.errors.PEER_LOST)
            with pytest.raises(ftl.PeerLostError, match="injected"):
                opt.step()
            door_of(agent).peer_failure = None
        agent.execute(step)
        assert torch.equal(model.weight.detach(), before)


def test_collectives_between_steps_run_on_the_view_in_hand(pair):
    each(pair, lambda agent, group, info: None)  # the first view

    def between(agent):
        x = torch.ones(2)
        dist.all_reduce(x, group=ftl.torch.process_group(agent))
        return x.tolist()
    assert on_threads(*[lambda a=a: between(a) for a in pair]) == [[2.0, 2.0], [2.0, 2.0]]


def test_work_before_the_step_runs_again_with_it_and_takes_no_step(run_dir):
    """execute(step, before=validate): validate's collectives in every attempt, ahead of the step; a step
    that fails on a peer runs both again on the next view; the job counts one step, and the sampler moves
    by one step's samples."""
    pair = two_agents(run_dir, "v")
    for a in pair:
        a.set_sampler(100, 5, seed=1)
        a.start()
    calls = {a: [] for a in pair}

    def run(agent):
        group = ftl.torch.process_group(agent)

        def validate(info):
            loss = torch.tensor([float(info.rank + 1)])
            dist.all_reduce(loss, group=group)
            calls[agent].append((info.attempt, loss.item()))

        def step(info):
            if info.attempt == 0:
                raise ftl.PeerLostError("ftl: a peer was lost (injected)", ftl.errors.PEER_LOST)
            return info.sample_pos
        before = agent.job_status()["step"]
        pos = agent.execute(step, before=validate)
        return agent.job_status()["step"] - before, pos

    try:
        assert on_threads(*[lambda a=a: run(a) for a in pair], timeout=90) == [(1, 0), (1, 0)]
        for a in pair:
            assert calls[a] == [(0, 3.0), (1, 3.0)], calls[a]
            assert a.job_status()["step"] == 1
    finally:
        for a in pair:
            a.close()


def test_a_comm_hook_whose_callbacks_make_collectives_trains_in_one_order(pair):
    """PowerSGD's hook chains callbacks (then) that run on the thread completing the allreduce and make
    allreduces of their own, waited inside the callback: they run at once there (no deadlock), and the
    training thread's next collective waits for them, so every rank makes them in one order (ranks end
    with equal parameters, and the low-rank update moved them)."""
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
    models = {}
    for a in pair:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        ddp = DistributedDataParallel(model, process_group=ftl.torch.process_group(a), bucket_cap_mb=0.004)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ftl.torch.ElasticState(a, ddp, opt)
        state = powersgd.PowerSGDState(process_group=ftl.torch.process_group(a), matrix_approximation_rank=2,
                                       start_powerSGD_iter=2, min_compression_rate=0.5, random_seed=0)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
        models[a] = (model, ddp, opt)
    start = [p.detach().clone() for p in models[pair[0]][0].parameters()]

    def step(agent, group, info):
        model, ddp, opt = models[agent]
        torch.manual_seed(100 + info.step * 2 + info.rank)
        opt.zero_grad()
        ddp(torch.randn(16, 32)).square().sum().backward()
        opt.step()
        return [p.detach().clone() for p in model.parameters()]

    for _ in range(5):  # past start_powerSGD_iter: the compressed path with its chained callbacks
        p0, p1 = each(pair, step)
    assert all(torch.equal(a, b) for a, b in zip(p0, p1))
    assert not all(torch.equal(a, b) for a, b in zip(p0, start))
