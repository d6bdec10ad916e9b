"""A Python joiner that registers one more tensor than the job is refused alone (issue 24, item 1): its
execute() raises ftl.Error with code REFUSED naming the tensor, and the job's two workers never stop
stepping. Three real agents in one process, on threads (loopback, real sockets)."""
import threading
import time

import numpy as np
import torch

import ftl
from conftest import free_port


def test_a_joiner_with_one_more_tensor_is_refused_and_the_job_goes_on(run_dir):
    first = free_port()
    common = dict(insecure=1, run_dir=run_dir, min_workers=2, settle_ms=100, log_level="warn",
                  seeds=f"127.0.0.1:{first}", collective_timeout_ms=20000)
    job = [ftl.Agent(name=f"j{i}", bind=f"127.0.0.1:{first if i == 0 else free_port()}", **common) for i in range(2)]
    steps = [0, 0]
    errors = []
    stop = threading.Event()

    def train(i, agent):
        params = torch.zeros(64)
        agent.register("params", params)
        try:
            while not stop.is_set():
                agent.execute(lambda info: params.add_(agent.allreduce(torch.ones(64))))
                steps[i] += 1
        except BaseException as e:  # the job must never stop: reported below (the leave at the end aside)
            if not stop.is_set():
                errors.append(e)

    for a in job:
        a.start()
    threads = [threading.Thread(target=train, args=(i, a), daemon=True) for i, a in enumerate(job)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while min(steps) < 20 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        assert min(steps) >= 20 and not errors, f"the job did not train: steps {steps}, errors {errors}"
        joiner = ftl.Agent(name="j2", bind=f"127.0.0.1:{free_port()}", **common).start()
        joiner.register("params", torch.zeros(64))
        joiner.register("extra", np.zeros(10, np.float32))
        refused = None
        try:
            joiner.execute(lambda info: None)
        except ftl.Error as e:
            refused = e
        assert refused is not None, "the joiner was not refused"
        assert refused.code == ftl.errors.REFUSED and refused.code_name == "refused by the job", refused.code
        assert "buffer 'extra' (40 bytes) is registered here but not in the job" in str(refused), str(refused)
        assert joiner.has_left
        joiner.close()
        at_refusal = list(steps)
        deadline = time.monotonic() + 60
        while min(s - a for s, a in zip(steps, at_refusal)) < 20 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        assert not errors, f"a worker of the job stopped: {errors}"
        assert min(s - a for s, a in zip(steps, at_refusal)) >= 20, f"the job stopped stepping: {at_refusal} -> {steps}"
    finally:
        stop.set()
        for a in job:  # a leave wakes a step waiting for its peer, so every thread ends before its agent closes
            a.leave()
        for t in threads:
            t.join(30)
        for a in job:
            a.close()
