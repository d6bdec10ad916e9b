"""The ftl package's promises, tested on real agents (loopback, real sockets): settings refused by name,
arrays and tensors passed without copies, clear errors for what cannot be passed, the step contract
(a Python exception propagates; a collective outside a step is refused), the GIL released in blocking
calls, and one sentence when libftl cannot be found."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

import ftl
from conftest import free_port, on_threads


def test_a_timeout_is_a_timeout_error_and_still_a_lost_peer():
    """FTL_ERR_TIMEOUT raises ftl.TimeoutError: Python's TimeoutError, and a PeerLostError (retryable) as
    before; a peer that died is a PeerLostError that is not a timeout."""
    timeout = ftl.errors.from_code(ftl.errors.TIMEOUT, "ftl: allreduce timed out after 10000 ms")
    assert isinstance(timeout, ftl.TimeoutError) and isinstance(timeout, TimeoutError)
    assert isinstance(timeout, ftl.PeerLostError) and isinstance(timeout, ftl.Error)
    assert timeout.code_name == "timed out"
    lost = ftl.errors.from_code(ftl.errors.PEER_LOST, "ftl: peer rank 1 lost")
    assert isinstance(lost, ftl.PeerLostError) and not isinstance(lost, TimeoutError)


def test_setting_refused_names_the_variable(run_dir):
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(probe_interval_ms="ten", insecure=1, run_dir=run_dir)
    assert e.value.variable == "FTL_PROBE_INTERVAL_MS"
    os.environ["FTL_MAX_RETRIES"] = "-3"
    try:
        with pytest.raises(ftl.ConfigError) as e:
            ftl.Agent(insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}")
        assert e.value.variable == "FTL_MAX_RETRIES"
    finally:
        del os.environ["FTL_MAX_RETRIES"]
    assert "FTL_PROBE_INTERVAL_MS" not in os.environ  # keyword settings do not leak into the environment


def test_a_refusal_names_its_setting_from_the_library_not_from_the_message(run_dir):
    """ConfigError.variable is the setting libftl says it refused (ftl_error_setting), not the first FTL_*
    word of the message: a message that names settings as examples or as context blames none of them."""
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}", probe_interval_ms=100, probe_timeout_ms=100)
    assert e.value.variable == "FTL_PROBE_TIMEOUT_MS" and "FTL_PROFILE=" in str(e.value), e.value
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(insecure=1, run_dir=run_dir, **{"min-workers": 2})
    assert e.value.variable is None and "FTL_MIN_WORKERS" in str(e.value), e.value


def test_keyword_settings_go_through_the_c_setters_not_the_environment(run_dir, monkeypatch):
    """Every keyword is judged by libftl's setter (the sentence its variable would get), and the process
    environment is never written, so another thread reading it mid-construction sees nothing half-set."""
    writes = []
    monkeypatch.setattr(os, "putenv", lambda *a: writes.append(a))
    monkeypatch.setattr(os, "unsetenv", lambda *a: writes.append(a))
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(insecure=1, run_dir=run_dir, max_worker=4)
    assert "FTL_MAX_WORKER is not an ftl setting (did you mean FTL_MAX_WORKERS?)" in str(e.value)
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(insecure=1, run_dir=run_dir, min_workers="two")
    assert str(e.value) == "FTL_MIN_WORKERS=two: expected a whole number from 1 to 4096"
    with pytest.raises(ftl.ConfigError):
        ftl.Agent(insecure=1, run_dir=run_dir, **{"min-workers": 2})
    with ftl.Agent(insecure=True, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}", name="kw7") as agent:
        assert agent.control_path.endswith("/kw7.sock")
    assert writes == []


def test_missing_key_is_refused_with_what_to_do(run_dir):
    with pytest.raises(ftl.ConfigError) as e:
        ftl.Agent(run_dir=run_dir, bind=f"127.0.0.1:{free_port()}")
    assert "FTL_GOSSIP_KEY" in str(e.value)


def test_bad_buffers_get_one_sentence(run_dir):
    agent = ftl.Agent(insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}")
    cases = [
        (np.zeros(4, dtype=np.uint16), "dtype uint16 is not supported"),
        (np.zeros((4, 4), dtype=np.float32)[:, 1], "not C-contiguous"),
        (torch.zeros(4, 4).t(), "not contiguous"),
        (torch.zeros(3, dtype=torch.complex64), "not supported"),
        (torch.zeros(3, requires_grad=True), "requires grad"),
        ([1.0, 2.0], "expected a NumPy array or a torch tensor"),
    ]
    for buf, says in cases:
        with pytest.raises(ftl.Error) as e:
            agent.register("x", buf)
        assert says in str(e.value) and str(e.value).count("\n") == 0, str(e.value)
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ftl.Error, match="read-only"):
        agent.register("ro", ro)
    agent.close()
    with pytest.raises(ftl.Error, match="closed"):
        agent.job_status()


def test_step_exception_propagates_and_collectives_need_a_step(run_dir):
    with ftl.Agent(insecure=1, run_dir=run_dir, log_level="warn", bind=f"127.0.0.1:{free_port()}") as agent:
        x = np.ones(3, dtype=np.float32)
        with pytest.raises(ftl.Error, match="outside a step"):
            agent.allreduce(x)

        def broken(info):
            agent.allreduce(x)
            raise RuntimeError("the program's own bug")

        with pytest.raises(RuntimeError, match="own bug"):
            agent.execute(broken)
        assert agent.job_status()["step"] == 0  # a failed step does not count
        assert agent.execute(lambda info: (info.rank, info.world_size, info.step)) == (0, 1, 0)
        assert agent.job_status()["step"] == 1
        status = agent.status()
        assert status["view"]["world_size"] == 1 and status["self"]["name"] == agent.status()["self"]["name"]


def test_fixed_global_batch_takes_the_same_samples_per_step(run_dir):
    agent = ftl.Agent(insecure=1, run_dir=run_dir, log_level="warn", bind=f"127.0.0.1:{free_port()}")
    with pytest.raises(ftl.ConfigError, match="FTL_REPRODUCIBLE"):
        agent.set_batch(100, reproducible=True)  # without a micro-shard size
    agent.set_sampler(1000, 8, seed=3)
    agent.set_batch(100, max_batch_per_rank=32)
    with agent:
        first = agent.execute(lambda info: info)
        second = agent.execute(lambda info: info)
    assert (len(first.indices), first.global_batch, first.micro_batch) == (100, 100, 32)  # not 8: the batch is fixed
    assert second.sample_pos == 100 and not set(first.indices.tolist()) & set(second.indices.tolist())


def test_collectives_work_in_place_without_copies(pair):
    a, b = pair
    arrays = [np.full(1000, 1.0, dtype=np.float32), np.full(1000, 2.0, dtype=np.float32)]
    tensors = [torch.full((10, 10), 3.0, dtype=torch.bfloat16), torch.full((10, 10), 5.0, dtype=torch.bfloat16)]
    before = ([x.ctypes.data for x in arrays], [t.data_ptr() for t in tensors])

    def worker(agent, i):
        def step(info):
            assert agent.allreduce(arrays[i]) is arrays[i]
            agent.allreduce(tensors[i], op="max")
            return info.world_size
        return agent.execute(step)

    assert on_threads(lambda: worker(a, 0), lambda: worker(b, 1)) == [2, 2]
    assert all((x == 3.0).all() for x in arrays)
    assert all((t == 5.0).all() for t in tensors)
    assert ([x.ctypes.data for x in arrays], [t.data_ptr() for t in tensors]) == before


def test_mismatched_sizes_across_ranks_are_an_error_not_a_crash(pair):
    a, b = pair
    outcomes = {}

    def worker(agent, n):
        x = np.ones(n, dtype=np.float64)
        try:
            agent.execute(lambda info: agent.allreduce(x))
            outcomes[n] = "ok"
        except ftl.Error as e:
            outcomes[n] = str(e)

    on_threads(lambda: worker(a, 10), lambda: worker(b, 12), timeout=90)
    assert any("ok" != o for o in outcomes.values()), outcomes
    for o in outcomes.values():
        assert o == "ok" or (o.startswith("ftl") and "\n" not in o), o


def test_gil_is_released_while_a_collective_waits(pair):
    a, b = pair
    ticks = []
    done = threading.Event()

    def counter():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    x, y = np.ones(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    waited = {}

    def early():
        def step(info):
            start = time.monotonic()
            agent_a_in.set()
            agent = a
            agent.allreduce(x)
            waited["a"] = (start, time.monotonic())
        return a.execute(step)

    def late():
        def step(info):
            agent_a_in.wait(30)
            time.sleep(0.5)  # a's allreduce blocks all this time
            b.allreduce(y)
        return b.execute(step)

    agent_a_in = threading.Event()
    t = threading.Thread(target=counter, daemon=True)
    t.start()
    on_threads(early, late)
    done.set()
    start, end = waited["a"]
    during = [s for s in ticks if start < s < end]
    assert end - start >= 0.3, f"a's allreduce did not wait ({end - start:.3f} s)"
    assert len(during) >= 20, f"another thread ran only {len(during)} times during a blocking allreduce"


def test_library_not_found_is_one_sentence():
    env = dict(os.environ, FTL_LIBRARY="/nonexistent/libftl.so")
    code = "import ftl\ntry:\n    ftl.Agent()\nexcept ftl.LibraryNotFoundError as e:\n    print('ERR', e)\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERR ftl: libftl.so not found") and "FTL_LIBRARY" in out.stdout, out.stdout
    assert out.stdout.count("\n") == 1


def test_versions_agree():
    assert ftl.library_version() == ftl.__version__


def test_async_allreduces_complete_in_order_with_the_sums(pair):
    a, b = pair
    sizes = [10, 100000, 3, 5000]

    def worker(agent, r):
        xs = [np.full(n, float(r + 1 + i), dtype=np.float32) for i, n in enumerate(sizes)]

        def step(info):
            reqs = [agent.allreduce_async(x) for x in xs]
            done_before = reqs[-1].wait() is xs[-1]
            assert all(q.done() for q in reqs), "a later request completed before an earlier one"
            return done_before and all(q.wait() is x for q, x in zip(reqs, xs))
        return agent.execute(step)

    assert on_threads(lambda: worker(a, 0), lambda: worker(b, 1)) == [True, True]


def test_a_request_the_step_did_not_wait_for_is_done_at_the_steps_end(pair):
    """A request left outstanding by its step is waited for at the step's end (C may write into x until
    then, and the next view's communicator could not answer for it): afterwards, outside any step, done()
    and wait() answer from its outcome, never a crash, a hang or a refusal."""
    a, b = pair

    def worker(agent, r):
        x = np.full(1000, float(r + 1), dtype=np.float32)
        req = agent.execute(lambda info: agent.allreduce_async(x))
        return req.done(), req.wait() is x, float(x[0])

    assert on_threads(lambda: worker(a, 0), lambda: worker(b, 1)) == [(True, True, 3.0)] * 2


def test_error_feedback_starts_from_zero_on_a_new_view(run_dir):
    """A bf16-ef GradientBucket's residual belongs to the communicator it was accumulated under: after a join
    (a new view, a new communicator) the survivor's residual is zero like the joiner's, so their first
    reduction is the plain bf16 one; the next one feeds the residual back again. x = 1 + 3 * 2^-10 is under
    half a bf16 ulp above 1: alone it rounds to 1 and leaves 3 * 2^-10, which a second call would add and
    round up to 1 + 2^-7 (so a residual carried over the join would make the first sum 2 + 2^-7, not 2)."""
    first = free_port()
    common = dict(insecure=1, run_dir=run_dir, min_workers=1, settle_ms=100, log_level="warn",
                  seeds=f"127.0.0.1:{first}", collective_timeout_ms=20000)
    a = ftl.Agent(name="e0", bind=f"127.0.0.1:{first}", **common).start()
    b = ftl.Agent(name="e1", bind=f"127.0.0.1:{free_port()}", **common)
    alone = threading.Event()

    def reduce_twice(agent, bucket, info):
        if info.world_size < 2:
            return None
        return [float(bucket.allreduce(np.full(4, 1 + 3 * 2.0 ** -10, dtype=np.float32))[0]) for _ in range(2)]

    def run_a():
        fed = ftl.GradientBucket(a, "bf16-ef")
        a.execute(lambda info: fed.allreduce(np.full(4, 1 + 3 * 2.0 ** -10, dtype=np.float32)))  # world of one
        alone.set()
        while (out := a.execute(lambda info: reduce_twice(a, fed, info))) is None:
            pass
        return out

    def run_b():
        alone.wait(30)
        b.start()
        fed = ftl.GradientBucket(b, "bf16-ef")
        while (out := b.execute(lambda info: reduce_twice(b, fed, info))) is None:
            pass
        return out

    try:
        results = on_threads(run_a, run_b, timeout=90)
    finally:
        b.close()
        a.close()
    assert results[0] == results[1] == [2.0, 2.0 + 2 * 2.0 ** -7], results


def test_gradient_buckets_refuse_what_compression_cannot_do_and_restart_the_residual_on_a_new_length(run_dir):
    """Compression with reproducible mode is refused naming both settings; a bf16-ef bucket given a buffer of
    another length starts its residual from zero (the old one belonged to other data); float64 is refused."""
    with pytest.raises(ftl.ConfigError, match="FTL_COMM_COMPRESS.*FTL_REPRODUCIBLE"):
        ftl.Agent(insecure=1, run_dir=run_dir, log_level="warn", bind=f"127.0.0.1:{free_port()}",
                  comm_compress="bf16", global_batch=64, max_batch_per_rank=8, reproducible=1)
    with pytest.raises(ftl.ConfigError, match="FTL_COMM_COMPRESS=fp8"):
        ftl.Agent(insecure=1, run_dir=run_dir, log_level="warn", comm_compress="fp8")
    with ftl.Agent(insecure=1, run_dir=run_dir, log_level="warn", bind=f"127.0.0.1:{free_port()}",
                   comm_compress="bf16-ef") as agent:
        fed = ftl.GradientBucket(agent)  # the job's setting
        assert fed.compress == "bf16-ef" and ftl.GradientBucket(agent, "off").compress == "off"
        with pytest.raises(ftl.ConfigError, match="compress='fp8'"):
            ftl.GradientBucket(agent, "fp8")
        value = 1 + 3 * 2.0 ** -10  # under half a bf16 ulp above 1: rounds to 1 once, not twice in a row

        def step(info):
            with pytest.raises(ftl.Error, match="float32"):
                fed.allreduce(np.ones(4))
            return [float(fed.allreduce(np.full(n, value, dtype=np.float32))[0]) for n in (4, 8, 8)]
        assert agent.execute(step) == [1.0, 1.0, 1.0 + 2.0 ** -7]
