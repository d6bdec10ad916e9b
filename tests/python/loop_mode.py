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
committed by every rank of its view, with one digest; the joiner trained in a view of three; some steps
were dropped and some prefetched batches skipped as stale (the loop never sees those); the survivors and
the joiner finished the 3 epochs.

    loop_mode.py
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SAMPLES, BATCH, EPOCHS = 720, 6, 3


def train(index, ports, run_dir, log_path):
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, Dataset
    import ftl
    import ftl.torch

    class Numbered(Dataset):
        def __len__(self):
            return SAMPLES

        def __getitem__(self, i):
            return torch.full((4,), float(i % 7)), i

    name = f"w{index}"
    agent = ftl.Agent(name=name, bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}", insecure=1,
                      run_dir=os.path.join(run_dir, name), min_workers=2, expected_workers=3, settle_ms=100,
                      log_level="warn", collective_timeout_ms=20000)
    ftl.torch.init_process_group(agent)
    dataset = Numbered()
    sampler = ftl.torch.ElasticSampler(dataset, shuffle=True, seed=11)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=2)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 7, gamma=0.9)  # its lr is in the digest
    state = ftl.torch.ElasticState(agent, model, optimizer, scheduler=scheduler)
    log = open(log_path, "a", buffering=1)
    worlds = []  # of the steps this worker committed
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        batches = 0
        for x, i in loader:
            before = ftl.torch.last_commit(agent)
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
            scheduler.step()  # after a dropped step, nothing (the schedule counts committed steps)
            info = ftl.torch.last_commit(agent)
            committed = info is not before
            log.write(json.dumps({"worker": name, "epoch": epoch, "indices": i.tolist(), "committed": committed,
                                  "step": info.step if committed else None,
                                  "world": info.world_size if committed else None,
                                  "digest": state.digest() if committed else None,
                                  "scheduler_epoch": scheduler.last_epoch}) + "\n")
            batches += 1
            # slow until w3 is in (its import of torch takes seconds, more on a loaded machine), then quick
            time.sleep(0.03 if 2 in worlds and 3 in worlds[worlds.index(2):] else 0.15)
            if committed:
                worlds.append(info.world_size)
            if name == "w2" and 2 in worlds and worlds[worlds.index(2):].count(3) == 10:  # 10 steps with w3
                log.write(json.dumps({"worker": name, "left": True}) + "\n")
                agent.leave()
                return 0
        log.write(json.dumps({"worker": name, "epoch_end": epoch, "batches": batches}) + "\n")
    log.write(json.dumps({"worker": name, "final": True, "stale": agent._loop.stale}) + "\n")
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


def judge(rows):
    """The failures found in the logs (empty when none)."""
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
    wrong = {i: c for i, c in counts.items() if c != EPOCHS}
    missing = [i for i in range(SAMPLES) if i not in counts]
    if wrong or missing:
        bad.append(f"samples not used once per epoch: {len(wrong)} with other counts (e.g. "
                   f"{list(wrong.items())[:5]}), {len(missing)} never")
    dropped = [r for r in rows if "committed" in r and not r["committed"]]
    if not dropped:
        bad.append("no step was dropped, though a peer was killed and another left")
    if not sum(r["stale"] for r in rows if r.get("final")):
        bad.append("no prefetched batch was skipped as stale, though the view changed with batches prefetched")
    finals = sorted(r["worker"] for r in rows if r.get("final"))
    if finals != ["w0", "w3"]:
        bad.append(f"the workers that finished the 3 epochs: {finals} (expected w0 and w3)")
    if not any(r.get("worker") == "w3" and r.get("committed") and r["world"] == 3 for r in rows):
        bad.append("w3 never committed a step in a view of three")
    return bad, len(dropped), sorted(by_step)[-1] if by_step else None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        index, ports, run_dir = int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")], sys.argv[4]
        sys.exit(train(index, ports, run_dir, os.path.join(run_dir, f"w{index}.jsonl")))
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(here, "..", "agent")]
    from cluster import free_port
    ports = [free_port() for _ in range(4)]
    with tempfile.TemporaryDirectory() as run_dir:
        def start(i):
            return subprocess.Popen([sys.executable, __file__, "--worker", str(i), ",".join(map(str, ports)), run_dir],
                                    stdout=open(os.path.join(run_dir, f"w{i}.out"), "w"), stderr=subprocess.STDOUT)
        procs = {i: start(i) for i in range(3)}

        def committed_by(name):
            return sum(1 for r in records(run_dir) if r.get("worker") == name and r.get("committed"))
        bad = []
        try:
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
        found, dropped, last = judge(rows)
        bad += found
        codes = {f"w{i}": p.returncode for i, p in procs.items()}
        if any(codes[w] != 0 for w in ("w0", "w2", "w3")):
            bad.append(f"exit codes {codes}")
        if bad:
            for i in procs:
                with open(os.path.join(run_dir, f"w{i}.out")) as fh:
                    sys.stdout.write(f"--- w{i}'s output\n" + fh.read()[-6000:])
    for b in bad:
        print("FAIL: " + b)
    print(f"loop mode through a kill -9, a join and a leave: {last} steps, {dropped} steps dropped; "
          + ("every sample once per epoch, digests equal" if not bad else f"{len(bad)} failures"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
