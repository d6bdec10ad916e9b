"""Partitions of any length heal (issue 17, item 1), in the pod-like harness (pods.py): five pods with the
Deployment's environment and a short reap time (FTL_REAP_AFTER_MS, so the sides forget each other long
before the heal) are split by moving pods onto separate bridges (each side still reaches itself: a real
partition, not a cut pod). For each cut, e.g. 3|2 for 15 s (more than three times the reap):
  - the majority trains on as a view of its own; the minority never steps, and no worker exits (a side
    without quorum waits and spends no retries);
  - after the heal every pod trains in one view of all five within --heal-limit seconds (reaped members
    included), with equal digests after every step.
Prints the heal-to-training time of each cut (heal -> every pod has completed a step in the merged view).
    python3 test_partition.py --train PATH --ctl PATH [--cuts 3:2@15,4:1@15] [--repeat N] [--limit S]
The partition soak is this script with longer lists (e.g. --cuts 3:2@5,3:2@30,4:1@5,4:1@30 --repeat 3).
Exit 77 (ctest SKIP) where pods cannot run. FTL_TEST_SEED=<seed> replays which pods go to which side."""

import argparse
import os
import random
import signal
import sys
import time

from pods import PodJob, why_pods_cannot_run
from test_pods import JOB, check_digests, latest_epoch

SKIP = 77
REAP_AFTER_MS = 4000  # the short reap: members are forgotten 4 s after they are declared dead


def one_cut(job, rng, majority, minority, seconds, heal_limit):
    pods = job.pods()
    assert len(pods) == majority + minority
    shuffled = pods[:]
    rng.shuffle(shuffled)
    big, small = shuffled[:majority], shuffled[majority:]
    before = latest_epoch(job)
    t_cut = time.time()
    job.partition([big, small])
    print(f"cut {majority}|{minority} for {seconds} s: minority {[p.name for p in small]} after step {job.progress()}")
    job.wait(f"the {majority} train as a view of their own",
             lambda: any(r["epoch"] > before and r["world"] == majority for p in big for r in p.steps()), 60)
    time.sleep(max(0.0, seconds - (time.time() - t_cut)))
    exited = {p.name: p.proc.poll() for p in pods if p.proc.poll() is not None}
    assert not exited, f"workers exited during the cut: {exited}"
    stepped = [r for p in small for r in p.steps() if r["epoch"] > before and r["t"] < time.time()]
    assert not stepped, f"the minority stepped while cut off: {stepped[:3]}"
    retries = {p.name: (job.status(p) or {}).get("view", {}).get("retries") for p in small}
    phases = {p.name: (job.status(p) or {}).get("view", {}).get("phase") for p in small}
    cut_epoch = latest_epoch(job)
    job.heal_partition()
    t_heal = time.time()

    def merged():
        return all(any(r["epoch"] > cut_epoch and r["world"] == len(pods) for r in p.steps()) for p in pods)
    job.wait(f"all {len(pods)} train in one view after the heal", merged, heal_limit)
    firsts = [min(r["t"] for r in p.steps() if r["epoch"] > cut_epoch and r["world"] == len(pods)) for p in pods]
    took = max(firsts) - t_heal
    exited = {p.name: p.proc.poll() for p in pods if p.proc.poll() is not None}
    assert not exited, f"workers exited after the heal: {exited}"
    print(f"  minority during the cut: phases {phases}, retries {retries}; majority at step {job.progress()}")
    print(f"  healed: all {len(pods)} trained in one view {took:.2f} s after the heal")
    check_digests(job, f"after the {majority}|{minority} cut healed")
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    # 15 s: the sides declare each other dead within a second and reap 4 s later, so each side has forgotten
    # the other for some 10 s before the heal (the soak's 30 s cuts gave the same results; CI saves 30 s a run)
    ap.add_argument("--cuts", default="3:2@15,4:1@15", help="MAJORITY:MINORITY@SECONDS, comma separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--heal-limit", type=float, default=30.0, help="seconds after a heal to train as one view")
    ap.add_argument("--limit", type=int, default=280, help="hard time limit in seconds")
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        print(f"SKIP: the partition test {why}")
        return SKIP
    seed = int(os.environ.get("FTL_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"seed {seed} (FTL_TEST_SEED={seed} replays it)")
    cuts = []
    for item in args.cuts.split(","):
        sizes, _, secs = item.partition("@")
        big, _, small = sizes.partition(":")
        cuts.append((int(big), int(small), float(secs)))

    def out_of_time(signum, frame):
        raise TimeoutError(f"the partition test ran past its limit of {args.limit} s")
    signal.signal(signal.SIGALRM, out_of_time)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
    signal.alarm(args.limit)
    job = PodJob(args.train, args.ctl, rng=rng, **{**JOB, "FTL_REAP_AFTER_MS": REAP_AFTER_MS})
    print(f"pods' logs and JSON lines in {job.dir} (removed if the test passes)")
    heal_times = []

    def body():
        n = cuts[0][0] + cuts[0][1]
        pods = job.scale_up(n)
        job.wait(f"a step with all {n} pods", lambda: any(r["world"] == n for p in pods for r in p.steps()), 60)
        for _ in range(args.repeat):
            for big, small, secs in cuts:
                heal_times.append((f"{big}|{small} {secs:g} s", one_cut(job, rng, big, small, secs, args.heal_limit)))
        print("heal-to-training times: " + "; ".join(f"{k}: {v:.2f} s" for k, v in heal_times))
    return job.run_test(body)

if __name__ == "__main__":
    sys.exit(main())
