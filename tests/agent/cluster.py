"""A cluster of real ftl-agent processes on loopback, for the multi-process tests.

Each agent is its own process with its own ports and control socket in a private run directory; the
harness talks to them only through `ftlctl --json`, as an operator would. Children die with the test
(PR_SET_PDEATHSIG) and every agent is SIGKILLed when the cluster is closed, so a failing or hung test
leaves nothing behind."""

import ctypes
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def ephemeral_low():
    """The first port of the kernel's ephemeral range: ports below it are never handed out to
    connect() or bind(0), so a port picked there cannot be taken between the pick and the agent's bind."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_handed_out = set()  # ports free_port already gave: the agent given one may not have bound it yet


def free_port(host="127.0.0.1"):
    """A port free for both UDP and TCP on host (the agent binds both), below the ephemeral range, and never
    one this process handed out before (CI once gave two agents of one test the same port: the first had not
    bound it yet when the second was picked)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    high = max(ephemeral_low() - 1, 12000)
    for _ in range(200):
        port = random.randint(10000, high)
        if port in _handed_out:
            continue
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as u, socket.socket(family, socket.SOCK_STREAM) as t:
                u.bind((host, port))
                t.bind((host, port))
                _handed_out.add(port)
                return port
        except OSError:
            continue
    raise RuntimeError("no free port")


class Agent:
    def __init__(self, cluster, name, port, env, host="127.0.0.1"):
        self.cluster, self.name, self.port, self.env = cluster, name, port, env
        self.addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.log = os.path.join(cluster.dir, f"{name}.log")
        self.socket = os.path.join(cluster.dir, f"{name}.sock")
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.cluster.agent_bin], env=self.env, stdout=log, stderr=log,
                                         preexec_fn=_die_with_parent)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def is_running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


class Cluster:
    member_class = Agent  # what add() starts; a subclass may start other programs built on the agent

    def __init__(self, agent_bin, ctl_bin, key=None, profile="train"):
        self.agent_bin, self.ctl_bin, self.profile = agent_bin, ctl_bin, profile
        self.dir = tempfile.mkdtemp(prefix="ftl-agent-test-")
        self.key = key or self.keygen()
        self.agents = {}
        self.seed = None

    def keygen(self):
        return subprocess.run([self.ctl_bin, "keygen"], check=True, capture_output=True, text=True).stdout.strip()

    def add(self, name, key=None, seed=None, start=True, host="127.0.0.1", **extra):
        port = free_port(host)
        bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        env = dict(os.environ, FTL_NAME=name, FTL_BIND=bind, FTL_RUN_DIR=self.dir,
                   FTL_GOSSIP_KEY=key or self.key, FTL_PROFILE=self.profile, FTL_LOG_LEVEL="info")
        if seed or self.seed:
            env["FTL_SEEDS"] = seed or self.seed
        env.update({k: str(v) for k, v in extra.items()})
        agent = self.member_class(self, name, port, env, host)
        if self.seed is None:
            self.seed = agent.addr
        self.agents[name] = agent
        if start:
            agent.start()
        return agent

    def restart(self, name):
        old = self.agents[name]
        if old.is_running():
            old.signal(signal.SIGKILL)
            old.proc.wait()
        again = self.member_class(self, name, old.port, old.env)
        self.agents[name] = again
        again.start()
        return again

    def ctl(self, agent, *args, timeout=15):
        r = subprocess.run([self.ctl_bin, "--socket", agent.socket, *args], capture_output=True, text=True,
                           timeout=timeout)
        return r

    def status(self, agent):
        r = self.ctl(agent, "status", "--json")
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def view(self, agent):
        """{member name: (status, generation)} as agent sees it, or None if it does not answer."""
        s = self.status(agent)
        if s is None:
            return None
        return {m["name"]: (m["status"], m["generation"]) for m in s["members"]}

    def running(self, exclude=()):
        return [a for a in self.agents.values() if a.is_running() and a.name not in exclude]

    def close(self):
        for a in self.agents.values():
            if a.proc and a.proc.poll() is None:
                a.proc.send_signal(signal.SIGCONT)
                a.proc.kill()
                a.proc.wait()


def wait_until(what, cond, timeout, step=0.05):
    """Polls cond() until true; returns the seconds it took, or raises naming what did not happen."""
    start = time.monotonic()
    while True:
        if cond():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for: {what}")
        time.sleep(step)
