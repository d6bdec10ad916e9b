"""ftlrun: start N local workers of an ftl training program, the way torchrun --nproc-per-node does.

    ftlrun --nproc 4 train.py --lr 0.1            # or: python -m ftl.run --nproc 4 train.py --lr 0.1
    ftlrun --nproc 4 --no-python ./ftl-train-example

Why a launcher at all: every ftl worker needs a unique name, its own gossip address, seeds to find the
others, and the job's gossip key. On Kubernetes the Deployment gives them (deploy/k8s); on a plain machine
this fills them in, starts the workers, and stays in front of them as one job: it shows their output line
by line, prefixed by the worker's name, forwards SIGINT and SIGTERM (SIGHUP as SIGTERM) to every worker,
and exits 0 when the job finished. A worker that dies (kill -9 is how elastic jobs are tested) does not
stop the others: the job goes on without it, and the launcher names it at the end.

What each worker gets (the launcher owns these; values already in the environment are replaced):
  FTL_NAME         <--name-prefix>-<i>; the prefix defaults to the host name, so names stay unique
                   across machines
  FTL_REPLICA*     with --replica-per-node: the replica <--name-prefix>, index <i>, size --nproc
  FTL_BIND         <--host>:<port>, a free port the launcher picks (below the kernel's ephemeral range),
                   or --base-port P giving P, P+1, ...
  FTL_ADVERTISE    <--advertise-host>:<port> when given (required when --host is a wildcard such as 0.0.0.0)
  FTL_SEEDS        --seeds (or FTL_SEEDS from the environment) followed by the first local workers'
                   addresses: every worker can find the others whichever starts first
  FTL_CUDA_DEVICE  <i>, the local index: one GPU per worker under FTL_COMM=nccl (pick the GPUs with
                   CUDA_VISIBLE_DEVICES)
  FTL_METRICS_ADDR only when the environment sets it to host:P: worker i serves /metrics on host:P+i
and, unless the environment already has them (then they pass through untouched, like every other FTL_*):
  FTL_GOSSIP_KEY_FILE  a fresh key (32 random bytes, base64, as `ftlctl keygen` makes) that no file on
                   disk holds: /proc/self/fd/N, a memory file each worker inherits (gone with the launcher,
                   even after kill -9), unless FTL_GOSSIP_KEY, FTL_GOSSIP_KEY_FILE or FTL_INSECURE=1 is
                   set; --key-file FILE uses FILE (yours, mode 600: anything else is refused)
  FTL_RUN_DIR      a private directory (the workers' control sockets: `ftlctl --run-dir DIR --name
                   NAME status`); removed when the launcher exits
  PYTHONUNBUFFERED 1 for Python workers, so their lines show as they are printed
  OMP_NUM_THREADS  1 when more than one worker runs here (a note says so), as torchrun sets it

torchrun's habits (_run_torchrun.py says why each is what it is): --nproc-per-node (or --nproc_per_node)
is --nproc; --nnodes N or MIN:MAX is the job's size in machines, which ftl takes in workers: times
--nproc it sets FTL_MIN_WORKERS, FTL_MAX_WORKERS and, for N, FTL_EXPECTED_WORKERS. Each worker gets
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, where scripts read them; ftl
has no fixed ranks, so RANK (--node-rank * --nproc + local index) and WORLD_SIZE (N or MIN, times --nproc)
are the job's intended first view, and the live ones are the agent's: agent.rank, agent.world_size,
agent.job_status(). MASTER_ADDR (the first --seeds host, or this machine) and MASTER_PORT (29500) are for a
script's own torch store; ftl uses neither (--master-addr and --master-port change them).

Across machines: make one key (`ftlrun --keygen > key`, or `ftlctl keygen > key`), copy it to every
machine, and run on each
    ftlrun --nproc K --host <this machine's IP> --key-file key --seeds <first machine's IP>:<its port> ...
(the first machine's ports: --base-port P makes them known in advance). --seeds without a shared key is
refused: workers with different keys cannot read each other's packets.

Elasticity: workers that die are dropped from the job; more workers join at any time: on this machine,
`ftlrun --join [--nproc K]` from another shell (_run_join.py: it finds the running job's seeds, key,
FTL_* settings and program in the record every launcher keeps, and names its workers apart; --job PID
when several run); from elsewhere, a launcher with --seeds pointing at a running worker, the job's key
(--key-file; for a fresh key the launcher prints the path to give, /proc/<its pid>/fd/N) and another
--name-prefix. The job waits for
FTL_MIN_WORKERS workers before its first step (1 by default: set it to N to start training with all N).
--spares K starts K more workers that wait as kept spares (FTL_SPARES=K, counted in FTL_EXPECTED_WORKERS):
they start once the others' agents answer, so that they are the youngest members, the ones the views keep
out. A spare has imported its program and joined the gossip already, so when a worker dies or leaves, or a
new one joins (another launcher), the next view takes a spare in at once (rank 0 sends it the job's
state), with no process start on the way; its RANK is -1 until then.

Exit status: 0 when the job finished, that is when a worker exited 0 (those that did not are named, each
with its status or signal, as lost on the way: an elastic job survives them, so a Kubernetes Job or a CI
step need not run it again); 1 when none did, or with --fail-on-lost-worker when any did not; 2 when the
launcher refuses its arguments (one sentence saying why), before any worker starts.

torchrun's other flags (_run_torchrun_flags.py): --standalone, --rdzv-backend, --rdzv-id, --rdzv-conf,
--max-restarts, --monitor-interval, --start-method, --event-log-handler, --role, --run-path and
--signals-to-handle are accepted and change nothing (a line says why for each); --rdzv-endpoint HOST[:PORT]
is a seed (on HOST's machine the first worker takes PORT); --shutdown-timeout is --stop-timeout and
--local-addr is --host; the log-file and filter flags, --numa-binding and --virtual-local-rank are refused,
named.
After a forwarded SIGINT or SIGTERM, workers still running --stop-timeout seconds later are killed, even
when nobody reads the launcher's output (_run_output.py says how).

This module is standalone: it does not load libftl, so it works where the library is not built."""

import argparse
import ctypes
import ipaddress
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ._run_key import Refusal, key_settings, new_key
from ._run_output import Copier, Messenger
from . import _run_join
from . import _run_torchrun_flags as torchrun_flags
from ._run_torchrun import TORCH_NAMES, job_shape, master_address, omp_threads

SEEDS_MAX = 1023          # FTL_SEEDS holds at most this many bytes (ftl_agent_config.seeds)
NAME_MAX = 63             # FTL_NAME likewise
LOCAL_SEEDS = 8           # local workers named in FTL_SEEDS: one reachable member is enough to join
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP (a closed terminal) is passed on as SIGTERM
OWNED = ("FTL_NAME", "FTL_BIND", "FTL_ADVERTISE", "FTL_CUDA_DEVICE")
# The agent's rule for FTL_NAME (agent/config.c): a name is part of the control socket's path and of log lines.
NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


# ---- addresses ------------------------------------------------------------------------------------------

def host_address(text, flag):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise Refusal(f"{flag} {text}: expected a numeric IP address such as 127.0.0.1 or 10.0.0.5")


def metrics_addr(base, i):
    """FTL_METRICS_ADDR for local worker i: the given host, the given port + i (one listener each)."""
    host, sep, port = base.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) + i < 65536:
        raise Refusal(f"FTL_METRICS_ADDR={base}: expected host:port, the first worker's; worker i gets port + i")
    return f"{host}:{int(port) + i}"


def join_host_port(host, port):
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def is_port_free(host, port):
    """True if host:port can be bound for both UDP and TCP (an agent binds both)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as u, socket.socket(family, socket.SOCK_STREAM) as t:
            u.bind((host, port))
            t.bind((host, port))
        return True
    except OSError:
        return False


def ephemeral_range():
    """The kernel's range for ports it picks itself (outgoing connections, the collectives' listeners):
    ports the launcher picks stay out of it, so nothing else takes one before its worker binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def pick_ports(host, count, base_port, avoid=None):
    """count ports on host: base_port, base_port+1, ... (each checked), or free ones picked at random, never
    avoid (MASTER_PORT, which a script's torch store may take later)."""
    if base_port is not None:
        if not 1 <= base_port <= 65536 - count:
            raise Refusal(f"--base-port {base_port}: the ports {base_port}..{base_port + count - 1} must lie "
                          f"in 1..65535")
        for port in range(base_port, base_port + count):
            if not is_port_free(host, port):
                raise Refusal(f"port {port} on {host} (from --base-port {base_port}) is in use")
        return list(range(base_port, base_port + count))
    low, high = ephemeral_range()
    pool = range(10000, low) if low - 10000 >= 4 * count else range(high + 1, 65536)
    chosen = []
    for port in random.sample(pool, min(len(pool), 50 * count)):
        if port != avoid and is_port_free(host, port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise Refusal(f"cannot find {count} free ports on {host}; give --base-port")


def resolves_beyond_loopback(seed):
    """True if the host of a host:port seed resolves to an address that is not loopback."""
    host = seed.rsplit(":", 1)[0].strip("[]")
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False  # the agent keeps re-resolving it; nothing to say now
    return any(not ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def is_this_address(host, reachable):
    """True if host (a name or an address) resolves to the address this launcher's workers are reached at."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    found = {ipaddress.ip_address(i[4][0].split("%")[0]) for i in infos}
    return reachable in found or (reachable.is_loopback and all(a.is_loopback for a in found))


def seed_list(user_seeds, local_addrs):
    seeds = list(dict.fromkeys([s.strip() for s in user_seeds if s.strip()] + local_addrs[:LOCAL_SEEDS]))
    text = ",".join(seeds)
    if len(text) > SEEDS_MAX:
        raise Refusal(f"the seeds ({len(text)} bytes) exceed FTL_SEEDS's {SEEDS_MAX}: give fewer --seeds")
    return text


# ---- what each worker runs, with which settings ---------------------------------------------------------

class Plan:
    """The workers to start: their names, addresses and environments, decided before any starts."""

    def __init__(self, args, env, private_dir):
        self.shape = job_shape(args)
        self.command = program_command(args)
        host = host_address(args.host, "--host")
        if host.is_unspecified and not args.advertise_host:
            raise Refusal(f"--host {args.host} binds every address, which is no address to reach a worker at: "
                          f"also give --advertise-host <this machine's IP>")
        advertise = host_address(args.advertise_host, "--advertise-host") if args.advertise_host else None
        reachable = advertise or host
        seeds_text = args.seeds if args.seeds is not None else env.get("FTL_SEEDS", "")
        user_seeds = [s.strip() for s in seeds_text.split(",") if s.strip()]
        if seeds_text.strip() and not user_seeds:  # the worker would refuse it; the local seeds would hide that
            given = f"--seeds {seeds_text!r}" if args.seeds is not None else f"FTL_SEEDS={seeds_text!r}"
            raise Refusal(f"{given} holds no seed: give host:port entries separated by commas, or leave it out "
                          "for a job of this machine")
        base_port = args.base_port
        if args.rdzv_endpoint:
            rdzv_host, rdzv_port = torchrun_flags.rdzv_seed(args.rdzv_endpoint)
            user_seeds.append(join_host_port(rdzv_host, rdzv_port))
            if base_port is None and is_this_address(rdzv_host, reachable):
                base_port = rdzv_port  # this machine is the endpoint: its first worker takes the port
        if reachable.is_loopback:
            remote = [s for s in user_seeds if resolves_beyond_loopback(s)]
            if remote:
                raise Refusal(f"--seeds {remote[0]} is on another machine, which workers on {reachable} cannot "
                              f"reach: give --host <this machine's IP>")
        total = self.shape.nproc + self.shape.spares
        check_name_prefix(args.name_prefix, total)
        if args.replica_per_node and self.shape.spares:
            raise Refusal(f"--replica-per-node with --spares {self.shape.spares}: a replica's workers are its shards "
                          "0..N-1 and a spare would be a shard of none; start spare replicas as another ftlrun "
                          "--join --replica-per-node")
        # --replica-per-node: this machine's workers are one replica of a sharded model (FTL_REPLICA*)
        self.replica = (args.name_prefix, self.shape.nproc) if args.replica_per_node else None
        key, self.key_note, self.pass_fds = key_settings(args, env, user_seeds)
        # where another launcher of this user reads the key (--join): never the key itself
        self.key_for_others = (f"/proc/{os.getpid()}/fd/{self.pass_fds[0]}" if self.pass_fds else
                               key.get("FTL_GOSSIP_KEY_FILE") or
                               (os.path.abspath(env["FTL_GOSSIP_KEY_FILE"]) if env.get("FTL_GOSSIP_KEY_FILE") else None))
        self.master = master_address(args, user_seeds, reachable)
        ports = pick_ports(str(host), total, base_port, avoid=self.master[1])
        self.addrs = [join_host_port(reachable, p) for p in ports]
        counts = self.shape.worker_counts()
        self.omp = omp_threads(env, total)
        shared = dict(env)
        shared.update(key, **counts, **self.omp)
        shared["FTL_SEEDS"] = seed_list(user_seeds, self.addrs)
        shared.setdefault("FTL_RUN_DIR", private_dir)
        if not args.no_python:
            shared.setdefault("PYTHONUNBUFFERED", "1")
        self.replaced = [k for k in (*OWNED, *TORCH_NAMES, *counts) if k in env]
        self.names = [f"{args.name_prefix}-{i}" for i in range(total)]
        self.envs = [self.worker_env(shared, i, host, advertise, port) for i, port in enumerate(ports)]
        self.run_dir = shared["FTL_RUN_DIR"]

    def worker_env(self, shared, i, host, advertise, port):
        """Local worker i's environment: the shared one, its own FTL_* and its torchrun variables."""
        env = {k: v for k, v in shared.items() if v is not None and k not in OWNED}
        env.update(FTL_NAME=self.names[i], FTL_BIND=join_host_port(host, port), FTL_CUDA_DEVICE=str(i))
        if advertise:
            env["FTL_ADVERTISE"] = join_host_port(advertise, port)
        if shared.get("FTL_METRICS_ADDR"):
            env["FTL_METRICS_ADDR"] = metrics_addr(shared["FTL_METRICS_ADDR"], i)
        env.update(self.shape.torch_env(i, *self.master))
        if self.replica:
            env.update(FTL_REPLICA=self.replica[0], FTL_REPLICA_INDEX=str(i), FTL_REPLICA_SIZE=str(self.replica[1]))
        return env


def check_name_prefix(prefix, nproc):
    """Refuses, before any worker starts, a prefix that would make every worker refuse its FTL_NAME."""
    if not NAME.fullmatch(prefix):
        raise Refusal(f"--name-prefix {prefix!r}: worker names (PREFIX-<i>) take A-Z a-z 0-9 . _ - only, not "
                      f"starting with '.'")
    if len(prefix) + 1 + len(str(nproc - 1)) > NAME_MAX:
        raise Refusal(f"--name-prefix {prefix}: too long for FTL_NAME ({NAME_MAX} bytes with the worker's number)")


def program_command(args):
    """The command line each worker runs; refuses a program that cannot be found."""
    if not args.program:
        raise Refusal("no program to run: give a Python script (or, with --no-python, a program) and its "
                      "arguments after the options")
    if args.no_python:
        found = shutil.which(args.program)
        if not found:
            raise Refusal(f"{args.program}: no such program (not a path to an executable file, nor on PATH)")
        return [args.program, *args.args]
    if shutil.which(args.python) is None:
        raise Refusal(f"--python {args.python}: no such interpreter")
    if args.module:
        return [args.python, "-m", args.program, *args.args]
    if not os.path.isfile(args.program):
        raise Refusal(f"{args.program}: no such Python script (use --no-python to run a program, "
                      f"-m to run a module)")
    return [args.python, args.program, *args.args]


# ---- the running workers --------------------------------------------------------------------------------

def die_with_launcher():
    """In the child: SIGTERM when the launcher dies, even by kill -9, so no worker is left orphaned."""
    try:
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


class Worker:
    def __init__(self, name, command, env, prefix, pass_fds=()):
        self.name, self.command, self.env, self.pass_fds = name, command, env, pass_fds
        self.output = Copier(prefix)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.command, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True, pass_fds=self.pass_fds,
                                     preexec_fn=die_with_launcher)

    def follow_output(self):
        self.output.follow(self.proc.stdout, sys.stdout.fileno())
        self.output.follow(self.proc.stderr, sys.stderr.fileno())

    def is_running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.is_running():
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def how_it_ended(self):
        rc = self.proc.returncode
        if rc is not None and rc < 0:
            try:
                return f"was killed by {signal.Signals(-rc).name}"
            except ValueError:
                return f"was killed by signal {-rc}"
        return f"exited with status {rc}"

    def describe(self):
        return f"{self.name} (pid {self.proc.pid}) {self.how_it_ended()}"


_messages = None  # the launcher's own lines, written by a thread of their own (_run_output.py says why)


def say(text):
    """Never blocks, so it may be called from the signal handler (the first call comes before it is set)."""
    global _messages
    if _messages is None:
        _messages = Messenger(sys.stderr.fileno())
    _messages.say(text)


class Job:
    """The workers as one job: forwards stop signals to each, reports each exit, waits for all. The last
    `spares` workers start once every other one's agent answers (its control socket in run_dir), so that they
    are the job's youngest members, the ones a view has no room for."""

    def __init__(self, workers, stop_timeout, spares=0, run_dir=None):
        self.workers, self.stop_timeout = workers, stop_timeout
        self.spares, self.run_dir = spares, run_dir
        self.stop_requested_at = None
        self.is_escalated = False

    def forward(self, sig, frame=None):
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()
        if sig == signal.SIGHUP:  # a closed terminal: the workers stop as for SIGTERM (checkpoint, leave)
            say("SIGHUP: passing SIGTERM to every running worker")
            sig = signal.SIGTERM
        else:
            say(f"{signal.Signals(sig).name}: passing it to every running worker")
        for w in self.workers:
            w.signal(sig)

    def start(self):
        first = len(self.workers) - self.spares
        for i, w in enumerate(self.workers):
            if i == first and i > 0:
                self.wait_until_answering(self.workers[:first])
            if self.stop_requested_at is not None:
                break  # a stop arrived while starting: start no more
            try:
                w.start()
            except OSError as e:
                say(f"cannot start {w.name} ({' '.join(w.command)}): {e.strerror}; stopping the others")
                self.forward(signal.SIGTERM)
                break
            say(f"worker {w.name} pid {w.proc.pid}")
        for w in self.workers:
            if w.proc:
                w.follow_output()

    def wait_until_answering(self, workers, timeout=120.0):
        """Until each worker's agent has its control socket (or the worker exited, or timeout s passed)."""
        deadline = time.monotonic() + timeout
        waiting = list(workers)
        while waiting and time.monotonic() < deadline and self.stop_requested_at is None:
            waiting = [w for w in waiting if w.is_running()
                       and not os.path.exists(os.path.join(self.run_dir, f"{w.name}.sock"))]
            time.sleep(0.05)
        if waiting:
            say(f"starting the spares though {', '.join(w.name for w in waiting)} did not answer in {timeout:g} s")

    def wait(self):
        """Waits until every started worker has exited; returns the ones that did not exit 0."""
        started = [w for w in self.workers if w.proc]
        reported = set()
        while True:
            running = [w for w in started if w.is_running()]
            for w in started:
                if w not in running and w not in reported:
                    reported.add(w)
                    if w.proc.returncode != 0 and self.stop_requested_at is None:
                        say(f"{w.describe()}; the other {len(running)} keep running")
            if not running:
                break
            if self.stop_requested_at is not None and not self.is_escalated and \
                    time.monotonic() - self.stop_requested_at > self.stop_timeout:
                say(f"{', '.join(w.name for w in running)} still running {self.stop_timeout:g} s after the stop "
                    f"signal: killing them")
                for w in running:
                    w.signal(signal.SIGKILL)
                self.is_escalated = True
            time.sleep(0.05)
        deadline = time.monotonic() + 2.0
        for w in started:
            w.output.drain(deadline)
        failed = [w for w in started if w.proc.returncode != 0]
        return failed + [w for w in self.workers if not w.proc]


# ---- the command line -----------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ftlrun", description="Start N local workers of an ftl training program (python -m ftl.run).",
        epilog="Every FTL_* setting in the environment reaches the workers; see `pydoc ftl.run` for what "
               "the launcher fills in and how to run across machines. Each worker also gets torchrun's RANK, "
               "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT: those of the job's "
               "intended first view, since ftl's ranks change with each view (read agent.rank and "
               "agent.world_size).")
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", default="1", metavar="N",
                   help="workers to start on this machine (1)")
    p.add_argument("--nnodes", metavar="N|MIN:MAX",
                   help="the job's size in machines (torchrun's flag); ftl counts workers, so times --nproc it sets "
                        "FTL_MIN_WORKERS (MIN, or N), FTL_MAX_WORKERS (MAX, or N; more workers wait as hot spares) "
                        "and, for N, FTL_EXPECTED_WORKERS (the first view waits for all N machines' workers); "
                        "unset: the FTL_* settings of the environment rule")
    p.add_argument("--spares", type=int, default=0, metavar="K",
                   help="K more workers here that wait as kept spares (FTL_SPARES=K, counted in "
                        "FTL_EXPECTED_WORKERS); they start once the others' agents answer, and a view takes one "
                        "in when a worker dies or leaves or a new one joins; a spare's RANK is -1")
    p.add_argument("--replica-per-node", action="store_true",
                   help="this machine's --nproc workers are one replica of a sharded model (FSDP/HSDP inside it): "
                        "FTL_REPLICA=<name prefix>, FTL_REPLICA_INDEX=<local index>, FTL_REPLICA_SIZE=--nproc; a "
                        "view then holds whole replicas only, and a replica that loses a worker waits out")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0, metavar="R",
                   help="this machine's index in the first view, below N or MIN: only for RANK (0)")
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", metavar="HOST",
                   help="MASTER_ADDR for the script's own torch store; ftl does not use it (the first --seeds "
                        "host, else --advertise-host or --host)")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, metavar="PORT",
                   help="MASTER_PORT likewise; nothing of ftl listens there (29500, as torchrun)")
    p.add_argument("--name-prefix", metavar="PREFIX",
                   help="worker names are PREFIX-0, PREFIX-1, ... (the host name)")
    p.add_argument("--join", action="store_true",
                   help="add the workers to the job another ftlrun of yours runs on this machine: its seeds, gossip "
                        "key, FTL_* settings and, if none is given, its program; names <its prefix>-j<this "
                        "launcher's pid>-<i>")
    p.add_argument("--job", metavar="PID", help="with --join, when several jobs run: the pid of one of its ftlruns")
    p.add_argument("--host", "--local-addr", "--local_addr", default="127.0.0.1",
                   help="IP address the workers bind (127.0.0.1); torchrun's --local-addr is this")
    p.add_argument("--advertise-host", metavar="IP", help="IP address other machines reach them at (--host)")
    p.add_argument("--base-port", type=int, metavar="P", help="gossip ports P, P+1, ... (free ports picked)")
    p.add_argument("--seeds", metavar="HOST:PORT,...", help="workers of the job running elsewhere")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", dest="rdzv_endpoint", metavar="HOST[:PORT]",
                   help="torchrun's: a seed, HOST:PORT (29400), given alike on every machine; the machine at HOST "
                        "starts its first worker on PORT (unless --base-port)")
    p.add_argument("--key-file", metavar="FILE", help="the job's gossip key (a fresh one unless set)")
    p.add_argument("--no-python", action="store_true", help="run PROGRAM itself, not a Python script")
    p.add_argument("-m", "--module", action="store_true", help="run PROGRAM as a module (python -m)")
    p.add_argument("--python", default=sys.executable, metavar="PATH", help="interpreter (this one)")
    p.add_argument("--stop-timeout", "--shutdown-timeout", "--shutdown_timeout", dest="stop_timeout", type=float,
                   default=30.0, metavar="S",
                   help="after forwarding SIGINT/SIGTERM, kill workers still running after S seconds (30)")
    p.add_argument("--keygen", action="store_true", help="print a new gossip key and exit")
    p.add_argument("--fail-on-lost-worker", action="store_true",
                   help="exit 1 when any worker did not exit 0, even if the job finished on the others")
    torchrun_flags.add_to(p)
    p.add_argument("program", nargs="?", help="the Python script (or program, with --no-python)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = p.parse_args(argv)
    args.name_prefix_given = args.name_prefix is not None
    if args.name_prefix is None:
        args.name_prefix = socket.gethostname()
    if args.no_python and args.module:
        p.error("--no-python and -m exclude each other")
    if not 0 <= args.stop_timeout < float("inf"):
        p.error(f"--stop-timeout {args.stop_timeout:g}: expected seconds, 0 or more")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.keygen:
        print(new_key())
        return 0
    refused = torchrun_flags.refusal(args)
    if refused:
        say(refused)
        _messages.flush(2.0)
        return 2
    for note in torchrun_flags.notes(args):
        say(note)
    private_dir = tempfile.mkdtemp(prefix="ftlrun-")
    recorded = None
    try:
        try:
            env = dict(os.environ)
            joined = _run_join.apply(args, env) if args.join else None
            plan = Plan(args, env, private_dir)
        except Refusal as e:
            say(str(e))
            return 2
        try:
            recorded = _run_join.record(plan, joined["job"] if joined else os.getpid())
        except (Refusal, OSError) as e:  # the job runs; only --join from another shell will not find it
            say(f"not recorded for ftlrun --join: {e}")
        if joined:
            say(f"joining the job of ftlrun {joined['pid']} ({' '.join(joined['command'])})")
        return run(args, plan)
    finally:
        shutil.rmtree(private_dir, ignore_errors=True)
        if recorded:
            try:
                os.unlink(recorded)
            except OSError:
                pass
        if _messages is not None:
            _messages.flush(2.0)  # bounded: a stderr nobody reads does not keep the launcher


def run(args, plan):
    for name in plan.replaced:
        say(f"{name} from the environment is replaced: the launcher sets it for each worker")
    width = max(len(n) for n in plan.names)
    workers = [Worker(n, plan.command, e, f"[{n}]".ljust(width + 3), plan.pass_fds)
               for n, e in zip(plan.names, plan.envs)]
    where = ", ".join(f"{w.name} at {a}" for w, a in zip(workers, plan.addrs))
    say(f"{len(workers)} workers of {' '.join(plan.command)}: {where}; control sockets in {plan.run_dir}"
        + (f"; {plan.key_note}" if plan.key_note else ""))
    if plan.omp:
        say(f"OMP_NUM_THREADS=1 for each of the {len(workers)} workers on this machine, as torchrun sets it, so "
            f"their threads do not overload it; set OMP_NUM_THREADS to tune it")
    if plan.shape.spares:
        say(f"the last {plan.shape.spares} of them wait as kept spares (FTL_SPARES={plan.shape.spares}); they start "
            f"once the others answer")
    job = Job(workers, args.stop_timeout, plan.shape.spares, plan.run_dir)
    previous = {sig: signal.signal(sig, job.forward) for sig in STOP_SIGNALS}
    try:
        job.start()
        failed = job.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return outcome(workers, failed, args.fail_on_lost_worker)


def outcome(workers, failed, fail_on_lost_worker):
    """The launcher's last line and exit status. The job finished when a worker finished it (exited 0): the
    others were lost on the way (killed, crashed), which an elastic job survives, so the launch succeeded,
    and each lost worker is named with how it ended. It failed when none exited 0 (or, with
    --fail-on-lost-worker, when any did not)."""
    if not failed:
        say(f"all {len(workers)} workers exited 0")
        return 0
    lost = "; ".join(w.describe() if w.proc else f"{w.name} did not start" for w in failed)
    finished = len(workers) - len(failed)
    if finished and not fail_on_lost_worker:
        say(f"the job finished: {finished} of {len(workers)} workers exited 0, {len(failed)} lost on the way: {lost} "
            f"(--fail-on-lost-worker makes this exit 1)")
        return 0
    say(f"{len(failed)} of {len(workers)} workers failed: {lost}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
