"""A training process whose PyTorch DataLoader forks its workers (no exec) still dies visibly. The workers
inherit every socket of the process; the fork handler (base/fork_fds.h) closes the agent's and the comm's
copies in each worker as it is born, so after kill -9 of the process, while the workers still live, its
ports refuse (UDP and TCP: what lets a peer declare it dead by refusal) and a peer declares it dead. With
the copies kept, the workers would hold both ports open until they notice their parent is gone."""
import os
import signal
import socket
import subprocess
import sys
import time

import ftl
from conftest import free_port

WORKER = r"""
import sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
import ftl

agent = ftl.Agent(name="w1", bind=sys.argv[1], seeds=sys.argv[2], insecure=1, run_dir=sys.argv[3],
                  log_level="warn").start()
loader = DataLoader(TensorDataset(torch.arange(64.0)), batch_size=8, num_workers=2, persistent_workers=True,
                    multiprocessing_context="fork")
batches = iter(loader)
next(batches)
print("workers", *[w.pid for w in batches._workers], flush=True)
time.sleep(300)
"""


def wait_for(what, cond, timeout):
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < timeout, f"timed out after {timeout} s waiting for: {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def status_of(agent, name):
    return next((m["status"] for m in agent.members() if m["name"] == name), None)


def refuses(port):
    """Whether both of the agent's ports on 127.0.0.1 refuse: a TCP connect, and a UDP datagram (ICMP)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(2)
        u.connect(("127.0.0.1", port))
        try:
            u.send(b"?")
            u.recv(1)
        except ConnectionRefusedError:
            return True
        except socket.timeout:
            return False
    return False


def test_dataloader_fork_workers_do_not_hide_a_kill9(run_dir):
    seed = f"127.0.0.1:{free_port()}"
    observer = ftl.Agent(name="p0", bind=seed, insecure=1, run_dir=run_dir, log_level="warn").start()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", WORKER, f"127.0.0.1:{port}", seed, run_dir],
                            stdout=subprocess.PIPE, text=True)
    workers = []
    try:
        line = proc.stdout.readline()
        assert line.startswith("workers "), f"the training process did not start its loader: {line!r}"
        workers = [int(p) for p in line.split()[1:]]
        wait_for("p0 sees w1 alive", lambda: status_of(observer, "w1") == "alive", 30)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        took = wait_for("p0 declares w1 dead", lambda: status_of(observer, "w1") == "dead", 30)
        for pid in workers:
            os.kill(pid, 0)  # the DataLoader workers still live, holding what they inherited
        is_refused = refuses(port)
        print(f"kill -9 with {len(workers)} forked DataLoader workers alive: w1 dead after {took:.2f} s; its "
              f"ports refuse: {is_refused}; deaths by path: {observer.status()['counters']['deaths']}")
        assert is_refused, "the dead process's ports are still open: its forked workers kept them"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        observer.close()
