"""Misuses of the Python API that crashed the process (issue 24, item 6), one per run, each in a process of
its own: `python crash_scenarios.py NAME`. A scenario exits 0 and prints `refused: <the sentence>` when ftl
turned the misuse into a Python exception (or `survived: ...` where there is nothing to refuse); a
segfault shows as a negative exit status in test_crashes.py, which runs them."""
import gc
import os
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from conftest import free_port, on_threads  # noqa: E402

import ftl  # noqa: E402

BIG = 16 << 20  # float32 elements: 64 MiB, allocated by mmap, so a freed buffer is unmapped at once


def agents(run_dir, n, min_workers, start=True):
    first = free_port()
    common = dict(insecure=1, run_dir=run_dir, min_workers=min_workers, settle_ms=100, log_level="error",
                  seeds=f"127.0.0.1:{first}", collective_timeout_ms=10000)
    out = [ftl.Agent(name=f"c{i}", bind=f"127.0.0.1:{first if i == 0 else free_port()}", **common)
           for i in range(n)]
    if start:
        for a in out:
            a.start()
    return out


def concurrent_execute(run_dir):
    """Two threads call execute on one agent at once, 30 times each: a call made while the other thread's
    runs is refused with a sentence; the others run. (Before: a segfault in about one run of three, else
    one thread's step ran with the other's state: 'called outside a step', 'NoneType is not callable'.)"""
    (a,) = agents(run_dir, 1, 1)

    def loop():
        failures, sums = [], 0.0
        for _ in range(30):
            try:
                sums += a.execute(lambda info: float(a.allreduce(np.ones(100000, dtype=np.float32)).sum()))
            except Exception as e:  # noqa: BLE001 (every failure is checked below)
                failures.append(repr(e))
        return failures, sums
    try:
        results = on_threads(loop, loop)
    finally:
        a.close()
    failures = sum((f for f, _ in results), [])
    ran = sum(s for _, s in results) / 100000
    assert failures and all("already running" in f for f in failures), failures[:3]
    assert ran + len(failures) == 60, (ran, len(failures))
    return f"refused: {len(failures)} of 60 calls; {failures[0]}"


def close_during_execute(run_dir):
    """close() from another thread while a step runs: refused (it would free the agent under the step)."""
    (a,) = agents(run_dir, 1, 1)
    inside = threading.Event()

    def slow_step(info):
        inside.set()
        time.sleep(0.5)
        return float(a.allreduce(np.ones(1000, dtype=np.float32))[0])

    def close_meanwhile():
        inside.wait(10)
        try:
            a.close()
            return "closed"
        except ftl.Error as e:
            return str(e)
    try:
        ran, refused = on_threads(lambda: a.execute(slow_step), close_meanwhile)
    finally:
        a.close()
    assert ran == 1.0 and "close() while execute() runs" in refused, (ran, refused)
    return f"refused: {refused}"


def _pair_step(run_dir, step_of):
    """Two agents of one job, each on its own thread, run one step made by step_of(agent, rank)."""
    pair = agents(run_dir, 2, 2)
    try:
        return on_threads(*[lambda a=a, r=r: a.execute(step_of(a, r)) for r, a in enumerate(pair)], timeout=60)
    finally:
        for a in pair:
            a.close()


def dropped_request(run_dir):
    """A 64 MiB allreduce_async whose Request (and array) is dropped without wait(): the request keeps the
    memory alive until it is done; the step's end waits for it."""
    def step_of(agent, rank):
        def step(info):
            if rank == 1:
                time.sleep(0.5)  # rank 0's request waits for this one, its buffer long dropped
            agent.allreduce_async(np.ones(BIG, dtype=np.float32))
            gc.collect()
            return np.ones(BIG, dtype=np.float32).sum()  # memory reuse, where the dropped buffer was
        return step
    return f"survived: {_pair_step(run_dir, step_of)}"


def set_during_async(run_dir):
    """tensor.set_() while its allreduce is in flight: the old storage stays alive until the request is
    done, and wait() says the result went there."""
    import torch

    def step_of(agent, rank):
        def step(info):
            if rank == 1:
                time.sleep(0.5)
            x = torch.ones(BIG)
            req = agent.allreduce_async(x)
            x.set_(torch.zeros(4))
            gc.collect()
            torch.ones(BIG).sum()
            try:
                req.wait()
                return "waited"
            except ftl.Error as e:
                return str(e)
        return step
    outcomes = _pair_step(run_dir, step_of)
    assert all("storage" in o for o in outcomes), outcomes
    return f"refused: {outcomes[0]}"


def bucket_closed_in_flight(run_dir):
    """GradientBucket.close() while its allreduce_async runs (C widens the result through the bucket when
    the request is consumed): refused until the request is done."""
    def step_of(agent, rank):
        bucket = ftl.GradientBucket(agent, "bf16")

        def step(info):
            if rank == 1:
                time.sleep(0.5)
            x = np.ones(BIG, dtype=np.float32)
            req = bucket.allreduce_async(x)
            try:
                bucket.close()
                return "closed"
            except ftl.Error as e:
                return str(e)
            finally:
                req.wait()
                bucket.close()
        return step
    outcomes = _pair_step(run_dir, step_of)
    assert all("in flight" in o for o in outcomes), outcomes
    return f"refused: {outcomes[0]}"


def set_registered_then_joiner(run_dir):
    """set_() on a registered tensor, then a joiner: the next execute refuses (rank 0 would have sent the
    joiner memory that is gone)."""
    import torch
    a, b = agents(run_dir, 2, 1, start=False)
    w = torch.ones(BIG)
    a.register("w", w)
    b.register("w", torch.zeros(BIG))
    a.start()
    t = threading.Thread(target=lambda: _execute_until_refused(b), daemon=True)
    try:
        a.execute(lambda info: w.set_(torch.full((BIG,), 2.0)))
        gc.collect()
        b.start()
        t.start()
        deadline = time.monotonic() + 30
        while a.job_status()["world_size"] < 2 and time.monotonic() < deadline:
            a.execute(lambda info: None)
        return "ran: no refusal"
    except ftl.Error as e:
        return f"refused: {e}"
    finally:
        a.close()
        if t.is_alive():
            t.join(30)
        b.close()


def _execute_until_refused(agent):
    try:
        agent.execute(lambda info: None)
    except ftl.Error:
        pass


SCENARIOS = {f.__name__: f for f in (concurrent_execute, close_during_execute, dropped_request, set_during_async,
                                     bucket_closed_in_flight, set_registered_then_joiner)}

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(SCENARIOS[sys.argv[1]](d), flush=True)
