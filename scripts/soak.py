"""Chaos soak (not part of CI; scripts/soak.sh runs it): 6 training workers as pods in network namespaces
(tests/k8s/pods.py, root needed), disturbed from a seeded schedule that replays exactly (same seed and
duration, same actions at the same times):
  kill      kill -9 of a worker; a replacement pod (a new name) starts 2-10 s later
  stop      SIGSTOP of a worker for 1-15 s, then SIGCONT
  leave     SIGTERM (a graceful leave); a replacement starts 2-10 s later
  join      one more pod (then, later, the newest extra one leaves again, so the job stays near 6)
  partition the pods split so that one side keeps a majority (5|1 or 4|2) for 1-30 s, then healed
One disturbance at a time, 3-15 s apart. At the end it reports, from the workers' JSON lines and logs:
steps done, views, retries (step attempts after a failure), the longest time without progress and the
total time in gaps over 2 s, digest checks (every rank of every step's final view reports the same
digest), samples used exactly once per data epoch, and worker exits that nobody asked for.
    python3 scripts/soak.py --train PATH --ctl PATH [--minutes M] [--seed S]"""

import argparse
import collections
import os
import random
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "k8s"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "agent"))
from pods import PodJob, why_pods_cannot_run  # noqa: E402
from workers import digest_problems, final_groups, used_indices  # noqa: E402

WORKERS = 6
JOB = dict(FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000, FTL_STEP_SLEEP_MS=20, FTL_LOG_INDICES=1,
           FTL_COLLECTIVE_TIMEOUT_MS=10000)


def make_schedule(seed, seconds):
    """[(at_s, action, params)] from the seed alone."""
    rng = random.Random(seed)
    t, plan = 10.0, []
    while t < seconds - 20:
        action = rng.choice(["kill", "stop", "leave", "join", "partition", "partition"])
        if action == "stop":
            params = {"for_s": rng.uniform(1, 15)}
        elif action == "partition":
            params = {"minority": rng.choice([1, 2]), "for_s": rng.uniform(1, 30)}
        elif action in ("kill", "leave"):
            params = {"replace_after_s": rng.uniform(2, 10)}
        else:
            params = {}
        params["pick"] = rng.random()
        plan.append((round(t, 2), action, params))
        t += params.get("for_s", params.get("replace_after_s", 0)) + rng.uniform(3, 15)
    return plan


def pick(pods, u):
    return pods[min(int(u * len(pods)), len(pods) - 1)]


def run_schedule(job, plan, deadline, t0, log):
    expected_exits = set()
    extra = []
    for at, action, p in plan:
        while time.time() - t0 < at:
            time.sleep(0.1)
        pods = [q for q in job.pods() if q.is_running()]
        victim = pick(pods, p["pick"])
        log(f"{time.time() - t0:7.1f} s  {action} {victim.name if action != 'join' else ''} {p}")
        if action == "kill":
            victim.signal(signal.SIGKILL)
            expected_exits.add(victim.name)
            job.endpoints.remove(victim)
            job.publish_endpoints()
            time.sleep(p["replace_after_s"])
            job.add()
        elif action == "stop":
            victim.signal(signal.SIGSTOP)
            time.sleep(p["for_s"])
            victim.signal(signal.SIGCONT)
        elif action == "leave":
            expected_exits.add(victim.name)
            job.terminate([victim])
            time.sleep(p["replace_after_s"])
            job.add()
        elif action == "join":
            if extra and extra[0].is_running():
                old = extra.pop(0)
                expected_exits.add(old.name)
                job.terminate([old])
                log(f"{'':7} s  (the extra pod {old.name} left again)")
            extra.append(job.add())
        elif action == "partition":
            rng = random.Random(p["pick"])
            shuffled = pods[:]
            rng.shuffle(shuffled)
            small = shuffled[:p["minority"]]
            job.partition([[q for q in pods if q not in small], small])
            time.sleep(p["for_s"])
            job.heal_partition()
        if time.time() > deadline:
            break
    return expected_exits


def report(job, t0, t_end, expected_exits, log):
    records = job.records()
    groups, superseded = final_groups(records)
    problems = digest_problems(groups)
    steps = len(groups)
    missing = sorted(set(range(max(groups) + 1)) - set(groups)) if groups else []
    views = len({g[0]["epoch"] for g in groups.values()})
    retried = {(r["step"]) for r in records if "indices" in r and r.get("attempt", 0) > 0}
    times = sorted(min(r["t"] for r in g) for g in groups.values())
    gaps = [b - a for a, b in zip([t0] + times, times + [t_end])]
    longest = max(gaps) if gaps else 0.0
    idle = sum(g for g in gaps if g > 2.0)
    used = used_indices(records)
    last_epoch = max(used) if used else 0
    bad_epochs = []
    for e, counts in sorted(used.items()):
        twice = [i for i, c in counts.items() if c > 1]
        complete = e < last_epoch
        lacking = (JOB["FTL_DATA_SIZE"] - len(counts)) if complete else 0
        if twice or lacking:
            bad_epochs.append((e, len(twice), lacking))
    exits = {w.name: w.proc.poll() for w in job.agents.values()
             if w.proc and w.proc.poll() is not None and w.name not in expected_exits}
    log("---- soak report")
    log(f"steps done            {steps} (missing {len(missing)}; superseded by a later view {superseded})")
    log(f"views trained in      {views}")
    log(f"retries               {len(retried)} steps run again after a failure")
    log(f"time without progress longest {longest:.2f} s; {idle:.1f} s in gaps over 2 s, of {t_end - t0:.0f} s")
    log(f"digest checks         {steps - len(problems)} of {steps} steps equal on every rank"
        + (f"; PROBLEMS: {problems[:5]}" if problems else ""))
    log(f"samples               {last_epoch} complete data epochs, each index exactly once: "
        f"{'yes' if not bad_epochs else 'NO ' + str(bad_epochs[:5])}; epoch {last_epoch} so far "
        f"{len(used.get(last_epoch, {}))} indices, none twice: {not any(e == last_epoch for e, _, _ in bad_epochs)}")
    log(f"unexpected exits      {exits or 'none'}")
    return not problems and not missing and not bad_epochs and not exits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        sys.exit(f"soak: {why}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    seconds = args.minutes * 60
    plan = make_schedule(seed, seconds)
    counts = collections.Counter(a for _, a, _ in plan)
    print(f"seed {seed}, {args.minutes:g} minutes: {len(plan)} disturbances {dict(counts)} "
          f"(replay: scripts/soak.sh {args.minutes:g} {seed})", flush=True)
    job = PodJob(args.train, args.ctl, rng=random.Random(seed), **JOB)
    print(f"pods' logs and JSON lines in {job.dir}", flush=True)
    ok = False
    try:
        job.scale_up(WORKERS)
        job.wait(f"a step with all {WORKERS}", lambda: any(r["world"] == WORKERS for p in job.pods() for r in p.steps()), 90)
        t0 = time.time()
        expected = run_schedule(job, plan, t0 + seconds, t0, lambda s: print(s, flush=True))
        while time.time() - t0 < seconds:
            time.sleep(0.5)
        t_end = time.time()
        # Freeze every worker before reading: the report must not race lines still being written.
        for w in job.agents.values():
            if w.is_running():
                w.signal(signal.SIGSTOP)
        time.sleep(1)
        ok = report(job, t0, t_end, expected, lambda s: print(s, flush=True))
    finally:
        job.close()
    if ok:
        shutil.rmtree(job.dir, ignore_errors=True)
    print("PASS" if ok else f"FAIL (run directory kept: {job.dir})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
