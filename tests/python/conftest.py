"""Shared pieces of the Python tests: free loopback ports, and a pair of agents in one process (two
workers of one job, each on its own thread) so that collectives between them need no second process."""
import os
import sys
import threading

import pytest

import ftl


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "agent"))
from cluster import free_port  # noqa: E402  (below the ephemeral range: no race with other sockets)


@pytest.fixture
def run_dir(tmp_path):
    return str(tmp_path)


def two_agents(run_dir, prefix="p", **settings):
    """Two agents of one job (tcp), seeds pointing at the first, not started (register state first);
    settings override the defaults below."""
    first = free_port()
    common = {**dict(insecure=1, run_dir=run_dir, min_workers=2, settle_ms=100, log_level="warn",
                     seeds=f"127.0.0.1:{first}", collective_timeout_ms=20000), **settings}
    return [ftl.Agent(name=f"{prefix}0", bind=f"127.0.0.1:{first}", **common),
            ftl.Agent(name=f"{prefix}1", bind=f"127.0.0.1:{free_port()}", **common)]


@pytest.fixture
def pair(run_dir):
    """Two started agents of one job (two_agents); closed at the end."""
    agents = two_agents(run_dir)
    for a in agents:
        a.start()
    yield agents
    for a in agents:
        a.close()


def on_threads(*calls, timeout=60.0):
    """Runs each call on its own thread; returns their results, or raises the first exception. A call
    still running after timeout fails the test (a blocking call that held the GIL would hang here)."""
    results, errors = [None] * len(calls), []

    def run(i, fn):
        try:
            results[i] = fn()
        except BaseException as e:  # reported to the test below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, fn), daemon=True) for i, fn in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), f"a call did not return within {timeout} s"
    if errors:
        raise errors[0]
    return results
