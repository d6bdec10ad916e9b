"""Loop mode: the program's own `for epoch: set_epoch; for x, y in loader: ... optimizer.step()` loop, made
elastic by ElasticSampler (DistributedSampler's place) and the ElasticState's optimizer (the commit point),
through a kill -9, a join and a leave, with a DataLoader of two worker processes (so prefetched batches
go stale at every view change), and a StepLR scheduler (its learning rate, in the digest, must count
committed steps only: a dropped step must not move it on one rank and not on another).

Three workers train 3 data epochs of 720 samples, 6 a rank a step (720 and every committed position are
multiples of 6, so no epoch's tail is padded: each sample must be used exactly once per epoch). The
parent kills w1 (SIGKILL) after some steps of epoch 0, then starts w3, which joins; w2 leaves by itself
(agent.leave() inside its loop) after 10 steps with w3. Each worker logs every batch its loop got, and whether the
step committed (the job's step count moved). Judged from the logs: for every data epoch, the committed
batches of all workers hold each sample exactly once; every committed step (ftl.torch.last_commit) was
committed by every rank of its view, with one digest; the joiner trained in a view of three; some
prefetched batches were skipped as stale (the loop never sees those; a step is dropped too when the kill
lands inside one); the survivors and the joiner finished the 3 epochs.

    loop_mode.py [kill_join_leave | joins0 | joins2 | lightning | lightning_joins]

lightning, lightning_joins: the same with PyTorch Lightning's Trainer running the loop (loop_lightning.py).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SAMPLES, BATCH, EPOCHS = 720, 6, 3
# joins0, joins2: w0 trains alone and w1 joins, with epochs of 2 steps (12 samples), so that the join meets
# an epoch's boundary; 0 or 2 DataLoader worker processes.
JOINS = {"samples": 12, "epochs": 30, "min_workers": 1, "expected_workers": 1}


def is_joins(scenario):
    return scenario.startswith("joins") or scenario.startswith("lightning_joins")


def numbered(samples):
    """A dataset of samples (input, its index) pairs: the index says which samples a batch held."""
    import torch
    from torch.utils.data import Dataset

    class Numbered(Dataset):
        def __len__(self):
            return samples

        def __getitem__(self, i):
            return torch.full((4,), float(i % 7)), i
    return Numbered()


def worker_agent(index, ports, run_dir, joins=False):
    import ftl
    return ftl.Agent(name=f"w{index}", bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}", insecure=1,
                     run_dir=os.path.join(run_dir, f"w{index}"), min_workers=1 if joins else 2,
                     expected_workers=1 if joins else 3, settle_ms=100, log_level=os.environ.get("LOOP_MODE_LOG", "warn"), collective_timeout_ms=20000)


def batch_row(name, epoch, indices, before, info, state, scheduler):
    """The log line of one batch of the loop: committed when the job's last commit moved (its step, world
    and digest then)."""
    committed = info is not before
    return {"worker": name, "epoch": epoch, "indices": indices, "committed": committed,
            "step": info.step if committed else None, "world": info.world_size if committed else None,
            "digest": state.digest() if committed else None, "scheduler_epoch": scheduler.last_epoch}


def pause(name, worlds, joins):
    """Slow until the joiner is in (its import of torch takes seconds, more on a loaded machine); True when
    w2 leaves now (after 10 steps with w3)."""
    joined = (2 in worlds) if joins else (2 in worlds and 3 in worlds[worlds.index(2):])
    time.sleep(0.03 if joined else 0.15)
    return name == "w2" and 2 in worlds and worlds[worlds.index(2):].count(3) == 10


def train(index, ports, run_dir, log_path, scenario):
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader
    import ftl.torch
    from ftl._door import door_of  # the loop driver's count of stale batches

    if scenario.startswith("lightning"):
        from loop_lightning import train_lightning
        return train_lightning(index, ports, run_dir, log_path, scenario)
    joins = scenario.startswith("joins")
    samples, epochs = (JOINS["samples"], JOINS["epochs"]) if joins else (SAMPLES, EPOCHS)
    name = f"w{index}"
    agent = worker_agent(index, ports, run_dir, joins)
    ftl.torch.init_process_group(agent)
    dataset = numbered(samples)
    sampler = ftl.torch.ElasticSampler(dataset, shuffle=True, seed=11)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=0 if scenario == "joins0" else 2)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 7, gamma=0.9)  # its lr is in the digest
    state = ftl.torch.ElasticState(agent, model, optimizer, scheduler=scheduler)
    log = open(log_path, "a", buffering=1)
    worlds = []  # of the steps this worker committed
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        batches = 0
        for x, i in loader:
            before = ftl.torch.last_commit(agent)
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
            scheduler.step()  # after a dropped step, nothing (the schedule counts committed steps)
            info = ftl.torch.last_commit(agent)
            row = batch_row(name, epoch, i.tolist(), before, info, state, scheduler)
            log.write(json.dumps(row) + "\n")
            batches += 1
            if row["committed"]:
                worlds.append(info.world_size)
            if pause(name, worlds, joins):
                log.write(json.dumps({"worker": name, "left": True}) + "\n")
                agent.leave()
                return 0
        log.write(json.dumps({"worker": name, "epoch_end": epoch, "batches": batches}) + "\n")
    log.write(json.dumps({"worker": name, "final": True, "stale": door_of(agent).loop.stale}) + "\n")
    agent.leave()
    return 0


def records(run_dir):
    out = []
    for f in sorted(os.listdir(run_dir)):
        if f.endswith(".jsonl"):
            with open(os.path.join(run_dir, f)) as fh:
                out += [json.loads(line) for line in fh if line.strip()]
    return out


def wait_for(what, check, seconds):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


def judge(rows, scenario):
    """The failures found in the logs (empty when none)."""
    joins = is_joins(scenario)
    samples, epochs = (JOINS["samples"], JOINS["epochs"]) if joins else (SAMPLES, EPOCHS)
    bad = []
    committed = [r for r in rows if r.get("committed")]
    by_step = {}
    for r in committed:
        by_step.setdefault(r["step"], []).append(r)
    for step, group in sorted(by_step.items()):
        if len({r["digest"] for r in group}) != 1:
            bad.append(f"step {step}: digests differ: {[(r['worker'], r['digest']) for r in group]}")
        if len(group) != group[0]["world"]:
            bad.append(f"step {step}: committed by {len(group)} workers in a view of {group[0]['world']}")
    # Which data epoch a committed step trained: steps are in order, and each epoch's steps follow the last.
    counts = {}
    for r in committed:
        for i in r["indices"]:
            counts[i] = counts.get(i, 0) + 1
    wrong = {i: c for i, c in counts.items() if c != epochs}
    missing = [i for i in range(samples) if i not in counts]
    if wrong or missing:
        where = {i: [(r["worker"], r["step"], r["epoch"], r["world"]) for r in committed if i in r["indices"]]
                 for i in list(wrong)[:3] + missing[:3]}
        bad.append(f"samples not used once per epoch: {len(wrong)} with other counts (e.g. "
                   f"{list(wrong.items())[:5]}), {len(missing)} never; (worker, step, loop epoch, world) "
                   f"where some were: {where}")
    dropped = [r for r in rows if "committed" in r and not r["committed"]]
    finals = sorted(r["worker"] for r in rows if r.get("final"))
    if joins:
        if finals != ["w0", "w1"] or not any(r.get("worker") == "w1" and r.get("committed") for r in rows):
            bad.append(f"w1 did not join and finish: finished {finals}")
        return bad, len(dropped), max((r["step"] for r in committed), default=None)
    if not sum(r["stale"] for r in rows if r.get("final")):
        bad.append("no prefetched batch was skipped as stale, though the view changed with batches prefetched")
    if finals != ["w0", "w3"]:
        bad.append(f"the workers that finished the 3 epochs: {finals} (expected w0 and w3)")
    if not any(r.get("worker") == "w3" and r.get("committed") and r["world"] == 3 for r in rows):
        bad.append("w3 never committed a step in a view of three")
    return bad, len(dropped), sorted(by_step)[-1] if by_step else None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        index, ports, run_dir, scenario = int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")], sys.argv[4], sys.argv[5]
        sys.exit(train(index, ports, run_dir, os.path.join(run_dir, f"w{index}.jsonl"), scenario))
    scenario = sys.argv[1] if len(sys.argv) > 1 else "kill_join_leave"
    if scenario.startswith("lightning"):
        try:
            import pytorch_lightning  # noqa: F401
        except ImportError:
            print("SKIP: pytorch_lightning is not installed (scripts/install-python-deps.sh installs it)")
            sys.exit(77)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(here, "..", "agent")]
    from cluster import free_port
    ports = [free_port() for _ in range(4)]
    with tempfile.TemporaryDirectory() as run_dir:
        def start(i):
            return subprocess.Popen([sys.executable, __file__, "--worker", str(i), ",".join(map(str, ports)), run_dir,
                                     scenario],
                                    stdout=open(os.path.join(run_dir, f"w{i}.out"), "w"), stderr=subprocess.STDOUT)
        procs = {i: start(i) for i in ((0,) if is_joins(scenario) else range(3))}

        def committed_by(name):
            return sum(1 for r in records(run_dir) if r.get("worker") == name and r.get("committed"))
        bad = []
        try:
            if is_joins(scenario):
                wait_for("w0's 6 committed steps", lambda: committed_by("w0") >= 6, 120)
                procs[1] = start(1)
                wait_for("the end", lambda: all(p.poll() is not None for p in procs.values()), 240)
            else:
                wait_for("w1's 15 committed steps", lambda: committed_by("w1") >= 15, 120)
                procs[1].send_signal(signal.SIGKILL)
                procs[3] = start(3)
                wait_for("the end", lambda: all(p.poll() is not None for i, p in procs.items() if i != 1), 240)
        except TimeoutError as e:
            bad.append(str(e))
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
        rows = records(run_dir)
        if os.environ.get("LOOP_MODE_ROWS"):  # every worker's rows, for a look after a failure
            with open(os.environ["LOOP_MODE_ROWS"], "w") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in rows)
        found, dropped, last = judge(rows, scenario)
        bad += found
        codes = {f"w{i}": p.returncode for i, p in procs.items()}
        if any(c != 0 for w, c in codes.items() if w != "w1" or is_joins(scenario)):
            bad.append(f"exit codes {codes}")
        if bad:
            for i in procs:
                with open(os.path.join(run_dir, f"w{i}.out")) as fh:
                    sys.stdout.write(f"--- w{i}'s output\n" + fh.read()[-6000:])
    for b in bad:
        print("FAIL: " + b)
    print(f"loop mode, {scenario}: {last} steps, {dropped} steps dropped; "
          + ("every sample once per epoch, digests equal" if not bad else f"{len(bad)} failures"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
