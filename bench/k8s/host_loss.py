"""bench/k8s: a lost host against a killed process, on the pods of tests/k8s/pods.py (network namespaces with the
Deployment's environment; needs root). Issue 41 item 1's figure: what a job pays when a node vanishes without
a word (its link goes down: no RST, no refusal, packets dropped) next to a worker killed with kill -9 (its
kernel refuses the port and, with a witness on its host, the death is proven at once).
  link_down: the pod's veth goes down -> the first step the others complete in a view without it;
  kill9:     kill -9 of the pod's worker -> the same.
Each run takes one pod of a job of --pods out (alternating the two ways), then deletes it and adds a fresh
pod, so every run starts from --pods training together. One JSON line per figure (median over --runs):
  sudo python3 bench/k8s/host_loss.py --train build-rel/examples/ftl-train-example --ctl build-rel/ctl/ftlctl"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "k8s"))
from pods import PodJob, wait_world, why_pods_cannot_run  # noqa: E402


def lose(job, pod, how):
    """Takes pod out by how ("link_down" or "kill9"); seconds to the others' first step without it."""
    before = max(r["epoch"] for r in job.records() if "epoch" in r)
    staying = [p for p in job.pods() if p is not pod]
    t0 = time.time()
    if how == "link_down":
        job.cut(pod)
    else:
        pod.signal(signal.SIGKILL)

    def without():
        return [r for p in staying for r in p.steps() if r["epoch"] > before and r["world"] == len(staying)]
    job.wait(f"a step without {pod.name} ({how})", without, 60)
    took = min(r["t"] for r in without()) - t0
    # The pod is gone for good: out of the Service, its worker stopped (a cut one cannot leave).
    job.endpoints.remove(pod)
    job.publish_endpoints()
    if pod.is_running():
        pod.signal(signal.SIGKILL)
    pod.proc.wait()
    return took


def figure(how, samples, args):
    print(json.dumps({"bench": "k8s_host_loss", "figure": f"{how}_to_first_step_s",
                      "median_s": round(statistics.median(samples), 3), "min_s": round(min(samples), 3),
                      "max_s": round(max(samples), 3), "runs": len(samples), "pods": args.pods,
                      "step_sleep_ms": args.step_ms, "profile": args.profile, "settings": args.set}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--pods", type=int, default=5, help="the job's size before each loss")
    ap.add_argument("--runs", type=int, default=3, help="losses of each kind")
    ap.add_argument("--step-ms", type=int, default=20, help="FTL_STEP_SLEEP_MS: the model's compute per step")
    ap.add_argument("--profile", default="train", help="FTL_PROFILE of the job")
    ap.add_argument("--seed", type=int, default=None, help="which pod each run takes out")
    ap.add_argument("--set", action="append", default=[], metavar="FTL_X=V",
                    help="another setting of every pod (to try a tuning: --set FTL_SUSPICION_MULT=1)")
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        sys.exit(f"bench/k8s: {why}")
    rng = random.Random(args.seed)
    job = PodJob(args.train, args.ctl, FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000,
                 FTL_STEP_SLEEP_MS=args.step_ms, FTL_PROFILE=args.profile,
                 **dict(item.split("=", 1) for item in args.set))
    samples = {"link_down": [], "kill9": []}
    try:
        job.scale_up(args.pods)
        for run in range(args.runs):
            for how in samples:
                wait_world(job, job.pods(), args.pods, 90)
                victim = rng.choice(job.pods()[1:])  # not the oldest: the coordinator's loss is another figure
                samples[how].append(lose(job, victim, how))
                print(f"run {run}: {how} of {victim.name}: {samples[how][-1]:.3f} s", file=sys.stderr, flush=True)
                job.add()
        for how, got in samples.items():
            figure(how, got, args)
    finally:
        job.close()
        shutil.rmtree(job.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
