"""HSDP on ftl through a death and a rejoin: 3 replicas x 2 shards, each a real worker process, an MLP under
FSDP2's fully_shard on ftl.torch.hsdp_mesh(agent), Adam, ElasticState. At a step of the view of six, shard 1
of replica r1 kills itself with kill -9 between its forward and backward passes. What must happen:
- the step runs again in a view of the other two replicas (four ranks), which train on; r1's shard 0 waits
  (a hot spare) and runs no step while its replica is not whole;
- the killed shard is started again (the parent does, as a pod's restart would): r1 is whole again, rejoins,
  and both its shards take their state from the same index of a surviving replica (a fresh one and a stale
  one), so after every step every replica's shard i holds the same bytes (parameters and Adam state);
- the gradient is averaged by the live world: each step's parameters equal, on every rank, a replay of
  the same steps by one process over the same global batch (the data of the step is a function of the
  step and of the global rank's place, so the replay knows it).
Each worker writes a JSON line per step to a file; the parent checks them and exits 1 on any broken promise.
With --loop the workers are written in loop mode (the program's own loop over ftl.torch.steps, the step's
rank from dist.get_rank(); a step that loses a peer is dropped at optimizer.step() and comes again) and the
same promises hold.
With --one-replica the job is FSDP without replicas: one replica of three shards, each keeping a copy of the
previous one (ElasticState(copy_shards=True)). Shard 1 is killed the same way; nothing trains until it is
started again, and it comes back at the job's step from shard 2's copy (and logs that it did): every step,
on every shard, still equals the replay. With --spare as well, the replacement is started once the first
view trains, as a hot spare of the same replica and index (another name), and takes shard 1 from the copy
as soon as the death is known: no process starts after the kill.

    hsdp_elastic.py [--loop] [--one-replica [--spare]] [--reports FILE]
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

# --one-replica: FSDP without replicas, one replica of three shards, each keeping a copy of the previous one
ONE_REPLICA = "--one-replica" in sys.argv[1:]
# --spare (with --one-replica): the killed shard's replacement is not started after the kill but waits from the
# start as a hot spare of the same replica and index, torch imported and the model sharded
SPARE = ONE_REPLICA and "--spare" in sys.argv[1:]
REPLICAS, SIZE = (1, 3) if ONE_REPLICA else (3, 2)
STEPS, KILL_AT, ROWS, DIM = 10, 4, 4, 8
HIDDEN = int(os.environ.get("HSDP_HIDDEN", "16"))  # bench/rescale/hsdp.py sizes the shards with it
WHOLE_AGAIN = 3  # steps of all six after the rejoin before the job ends
VICTIM = "r0s1" if ONE_REPLICA else "r1s1"


def make_model(seed):
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(DIM, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))


def adam(model):
    import torch
    return torch.optim.Adam(model.parameters(), lr=0.01)  # after fully_shard: on the shards


def batch(step, rank):
    import torch
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(ROWS, DIM, generator=g)


def worker(replica, index, ports, run_dir, restarted, is_loop, spare=False):
    import faulthandler
    faulthandler.dump_traceback_later(100, exit=True)  # a worker stuck past the test's time says where
    import torch
    import ftl
    import ftl.torch
    from torch.distributed.fsdp import fully_shard
    name = f"r{replica}s{index}"
    me = replica * SIZE + index
    agent = ftl.Agent(name=name + "b" * spare, bind=f"127.0.0.1:{ports[-1 if spare else me]}", seeds=f"127.0.0.1:{ports[0]}", insecure=1,
                      run_dir=os.path.join(run_dir, name + ("b" if restarted else "")), min_workers=2,
                      settle_ms=300, replica=f"r{replica}", replica_index=index, replica_size=SIZE,
                      log_level=os.environ.get("HSDP_LOG", "warn"), collective_timeout_ms=20000)
    ftl.torch.init_process_group(agent)
    model = make_model(seed=7 if not restarted else 99)  # the restarted shard starts elsewhere
    mesh = ftl.torch.hsdp_mesh(agent)
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = adam(model)
    state = ftl.torch.ElasticState(agent, model, optimizer, copy_shards=ONE_REPLICA)
    import logging
    logging.getLogger("ftl.torch").addHandler(logging.FileHandler(os.path.join(run_dir, f"log-{name}{'b' * restarted}")))
    open(os.path.join(run_dir, f"ready-{name}"), "w").close()  # start together: the first view has all six
    while not restarted and len([f for f in os.listdir(run_dir) if f.startswith("ready-")]) < REPLICAS * SIZE:
        time.sleep(0.02)
    seen = {"six": None, "run": 0, "last": None}

    def step(info):
        if info.world_size == REPLICAS * SIZE and seen["six"] is None:
            seen["six"] = info.step
        optimizer.zero_grad()
        loss = model(batch(info.step, info.rank)).pow(2).mean()
        if SPARE and seen["six"] is not None and info.step == seen["six"] + KILL_AT - 1 and not restarted:
            while not os.path.exists(os.path.join(run_dir, "spare-ready")):  # the kill comes once the spare waits
                time.sleep(0.02)
        if seen["six"] is not None and info.step == seen["six"] + KILL_AT and name == VICTIM and not restarted:
            with open(os.path.join(run_dir, "killed-at"), "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        loss.backward()
        optimizer.step()
        return info

    # reports go to a file: a pipe the parent reads one process at a time would fill and stop the worker
    report = open(os.path.join(run_dir, f"report-{name}{'b' if restarted else ''}.jsonl"), "w", buffering=1)

    def done(info):
        """After a step that committed: the report, and whether the job is over (the same answer on every
        worker: STEPS done and WHOLE_AGAIN consecutive steps of six)."""
        done_at = time.time()  # the step's end, before the pause below
        whole = info.world_size == REPLICAS * SIZE
        seen["run"] = seen["run"] + 1 if whole and seen["last"] == info.step - 1 else int(whole)
        seen["last"] = info.step
        if not whole and seen["six"] is not None:
            time.sleep(0.1)  # the survivors wait for the restarted shard at a modest pace (after the step)
        report.write(json.dumps({"worker": name + ("b" if restarted else ""), "step": info.step, "view": info.view_epoch, "rank": info.rank,
                                 "world": info.world_size, "attempt": info.attempt, "digest": state.digest(),
                                 "t": done_at, "params": [p._local_tensor.detach().reshape(-1).tolist()
                                                          for p in model.parameters()] if HIDDEN <= 64 else None}) + "\n")
        return info.step + 1 >= STEPS and seen["run"] >= WHOLE_AGAIN

    with agent:
        if spare:  # known to the others as a member (a hot spare: its index is held) before the kill
            time.sleep(0.5)
            open(os.path.join(run_dir, "spare-ready"), "w").close()
        if not is_loop:
            while not done(agent.execute(step)):
                pass
            return
        import torch.distributed as dist
        for at in ftl.torch.steps(10 ** 6):  # the program's own loop; the job's step numbers
            before = ftl.torch.last_commit()
            step(StepLike(at, dist.get_rank(), dist.get_world_size()))
            info = ftl.torch.last_commit()
            if info is not before and done(info):  # committed (a dropped step's last_commit stays as it was)
                break


class StepLike:
    """What step() reads of a StepInfo, in loop mode (the rank and world size of the step's view)."""

    def __init__(self, step, rank, world_size):
        self.step, self.rank, self.world_size = step, rank, world_size


def replay(rows_by_step):
    """One process, the whole model, the same steps: each step's gradient the mean over the step's ranks."""
    import torch
    model = make_model(seed=7)  # the first replica's start is the job's
    optimizer = adam(model)
    out = {}
    for step in sorted(rows_by_step):
        world = rows_by_step[step]
        optimizer.zero_grad()
        losses = [model(batch(step, r)).pow(2).mean() for r in range(world)]
        (sum(losses) / world).backward()
        optimizer.step()
        out[step] = [p.detach().clone() for p in model.parameters()]
    return out


def shard_of(rows, index):
    """FSDP2's shard `index` of a parameter: torch.chunk by rows (dim 0), none where the rows run out."""
    import torch
    chunks = torch.chunk(rows, SIZE)
    return chunks[index].reshape(-1) if index < len(chunks) else torch.empty(0)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), [int(p) for p in sys.argv[4].split(",")], sys.argv[5],
               sys.argv[6] != "0", sys.argv[7] == "loop", spare=sys.argv[6] == "spare")
        return
    is_loop = "--loop" in sys.argv[1:]
    reports_to = sys.argv[sys.argv.index("--reports") + 1] if "--reports" in sys.argv[1:] else None
    import torch
    from torch.distributed.fsdp import FSDPModule
    if not hasattr(FSDPModule, "reset_iter_state"):
        print(f"SKIP: this torch ({torch.__version__}) has no FSDPModule.reset_iter_state; ftl refuses HSDP on it")
        sys.exit(77)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
    from cluster import free_port
    ports = [free_port() for _ in range(REPLICAS * SIZE + SPARE)]

    def start(replica, index, restarted):
        return subprocess.Popen([sys.executable, __file__, "--worker", str(replica), str(index),
                                 ",".join(map(str, ports)), run_dir, {False: "0", True: "1"}.get(restarted, restarted),
                                 "loop" if is_loop else "step"] + ["--one-replica"] * ONE_REPLICA + ["--spare"] * SPARE,
                                stdout=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as run_dir:
        procs = [start(r, i, False) for r in range(REPLICAS) for i in range(SIZE)]
        victim_at = (0 if ONE_REPLICA else 1) * SIZE + 1
        victim = procs[victim_at]
        if SPARE:
            while not any(f.startswith("report-") for f in os.listdir(run_dir)):  # the first view is the six's
                time.sleep(0.05)
            procs.append(start(victim_at // SIZE, 1, "spare"))
        victim.wait(timeout=150)
        if not SPARE:
            procs.append(start(victim_at // SIZE, 1, True))  # its pod restarted
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from ranks import outputs
        outs = outputs(procs, 150)
        reports = [json.loads(line) for f in sorted(os.listdir(run_dir)) if f.startswith("report-")
                   for line in open(os.path.join(run_dir, f)) if line.startswith("{")]
        restored = open(os.path.join(run_dir, f"log-{VICTIM}b")).read()
        if reports_to is not None:  # bench/rescale/hsdp.py reads them
            with open(reports_to, "w") as out:
                json.dump({"reports": reports, "killed_at": float(open(os.path.join(run_dir, "killed-at")).read())}, out)
    bad = []
    codes = [c for c, _ in outs]
    if codes[victim_at] != -signal.SIGKILL or any(c != 0 for i, c in enumerate(codes) if i != victim_at):
        bad.append(f"wanted {VICTIM} killed and every other worker (and its restart) to exit 0, got {codes}")
    by_step = {}
    for r in reports:
        by_step.setdefault(r["step"], []).append(r)
    worlds = {s: rs[0]["world"] for s, rs in by_step.items()}
    for s, rs in sorted(by_step.items()):
        for index in range(SIZE):
            digests = {r["digest"] for r in rs if r["rank"] % SIZE == index}
            if len(digests) != 1:
                bad.append(f"step {s}: shard {index}'s replicas hold different state {sorted(digests)}")
        if len({r["world"] for r in rs}) != 1 or len(rs) != rs[0]["world"]:
            bad.append(f"step {s}: {len(rs)} reports of worlds {sorted({r['world'] for r in rs})}")
    if ONE_REPLICA:  # nothing trains while the only replica lacks a shard; its restart takes up the job's step
        killed = [r["step"] for r in reports if r["worker"] == VICTIM]
        back = [r["step"] for r in reports if r["worker"] == VICTIM + "b"]
        if any(w != SIZE for w in worlds.values()) or not killed or not back or min(back) != max(killed) + 1:
            bad.append(f"wanted every step in the view of {SIZE}, and {VICTIM}'s restart to run the step it was "
                       f"killed in: worlds {worlds}, steps {killed} then {back}")
        said = f"shard 1 was lost with every replica of it; it is back at step {min(back or [0])} from the copy on shard 2"
        if said not in restored:
            bad.append(f"wanted the restart to say {said!r}, it logged {restored!r}")
    elif not any(w == 4 for w in worlds.values()) or worlds.get(max(worlds, default=0)) != 6:
        bad.append(f"wanted steps in a view of four, then six again at the end, got worlds {worlds}")
    first_six = min([s for s, w in worlds.items() if w == REPLICAS * SIZE] or [0])
    partner = [r["step"] for r in reports if r["worker"] == "r1s0"]
    if any(worlds[s] == 4 and s > first_six for s in partner):
        bad.append("r1's shard 0 ran a step while its replica was not whole")
    want = replay(worlds) if HIDDEN <= 64 else {}
    import torch
    for r in reports if want else ():
        got = [torch.tensor(p) for p in r["params"]]
        index = r["rank"] % SIZE
        ref = [p.reshape(-1) for p in want[r["step"]]]
        # FSDP2 shards each parameter by rows (dim 0): this shard's rows of the replay's
        ref = [shard_of(p.reshape(q.shape[0], -1), index) for p, q in zip(ref, want[r["step"]])]
        if any(not torch.allclose(a, b, atol=1e-5) for a, b in zip(got, ref)):
            bad.append(f"step {r['step']}: {r['worker']}'s shard differs from the one-process replay: "
                       f"{[t[:3].tolist() for t in got]} against {[t[:3].tolist() for t in ref]}")
            break
    for line in bad[:20]:
        print(line)
    print(json.dumps({"steps": len(by_step), "worlds": worlds, "retries": sum(r["attempt"] > 0 for r in reports)}))
    print(f"{'FSDP with copies' if ONE_REPLICA else 'HSDP'}{' in loop mode' if is_loop else ''} through a death "
          "and a rejoin: "
          + ("ok" if not bad else f"{len(bad)} broken promises"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
