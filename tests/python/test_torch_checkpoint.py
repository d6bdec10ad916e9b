"""State and checkpoints in PyTorch's formats (issue 25, item 5), on one worker: a real ftl checkpoint read
back as the model's state dict through libftl (by name and packed, with and without the model), torch.save
and DCP round trips into a fresh ElasticState, the RNGs and a GradScaler carried along, extras updated in
place.
    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python -m pytest tests/python/test_torch_checkpoint.py"""
import os
import random
import sys

import numpy as np
import pytest
import torch

import ftl
import ftl.torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from cluster import free_port  # noqa: E402

torch.set_num_threads(1)


def new_agent(tmp_path, name="solo", **settings):
    return ftl.Agent(name=name, bind=f"127.0.0.1:{free_port()}", run_dir=str(tmp_path), insecure=True,
                     log_level="warn", **settings)


@pytest.fixture
def agent(tmp_path):
    a = new_agent(tmp_path)
    yield a
    a.close()


class Net(torch.nn.Module):
    """`layers` Linear layers (2 tensors each), a bool buffer (not registrable: it travels in the save bytes)
    and a non-persistent buffer (registered, not in state_dict())."""

    def __init__(self, layers, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(layers)])
        self.register_buffer("mask", torch.tensor([True, False, True]))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.body(x)


def train(agent, model, opt, steps):
    def step(info):
        opt.zero_grad()
        model(torch.randn(8, 4)).square().mean().backward()
        opt.step()
    with agent:
        for _ in range(steps):
            agent.execute(step)


def assert_same_tensors(got, want):
    assert list(got) == list(want)
    for key in want:
        if torch.is_tensor(want[key]):
            assert torch.equal(got[key], want[key]), key
        elif isinstance(want[key], dict):
            assert_same_tensors(got[key], want[key])
        else:
            assert got[key] == want[key], key


@pytest.mark.parametrize("layers", [2, 30], ids=["by_name", "packed"])
def test_an_ftl_checkpoint_loads_as_the_models_state_dict(tmp_path, layers):
    ckdir = tmp_path / "ck"
    agent = new_agent(tmp_path, checkpoint_dir=str(ckdir), checkpoint_every=2)
    model = Net(layers)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    state = ftl.torch.ElasticState(agent, model, opt, epoch={"n": 3})
    assert any(n.startswith("model.packed.") for n in state.registered) == (layers == 30)
    with torch.no_grad():
        model.mask.copy_(torch.tensor([False, True, True]))
    train(agent, model, opt, steps=4)

    for given in (None, Net(layers, seed=5)):
        ck = ftl.torch.load_checkpoint(ckdir, model=given)  # the directory: its newest checkpoint
        assert ck["step"] == 4 and os.path.dirname(ck["file"]) == str(ckdir)
        assert list(ck["model"]) == list(model.state_dict())
        assert_same_tensors(ck["model"], model.state_dict())
        assert_same_tensors(ck["optimizer"]["state"], opt.state_dict()["state"])
        assert ck["extras"] == {"epoch": {"n": 3}}
    other = new_agent(tmp_path, name="next-job")  # a new job that starts from this one's checkpoint
    try:
        fresh_model = Net(layers, seed=7)
        fresh = ftl.torch.ElasticState(other, fresh_model, torch.optim.Adam(fresh_model.parameters()),
                                       init_from=ckdir, epoch={})
        assert fresh.digest() == state.digest()  # the model, Adam's state and its hyperparameters
        assert_same_tensors(fresh.model.state_dict(), model.state_dict())
        assert fresh.extras["epoch"] == {"n": 3}
    finally:
        other.close()


def test_a_checkpoint_of_plain_buffers_is_not_a_torch_state(tmp_path):
    ckdir = tmp_path / "ck"
    agent = new_agent(tmp_path, checkpoint_dir=str(ckdir), checkpoint_every=1)
    agent.register("weights", np.arange(6, dtype=np.float32))
    with agent:
        agent.execute(lambda info: None)
    ck = ftl.read_checkpoint(ckdir)
    assert ck.step == 1 and ck.buffers == {"weights": bytearray(np.arange(6, dtype=np.float32).tobytes())}
    with pytest.raises(ftl.Error, match=r"holds no ftl.torch.ElasticState .*\['weights'\].*ftl.read_checkpoint"):
        ftl.torch.load_checkpoint(ckdir)


def test_a_checkpoint_without_layout_needs_the_model_and_says_so(tmp_path):
    ckdir = tmp_path / "ck"
    agent = new_agent(tmp_path, checkpoint_dir=str(ckdir), checkpoint_every=1)
    model = Net(30)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = ftl.torch.ElasticState(agent, model, opt)
    state._layout = None  # what an ElasticState before layouts saved
    train(agent, model, opt, steps=1)
    with pytest.raises(ftl.Error, match=r"without its tensors' layout and holds packed tensors "
                                        r"\(model.packed.float32.cpu\): pass the model it was written from"):
        ftl.torch.load_checkpoint(ckdir)
    ck = ftl.torch.load_checkpoint(ckdir, model=Net(30, seed=4))
    assert_same_tensors(ck["model"], model.state_dict())
    with pytest.raises(ftl.Error, match="does not match the model|another model"):
        ftl.torch.load_checkpoint(ckdir, model=Net(29))


def test_a_damaged_checkpoint_is_refused_with_libftls_reason(tmp_path):
    ckdir = tmp_path / "ck"
    agent = new_agent(tmp_path, checkpoint_dir=str(ckdir), checkpoint_every=1)
    model = Net(2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ftl.torch.ElasticState(agent, model, opt)
    train(agent, model, opt, steps=1)
    (path,) = [p for p in ckdir.iterdir() if p.suffix == ".ftl"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(ftl.Error, match=r"checkpoint .*ckpt-.*\.ftl: checksum mismatch \(xxh3\): the file is corrupt"):
        ftl.torch.load_checkpoint(path)
    with pytest.raises(ftl.Error, match=r"none of the 1 checkpoint\(s\)"):
        ftl.torch.load_checkpoint(ckdir)


def trained_state(agent):
    """An ElasticState whose model, Adam, GradScaler, extras and RNGs have all moved from their defaults."""
    model = Net(2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(model(torch.randn(8, 4)).square().mean()).backward()
        scaler.step(opt)
        scaler.update()
    scaler.update(new_scale=256.0)
    with torch.no_grad():
        model.mask.fill_(False)
    return ftl.torch.ElasticState(agent, model, opt, scaler=scaler, rng=True, epoch={"n": 2}, seen=[1, 2])


def fresh_state(agent, **kwargs):
    model = Net(2, seed=9)
    opt = torch.optim.Adam(model.parameters(), lr=0.5)
    return ftl.torch.ElasticState(agent, model, opt, scaler=torch.amp.GradScaler("cpu"), rng=True, epoch={},
                                  seen=[], **kwargs)


def draws():
    return torch.rand(3).tolist(), np.random.rand(), random.random()


def save_as(state, fmt, path):
    if fmt == "torch":
        state.save(path)
    else:
        state.save_dcp(path)
    return path


@pytest.mark.parametrize("fmt", ["torch", "dcp"])
def test_torch_save_and_dcp_round_trip_into_a_fresh_state(agent, tmp_path, fmt):
    state = trained_state(agent)
    torch.manual_seed(11), np.random.seed(11), random.seed(11)
    path = save_as(state, fmt, tmp_path / f"state.{fmt}")
    expected = draws()  # what the saved generators give next
    torch.manual_seed(0), np.random.seed(0), random.seed(0)

    other = new_agent(tmp_path, name="other")
    try:
        fresh = fresh_state(other, init_from=path)
        assert fresh.digest() == state.digest()  # model, Adam state (keyed by parameter index) and lr
        assert_same_tensors(fresh.model.state_dict(), state.model.state_dict())
        assert fresh.scaler.get_scale() == 256.0
        assert fresh.extras == {"epoch": {"n": 2}, "seen": [1, 2]}
        assert draws() == expected
    finally:
        other.close()


def test_rng_and_scaler_travel_with_the_state_sync_to_a_joiner(agent, tmp_path):
    state = trained_state(agent)
    torch.manual_seed(5), np.random.seed(5), random.seed(5)
    data = state._save()  # what rank 0 sends a joiner
    expected = draws()
    other = new_agent(tmp_path, name="joiner")
    try:
        joiner = fresh_state(other)
        joiner._load(data)
        assert draws() == expected
        assert joiner.scaler.get_scale() == 256.0 and joiner.scaler.state_dict() == state.scaler.state_dict()
        assert torch.equal(joiner.model.mask, state.model.mask)
    finally:
        other.close()


def test_extras_are_updated_in_place(agent, tmp_path):
    model = Net(2)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step(), sched.step(), sched.step()
    state = ftl.torch.ElasticState(agent, model, opt, sched=sched, counter={"epoch": 4}, seen=[3, 1], n=7)
    other = new_agent(tmp_path, name="joiner")
    try:
        joiner_model = Net(2, seed=1)
        joiner_opt = torch.optim.SGD(joiner_model.parameters(), lr=1.0)
        joiner_sched = torch.optim.lr_scheduler.StepLR(joiner_opt, step_size=1, gamma=0.5)
        counter, seen = {"epoch": 0, "stale": True}, []
        joiner = ftl.torch.ElasticState(other, joiner_model, joiner_opt, sched=joiner_sched, counter=counter,
                                        seen=seen, n=0)
        joiner._load(state._save())
        assert joiner.extras["counter"] is counter and counter == {"epoch": 4}
        assert joiner.extras["seen"] is seen and seen == [3, 1]
        assert joiner.extras["sched"] is joiner_sched and joiner_sched.last_epoch == 2
        assert joiner.extras["n"] == 7
    finally:
        other.close()
