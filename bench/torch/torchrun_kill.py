"""torchrun_kill: the anchor for ftl's kill -9 figure, torchrun's elastic agent recovering the same kind of
PyTorch job (the DDP twin of an ftl example, examples/*_ddp.py) on this machine.

    python3 bench/torch/torchrun_kill.py --torchrun .venv/bin/torchrun [--nodes 4] [--runs 3]

Each run starts `torchrun --standalone --nproc-per-node N --max-restarts 3` (c10d rendezvous on this host,
the usual single-machine setup), waits for step 30, kills one worker with kill -9, and times the kill to
the first step the restarted group completes. torchrun restarts every worker of the group; the twins keep
no checkpoint, so the restarted job begins again at step 0 (that is how its steps are told from the ones
the survivors finish as the kill comes), and the steps it repeats are counted too. A run
whose job never trains again within --limit seconds counts as failed to restart. Prints one JSON line per
run and one per figure, like bench/rescale/rescale.py (median, min, max over the runs that restarted)."""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def children_running(script, launcher_pid):
    """Pids of the processes running script whose parent's parent is the launcher (torchrun -> its agent's
    worker processes; with --standalone the workers are the launcher's children)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if int(entry) != launcher_pid and ppid == launcher_pid and any(script.encode() in c for c in cmd):
            pids.append(int(entry))
    return pids


def one_run(args, script):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FTL_")}
    env.update(FTL_STEPS="100000", FTL_STEP_SLEEP_MS=str(args.step_ms), OMP_NUM_THREADS="1",
               PYTHONPATH=os.path.join(ROOT, "examples"))  # not PYTHONUNBUFFERED: a line in two writes interleaves
    if args.rdzv == "standalone":
        rdzv = ["--standalone"]
    else:  # a c10d store at a fixed endpoint, as a multi-machine job names it
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        rdzv = ["--nnodes", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                "--rdzv-id", f"bench{port}"]
    cmd = [args.torchrun, *rdzv, "--nproc-per-node", str(args.nodes), "--max-restarts", "3", script]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=args.stderr, text=True,
                            start_new_session=True)
    steps = []  # (t, step) of every step line, any worker

    def read():
        for line in proc.stdout:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # not a record (a worker's traceback as it is killed, say)
            if "step" in r and not r.get("final"):
                steps.append((r["t"], r["step"]))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.time() + args.limit
        while not any(s >= 30 for _, s in steps):
            if time.time() > deadline or proc.poll() is not None:
                return {"error": "the job never reached step 30"}
            time.sleep(0.05)
        victims = children_running(os.path.basename(script), proc.pid)
        if not victims:
            return {"error": "no worker process found under torchrun"}
        last_before = max(s for _, s in steps)
        t_kill = time.time()
        os.kill(victims[0], signal.SIGKILL)
        deadline = t_kill + args.limit
        # A step of the restarted group: the twins keep no checkpoint, so it starts again below last_before
        # (the survivors may still print the step that was in flight when the kill came).
        def restarted():
            return [(t, s) for t, s in steps if t > t_kill and s < last_before]
        while not restarted():
            if time.time() > deadline or proc.poll() is not None:
                return {"error": f"no step within {args.limit:g} s of the kill (torchrun exited "
                                 f"{proc.poll()})" if proc.poll() is not None else "no step after the kill"}
            time.sleep(0.02)
        t_first, first_step = min(restarted())
        return {"kill_to_first_step_s": round(t_first - t_kill, 3), "steps_repeated": max(0, last_before - first_step + 1)}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        # torchrun starts each worker in a session of its own, so killpg misses them: end every process of
        # the script that outlived its torchrun (orphans, parent 1), so that none outlives the run.
        for pid in children_running(os.path.basename(script), 1):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--torchrun", required=True)
    p.add_argument("--script", default=os.path.join(ROOT, "examples", "torch_resnet_digits_ddp.py"))
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rdzv", choices=("standalone", "c10d"), default="standalone",
                   help="--standalone (its own store), or a c10d store at a fixed endpoint")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--step-ms", type=int, default=20)
    p.add_argument("--limit", type=float, default=120.0, help="seconds to wait for a step")
    p.add_argument("--log", help="append torchrun's stderr here (default: dropped)")
    args = p.parse_args()
    args.stderr = open(args.log, "a") if args.log else subprocess.DEVNULL
    runs = []
    for i in range(args.runs):
        r = one_run(args, args.script)
        runs.append(r)
        print(json.dumps({"bench": "torchrun_kill", "run": i, "nodes": args.nodes, **r}), flush=True)
    ok = [r for r in runs if "error" not in r]
    labels = {"bench": "torchrun_kill", "program": os.path.basename(args.script), "nodes": args.nodes,
              "rdzv": args.rdzv,
              "runs": len(runs), "restarted": len(ok)}
    for key in ("kill_to_first_step_s", "steps_repeated"):
        values = [r[key] for r in ok]
        print(json.dumps({**labels, "figure": key, **({"median": statistics.median(values), "min": min(values),
                                                        "max": max(values)} if values else {})}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
