"""A training job of ftl-train-example workers on loopback, and what their JSON lines say about it.

TrainingJob is a Cluster (cluster.py) whose members are training workers instead of bare agents: each
writes its JSON lines (see examples/train_softmax.c) to <name>.jsonl and its log to <name>.log in the
job's run directory. The functions below judge a finished or running job from those lines alone, the way
the multi-process tests and the demo need it:

- a step may be attempted in several views (a retry after a failure, or a step that completed on some
  ranks while a peer died in its allreduce, then ran again after the state sync). The job's outcome of
  step S is the step lines of S in the latest view epoch that reports S: its "final group";
- the digests of a final group must all be equal, each rank of the view reports at most once; a rank
  that died (or was stopped) inside the allreduce after contributing may be missing from it.
Used by tests/agent/test_training.py and examples/demo.py."""

import collections
import json
import os
import signal
import subprocess
import time

from cluster import Agent, Cluster, _die_with_parent, wait_until


class Worker(Agent):
    """A training worker: stdout (JSON lines) and stderr (the agent's log) go to separate files."""

    def __init__(self, cluster, name, port, env, host="127.0.0.1"):
        super().__init__(cluster, name, port, env, host)
        self.out = os.path.join(cluster.dir, f"{name}.jsonl")
        self._records, self._steps, self._offset = [], [], 0

    def start(self):
        self._records, self._steps, self._offset = [], [], 0
        with open(self.log, "ab") as log, open(self.out, "ab") as out:
            if out.tell() and not _ends_with_newline(self.out):
                # a process of this name killed between a record and its newline (Python's print writes
                # them apart when unbuffered): end its line, or the next process's first record joins it
                out.write(b"\n")
                out.flush()
            self.proc = subprocess.Popen(self.command(), env=self.env, stdout=out, stderr=log,
                                         preexec_fn=_die_with_parent)
        self.started_at = time.time()

    def command(self):
        """What start() runs: the training program, a path or a command as a list (["python3",
        "examples/torch_digits.py"]); a subclass may run it elsewhere, e.g. in a pod."""
        program = self.cluster.agent_bin
        return list(program) if isinstance(program, (list, tuple)) else [program]

    def records(self):
        """Every complete JSON line written so far (read incrementally)."""
        if not os.path.exists(self.out):
            return self._records
        with open(self.out, "rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1  # a line still being written is read next time
        for line in chunk[:end].splitlines():
            # A record is a JSON object; a library may print its own lines to stdout too (NCCL prints
            # "NCCL version ..." there once NCCL_DEBUG is set), and they are not the worker's records.
            if line.lstrip().startswith(b"{"):
                rec = json.loads(line)
                rec.setdefault("worker", self.name)
                self._records.append(rec)
                if is_step(rec):
                    self._steps.append(rec)
        self._offset += end
        return self._records

    def steps(self):
        """The step lines among records(), kept as they are read: a poll costs the new lines only, which
        matters when a worker writes tens of thousands of steps a second."""
        self.records()
        return self._steps

    def last_step(self):
        s = self.steps()
        return s[-1]["step"] if s else -1

    def final(self):
        f = [r for r in self.records() if r.get("final")]
        return f[-1] if f else None


def _ends_with_newline(path):
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def is_step(r):
    return "digest" in r and "indices" not in r and not r.get("final")


class TrainingJob(Cluster):
    """Workers of one job: the same key, the same job settings (env), seeds pointing at live workers."""
    member_class = Worker
    start_timeout = 20  # seconds a worker may take until its agent answers (a Python one imports torch first)
    SEEDS = 8

    def __init__(self, train_bin, ctl_bin, **job_env):
        super().__init__(train_bin, ctl_bin)
        self.job_env = {k: str(v) for k, v in job_env.items()}

    def add(self, name, start=True, **extra):
        """Starts a worker seeded with the oldest live ones (at most SEEDS: FTL_SEEDS holds ~60 addresses, and
        gossip needs one that answers). The first worker is the others' seed: wait until its agent answers,
        or the others find no one, and each trains alone as a job of one."""
        live = [w.addr for w in self.running()][:self.SEEDS]
        seed = ",".join(live) if live else None
        w = super().add(name, seed=seed, start=start, **{**self.job_env, **extra})
        if start and not live:
            self.wait(f"{name}'s agent answers", lambda: self.status(w) is not None, self.start_timeout)
        return w

    def workers(self):
        return list(self.agents.values())

    def records(self):
        return [r for w in self.workers() for r in w.records()]

    def progress(self):
        """The highest step any worker completed (-1 before the first)."""
        return max((w.last_step() for w in self.workers()), default=-1)

    def wait(self, what, cond, timeout):
        """wait_until, but failing at once when no worker is left running (nothing can change then)."""
        def check():
            if cond():
                return True
            if self.workers() and not self.running():
                raise AssertionError(f"every worker exited while waiting for: {what}; exit codes "
                                     f"{self.exit_codes()}")
            return False
        return wait_until(what, check, timeout)

    def wait_step(self, step, timeout):
        """Waits until some worker completed `step`."""
        return self.wait(f"the job reaches step {step}", lambda: self.progress() >= step, timeout)

    def wait_exit(self, timeout, among=None):
        """Waits until the workers (default: all) have exited; returns their exit codes."""
        among = among or self.workers()
        wait_until("every worker exits", lambda: all(not w.is_running() for w in among), timeout)
        return self.exit_codes(among)

    def exit_codes(self, among=None):
        return {w.name: w.proc.poll() for w in (among or self.workers()) if w.proc}

    def status_json(self):
        """`ftlctl status --json` of the first running worker that answers."""
        for w in self.running():
            s = self.status(w)
            if s:
                return s
        raise AssertionError("no running worker answers ftlctl status")

    def kill(self, name, sig=signal.SIGKILL):
        self.agents[name].signal(sig)


def final_groups(records):
    """{step: [step lines of the latest view epoch that reports the step]}, and the number of steps
    also reported in an earlier view (superseded: completed on some ranks, then run again)."""
    by_step = collections.defaultdict(list)
    for r in records:
        if is_step(r):
            by_step[r["step"]].append(r)
    groups, superseded = {}, 0
    for step, lines in by_step.items():
        latest = max(r["epoch"] for r in lines)
        groups[step] = [r for r in lines if r["epoch"] == latest]
        superseded += any(r["epoch"] != latest for r in lines)
    return dict(sorted(groups.items())), superseded


def digest_problems(groups):
    """Descriptions of steps whose final group is not one consistent view: digests differ, world sizes
    differ, or a rank reports twice (two views with the same epoch: a split brain). A sharded model's lines
    name their shard ("shard": the index in the replica): then each shard's digests must agree."""
    problems = []
    for step, lines in groups.items():
        by_shard = {}
        for r in lines:
            by_shard.setdefault(r.get("shard"), {})[r["worker"]] = r["digest"]
        for shard, digests in sorted(by_shard.items(), key=lambda kv: str(kv[0])):
            if len(set(digests.values())) != 1:
                problems.append(f"step {step}: digests differ{'' if shard is None else f' on shard {shard}'}: "
                                f"{digests}")
        worlds = sorted({r["world"] for r in lines})
        ranks = sorted(r["rank"] for r in lines)
        if len(worlds) != 1 or len(set(ranks)) != len(ranks) or len(lines) > worlds[0]:
            problems.append(f"step {step} (epoch {lines[0]['epoch']}): {len(lines)} lines, worlds {worlds}, "
                            f"ranks {ranks}: a rank reported twice, or two views share this epoch (split brain)")
    return problems


def partly_reported(groups):
    """Steps that only some ranks of their view reported: a peer was lost inside the step's allreduce
    after every rank had contributed, so the others completed it (and the job kept it)."""
    return [step for step, lines in groups.items() if len(lines) < lines[0]["world"]]


def used_indices(records):
    """{data_epoch: Counter(index -> times the job used it)} from FTL_LOG_INDICES lines: for each step,
    the attempts in the view epoch of its final group (one per rank; an attempt is logged before its
    allreduce, so a rank that died inside it is counted when the others completed the step)."""
    groups, _ = final_groups(records)
    final_epoch = {step: lines[0]["epoch"] for step, lines in groups.items()}
    attempts = {}
    for r in records:
        if "indices" in r and final_epoch.get(r["step"]) == r["epoch"]:
            key = (r["step"], r["rank"])
            if key in attempts and attempts[key]["indices"] != r["indices"]:
                raise AssertionError(f"step {r['step']} rank {r['rank']} logged two different slices in "
                                     f"view {r['epoch']}")
            attempts[key] = r
    used = collections.defaultdict(collections.Counter)
    for r in attempts.values():
        used[r["data_epoch"]].update(r["indices"])
    return used


def loss_by_samples(groups):
    """[(samples seen before the step, global mean loss of the step)] in step order."""
    seen, curve = 0, []
    for step, lines in groups.items():
        curve.append((seen, lines[0]["loss"]))
        seen += lines[0]["samples"]
    return curve
