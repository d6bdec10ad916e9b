"""A subgroup across a view change: three real workers, a group of view ranks [0, 1] made with
dist.new_group for each view; each step all three all_reduce on the default group (as a step's gradients), and the
subgroup's members all_reduce a 1 on it. At step 4 the worker at view rank 1 is
killed with kill -9 (by itself, inside the step, before its all_reduce). What must happen:
- rank 0's all_reduce on the subgroup fails (the agent aborts the subgroup with the view's communicators),
  the step runs again in the new view of two, where the subgroup is made again over the new view's ranks
  0 and 1 (the third worker is rank 1 now);
- every all_reduce that succeeded gave 2.0 (never a sum with a stale or missing member);
- the two survivors reach step 8, and at least one step was run again;
- the subgroup made in the first view, called after the view change, is refused with a sentence (the
  program makes one per view, as the docs say).
The parent prints one JSON line per survivor and exits 1 on any broken promise.

    subgroup_view_change.py
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

STEPS, KILL_AT = 8, 4


def worker(index, ports, run_dir):
    import torch
    import torch.distributed as dist
    import ftl
    import ftl.torch
    agent = ftl.Agent(name=f"s{index}", bind=f"127.0.0.1:{ports[index]}", seeds=f"127.0.0.1:{ports[0]}",
                      insecure=1, run_dir=os.path.join(run_dir, f"w{index}"), min_workers=2, settle_ms=500,
                      log_level=os.environ.get("SUB_LOG", "warn"), collective_timeout_ms=20000)
    ftl.torch.init_process_group(agent)
    sums, retries, seen = [], 0, {"first3": None, "sub": None}
    open(os.path.join(run_dir, f"ready{index}"), "w").close()  # start together: the first view has all three
    while sum(os.path.exists(os.path.join(run_dir, f"ready{i}")) for i in range(3)) < 3:
        time.sleep(0.02)
    with agent:
        def step(info):
            nonlocal retries
            retries += info.attempt > 0
            if info.world_size < 3 and seen["first3"] is None:
                time.sleep(0.05)  # until the third worker is in: the test starts in a view of all three
            if seen.get("sub_view") != info.view_epoch and info.world_size >= 2:  # view ranks 0 and 1, per view
                seen["old"], seen["sub"], seen["sub_view"] = seen["sub"], dist.new_group(ranks=[0, 1]), info.view_epoch
            if info.world_size == 3 and seen["first3"] is None:
                seen["first3"] = info.step  # the same step on all three: the first of the view of three
            if seen["first3"] is not None and info.step == seen["first3"] + KILL_AT and info.rank == 1 \
                    and info.world_size == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            everyone = torch.ones(1)
            dist.all_reduce(everyone)  # the whole view, as a training step's gradients: ranks go in step
            if info.rank in (0, 1) and seen["sub"] is not None:
                x = torch.ones(1)
                dist.all_reduce(x, group=seen["sub"])
                return info.step, x.item()
            return None
        while seen["first3"] is None or agent.job_status()["step"] < seen["first3"] + STEPS:
            result = agent.execute(step)
            if result is not None:
                sums.append(result)
        world = agent.job_status()["world_size"]
        stale = None
        if seen.get("old") not in (None, dist.GroupMember.NON_GROUP_MEMBER):  # a subgroup of an earlier view
            try:
                dist.all_reduce(torch.ones(1), group=seen["old"])
            except ftl.Error as e:
                stale = str(e)
    print(json.dumps({"worker": index, "sums": sums, "retries": retries, "world": world, "stale": stale}),
          flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")], sys.argv[4])
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
    from cluster import free_port
    ports = [free_port() for _ in range(3)]
    with tempfile.TemporaryDirectory() as run_dir:
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), ",".join(map(str, ports)), run_dir],
                                  stdout=subprocess.PIPE, text=True) for i in range(3)]
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from ranks import outputs
        outs = outputs(procs, 150)
    reports = [json.loads(line) for code, out in outs for line in out.splitlines() if line.startswith("{")]
    for r in reports:
        print(json.dumps(r))
    killed = [code for code, _ in outs if code == -signal.SIGKILL]
    bad = []
    if len(killed) != 1 or len(reports) != 2:
        bad.append(f"wanted one worker killed and two reports, got exit codes {[c for c, _ in outs]}")
    if any(v != 2.0 for r in reports for _, v in r["sums"]) or not all(r["sums"] for r in reports):
        bad.append("an all_reduce on the subgroup gave something else than 2.0")
    if not any(r["retries"] > 0 for r in reports):
        bad.append("no step was run again after the kill")
    if any(r["world"] != 2 for r in reports):
        bad.append("the survivors did not end in a view of two")
    if not any(r["stale"] and "made in view" in r["stale"] for r in reports):
        bad.append("a subgroup of an earlier view was not refused with its sentence")
    print("subgroup across a view change: " + ("ok" if not bad else "; ".join(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
