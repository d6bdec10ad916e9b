"""bench/k8s: how fast `kubectl scale` takes effect on a running job, measured on the pods of
tests/k8s/pods.py (network namespaces with the Deployment's environment; needs root).
  scale-up:   a new pod's worker starts -> its first completed step (it found the job through the
              Service name, joined the gossip, got a rank in the next view and rank 0's state);
  scale-down: the pod's deletion begins -> the first step the others complete in a view without it,
              with the Deployment's preStop hook (`ftlctl leave`, then SIGTERM), and with SIGTERM alone
              (the example leaves on SIGTERM after finishing its step).
Scheduling, image pull and container start are Kubernetes' and not included. Each run adds one pod to a
job of --pods and deletes it again. One JSON line per figure (median over --runs):
  sudo python3 bench/k8s/scale_latency.py --train build/examples/ftl-train-example --ctl build/ctl/ftlctl"""

import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "k8s"))
from pods import PodJob, wait_world, why_pods_cannot_run  # noqa: E402


def scale_up(job, world):
    pod = job.add()
    job.wait("the new pod's first step", lambda: pod.steps(), 60)
    wait_world(job, job.pods(), world, 30)
    return pod, pod.steps()[0]["t"] - pod.started_at


def scale_down(job, pod, with_prestop):
    before = max(r["epoch"] for r in job.records() if "epoch" in r)
    staying = [p for p in job.pods() if p is not pod]
    t0 = time.time()
    job.terminate([pod], with_prestop=with_prestop)
    def without():
        return [r for p in staying for r in p.steps() if r["epoch"] > before and r["world"] == len(staying)]
    job.wait("a step without the deleted pod", without, 60)
    wait_world(job, staying, len(staying), 30)
    return min(r["t"] for r in without()) - t0


def figure(name, samples, args):
    print(json.dumps({"bench": name, "median_s": round(statistics.median(samples), 3),
                      "min_s": round(min(samples), 3), "max_s": round(max(samples), 3), "runs": len(samples),
                      "pods": args.pods, "step_sleep_ms": args.step_ms, "extra_state_mb": args.extra_state_mb}),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--pods", type=int, default=3, help="the job's size between scalings")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--step-ms", type=int, default=20, help="FTL_STEP_SLEEP_MS: the model's compute per step")
    ap.add_argument("--extra-state-mb", type=int, default=0, help="FTL_EXTRA_STATE_MB: state to transfer")
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        sys.exit(f"bench/k8s: {why}")
    job = PodJob(args.train, args.ctl, FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000,
                 FTL_STEP_SLEEP_MS=args.step_ms, FTL_EXTRA_STATE_MB=args.extra_state_mb)
    up, down_prestop, down_sigterm = [], [], []
    try:
        job.scale_up(args.pods)
        wait_world(job, job.pods(), args.pods, 60)
        for run in range(args.runs):
            for with_prestop, samples in ((True, down_prestop), (False, down_sigterm)):
                pod, took = scale_up(job, args.pods + 1)
                up.append(took)
                samples.append(scale_down(job, pod, with_prestop))
        figure("k8s_scale_up_s", up, args)
        figure("k8s_scale_down_prestop_s", down_prestop, args)
        figure("k8s_scale_down_sigterm_s", down_sigterm, args)
    finally:
        job.close()
        shutil.rmtree(job.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
