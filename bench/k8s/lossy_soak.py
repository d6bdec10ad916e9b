#!/usr/bin/env python3
"""False deaths under packet loss: a job of --pods trains for --seconds while every pod drops --loss-pct
percent of its packets at random, in and out (nftables' numgen in each pod's namespace, so every link
loses about twice that). It prints one JSON line: the membership deaths the pods' logs recorded (each is
false: no pod was harmed), the views the job went through after it formed, and the steps per second
with and without the loss.

This is the other side of bench/k8s/host_loss.py: a failure detector made faster must not take loss for
death. What it cannot shape is delay (this kernel has no netem): the links are the bridge's, microseconds
apart, so the round trip is not the issue's 2 ms. Needs root, like tests/k8s:
  sudo python3 bench/k8s/lossy_soak.py --train build-rel/examples/ftl-train-example --ctl build-rel/ctl/ftlctl"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "k8s"))
from pods import PodJob, wait_world, why_pods_cannot_run  # noqa: E402

TABLE = "ftl_soak_loss"


def set_loss(pod, pct):
    """Drops pct % of the pod's packets in each direction, at random (0: no table at all)."""
    subprocess.run(["ip", "netns", "exec", pod.netns, "nft", "delete", "table", "inet", TABLE],
                   capture_output=True)
    if pct <= 0:
        return
    rules = (f"table inet {TABLE} {{\n"
             f"  chain in {{ type filter hook input priority 0; numgen random mod 100 < {pct} drop; }}\n"
             f"  chain out {{ type filter hook output priority 0; numgen random mod 100 < {pct} drop; }}\n"
             "}\n")
    subprocess.run(["ip", "netns", "exec", pod.netns, "nft", "-f", "-"], input=rules.encode(), check=True)


def steps_per_second(job, seconds):
    """The job's steps per second over the next `seconds`, as its oldest pod counts them."""
    pod = job.pods()[0]
    before = len(pod.steps())
    time.sleep(seconds)
    return (len(pod.steps()) - before) / seconds


def deaths(pods):
    return sum(p.log_text().count('msg="member dead"') for p in pods)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--pods", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=600, help="how long the lossy run lasts")
    ap.add_argument("--loss-pct", type=int, default=1, help="percent dropped by each pod, in and out")
    ap.add_argument("--step-ms", type=int, default=20, help="FTL_STEP_SLEEP_MS: the model's compute per step")
    ap.add_argument("--profile", default="train")
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        sys.exit(f"bench/k8s: {why}")
    if shutil.which("nft") is None:
        sys.exit("bench/k8s: nft not found (Debian's nftables package)")
    job = PodJob(args.train, args.ctl, FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000,
                 FTL_STEP_SLEEP_MS=args.step_ms, FTL_PROFILE=args.profile)
    try:
        job.scale_up(args.pods)
        pods = job.pods()
        wait_world(job, pods, args.pods, 90)
        clean_rate = steps_per_second(job, 10)
        epoch = max(r["epoch"] for r in job.records() if "epoch" in r)
        dead_before = deaths(pods)
        for pod in pods:
            set_loss(pod, args.loss_pct)
        lossy_rate = steps_per_second(job, args.seconds)
        for pod in pods:
            set_loss(pod, 0)
        views = len({r["epoch"] for r in job.records() if r.get("epoch", 0) > epoch})
        print(json.dumps({"bench": "k8s_lossy_soak", "pods": args.pods, "loss_pct_each_way": args.loss_pct,
                          "seconds": args.seconds, "profile": args.profile,
                          "false_deaths": deaths(pods) - dead_before, "views_after_forming": views,
                          "steps_per_s_clean": round(clean_rate, 1), "steps_per_s_lossy": round(lossy_rate, 1)}),
              flush=True)
    finally:
        job.close()
        shutil.rmtree(job.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
