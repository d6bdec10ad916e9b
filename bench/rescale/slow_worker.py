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
the Python tests)."""

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


def throughput(job, n, seconds):
    """samples/s of rank 0's steps in a view of n over `seconds`, after the first 10 steps of that view."""
    def rank0():
        return [s for w in job.workers() for s in w.steps() if s["rank"] == 0 and s["world"] == n]
    job.wait(f"10 steps of {n}", lambda: len(rank0()) >= 10, 120)
    first = rank0()[-1]
    time.sleep(seconds)
    last = rank0()[-1]
    return (last["step"] - first["step"]) * n * BATCH / (last["t"] - first["t"])


def run(args, n, slow, replace=False):
    policy = dict(FTL_SLOW_POLICY="replace", FTL_MAX_WORKERS=n) if replace else {}
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=1000000, FTL_STEP_SLEEP_MS=args.step_ms, FTL_BATCH=BATCH,
                      FTL_EXPECTED_WORKERS=n, FTL_LOG_LEVEL="info", **policy)
    try:
        for i in range(n):
            job.add(f"w{i}", **({"FTL_STEP_SLEEP_MS": 2 * args.step_ms} if slow and i == n - 1 else {}))
        job.wait("a step of all", lambda: any(s["world"] == n for w in job.workers() for s in w.steps()), 120)
        t_all = min(s["t"] for w in job.workers() for s in w.steps() if s["world"] == n)
        out = {"bench": "slow_worker", "program": "torch" if args.torch else "c", "workers": n,
               "slow_workers": int(slow), "policy": "replace" if replace else "report", "step_ms": args.step_ms}
        if replace:  # the youngest: waits above FTL_MAX_WORKERS
            spare = job.add("spare")
            job.wait("the spare's agent answers", lambda: job.status(spare) is not None, 120)
            out["spare_up_after_s"] = round(time.time() - t_all, 2)
            job.wait("the spare trains", lambda: any(s["world"] == n for s in spare.steps()), 120)
            out["replaced_after_s"] = round(min(s["t"] for s in spare.steps()) - t_all, 2)
        elif slow:
            def pace():
                return (job.status(job.agents["w0"]).get("view") or {}).get("pace") or {}
            job.wait("the slow rank named", lambda: pace().get("slow_name") == f"w{n - 1}", 120)
            p = pace()
            row = p["ranks"][p["slow_rank"]]
            out.update(named_after_s=round(time.time() - t_all, 2), lead_ms=round(row["lead_ms"], 1),
                       slow_step_ms=round(row["step_ms"], 1))
        out["samples_per_s"] = round(throughput(job, n, args.seconds), 1)
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
    args = p.parse_args()
    if not args.train and not args.torch:
        p.error("give --train (the C example) or --torch (an interpreter for the PyTorch example)")
    if args.torch:
        TrainingJob.start_timeout = 60
    rows = [run(args, args.workers, False), run(args, args.workers - 1, False), run(args, args.workers, True),
            run(args, args.workers, True, replace=True)]
    base = rows[0]["samples_per_s"]
    for r in rows:
        r["of_healthy"] = round(r["samples_per_s"] / base, 3)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
