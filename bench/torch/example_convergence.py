"""example_convergence: what a kill -9 and a join cost the real-model examples in final validation loss.

For each example (examples/torch_char_gpt.py, torch_resnet_digits.py) and each seed (FTL_TRAIN_SEED: the
model's initialisation and the sample order), two jobs of --workers ftl workers on this machine: one
fault-free, and one in which worker w1 is killed with SIGKILL at a quarter of the steps and a fresh worker
joins as soon as the survivors train without it. Both runs sleep --sleep-ms a step (it changes no number:
it keeps the job running while the joiner imports torch). Every run is judged as the tests judge one
(tests/agent: digests equal on every rank after every step, every worker's final digest equal).
Prints one JSON line per run, then a Markdown table per example: final validation loss fault-free and
disturbed (mean over the seeds, and the seeds' spread, max - min).

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/example_convergence.py \\
        --ctl build/ctl/ftlctl [--seeds 3] [--workers 3] [--steps-char-gpt 400] [--steps-resnet-digits 300]

Why here and not in ctest: a run of 2 examples x 3 seeds x 2 jobs takes minutes; the tests check the
mechanism (kill -9, join, digests) in seconds on smaller models."""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "agent"))
import test_training as judge  # noqa: E402
from workers import TrainingJob  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "..", "examples")
TrainingJob.start_timeout = 90  # a Python worker imports torch first; slower on a loaded machine


def one_run(args, example, seed, is_disturbed):
    """A job of the example; its final line, the worlds its steps ran in and its wall time."""
    steps = getattr(args, f"steps_{example}")
    job = TrainingJob([sys.executable, os.path.join(EXAMPLES, f"torch_{example}.py")], args.ctl,
                      FTL_STEPS=steps, FTL_TRAIN_SEED=seed, FTL_EXPECTED_WORKERS=args.workers,
                      FTL_STEP_SLEEP_MS=args.sleep_ms, FTL_COLLECTIVE_TIMEOUT_MS=10000, FTL_LOG_LEVEL="warn")
    started = time.monotonic()
    try:
        judge.start_job(job, args.workers)
        among = None
        if is_disturbed:
            job.wait_step(steps // 4, 120)
            job.kill("w1")
            survivors = [w for w in job.workers() if w.name != "w1"]
            job.wait("the survivors train without w1",
                     lambda: any(r["world"] == args.workers - 1 for w in survivors for r in w.steps()), 60)
            joiner = job.add(f"w{args.workers}")
            among = survivors + [joiner]
        final = judge.finish(job, among, timeout=600)
        groups = judge.check_every_step(job, steps)
    finally:
        job.close()
    worlds = [g[0]["world"] for g in groups.values()]
    if is_disturbed and args.workers not in worlds[steps // 4 + 1:]:
        print(f"{example} seed {seed}: the joiner arrived after the last step", file=sys.stderr)
    return {"example": example, "seed": seed, "run": "kill9+join" if is_disturbed else "fault-free",
            "workers": args.workers, "steps": steps, "val_loss": final["test_loss"],
            "val_accuracy": final["test_accuracy"], "worlds": sorted(set(worlds)),
            "steps_below_full_world": sum(w < args.workers for w in worlds),
            "seconds": round(time.monotonic() - started, 1)}


def table(rows):
    """The Markdown table of the runs: per example, mean and spread of the final validation loss."""
    lines = ["| example | seeds | val loss fault-free (mean; spread) | val loss kill -9 + join (mean; spread) | "
             "mean difference |", "|---|---|---|---|---|"]
    for example in sorted({r["example"] for r in rows}):
        of = {kind: [r["val_loss"] for r in rows if r["example"] == example and r["run"] == kind]
              for kind in ("fault-free", "kill9+join")}
        if not all(of.values()):
            continue
        cell = lambda v: f"{statistics.mean(v):.4f}; {max(v) - min(v):.4f}"  # noqa: E731
        diff = statistics.mean(of["kill9+join"]) - statistics.mean(of["fault-free"])
        lines.append(f"| {example} | {len(of['fault-free'])} | {cell(of['fault-free'])} | {cell(of['kill9+join'])} "
                     f"| {diff:+.4f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ctl", required=True, help="ftlctl (build/ctl/ftlctl)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--sleep-ms", type=int, default=30)
    p.add_argument("--steps-char-gpt", type=int, default=400)
    p.add_argument("--steps-resnet-digits", type=int, default=300)
    p.add_argument("--examples", default="char_gpt,resnet_digits")
    args = p.parse_args()
    rows = []
    for example in args.examples.split(","):
        for seed in range(args.seeds):
            for is_disturbed in (False, True):
                rows.append(one_run(args, example, seed, is_disturbed))
                print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
