"""Unit tests of ftl.torch on one worker (a real agent, a world of one): registration by reference,
gradient buckets, the sampler's batches, the optimizer state a joiner loads, the learning-rate rule.
    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python -m pytest tests/python/test_torch.py"""
import os
import sys
from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import TensorDataset

import ftl
import ftl.torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from cluster import free_port  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def agent(tmp_path):
    a = ftl.Agent(name="solo", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path), insecure=True,
                  log_level="warn")
    yield a
    a.close()


def mlp(seed=0, hidden=16, dtype=torch.float32):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 3)).to(dtype)


def recording(agent, method):
    """Wraps agent.<method>, recording each call's first argument."""
    calls, original = [], getattr(agent, method)

    def wrapper(x, *args, **kwargs):
        calls.append(x)
        return original(x, *args, **kwargs)
    setattr(agent, method, wrapper)
    return calls


def test_state_registers_parameters_and_buffers_by_reference(agent):
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    registered = []
    original = agent._register
    agent._register = lambda name, t, watched: (registered.append((name, t.data_ptr())), original(name, t, watched))
    ftl.torch.ElasticState(agent, model, torch.optim.SGD(model.parameters(), lr=0.1))
    expected = {t.data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    assert {ptr for _, ptr in registered} == expected
    assert registered[0][0] == "model.0.weight"


def test_a_parameter_given_other_storage_is_refused_at_the_next_step(agent):
    """ElasticState registers the model's tensors by reference; `p.data = new` leaves ftl syncing memory the
    model no longer uses (and, for a tensor registered itself, memory that is freed): refused by name."""
    model = mlp()
    ftl.torch.ElasticState(agent, model)
    agent.start()
    agent.execute(lambda info: None)
    model[0].weight.data = torch.zeros_like(model[0].weight)
    with pytest.raises(ftl.Error, match=r"register\('model.0.weight'\): the tensor was given other storage"):
        agent.execute(lambda info: None)


def test_state_packs_a_model_with_more_tensors_than_the_agent_takes(agent):
    model = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(40)])  # 80 tensors
    registered = []
    original = agent._register
    agent._register = lambda name, t, watched: (registered.append(t), original(name, t, watched))
    state = ftl.torch.ElasticState(agent, model)
    assert len(registered) == 1
    flat = registered[0]
    start, end = flat.data_ptr(), flat.data_ptr() + flat.numel() * flat.element_size()
    assert all(start <= p.data_ptr() < end for p in model.parameters())
    with torch.no_grad():
        flat.fill_(0.5)  # what a state sync from rank 0 does: the model sees it
    assert all(bool((p == 0.5).all()) for p in model.parameters())
    assert state.registered.keys() == {"model.packed.float32.cpu"}


def test_buckets_fuse_gradients_into_few_allreduces(agent):
    model = torch.nn.ModuleDict({"a": mlp(), "b": mlp(1, dtype=torch.float64), "unused": torch.nn.Linear(3, 3)})
    n_params = len(list(model.parameters()))
    fused = ftl.torch.GradientAverager(agent, model)
    tiny = ftl.torch.GradientAverager(agent, model, bucket_cap_mb=200 / 2**20)  # ~200 bytes a bucket
    assert len(fused.buckets) == 2  # one per dtype
    assert 2 < len(tiny.buckets) < n_params
    calls = recording(agent, "allreduce")
    x = torch.randn(5, 8)
    (model["a"](x).sum() + model["b"](x.double()).sum()).backward()  # "unused" gets no gradient: zeros
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    with agent:
        total = agent.execute(lambda info: fused.average(samples=5))
        assert len(calls) == len(fused.buckets) < n_params
        assert total == 5.0
        calls.clear()
        agent.execute(lambda info: tiny.average())
        assert len(calls) == len(tiny.buckets)
    for n, p in model.named_parameters():  # a world of one: the average is the rank's own gradient
        assert torch.allclose(p.grad, grads[n]) if n in grads else bool((p.grad == 0).all()), n


def test_batch_collates_the_steps_indices():
    data = TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10))
    x, y = ftl.torch.batch(data, SimpleNamespace(indices=torch.tensor([7, 2, 5]).numpy()))
    assert y.tolist() == [7, 2, 5] and x.shape == (3, 1)
    assert ftl.torch.batch(data, SimpleNamespace(indices=[])) is None


def test_micro_batches_cut_the_share_for_gradient_accumulation():
    data = TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10))
    share = torch.tensor([7, 2, 5, 9, 0]).numpy()
    chunks = [y.tolist() for _, y in ftl.torch.micro_batches(data, SimpleNamespace(indices=share, micro_batch=2))]
    assert chunks == [[7, 2], [5, 9], [0]]
    whole = [y.tolist() for _, y in ftl.torch.micro_batches(data, SimpleNamespace(indices=share, micro_batch=0))]
    assert whole == [[7, 2, 5, 9, 0]]
    assert list(ftl.torch.micro_batches(data, SimpleNamespace(indices=[], micro_batch=2))) == []


def test_lr_scaling_follows_the_world_size_and_a_joiner_agrees():
    def info(step, epoch, world):
        return SimpleNamespace(step=step, view_epoch=epoch, world_size=world)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    linear = ftl.torch.lr_scaling(opt, 0.1, "linear", warmup_steps=4, base_world=2)
    assert linear.target(4) == pytest.approx(0.2) and linear.target(1) == pytest.approx(0.05)
    assert ftl.torch.lr_scaling(opt, 0.1, "sqrt", base_world=1).target(4) == pytest.approx(0.2)
    assert ftl.torch.lr_scaling(opt, 0.1, None).target(8) == pytest.approx(0.1)
    assert linear(info(0, 1, 2)) == pytest.approx(0.1)
    ramp = [linear(info(s, 2, 4)) for s in range(10, 15)]  # world 2 -> 4 at step 10: 0.1 to 0.2 in 4 steps
    assert ramp == pytest.approx([0.125, 0.15, 0.175, 0.2, 0.2])
    # A joiner that arrives with the next view holds rank 0's lr (job state) and a fresh hook: same rates.
    joiner_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=opt.param_groups[0]["lr"])
    joiner = ftl.torch.lr_scaling(joiner_opt, 0.1, "linear", warmup_steps=4, base_world=2)
    for s in range(20, 25):
        assert joiner(info(s, 3, 3)) == pytest.approx(linear(info(s, 3, 3)))
    with pytest.raises(ValueError):
        ftl.torch.lr_scaling(opt, 0.1, "cubic")


def test_a_few_steps_on_one_worker_and_a_joiner_loads_adam_state(agent, tmp_path):
    torch.manual_seed(3)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    epochs = {"epoch": 0}
    state = ftl.torch.ElasticState(agent, model, opt, counter=epochs)
    grads = ftl.torch.GradientAverager(agent, model)
    agent.set_sampler(len(data), 16, seed=1)
    losses = []

    def step(info):
        x, y = ftl.torch.batch(data, info)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grads.average(samples=len(y))
        opt.step()
        losses.append(loss.item())
        return info
    with agent:
        infos = [agent.execute(step) for _ in range(12)]
    assert [i.step for i in infos] == list(range(12)) and infos[0].world_size == 1
    assert sum(losses[-4:]) < sum(losses[:4])
    assert len(opt.state) == len(list(model.parameters()))  # Adam's state exists now
    state.extras["counter"] = {"epoch": 2}

    # A joiner: the same program, its optimizer without state yet; it loads rank 0's bytes.
    other = ftl.Agent(name="joiner", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path), insecure=True)
    try:
        joiner_model = mlp(seed=9)
        joiner_opt = torch.optim.Adam(joiner_model.parameters(), lr=0.5)
        joiner = ftl.torch.ElasticState(other, joiner_model, joiner_opt, counter={})
        assert not joiner_opt.state and joiner.digest() != state.digest()
        with torch.no_grad():  # what the sync of registered buffers does
            for mine, theirs in zip(joiner.registered.values(), state.registered.values()):
                mine.copy_(theirs)
        joiner._load(state._save())
        assert joiner.digest() == state.digest()
        assert joiner_opt.param_groups[0]["lr"] == 0.01 and joiner.extras["counter"] == {"epoch": 2}
        assert torch.equal(joiner_opt.state[joiner_model[0].weight]["exp_avg"], opt.state[model[0].weight]["exp_avg"])
    finally:
        other.close()


def test_overlapped_average_equals_the_plain_one_bit_for_bit(pair):
    """Two workers; on each, one model averaged with overlap (allreduces started by the gradient hooks
    during backward) and a copy averaged after backward: the gradients must be equal bit for bit, with
    several buckets of two dtypes, a parameter without a gradient and unequal sample counts."""
    import copy
    from conftest import on_threads

    def model_of(seed):
        torch.manual_seed(seed)
        return torch.nn.ModuleDict({"a": mlp(seed, hidden=64), "b": mlp(seed + 1, dtype=torch.float64),
                                    "unused": torch.nn.Linear(3, 3)})
    plain = [model_of(0), model_of(0)]   # same start everywhere, as after a state sync
    overlapped = [copy.deepcopy(m) for m in plain]
    torch.manual_seed(1)
    inputs = [torch.randn(5, 8), torch.randn(3, 8)]
    samples = [5, 3]
    cap = 600 / 2**20  # ~600-byte buckets: several per dtype

    def loss(model, x):
        return (model["a"](x) ** 2).sum() + model["b"](x.double()).sum()

    def worker(agent, r):
        avg_o = ftl.torch.GradientAverager(agent, overlapped[r], bucket_cap_mb=cap, overlap=True)
        avg_p = ftl.torch.GradientAverager(agent, plain[r], bucket_cap_mb=cap)
        assert len(avg_o.buckets) > 3

        def step(info):
            avg_o.set_samples(samples[r])
            loss(overlapped[r], inputs[r]).backward()
            started = len(avg_o._requests)
            total_o = avg_o.average(samples=samples[r])
            loss(plain[r], inputs[r]).backward()
            total_p = avg_p.average(samples=samples[r])
            return started, total_o, total_p
        return agent.execute(step)

    results = on_threads(lambda: worker(pair[0], 0), lambda: worker(pair[1], 1), timeout=90)
    for started, total_o, total_p in results:
        assert started > 0, "no bucket started during backward"
        assert total_o == total_p == 8.0
    for r in range(2):
        for (name, p), q in zip(overlapped[r].named_parameters(), plain[r].parameters()):
            assert p.grad is not None and p.grad.dtype == q.grad.dtype, name
            assert torch.equal(p.grad, q.grad), f"rank {r}: {name} differs"
            assert torch.equal(p.grad, dict(overlapped[1 - r].named_parameters())[name].grad), name


def test_compressed_average_stays_within_bf16s_bound_and_keeps_counts_exact(pair):
    """Two workers, FTL_COMM_COMPRESS's modes chosen per averager: bf16-ef with overlap (the asynchronous
    path) and without it must give the same gradients bit for bit, differ from the exact average, and stay
    within (n + 1) * 2^-8 of the sum of the ranks' magnitudes (include/ftl/gradient.h); the summed sample
    count stays exact (it lives in an uncompressed bucket). A GradientBucket with error feedback feeds the
    rounding of one call into the next (the same input twice gives two results), one without does not."""
    import copy
    from conftest import on_threads

    models = [[mlp(0, hidden=64) for _ in range(3)] for _ in range(2)]
    torch.manual_seed(2)
    inputs = [torch.randn(5, 8), torch.randn(3, 8)]
    samples = [5, 3]

    def worker(agent, r):
        exact = ftl.torch.GradientAverager(agent, models[r][0], compress="off")
        blocking = ftl.torch.GradientAverager(agent, models[r][1], compress="bf16-ef", bucket_cap_mb=600 / 2**20)
        overlapped = ftl.torch.GradientAverager(agent, models[r][2], compress="bf16-ef", bucket_cap_mb=600 / 2**20,
                                                overlap=True)
        assert len(blocking.buckets) > 2 and all(b.reducer is not None for b in blocking.buckets[:-1])
        fed, plain = ftl.GradientBucket(agent, "bf16-ef"), ftl.GradientBucket(agent, "bf16")
        x = torch.full((4,), 1.0 + 3 * 2.0 ** -10)  # under half a bf16 ulp above 1: rounds to 1, twice it does not

        def step(info):
            overlapped.set_samples(samples[r])
            totals = []
            for m, avg in zip(models[r], (exact, blocking, overlapped)):
                (m(inputs[r]) ** 2).sum().backward()
                local = [p.grad.abs() * samples[r] for p in m.parameters()]
                totals.append(avg.average(samples=samples[r]))
            magnitude = [agent.allreduce(t.clone()) for t in local]  # sum over ranks of |weighted grad|
            twice = [b.allreduce(x.clone())[0].item() for b in (fed, fed, plain, plain)]
            return totals, magnitude, twice
        return agent.execute(step)

    results = on_threads(lambda: worker(pair[0], 0), lambda: worker(pair[1], 1), timeout=90)
    for totals, magnitude, (fed1, fed2, plain1, plain2) in results:
        assert totals == [8.0, 8.0, 8.0]
        assert plain1 == plain2 == 2.0 and fed1 == 2.0 and fed2 > 2.0, (fed1, fed2, plain1, plain2)
    magnitude = results[0][1]
    differs = False
    for exact_p, blocking_p, overlapped_p, mag in zip(*(m.parameters() for m in models[0]), magnitude):
        assert torch.equal(blocking_p.grad, overlapped_p.grad)
        bound = 3 * 2.0 ** -8 * mag / 8.0 + 1e-7
        assert bool(((blocking_p.grad - exact_p.grad).abs() <= bound).all())
        differs = differs or not torch.equal(blocking_p.grad, exact_p.grad)
    assert differs, "the compressed average equals the exact one: nothing was compressed"


def test_state_refuses_what_shards_over_the_world(agent):
    """A model of DTensors (FSDP2's fully_shard) and ZeroRedundancyOptimizer: each rank holds a different
    part, sized by the world it was made in; ElasticState would sync rank 0's part over everyone's, so it
    refuses both with a sentence."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.optim import ZeroRedundancyOptimizer
    ftl.torch.init_process_group(agent)
    try:
        sharded = torch.nn.Linear(3, 2)
        fully_shard(sharded, mesh=init_device_mesh("cpu", (1,)))
        with pytest.raises(ftl.Error, match="the model's weight is a DTensor"):
            ftl.torch.ElasticState(agent, sharded, torch.optim.SGD(sharded.parameters(), lr=0.1))
        plain = torch.nn.Linear(3, 2)
        zero = ZeroRedundancyOptimizer(plain.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)
        with pytest.raises(ftl.Error, match="ZeroRedundancyOptimizer shards its state"):
            ftl.torch.ElasticState(agent, plain, zero)
    finally:
        dist.destroy_process_group()


def test_hsdp_mesh_gives_each_shard_its_place_before_the_first_view(tmp_path):
    """Before the first view a worker is rank 0 of a world of one (the default group), yet its shard's place
    is already known: torch's dist.get_rank(group), and the mesh's get_local_rank through it, answer the
    worker's FTL_REPLICA_INDEX, not 0 on every shard (and not an error on the replicate group)."""
    import torch.distributed as dist
    a = ftl.Agent(name="w1", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path / "run"), insecure=True,
                  log_level="warn", replica="r0", replica_index=1, replica_size=2)
    ftl.torch.init_process_group(a)
    try:
        mesh = ftl.torch.hsdp_mesh(a)
        assert mesh.get_coordinate() == (0, 1)
        assert mesh["shard"].get_local_rank() == 1
        assert dist.get_rank(mesh.get_group("shard")) == 1
        assert len(dist.get_process_group_ranks(mesh.get_group("shard"))) == 2
        assert mesh["replicate"].get_local_rank() == 0
    finally:
        dist.destroy_process_group()
        a.close()


def test_hsdp_mesh_and_its_refusals(tmp_path):
    """ftl.torch.hsdp_mesh on a worker of a replica of one: FSDP2 trains on it through execute(); what would
    go wrong without a word is refused with a sentence: a mesh for a worker of no replica, an optimizer made
    before fully_shard (it would step tensors FSDP2 no longer reads), none at all, ftl's rank-0 saves and
    checkpoints (rank 0 holds one shard), a copy of each shard where there is no shard or no neighbour."""
    import torch.distributed as dist
    from torch.distributed.fsdp import FSDPModule, fully_shard

    def make(**extra):
        return ftl.Agent(name="solo", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path / "run"), insecure=True,
                         log_level="warn", replica="r0", replica_index=0, replica_size=1, **extra)
    plain = ftl.Agent(name="plain", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path / "plain"), insecure=True,
                      log_level="warn")
    ftl.torch.init_process_group(plain)
    try:
        with pytest.raises(ftl.Error, match="declares no replica"):
            ftl.torch.hsdp_mesh(plain)
        with pytest.raises(ftl.Error, match="this model is not sharded"):
            ftl.torch.ElasticState(plain, mlp(), copy_shards=True)
    finally:
        dist.destroy_process_group()
        plain.close()
    for extra, fix in (({}, None), ({"checkpoint_dir": str(tmp_path / "ckpt")}, "FTL_CHECKPOINT_DIR")):
        a = make(**extra)
        ftl.torch.init_process_group(a)
        try:
            model = mlp()
            early = torch.optim.SGD(model.parameters(), lr=0.1)
            fully_shard(model, mesh=ftl.torch.hsdp_mesh(a))
            if fix:
                with pytest.raises(ftl.Error, match=fix):
                    ftl.torch.ElasticState(a, model, torch.optim.SGD(model.parameters(), lr=0.1))
                continue
            if not hasattr(FSDPModule, "reset_iter_state"):  # torch 2.11: HSDP on ftl is refused whole
                with pytest.raises(ftl.Error, match="no FSDPModule.reset_iter_state"):
                    ftl.torch.ElasticState(a, model, torch.optim.SGD(model.parameters(), lr=0.1))
                continue
            with pytest.raises(ftl.Error, match="made before fully_shard"):
                ftl.torch.ElasticState(a, model, early)
            with pytest.raises(ftl.Error, match="needs its optimizer"):
                ftl.torch.ElasticState(a, model)
            with pytest.raises(ftl.Error, match="this replica has one shard"):
                ftl.torch.ElasticState(a, model, torch.optim.Adam(model.parameters(), lr=0.01), copy_shards=True)
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            state = ftl.torch.ElasticState(a, model, optimizer)
            with pytest.raises(ftl.Error, match="rank 0 holds one shard"):
                state.save(str(tmp_path / "x.pt"))
            before = state.digest()

            def step(info):
                optimizer.zero_grad()
                model(torch.ones(4, 8)).pow(2).mean().backward()
                optimizer.step()
            with a:
                for _ in range(3):
                    a.execute(step)
                assert a.job_status()["step"] == 3
            assert state.digest() != before, "three steps of FSDP2 on the HSDP mesh changed nothing"
        finally:
            dist.destroy_process_group()
            a.close()


def test_the_rebalance_policy_refuses_what_averages_over_ranks(tmp_path):
    """FTL_SLOW_POLICY=rebalance gives the ranks unequal shares of the global batch: whatever averages
    gradients over ranks rather than samples would weigh a slow rank's few samples as much as a fast rank's
    many, without an error. So DDP in an ElasticState, the ElasticSampler's loop (an equal part a rank) and a
    GradientAverager without a sample count are refused with a sentence; with counts it averages, and the
    C side refuses the policy without a fixed global batch at the first step."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    a = ftl.Agent(name="solo", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path / "run"), insecure=True,
                  log_level="warn", slow_policy="rebalance")
    assert a.slow_policy == "rebalance"
    ftl.torch.init_process_group(a)
    try:
        model = mlp()
        with pytest.raises(ftl.Error, match="FTL_SLOW_POLICY=rebalance"):
            ftl.torch.ElasticState(a, DDP(model), torch.optim.SGD(model.parameters(), lr=0.1))
        with pytest.raises(ftl.Error, match="FTL_SLOW_POLICY=rebalance"):
            ftl.torch.ElasticSampler(list(range(10)), agent=a)
        grads = ftl.torch.GradientAverager(a, model)
        a.register("w", torch.zeros(1))
        a.set_sampler(64, 8)

        def step(info):
            model(torch.ones(2, 8)).sum().backward()
            with pytest.raises(ftl.Error, match="without a sample count"):
                grads.average()
            assert grads.average(samples=len(info.indices)) == len(info.indices)
        with pytest.raises(ftl.Error, match="set FTL_GLOBAL_BATCH"):
            a.execute(step)  # the growing batch: nothing to rebalance
    finally:
        dist.destroy_process_group()
        a.close()
    b = ftl.Agent(name="solo", bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path / "run2"), insecure=True,
                  log_level="warn", slow_policy="rebalance", global_batch=16)
    try:
        grads = ftl.torch.GradientAverager(b, model)
        b.register("w", torch.zeros(1))
        b.set_sampler(64, 8)
        b.execute(step)
        assert b.job_status()["step"] == 1
    finally:
        b.close()
