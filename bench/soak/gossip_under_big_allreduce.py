#!/usr/bin/env python3
"""Soak for issue 24, item 10: does gossip keep running while a rank is in a huge collective?

Each run starts two Python workers (numpy, ftl.Agent) on loopback that allreduce a large array (default
2,100 MiB of f32, over 2 GiB) in every step, with a short collective timeout, while this script asks each
worker's agent for `ftlctl status --json` every second (the control socket is served by the agent's loop
thread: an unanswered poll means that thread is stuck, which is what stops gossip). Afterwards it counts
suspicions and deaths in the workers' logs. One JSON line per run, then a summary line:
    {"run": 1, "mib": 2100, "shm": "off", "timeout_ms": 8000, "steps_ok": [5, 5], "errors": [],
     "polls": 64, "polls_unanswered": 0, "longest_unanswered_s": 0.0, "suspicions": 0, "deaths": 0, "wall_s": 41.2}
Usage: bench/soak/gossip_under_big_allreduce.py [--build build] [--runs 5] [--mib 2100] [--steps 5]
       [--timeout-ms 8000] [--shm off|auto]. Needs about 3 x mib of free memory per worker."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = r"""
import os, sys, time
import numpy as np
import ftl
x = np.ones(int(os.environ["SOAK_MIB"]) * (1 << 20) // 4, np.float32)
with ftl.Agent() as a:
    for i in range(int(os.environ["SOAK_STEPS"])):
        t0 = time.time()
        try:
            a.execute(lambda info: a.allreduce(x))
            print(f"ok {i} {time.time()-t0:.2f}", flush=True)
        except Exception as e:
            print(f"error {i} {e}", flush=True)
            break
"""


def one_run(args, run, python, lib):
    d = tempfile.mkdtemp(prefix="ftl-soak-")
    env = dict(os.environ, FTL_LIBRARY=lib, PYTHONPATH=os.path.join(ROOT, "python", "src"), FTL_INSECURE="1",
               FTL_COLLECTIVE_TIMEOUT_MS=str(args.timeout_ms), FTL_EXPECTED_WORKERS="2", FTL_MIN_WORKERS="1",
               FTL_COMM_SHM=args.shm, FTL_RUN_DIR=d, SOAK_MIB=str(args.mib), SOAK_STEPS=str(args.steps))
    base = 17400 + 2 * (run % 50)
    procs = []
    for r in range(2):
        e = dict(env, FTL_NAME=f"r{r}", FTL_BIND=f"127.0.0.1:{base + r}", FTL_SEEDS=f"127.0.0.1:{base}")
        procs.append(subprocess.Popen([python, "-c", WORKER], env=e, stdout=open(f"{d}/r{r}.out", "w"),
                                      stderr=open(f"{d}/r{r}.log", "w")))
    start, polls, unanswered, gap, longest = time.time(), 0, 0, {}, 0.0
    while any(p.poll() is None for p in procs) and time.time() - start < args.limit:
        time.sleep(1)
        for r, p in enumerate(procs):
            sock = f"{d}/r{r}.sock"
            if p.poll() is not None or not os.path.exists(sock):
                continue
            polls += 1
            try:
                ok = subprocess.run([os.path.join(args.build, "ctl", "ftlctl"), "--socket", sock, "status", "--json"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=2).returncode == 0
            except subprocess.TimeoutExpired:
                ok = False
            if ok:
                gap.pop(r, None)
            else:
                unanswered += 1
                gap.setdefault(r, time.time())
                longest = max(longest, time.time() - gap[r])
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    outs = [open(f"{d}/r{r}.out").read().split("\n") for r in range(2)]
    logs = "".join(open(f"{d}/r{r}.log").read() for r in range(2))
    return {"run": run, "mib": args.mib, "shm": args.shm, "timeout_ms": args.timeout_ms,
            "steps_ok": [sum(l.startswith("ok ") for l in o) for o in outs],
            "errors": [l[:200] for o in outs for l in o if l.startswith("error ")],
            "polls": polls, "polls_unanswered": unanswered, "longest_unanswered_s": round(longest, 1),
            "suspicions": logs.count('msg="member suspect"'), "deaths": logs.count('msg="member dead"'),
            "wall_s": round(time.time() - start, 1), "dir": d}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--mib", type=int, default=2100)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--timeout-ms", type=int, default=8000)
    p.add_argument("--shm", default="off", choices=["off", "auto"])
    p.add_argument("--limit", type=float, default=240, help="seconds a run may take")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    bad = 0
    for run in range(1, args.runs + 1):
        res = one_run(args, run, args.python, os.path.join(args.build, "lib", "libftl.so"))
        print(json.dumps(res), flush=True)
        bad += res["polls_unanswered"] > 0 or res["suspicions"] > 0 or res["deaths"] > 0
    print(json.dumps({"runs": args.runs, "runs_with_a_stuck_loop_or_suspicion": bad}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
