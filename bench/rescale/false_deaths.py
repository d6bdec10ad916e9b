"""False deaths under CPU starvation (issue 18): 8 workers of ftl-train-example training at full speed
(no step sleep) while two busy loops saturate the machine's cores, for a given time. A worker declared
dead in this run is a false death: nobody is killed. Prints one JSON line: steps done, deaths by the path
that declared them, suspicions raised (all refuted if no death).

    python3 bench/rescale/false_deaths.py --train build/examples/ftl-train-example --ctl build/ctl/ftlctl [--seconds 600]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "agent"))
from workers import TrainingJob  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    job = TrainingJob(args.train, args.ctl, FTL_STEPS=10**9, FTL_STEP_SLEEP_MS=0, FTL_MIN_WORKERS=2,
                      FTL_LOG_LEVEL="info")
    try:
        for i in range(args.workers):
            job.add(f"w{i}")
        job.wait_step(30, 120)
        first = job.progress()
        time.sleep(args.seconds)
        lines = [line for w in job.workers() for line in open(w.log, errors="replace")]
        deaths = [line for line in lines if 'msg="member dead"' in line]
        reasons = {}
        for line in deaths:
            m = re.search(r'reason="([^"]*)"', line)
            reasons[m.group(1) if m else "?"] = reasons.get(m.group(1) if m else "?", 0) + 1
        print(json.dumps({"bench": "false_deaths", "seconds": args.seconds, "workers": args.workers,
                          "cpu_hogs": args.hogs, "steps": job.progress() - first, "dead_lines": len(deaths),
                          "deaths_by_reason": reasons,
                          "suspect_lines": sum('msg="member suspect"' in line for line in lines),
                          "exited": [w.name for w in job.workers() if not w.is_running()]}))
        for line in deaths[:5]:
            print(line.strip(), file=sys.stderr)
    finally:
        job.close()
        for h in hogs:
            h.kill()


if __name__ == "__main__":
    main()
