"""bench/rescale/slow_worker.py: what one slow worker costs a job, and how soon ftl names it (issue 41 item 3).

A worker whose steps take twice as long (FTL_STEP_SLEEP_MS doubled, standing in for a throttled CPU or a
slow GPU) holds a synchronous job to its pace. This runs, on loopback with real processes:
- healthy: N workers at --step-ms (the baseline), and N-1 (what dropping the slow one would give);
- slow: N workers, the last at 2 x --step-ms: the throughput, and the time from the first step of all N to
  the moment rank 0's status names the slow rank (pace, train/pace.h), with the lead it reports;
- replace: the same with a spare (FTL_MAX_WORKERS=N, started once all N train) and FTL_SLOW_POLICY=replace:
  the time from the first step of all N to the spare's agent answering and to its first step in the slow
  one's place (rank 0 asks when the rank is found slow and every 4 exchanges after), and the throughput
  after.
Throughput is samples/s over --seconds of rank 0's steps (world x FTL_BATCH samples a step). One JSON line
per configuration. Usage:
  python3 bench/rescale/slow_worker.py --train build-rel/examples/ftl-train-example --ctl build-rel/ctl/ftlctl
--torch PYTHON runs examples/torch_digits.py (DDP over ftl's group) instead (FTL_LIBRARY, PYTHONPATH as for
the Python tests).

--sample-us U (the C example) makes the work per sample instead of per step (FTL_SAMPLE_SLEEP_US: U for the
healthy, 2U for the slow worker) with a fixed global batch of N x FTL_BATCH (FTL_GLOBAL_BATCH, so N-1
healthy workers take more each), and adds
- rebalance: the slow worker and FTL_SLOW_POLICY=rebalance (shares of the global batch follow each rank's
  speed): the time until the shares first move (status), the slow worker's share then, and the throughput
  once they have settled (after --settle-s)."""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "agent"))
from workers import TrainingJob  # noqa: E402

BATCH = 32


def program(args):
    if args.torch:
        return [args.torch, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "torch_digits.py")]
    return args.train


def throughput(job, n, seconds, step_samples):
    """samples/s of rank 0's steps in a view of n over `seconds`, after the first 10 steps of that view."""
    def rank0():
        return [s for w in job.workers() for s in w.steps() if s["rank"] == 0 and s["world"] == n]
    job.wait(f"10 steps of {n}", lambda: len(rank0()) >= 10, 120)
    first = rank0()[-1]
    time.sleep(seconds)
    last = rank0()[-1]
    return (last["step"] - first["step"]) * step_samples(n) / (last["t"] - first["t"])


def costs(args, workers):
    """The job's settings for the work per step (FTL_STEP_SLEEP_MS) or per sample (--sample-us: a fixed global
    batch), the slow worker's, and the samples a step of n takes."""
    if args.sample_us:
        batch = workers * BATCH
        return (dict(FTL_SAMPLE_SLEEP_US=args.sample_us, FTL_GLOBAL_BATCH=batch), {"FTL_SAMPLE_SLEEP_US": 2 * args.sample_us},
                lambda n: batch)
    return dict(FTL_STEP_SLEEP_MS=args.step_ms), {"FTL_STEP_SLEEP_MS": 2 * args.step_ms}, lambda n: n * BATCH


def run(args, n, slow, policy="report"):
    job_cost, slow_cost, step_samples = costs(args, args.workers)
    extra = {"replace": dict(FTL_SLOW_POLICY="replace", FTL_MAX_WORKERS=n),
             "rebalance": dict(FTL_SLOW_POLICY="rebalance")}.get(policy, {})
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=1000000, FTL_BATCH=BATCH, FTL_EXPECTED_WORKERS=n,
                      FTL_LOG_LEVEL="info", **job_cost, **extra)
    try:
        for i in range(n):
            job.add(f"w{i}", **(slow_cost if slow and i == n - 1 else {}))
        job.wait("a step of all", lambda: any(s["world"] == n for w in job.workers() for s in w.steps()), 120)
        t_all = min(s["t"] for w in job.workers() for s in w.steps() if s["world"] == n)
        out = {"bench": "slow_worker", "program": "torch" if args.torch else "c", "workers": n,
               "slow_workers": int(slow), "policy": policy,
               **({"sample_us": args.sample_us, "global_batch": step_samples(n)} if args.sample_us
                  else {"step_ms": args.step_ms})}

        def pace():
            return (job.status(job.agents["w0"]).get("view") or {}).get("pace") or {}
        if policy == "replace":  # the youngest: waits above FTL_MAX_WORKERS
            spare = job.add("spare")
            job.wait("the spare's agent answers", lambda: job.status(spare) is not None, 120)
            out["spare_up_after_s"] = round(time.time() - t_all, 2)
            job.wait("the spare trains", lambda: any(s["world"] == n for s in spare.steps()), 120)
            out["replaced_after_s"] = round(min(s["t"] for s in spare.steps()) - t_all, 2)
        elif policy == "rebalance":
            def slow_share():
                return next((r.get("share", 0) for r in pace().get("ranks", []) if r["name"] == f"w{n - 1}"), 0)
            job.wait("the shares move", lambda: 0 < slow_share() < 0.9 / n, 120)
            out.update(moved_after_s=round(time.time() - t_all, 2))
            time.sleep(args.settle_s)
            out.update(slow_share=round(slow_share(), 3))
        elif slow:
            job.wait("the slow rank named", lambda: pace().get("slow_name") == f"w{n - 1}", 120)
            p = pace()
            row = p["ranks"][p["slow_rank"]]
            out.update(named_after_s=round(time.time() - t_all, 2), lead_ms=round(row["lead_ms"], 1),
                       slow_step_ms=round(row["step_ms"], 1))
        out["samples_per_s"] = round(throughput(job, n, args.seconds, step_samples), 1)
        return out
    finally:
        job.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", help="the ftl-train-example binary")
    p.add_argument("--torch", metavar="PYTHON", help="run examples/torch_digits.py with this interpreter")
    p.add_argument("--ctl", required=True)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--step-ms", type=int, default=40, help="the healthy workers' step sleep")
    p.add_argument("--seconds", type=float, default=8.0, help="how long to measure each throughput")
    p.add_argument("--sample-us", type=int, default=0,
                   help="work per sample (a fixed global batch) instead of per step; adds the rebalance policy")
    p.add_argument("--settle-s", type=float, default=3.0, help="rebalance: how long the shares settle")
    args = p.parse_args()
    if not args.train and not args.torch:
        p.error("give --train (the C example) or --torch (an interpreter for the PyTorch example)")
    if args.torch and args.sample_us:
        p.error("--sample-us needs the C example (--train)")
    if args.torch:
        TrainingJob.start_timeout = 60
    rows = [run(args, args.workers, False), run(args, args.workers - 1, False), run(args, args.workers, True),
            run(args, args.workers, True, "replace")]
    if args.sample_us:
        rows.append(run(args, args.workers, True, "rebalance"))
    base = rows[0]["samples_per_s"]
    for r in rows:
        r["of_healthy"] = round(r["samples_per_s"] / base, 3)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
