"""bench/metrics: does scraping /metrics slow training? (issue 15)

Runs the same job of ftl-train-example workers on loopback (FTL_METRICS_ADDR set on every worker) without
scraping, then while every worker is scraped every --interval seconds (Prometheus's shortest usual period
is 1 s; --interval 0.01 is a stress case), alternating the two --runs times, and compares the mean step
time read from the workers' JSON lines (the gaps between a worker's consecutive step lines, steps 50 on).
Prints one JSON line per mode (medians over the runs). Usage:
  python3 bench/metrics/scrape_cost.py --train build/examples/ftl-train-example --ctl build/ctl/ftlctl"""

import argparse
import json
import os
import shutil
import statistics
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "agent"))
from cluster import free_port  # noqa: E402
from exposition import scrape  # noqa: E402
from workers import TrainingJob  # noqa: E402


def run_job(args, interval):
    """Mean step time (s) of one job, scraped every `interval` s (None: never), and the scrapes made."""
    job = TrainingJob(args.train, args.ctl, FTL_STEPS=args.steps, FTL_BATCH=16, FTL_DATA_SIZE=20000,
                      FTL_STEP_SLEEP_MS=0, FTL_LOG_LEVEL="warn")
    stop, scrapes = threading.Event(), [0]

    def scraper():
        while not stop.wait(interval):
            for w in job.workers():
                try:
                    scrape(w.env["FTL_METRICS_ADDR"])
                    scrapes[0] += 1
                except OSError:
                    pass
    try:
        for i in range(args.workers):
            job.add(f"w{i}", FTL_METRICS_ADDR=f"127.0.0.1:{free_port()}", FTL_EXPECTED_WORKERS=args.workers)
        thread = threading.Thread(target=scraper, daemon=True) if interval else None
        if thread:
            thread.start()
        codes = job.wait_exit(300)
        stop.set()
        assert all(c == 0 for c in codes.values()), codes
        gaps = []
        for w in job.workers():
            times = [r["t"] for r in w.steps() if r["step"] >= 50]
            gaps += [b - a for a, b in zip(times, times[1:])]
        return statistics.mean(gaps), scrapes[0]
    finally:
        stop.set()
        job.close()
        shutil.rmtree(job.dir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between scrapes of every worker")
    args = p.parse_args()
    results = {"none": [], "scraped": []}
    scrapes = []
    for _ in range(args.runs):
        results["none"].append(run_job(args, None)[0])
        step, n = run_job(args, args.interval)
        results["scraped"].append(step)
        scrapes.append(n)
    for mode, steps in results.items():
        print(json.dumps({"bench": "metrics_scrape_cost", "mode": mode, "interval_s": args.interval if mode == "scraped"
                          else None, "workers": args.workers, "steps": args.steps, "runs": args.runs,
                          "step_ms_median": round(statistics.median(steps) * 1000, 4),
                          "step_ms_runs": [round(s * 1000, 4) for s in steps],
                          "scrapes_per_run": scrapes if mode == "scraped" else None}))


if __name__ == "__main__":
    main()
