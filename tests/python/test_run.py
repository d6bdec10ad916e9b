"""The launcher's promises (python/src/ftl/run.py), checked on real processes and real signals: each test
runs `python -m ftl.run` as a user would. The workers are this file itself, run as a program (see
probe() at the bottom), or the real ftl-train-example ($FTL_TRAIN_EXAMPLE) for a training job.

Run by ctest as python_launcher; by hand: PYTHONPATH=python/src python -m pytest tests/python/test_run.py"""

import base64
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.abspath(__file__)
SRC = os.path.join(os.path.dirname(HERE), "..", "..", "python", "src")
TRAIN_EXAMPLE = os.environ.get("FTL_TRAIN_EXAMPLE")
PREFIXED = re.compile(r"^\[(?P<name>[^\]]+)\] +(?P<text>.*)$")
TORCH_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
COUNT_NAMES = ("FTL_MIN_WORKERS", "FTL_MAX_WORKERS", "FTL_EXPECTED_WORKERS")
SHOWN = ("PYTHONUNBUFFERED", "OMP_NUM_THREADS", *TORCH_NAMES)  # what the probe shows besides FTL_*

sys.path.insert(0, SRC)
from ftl import run as ftlrun  # noqa: E402  (standalone: loads no libftl)

import pytest  # noqa: E402


def launcher_env(**settings):
    """This environment without any FTL_* setting of the caller's (nor what else the probe shows), plus settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FTL_") and k not in SHOWN}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    env.update({k: str(v) for k, v in settings.items()})
    return env


def ftlrun_command(*args):
    return [sys.executable, "-m", "ftl.run", *[str(a) for a in args]]


def run_ftlrun(*args, env=None, timeout=120):
    return subprocess.run(ftlrun_command(*args), env=env or launcher_env(), capture_output=True, text=True,
                          timeout=timeout)


def start_ftlrun(*args, env=None):
    return subprocess.Popen(ftlrun_command(*args), env=env or launcher_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def by_worker(text):
    """{worker name: [its lines]} from the launcher's prefixed output; the launcher's own lines skipped."""
    lines = {}
    for line in text.splitlines():
        if line.startswith("ftlrun: "):
            continue
        m = PREFIXED.match(line)
        assert m, f"a line without a worker prefix: {line!r}"
        lines.setdefault(m["name"], []).append(m["text"])
    return lines


def settings_of_workers(result):
    assert result.returncode == 0, result.stderr
    return {name: json.loads(lines[0]) for name, lines in by_worker(result.stdout).items()}


def free_ports(count):
    """count consecutive free ports on 127.0.0.1, for --base-port."""
    port = next(p for p in range(41000, 42000, 7) if all(ftlrun.is_port_free("127.0.0.1", p + i) for i in range(count)))
    return list(range(port, port + count))


def wait_for(what, cond, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for: {what}"
        time.sleep(0.05)


def is_alive(pid):
    """True while pid runs (a zombie, exited but not yet reaped by the launcher, does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_names_ports_seeds_and_key_are_filled_in_and_distinct():
    result = run_ftlrun("--nproc", 3, "--name-prefix", "job", HERE, "env", "--nproc", 9,
                        env=launcher_env(FTL_STEPS=7, FTL_NAME="ignored", FTL_CUDA_DEVICE=5))
    workers = settings_of_workers(result)
    assert sorted(workers) == ["job-0", "job-1", "job-2"]
    binds = [workers[n]["FTL_BIND"] for n in sorted(workers)]
    assert len(set(binds)) == 3 and all(re.fullmatch(r"127\.0\.0\.1:\d+", b) for b in binds)
    for i, (name, s) in enumerate(sorted(workers.items())):
        assert s["FTL_NAME"] == name                      # the prefix is the worker's own name
        assert set(s["FTL_SEEDS"].split(",")) == set(binds)
        assert s["FTL_CUDA_DEVICE"] == str(i)
        assert s["FTL_STEPS"] == "7"                      # the user's settings pass through
        assert s["PYTHONUNBUFFERED"] == "1"
        assert s["argv"] == ["--nproc", "9"]              # the script's arguments are the script's
        assert "FTL_GOSSIP_KEY" not in s and "FTL_ADVERTISE" not in s
    assert len({s["FTL_GOSSIP_KEY_FILE"] for s in workers.values()}) == 1
    assert len({s["key_file_text"] for s in workers.values()}) == 1
    assert len(base64.b64decode(workers["job-0"]["key_file_text"], validate=True)) == 32
    run_dir = workers["job-0"]["FTL_RUN_DIR"]
    assert {s["FTL_RUN_DIR"] for s in workers.values()} == {run_dir}
    assert workers["job-0"]["run_dir_mode"] == "0o700"
    assert not os.path.exists(run_dir), "the launcher's private directory outlives it"
    assert "FTL_NAME from the environment is replaced" in result.stderr


def test_replica_per_node_makes_this_machines_workers_one_replica():
    workers = settings_of_workers(run_ftlrun("--nproc", 3, "--replica-per-node", "--name-prefix", "host7", HERE,
                                             "env", env=launcher_env(FTL_REPLICA="ignored")))
    for i in range(3):
        s = workers[f"host7-{i}"]
        assert (s["FTL_REPLICA"], s["FTL_REPLICA_INDEX"], s["FTL_REPLICA_SIZE"]) == ("host7", str(i), "3")
    plain = settings_of_workers(run_ftlrun("--nproc", 2, "--name-prefix", "p", HERE, "env"))
    assert not any(k.startswith("FTL_REPLICA") for s in plain.values() for k in s)


def test_torchruns_command_line_runs_unchanged():
    """The tutorial's command line (--standalone --nproc_per_node=N script args) and torchrun's other flags
    that ask for what ftl does by design: the job starts, each ignored flag gets its one line, and
    --shutdown-timeout and --local-addr map onto ftlrun's own."""
    result = run_ftlrun("--standalone", "--nproc_per_node=2", "--rdzv-backend=c10d", "--rdzv_id", "job7",
                        "--max-restarts", "3", "--monitor-interval", "1", "--start-method", "spawn", "--role", "trainer",
                        "--run-path", "--shutdown-timeout", "5", "--local_addr", "127.0.0.1",
                        "--signals-to-handle", "SIGTERM,SIGINT", HERE, "env", "--epochs", "3")
    workers = settings_of_workers(result)
    assert sorted(workers) == [f"{socket.gethostname()}-0", f"{socket.gethostname()}-1"]
    assert {tuple(w["argv"]) for w in workers.values()} == {("--epochs", "3")}
    for flag in ("--standalone", "--rdzv-backend", "--rdzv-id", "--max-restarts", "--monitor-interval",
                 "--start-method", "--role", "--run-path", "--signals-to-handle"):
        assert f"ftlrun: torchrun's {flag} is not needed under ftl: " in result.stderr, flag


@pytest.mark.parametrize("flags, says", [
    (["--log-dir", "/tmp/x"], "--log-dir: ftlrun writes no log files"),
    (["-t", "3"], "--tee: ftlrun prints every worker's stdout and stderr"),
    (["--local_ranks_filter", "0"], "--local-ranks-filter: ftlrun prints every worker's lines"),
    (["--numa-binding", "node"], "--numa-binding: ftlrun binds no worker to a NUMA node"),
    (["--virtual-local-rank"], "--virtual-local-rank: each worker has its own LOCAL_RANK"),
    (["--standalone", "--seeds", "127.0.0.1:7946"], "--standalone is a job of this machine alone"),
    (["--rdzv-endpoint", "host:99999"], "--rdzv-endpoint host:99999: expected HOST or HOST:PORT"),
    (["--rdzv-endpoint", "127.0.0.1:29400"], "--seeds (or --rdzv-endpoint) joins workers started elsewhere"),
    (["--seeds", ",,,"], "--seeds ',,,' holds no seed"),
])
def test_torchruns_flags_that_ftl_cannot_honour_are_refused_by_name(flags, says):
    result = run_ftlrun(*flags, HERE, "env")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr


def test_rdzv_endpoint_is_a_seed_and_its_machine_starts_its_first_worker_on_its_port(tmp_path):
    """Every machine of a torchrun job gives the same --rdzv-endpoint: on the endpoint's machine the first
    worker takes its port, so the others' seed reaches it."""
    (port,) = free_ports(1)
    key = tmp_path / "key"
    key.write_text(run_ftlrun("--keygen").stdout)
    key.chmod(0o600)
    workers = settings_of_workers(run_ftlrun("--nproc", 2, "--rdzv-endpoint", f"localhost:{port}", "--key-file",
                                             key, HERE, "env"))
    binds = sorted(w["FTL_BIND"] for w in workers.values())
    assert f"127.0.0.1:{port}" in binds
    assert {w["FTL_SEEDS"].split(",")[0] for w in workers.values()} == {f"localhost:{port}"}


def test_each_worker_gets_its_own_metrics_port():
    workers = settings_of_workers(run_ftlrun("--nproc", 2, "--name-prefix", "mx", HERE, "env",
                                             env=launcher_env(FTL_METRICS_ADDR="127.0.0.1:9500")))
    assert [workers[n]["FTL_METRICS_ADDR"] for n in ("mx-0", "mx-1")] == ["127.0.0.1:9500", "127.0.0.1:9501"]


def test_each_launch_makes_a_fresh_key():
    keys = {settings_of_workers(run_ftlrun("--name-prefix", "f", HERE, "env"))["f-0"]["key_file_text"]
            for _ in range(2)}
    assert len(keys) == 2


def test_given_key_seeds_and_base_port_are_respected():
    key = ftlrun.new_key()
    port, _ = free_ports(2)
    result = run_ftlrun("--nproc", 2, "--name-prefix", "m2", "--seeds", "127.0.0.1:7001,localhost:7002",
                        "--base-port", port, HERE, "env",
                        env=launcher_env(FTL_GOSSIP_KEY=key, FTL_RUN_DIR="/tmp/elsewhere"))
    workers = settings_of_workers(result)
    assert [workers[n]["FTL_BIND"] for n in ("m2-0", "m2-1")] == [f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"]
    for s in workers.values():
        assert s["FTL_GOSSIP_KEY"] == key and "FTL_GOSSIP_KEY_FILE" not in s
        assert s["FTL_SEEDS"].split(",") == ["127.0.0.1:7001", "localhost:7002",
                                             f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"]
        assert s["FTL_RUN_DIR"] == "/tmp/elsewhere"


def test_key_file_wins_over_a_key_in_the_environment(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(ftlrun.new_key() + "\n")
    key_file.chmod(0o600)
    result = run_ftlrun("--key-file", key_file, "--seeds", "127.0.0.1:7001", HERE, "env",
                        env=launcher_env(FTL_GOSSIP_KEY=ftlrun.new_key()))
    (s,) = settings_of_workers(result).values()
    assert s["FTL_GOSSIP_KEY_FILE"] == str(key_file) and "FTL_GOSSIP_KEY" not in s
    assert s["key_file_text"] == key_file.read_text().strip()


@pytest.mark.parametrize("args, env, says", [
    (["--seeds", "127.0.0.1:7946", HERE, "env"], {}, "must share this job's gossip key: make one with `ftlrun --keygen"),
    ([HERE, "env"], {"FTL_SEEDS": "127.0.0.1:7946"}, "must share this job's gossip key"),
    (["--no-python", "no-such-program-ftl"], {}, "no-such-program-ftl: no such program"),
    (["no_such_script.py"], {}, "no_such_script.py: no such Python script"),
    (["--host", "0.0.0.0", HERE, "env"], {}, "also give --advertise-host"),
    (["--key-file", "/nonexistent/key", HERE, "env"], {}, "--key-file /nonexistent/key: cannot read it"),
    (["--name-prefix", "../x", HERE, "env"], {}, "--name-prefix '../x': worker names (PREFIX-<i>) take A-Z"),
    (["--name-prefix", 'a"b', HERE, "env"], {}, "--name-prefix 'a\"b': worker names"),
    (["--name-prefix", "a b", HERE, "env"], {}, "--name-prefix 'a b': worker names"),
    (["--name-prefix", ".hidden", HERE, "env"], {}, "not starting with '.'"),
    (["--nnodes", "0", HERE, "env"], {}, "--nnodes 0: expected N (a job of N nodes) or MIN:MAX (1 <= MIN <= MAX)"),
    (["--nnodes", "3:2", HERE, "env"], {}, "--nnodes 3:2: expected N (a job of N nodes) or MIN:MAX"),
    (["--nnodes", "two", HERE, "env"], {}, "--nnodes two: expected N (a job of N nodes) or MIN:MAX"),
    (["--nnodes", "1:", HERE, "env"], {}, "--nnodes 1:: expected N (a job of N nodes) or MIN:MAX"),
    (["--nproc-per-node", "gpu", HERE, "env"], {}, "--nproc-per-node gpu: give the number of workers"),
    (["--nproc", "0", HERE, "env"], {}, "--nproc-per-node 0: give the number of workers to start here, 1 or more"),
    (["--nnodes", "2", "--node-rank", "2", HERE, "env"], {}, "--node-rank 2: the first view has 2 node(s)"),
    (["--node-rank", "1", HERE, "env"], {}, "--node-rank 1: the first view has 1 node(s) (--nnodes), so node ranks"),
    (["--master-port", "70000", HERE, "env"], {}, "--master-port 70000: expected a port, 1..65535"),
    (["--nnodes", "2000", "--nproc", "3", HERE, "env"], {}, "makes 6000 workers, over the 4096 one job can hold"),
    (["--nproc", "2", "--spares", "1", "--replica-per-node", HERE, "env"], {},
     "--replica-per-node with --spares 1: a replica's workers are its shards"),
])
def test_refusals_are_one_clear_sentence_and_start_nothing(args, env, says):
    result = run_ftlrun(*args, env=launcher_env(**env))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr


@pytest.mark.parametrize("nproc", [2, 3])
@pytest.mark.parametrize("flags, node_rank, first_nodes", [
    ([], 0, 1),
    (["--nnodes", 2, "--node-rank", 1], 1, 2),
    (["--nnodes", "2:4", "--node_rank", 1], 1, 2),     # MIN:MAX: the first view has MIN nodes
])
def test_each_worker_gets_torchruns_variables_of_the_intended_first_view(nproc, flags, node_rank, first_nodes):
    workers = settings_of_workers(run_ftlrun("--nproc-per-node", nproc, *flags, "--name-prefix", "t", HERE, "env"))
    assert sorted(workers) == [f"t-{i}" for i in range(nproc)]
    for i in range(nproc):
        assert {k: workers[f"t-{i}"].get(k) for k in TORCH_NAMES} == {
            "RANK": str(node_rank * nproc + i), "WORLD_SIZE": str(first_nodes * nproc), "LOCAL_RANK": str(i),
            "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize("flags, addr, port", [
    (["--seeds", "localhost:7001,127.0.0.1:7002"], "localhost", "29500"),   # the first machine's host
    (["--seeds", "[::1]:7001"], "::1", "29500"),
    (["--seeds", "localhost:7001", "--master-addr", "10.1.2.3", "--master_port", 6000], "10.1.2.3", "6000"),
])
def test_master_addr_is_the_first_seeds_host_unless_given(flags, addr, port):
    workers = settings_of_workers(run_ftlrun(*flags, HERE, "env", env=launcher_env(FTL_GOSSIP_KEY=ftlrun.new_key())))
    assert {(s["MASTER_ADDR"], s["MASTER_PORT"]) for s in workers.values()} == {(addr, port)}


@pytest.mark.parametrize("nproc, env, threads", [(2, {}, "1"), (3, {"OMP_NUM_THREADS": 4}, "4"), (1, {}, None)])
def test_omp_num_threads_is_1_for_several_workers_unless_the_user_set_it(nproc, env, threads):
    result = run_ftlrun("--nproc", nproc, HERE, "env", env=launcher_env(**env))
    workers = settings_of_workers(result)
    assert len(workers) == nproc and {s.get("OMP_NUM_THREADS") for s in workers.values()} == {threads}
    noted = f"OMP_NUM_THREADS=1 for each of the {nproc} workers on this machine" in result.stderr
    assert noted == (nproc > 1 and not env), result.stderr


@pytest.mark.parametrize("nproc, nnodes, env, counts", [
    (3, "2", {}, {"FTL_MIN_WORKERS": "6", "FTL_MAX_WORKERS": "6", "FTL_EXPECTED_WORKERS": "6"}),
    (2, "1:4", {}, {"FTL_MIN_WORKERS": "2", "FTL_MAX_WORKERS": "8"}),
    (2, "1:4", {"FTL_EXPECTED_WORKERS": 8},                             # MIN:MAX leaves the first view's size
     {"FTL_MIN_WORKERS": "2", "FTL_MAX_WORKERS": "8", "FTL_EXPECTED_WORKERS": "8"}),
    (2, "3", {"FTL_MIN_WORKERS": 1}, {"FTL_MIN_WORKERS": "6", "FTL_MAX_WORKERS": "6", "FTL_EXPECTED_WORKERS": "6"}),
    (2, None, {"FTL_MIN_WORKERS": 2}, {"FTL_MIN_WORKERS": "2"}),        # no --nnodes: the environment rules
])
def test_nnodes_sets_ftls_worker_counts_times_nproc(nproc, nnodes, env, counts):
    flags = ["--nnodes", nnodes] if nnodes else []
    result = run_ftlrun("--nproc_per_node", nproc, *flags, HERE, "env", env=launcher_env(**env))
    workers = settings_of_workers(result)
    assert len(workers) == nproc
    for s in workers.values():
        assert {k: s[k] for k in COUNT_NAMES if k in s} == counts
    replaced = [k for k in env if nnodes and k in counts and str(env[k]) != counts[k]]
    for name in replaced:
        assert f"{name} from the environment is replaced" in result.stderr


def test_picked_ports_leave_the_master_port_to_the_script(monkeypatch):
    """Gossip ports are picked at random; MASTER_PORT, where a script's torch store may listen, is never one."""
    others = free_ports(2)
    monkeypatch.setattr(ftlrun.random, "sample", lambda pool, k: [29500, *others])
    assert ftlrun.pick_ports("127.0.0.1", 2, None, avoid=29500) == others


def test_each_worker_is_named_with_its_pid_as_it_starts():
    result = run_ftlrun("--nproc", 3, "--name-prefix", "q", HERE, "env")
    workers = settings_of_workers(result)
    lines = [line for line in result.stderr.splitlines() if line.startswith("ftlrun: worker ")]
    assert lines == [f"ftlrun: worker q-{i} pid {workers[f'q-{i}']['pid']}" for i in range(3)]


@pytest.mark.parametrize("owner, mode, says", [
    (None, 0o644, "has mode 0644: group or others can read the cluster key; chmod 600"),
    (None, 0o640, "has mode 0640"),
    (65534, 0o600, "belongs to uid 65534, not to you"),
])
def test_a_key_file_that_is_not_private_and_yours_is_refused(tmp_path, owner, mode, says):
    key_file = tmp_path / "key"
    key_file.write_text(ftlrun.new_key() + "\n")
    key_file.chmod(mode)
    if owner is not None:
        if os.geteuid() != 0:
            pytest.skip("making a file of another owner needs root")
        os.chown(key_file, owner, -1)
    result = run_ftlrun("--key-file", key_file, HERE, "env")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr


def test_no_key_outlives_a_launcher_killed_by_sigkill(tmp_path):
    """kill -9 runs no cleanup: the fresh key must be nowhere a cleanup would have to remove it from."""
    scratch, folder = tmp_path / "tmp", tmp_path / "workers"
    scratch.mkdir()
    folder.mkdir()
    names = ["x-0", "x-1"]
    launcher = start_ftlrun("--nproc", 2, "--name-prefix", "x", HERE, "wait", folder,
                            env=launcher_env(TMPDIR=scratch))
    try:
        wait_for("every worker is ready", lambda: all((folder / f"{n}.pid").exists() for n in names))
        pids = [int((folder / f"{n}.pid").read_text()) for n in names]
        digests = {(folder / f"{n}.key").read_text() for n in names}
        launcher.kill()
        launcher.wait(10)
        wait_for("the workers follow the launcher", lambda: not any(is_alive(p) for p in pids))
    finally:
        launcher.kill()
        launcher.communicate()
    assert len(digests) == 1
    holders = [str(f) for f in scratch.rglob("*") if f.is_file() and key_digest(f.read_bytes()) in digests]
    assert holders == [], f"the key outlived the launcher in {holders}"


def test_another_launcher_joins_with_the_key_path_the_first_prints(tmp_path):
    """A fresh key is on no disk, yet a second launcher of the same user joins with it while the first runs."""
    first = start_ftlrun("--name-prefix", "a", HERE, "wait", tmp_path)
    try:
        wait_for("the worker is ready", lambda: (tmp_path / "a-0.pid").exists())
        path = re.search(r"--key-file (/proc/\d+/fd/\d+)", first.stderr.readline()).group(1)
        joiner = run_ftlrun("--name-prefix", "b", "--key-file", path, "--seeds", "127.0.0.1:7001", HERE, "env")
        (tmp_path / "stop").touch()
        first.communicate(timeout=30)
    finally:
        first.kill()
    (s,) = settings_of_workers(joiner).values()
    assert key_digest(s["key_file_text"].encode()) == (tmp_path / "a-0.key").read_text()


def test_join_takes_the_running_jobs_seeds_key_settings_and_program_and_free_names(tmp_path):
    """`ftlrun --join` (issue 43, item 3): a second launcher with no other argument runs the first's program
    with its workers as seeds, its fresh key (the same bytes), its FTL_* settings and a name of its own."""
    env = launcher_env(FTLRUN_JOBS_DIR=tmp_path / "jobs", FTL_MIN_WORKERS=3)
    first = start_ftlrun("--nproc", 2, "--name-prefix", "a", HERE, "wait", tmp_path, env=env)
    try:
        wait_for("the workers are ready", lambda: (tmp_path / "a-1.pid").exists())
        addrs = re.findall(r"a-\d at (127\.0\.0\.1:\d+)", first.stderr.readline())
        joiner = run_ftlrun("--join", "--nproc", 1, HERE, "env", env=launcher_env(FTLRUN_JOBS_DIR=tmp_path / "jobs"))
        (tmp_path / "stop").touch()
        first.communicate(timeout=30)
    finally:
        first.kill()
    assert "joining the job of ftlrun" in joiner.stderr
    ((name, s),) = settings_of_workers(joiner).items()
    assert re.fullmatch(rf"a-j\d+-0", name)
    assert s["FTL_SEEDS"].split(",")[:2] == addrs and s["FTL_MIN_WORKERS"] == "3"
    assert key_digest(s["key_file_text"].encode()) == (tmp_path / "a-0.key").read_text()
    assert not list((tmp_path / "jobs").iterdir()), "a launcher that exited left its job record"


def test_join_refuses_when_no_job_or_several_run(tmp_path):
    env = launcher_env(FTLRUN_JOBS_DIR=tmp_path / "jobs")
    none = run_ftlrun("--join", HERE, "env", env=env)
    assert none.returncode == 2 and "no ftlrun of yours runs a job on this machine" in none.stderr
    jobs = [start_ftlrun("--name-prefix", p, HERE, "wait", tmp_path, env=env) for p in ("a", "b")]
    try:
        wait_for("both jobs run", lambda: len(list((tmp_path / "jobs").glob("*.json"))) == 2)
        both = run_ftlrun("--join", HERE, "env", env=env)
        chosen = run_ftlrun("--join", "--job", jobs[1].pid, HERE, "env", env=env)
        (tmp_path / "stop").touch()
        for j in jobs:
            j.communicate(timeout=30)
    finally:
        for j in jobs:
            j.kill()
    assert both.returncode == 2 and "2 ftlrun jobs of yours run here" in both.stderr and "--job PID" in both.stderr
    ((name, _),) = settings_of_workers(chosen).items()
    assert name.startswith("b-j")


@pytest.mark.parametrize("unread", ["stdout", "stdout_and_stderr"])
def test_stop_signal_and_escalation_work_when_nobody_reads_the_output(tmp_path, unread):
    """The launcher's output is a full pipe and its workers flood theirs and ignore SIGTERM: the signal
    still reaches each, and --stop-timeout still kills them."""
    names = ["f-0", "f-1"]
    err_file = tmp_path / "err"
    with open(err_file, "wb") as err:
        launcher = subprocess.Popen(ftlrun_command("--nproc", 2, "--name-prefix", "f", "--stop-timeout", 1, HERE,
                                                   "flood", tmp_path),
                                    env=launcher_env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE if unread == "stdout_and_stderr" else err)
    pids = []
    try:
        wait_for("every worker is ready", lambda: all((tmp_path / f"{n}.pid").exists() for n in names))
        pids = [int((tmp_path / f"{n}.pid").read_text()) for n in names]
        time.sleep(1.0)  # every pipe fills: the workers and the launcher's copiers block in write()
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=20)
    finally:
        launcher.kill()
        for p in pids:
            if is_alive(p):
                os.kill(p, signal.SIGKILL)
    for n, pid in zip(names, pids):
        assert (tmp_path / f"{n}.signal").read_text() == "SIGTERM", f"{n} never got the SIGTERM"
        assert not is_alive(pid), f"{n} still runs"
    assert launcher.returncode == 1
    if unread == "stdout":
        assert "f-0, f-1 still running 1 s after the stop signal: killing them" in err_file.read_text()


def test_output_is_prefixed_by_worker_line_by_line():
    result = run_ftlrun("--nproc", 3, "--name-prefix", "p", HERE, "lines")
    assert result.returncode == 0, result.stderr
    out, err = by_worker(result.stdout), by_worker(result.stderr)
    assert sorted(out) == sorted(err) == ["p-0", "p-1", "p-2"]
    for name in out:
        assert out[name] == [f"out {name} {i}" for i in range(5)] + [f"tail {name}"]
        assert err[name] == [f"err {name} {i}" for i in range(5)]


@pytest.mark.parametrize("sig, passed", [(signal.SIGTERM, signal.SIGTERM), (signal.SIGINT, signal.SIGINT),
                                         (signal.SIGHUP, signal.SIGTERM)])  # a closed terminal stops as SIGTERM
def test_stop_signal_reaches_every_worker_and_the_launcher_exits_after_them(tmp_path, sig, passed):
    names = [f"s-{i}" for i in range(3)]
    launcher = start_ftlrun("--nproc", 3, "--name-prefix", "s", HERE, "wait", tmp_path)
    try:
        wait_for("every worker is ready", lambda: all((tmp_path / f"{n}.pid").exists() for n in names))
        launcher.send_signal(sig)
        out, err = launcher.communicate(timeout=30)
    finally:
        launcher.kill()
    assert launcher.returncode == 0, err
    for n in names:
        assert (tmp_path / f"{n}.signal").read_text() == passed.name
        assert (tmp_path / f"{n}.exited").exists(), f"the launcher exited before {n}"
        assert not is_alive(int((tmp_path / f"{n}.pid").read_text()))
    assert f"{sig.name}: passing {'it' if sig == passed else passed.name} to every running worker" in err


@pytest.mark.parametrize("strict", [False, True], ids=["finished", "fail_on_lost_worker"])
def test_a_killed_worker_leaves_the_others_running_and_is_named_at_the_end(tmp_path, strict):
    """The job finishes on the two others: the launch succeeded (exit 0), and the lost worker is named with
    how it ended; --fail-on-lost-worker makes it exit 1."""
    names = [f"k-{i}" for i in range(3)]
    launcher = start_ftlrun("--nproc", 3, "--name-prefix", "k", *(["--fail-on-lost-worker"] if strict else []),
                            HERE, "wait", tmp_path)
    try:
        wait_for("every worker is ready", lambda: all((tmp_path / f"{n}.pid").exists() for n in names))
        pids = {n: int((tmp_path / f"{n}.pid").read_text()) for n in names}
        os.kill(pids["k-1"], signal.SIGKILL)
        wait_for("k-1 is gone", lambda: not is_alive(pids["k-1"]))
        time.sleep(1.0)
        assert is_alive(pids["k-0"]) and is_alive(pids["k-2"]), "the launcher stopped the other workers"
        assert launcher.poll() is None, "the launcher exited while workers were running"
        (tmp_path / "stop").touch()
        out, err = launcher.communicate(timeout=30)
    finally:
        launcher.kill()
    assert f"k-1 (pid {pids['k-1']}) was killed by SIGKILL; the other 2 keep running" in err
    last = err.rstrip().splitlines()[-1]
    if strict:
        assert launcher.returncode == 1
        assert last == f"ftlrun: 1 of 3 workers failed: k-1 (pid {pids['k-1']}) was killed by SIGKILL"
    else:
        assert launcher.returncode == 0
        assert last == (f"ftlrun: the job finished: 2 of 3 workers exited 0, 1 lost on the way: k-1 (pid "
                        f"{pids['k-1']}) was killed by SIGKILL (--fail-on-lost-worker makes this exit 1)")


needs_train_example = pytest.mark.skipif(not TRAIN_EXAMPLE, reason="FTL_TRAIN_EXAMPLE (the path of "
                                        "build/examples/ftl-train-example) is not set; ctest sets it")


def training_env(steps):
    return launcher_env(FTL_STEPS=steps, FTL_DATA_SIZE=4000, FTL_STEP_SLEEP_MS=10, FTL_LOG_LEVEL="warn")


def training_records(returncode, stdout, stderr):
    """{worker name: its JSON records} from the output of a launcher of ftl-train-example that exited 0."""
    assert returncode == 0, stderr
    return {name: [json.loads(t) for t in texts] for name, texts in by_worker(stdout).items()}


@needs_train_example
def test_a_real_training_job_of_three_workers_converges_and_finishes():
    """No FTL_MIN_WORKERS: the seeds the launcher gives must be enough for the workers to find each other
    (a worker up before the others may train a few steps alone; the job must end in one view of 3)."""
    result = run_ftlrun("--nproc", 3, "--name-prefix", "train", "--no-python", TRAIN_EXAMPLE, env=training_env(60),
                        timeout=180)
    workers = training_records(result.returncode, result.stdout, result.stderr)
    assert sorted(workers) == ["train-0", "train-1", "train-2"]
    finals, last_views = {}, set()
    for name, records in workers.items():
        last_step = [r for r in records if not r.get("final")][-1]
        last_views.add((last_step["world"], last_step["epoch"]))
        (finals[name],) = [r for r in records if r.get("final")]
        assert finals[name]["worker"] == name and finals[name]["steps"] == 60
    assert len(last_views) == 1 and last_views.pop()[0] == 3, f"the workers did not end in one view of 3: {last_views}"
    assert len({f["digest"] for f in finals.values()}) == 1, finals


@needs_train_example
def test_two_launchers_of_nnodes_2_train_every_step_together(tmp_path):
    """Two machines as torchrun users start them: --nnodes 2 sets FTL_MIN/MAX/EXPECTED_WORKERS=2 (times
    --nproc-per-node 1), so the first machine's worker waits for the second's, started 2 s later, and
    trains no step alone (without them it would train every step before the other is up)."""
    key = tmp_path / "key"
    key.write_text(ftlrun.new_key() + "\n")
    key.chmod(0o600)
    (port,) = free_ports(1)
    job = ["--nnodes", 2, "--nproc-per-node", 1, "--key-file", key, "--no-python", TRAIN_EXAMPLE]
    first = start_ftlrun("--name-prefix", "n0", "--base-port", port, *job, env=training_env(20))
    try:
        time.sleep(2.0)
        second = run_ftlrun("--name-prefix", "n1", "--node-rank", 1, "--seeds", f"127.0.0.1:{port}", *job,
                            env=training_env(20), timeout=180)
        out, err = first.communicate(timeout=180)
    finally:
        first.kill()
    workers = {**training_records(first.returncode, out, err),
               **training_records(second.returncode, second.stdout, second.stderr)}
    assert sorted(workers) == ["n0-0", "n1-0"]
    for name, records in workers.items():
        steps = [r for r in records if not r.get("final")]
        assert len(steps) == 20 and {r["world"] for r in steps} == {2}, f"{name}: {steps}"


def probe(mode, *args):
    """The worker the tests above start: shows them what it was given and how it was treated.
      env    its settings as one JSON line (FTL_*, the SHOWN variables, the key file's text, the run
             directory's mode, its own arguments, its pid)
      lines  numbered lines on stdout and stderr, the last one without a newline
      wait   writes DIR/<name>.key (a digest of its gossip key) and DIR/<name>.pid, then waits until
             DIR/stop exists (exit 0) or SIGINT/SIGTERM arrives: then writes DIR/<name>.signal, takes a
             moment (a worker finishing its step), writes DIR/<name>.exited and exits 0
      flood  writes DIR/<name>.pid, then prints lines without end; SIGTERM is written to DIR/<name>.signal
             and otherwise ignored (a worker stuck in its output: only SIGKILL ends it)"""
    name = os.environ["FTL_NAME"]
    if mode == "env":
        settings = {k: v for k, v in os.environ.items() if k.startswith("FTL_") or k in SHOWN}
        if "FTL_GOSSIP_KEY_FILE" in settings:
            with open(settings["FTL_GOSSIP_KEY_FILE"]) as f:
                settings["key_file_text"] = f.read().strip()
        run_dir = settings.get("FTL_RUN_DIR", "")
        settings["run_dir_mode"] = oct(os.stat(run_dir).st_mode & 0o777) if os.path.isdir(run_dir) else None
        settings["argv"] = list(args)
        settings["pid"] = os.getpid()
        print(json.dumps(settings))
    elif mode == "lines":
        for i in range(5):
            print(f"out {name} {i}")
            print(f"err {name} {i}", file=sys.stderr)
        sys.stdout.write(f"tail {name}")
    elif mode == "flood":
        folder = args[0]
        signal.signal(signal.SIGTERM, lambda sig, frame: open(os.path.join(folder, f"{name}.signal"), "w").write(
            signal.Signals(sig).name))
        mark_ready(folder, name)
        while True:
            print(f"{name} " + "x" * 1000)
    elif mode == "wait":
        folder = args[0]
        with open(os.environ["FTL_GOSSIP_KEY_FILE"], "rb") as f, open(os.path.join(folder, f"{name}.key"), "w") as d:
            d.write(key_digest(f.read()))

        def stop(sig, frame):
            with open(os.path.join(folder, f"{name}.signal"), "w") as f:
                f.write(signal.Signals(sig).name)
            time.sleep(0.3)
            with open(os.path.join(folder, f"{name}.exited"), "w") as f:
                f.write("")
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        mark_ready(folder, name)
        while not os.path.exists(os.path.join(folder, "stop")):
            time.sleep(0.05)


def mark_ready(folder, name):
    ready = os.path.join(folder, f"{name}.pid")
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)  # whole, or not there


def key_digest(data):
    return hashlib.sha256(data.strip()).hexdigest()


if __name__ == "__main__":
    probe(*sys.argv[1:])


def test_spares_are_kept_spares_counted_in_the_first_view_and_have_no_rank_of_it():
    workers = settings_of_workers(run_ftlrun("--nproc", 2, "--spares", 1, "--name-prefix", "s", HERE, "env"))
    assert sorted(workers) == ["s-0", "s-1", "s-2"]
    assert {w["FTL_SPARES"] for w in workers.values()} == {"1"}
    assert {w["FTL_EXPECTED_WORKERS"] for w in workers.values()} == {"3"}
    assert all("FTL_MAX_WORKERS" not in w for w in workers.values())  # a later launcher grows the job
    assert [workers[f"s-{i}"]["RANK"] for i in range(3)] == ["0", "1", "-1"]
    assert {w["LOCAL_WORLD_SIZE"] for w in workers.values()} == {"3"}


@needs_train_example
@pytest.mark.parametrize("ranked", [2, 3])
def test_a_spare_takes_a_killed_workers_place_and_the_job_finishes(ranked):
    """--spares 1: the spare starts after the others answer, trains no step while they are whole, and after a
    kill -9 of a ranked worker the next view takes it in; it finishes the job with the survivors' digest. With
    two ranked workers too: the death is proven (witnessed on this host, or refused by its own address), so
    it leaves the quorum's count and the survivor is the majority of what is left (docs/concepts/quorum.md);
    before, one death of two stopped the job."""
    launcher = start_ftlrun("--nproc", ranked, "--spares", 1, "--name-prefix", "sp", "--no-python", TRAIN_EXAMPLE,
                            env=training_env(400))
    err_lines = []
    reader = threading.Thread(target=lambda: err_lines.extend(launcher.stderr), daemon=True)
    reader.start()
    try:
        wait_for("the spare starts", lambda: any(f"worker sp-{ranked} pid" in line for line in err_lines), 60)
        time.sleep(1.0)
        (pid,) = [int(line.split()[-1]) for line in err_lines if "worker sp-0 pid" in line]
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        out = launcher.stdout.read()
        launcher.wait(timeout=120)
    finally:
        launcher.kill()
    reader.join(5)
    assert launcher.returncode == 0, "".join(err_lines)  # the job finished: sp-0 is named as lost
    assert any(f"the job finished: {ranked} of {ranked + 1} workers exited 0, 1 lost on the way: sp-0" in line
               for line in err_lines)
    workers = {name: [json.loads(t) for t in texts] for name, texts in by_worker(out).items()}
    spare_steps = [r for r in workers[f"sp-{ranked}"] if not r.get("final")]
    assert spare_steps, "the spare never trained"
    assert min(r["t"] for r in spare_steps) > killed_at, "the spare trained while the job had no room for it"
    assert {r["world"] for r in spare_steps} == {ranked}
    finals = {name: next(r for r in records if r.get("final")) for name, records in workers.items() if name != "sp-0"}
    assert {f["steps"] for f in finals.values()} == {400} and len({f["digest"] for f in finals.values()}) == 1, finals


@needs_train_example
@pytest.mark.parametrize("kept", [False, True], ids=["spares_over_the_maximum", "kept_spares"])
def test_a_spare_the_job_never_needed_leaves_at_its_end_without_training(kept):
    """One spare and no worker lost: when the two ranked workers finish and leave, the next view has only the
    spare, which holds none of the job's state. It must not train the whole job again from step 0 (it did):
    it knows the job has done steps, says its state is gone, leaves, and exits 0 like the others. The spare
    is either over FTL_MAX_WORKERS=2 (the youngest of three) or kept by ftlrun --spares 1 (FTL_SPARES=1)."""
    env = training_env(40)
    if kept:
        args = ("--nproc", 2, "--spares", 1)
    else:
        env.update(FTL_MAX_WORKERS="2", FTL_EXPECTED_WORKERS="2")
        args = ("--nproc", 3)
    result = run_ftlrun(*args, "--name-prefix", "end", "--no-python", TRAIN_EXAMPLE, env=env)
    workers = training_records(result.returncode, result.stdout, result.stderr)
    finals = {name: next(r for r in records if r.get("final")) for name, records in workers.items()}
    assert len(finals) == 2 and {f["steps"] for f in finals.values()} == {40}, finals
    (spare,) = {"end-0", "end-1", "end-2"} - set(workers)  # it printed no step: it never trained
    spare_err = "\n".join(by_worker(result.stderr).get(spare, []))
    assert "the job's state is gone" in spare_err and "left the job" in spare_err, spare_err
