"""The torchrun tutorial's kind of program (examples/torch_loop.py, its loop as written) under ftlrun with
torchrun's own command line, through a kill -9 and an `ftlrun --join` from another shell.

    ftlrun --standalone --nproc_per_node 3 examples/torch_loop.py 6 2 --batch_size 6 --samples 360 ...

After some steps the test kills one worker (SIGKILL) and runs `ftlrun --join` (no other argument: the job's
seeds, key and program come from the first launcher's record). Judged from the JSON line every worker
prints per committed step (FTL_STEP_LINES=1): every step from 0 to the last is committed by as many
workers as its view has, all with one digest (parameters and SGD's state); the samples of the committed
steps add up to 6 epochs of 360 (6 a rank a step: every position a multiple of 6, so no epoch's tail is
padded, and a lost or repeated step would show); the joiner trained; the first launcher exits 0 naming
the lost worker; rank 0's snapshot says 5 epochs ran (save_every 2: saved after epoch 4).

    loop_ftlrun.py
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "torch_loop.py")
EPOCHS, SAMPLES = 6, 360
LINE = re.compile(r"^\[([^\]]+)\]\s+(\{.*\})\s*$")


def step_lines(path):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                row = json.loads(m.group(2))
                if "step" in row:
                    rows.append(row)
    return rows


def worker_pids(launcher):
    """{FTL_NAME: pid} of the launcher's worker processes."""
    out = {}
    for task in os.listdir(f"/proc/{launcher.pid}/task"):
        with open(f"/proc/{launcher.pid}/task/{task}/children") as f:
            for pid in f.read().split():
                try:
                    with open(f"/proc/{pid}/environ", "rb") as e:
                        env = dict(kv.split(b"=", 1) for kv in e.read().split(b"\0") if b"=" in kv)
                    out[env[b"FTL_NAME"].decode()] = int(pid)
                except (OSError, KeyError):
                    pass
    return out


def wait_for(what, check, seconds):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"loop_ftlrun: timed out waiting for {what}")
        time.sleep(0.1)


def judge(rows):
    bad = []
    by_step = {}
    for r in rows:
        by_step.setdefault(r["step"], []).append(r)
    last = max(by_step) if by_step else -1
    missing = [s for s in range(last + 1) if s not in by_step]
    if missing:
        bad.append(f"steps never committed: {missing[:10]}")
    for s, group in sorted(by_step.items()):
        if len(group) != group[0]["world"] or len({r["digest"] for r in group}) != 1:
            bad.append(f"step {s}: {[(r['worker'], r['world'], r['digest']) for r in group]}")
    samples = sum(r["samples"] for r in rows)
    if samples != EPOCHS * SAMPLES:
        bad.append(f"the committed steps trained {samples} samples, not {EPOCHS} epochs of {SAMPLES}")
    return bad, last


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # 250 ms steps: the 110 steps after the kill last ~28 s, so the joiner (which imports torch first: many
        # seconds on a loaded machine) joins well inside the job; at 150 ms a CI run once saw the job end first.
        env = dict(os.environ, FTLRUN_JOBS_DIR=os.path.join(tmp, "jobs"), FTL_STEP_LINES="1",
                   FTL_STEP_SLEEP_MS="250", FTL_MIN_WORKERS="2")
        snapshot = os.path.join(tmp, "snapshot.pt")
        ftlrun = [sys.executable, "-m", "ftl.run"]
        first_log, join_log = os.path.join(tmp, "first.log"), os.path.join(tmp, "join.log")
        first = subprocess.Popen(ftlrun + ["--standalone", "--nproc_per_node", "3", EXAMPLE, str(EPOCHS), "2",
                                           "--batch_size", "6", "--samples", str(SAMPLES), "--snapshot", snapshot],
                                 env=env, cwd=tmp, stdout=open(first_log, "w"), stderr=subprocess.STDOUT)
        joiner, victim = None, None
        try:
            try:
                wait_for("10 committed steps", lambda: len(step_lines(first_log)) >= 30, 120)
            except SystemExit:
                with open(first_log) as f:
                    sys.stdout.write(f.read()[-6000:])
                raise
            pids = worker_pids(first)
            victim = sorted(pids)[1]
            os.kill(pids[victim], signal.SIGKILL)
            joiner = subprocess.Popen(ftlrun + ["--join"], env=env, cwd=tmp, stdout=open(join_log, "w"),
                                      stderr=subprocess.STDOUT)
            first.wait(240)
            try:
                joiner.wait(60)
            except subprocess.TimeoutExpired:  # judged below with both logs shown, not a bare traceback
                pass
        finally:
            for p in (first, joiner):
                if p is not None and p.poll() is None:
                    p.kill()
        rows = step_lines(first_log) + step_lines(join_log)
        bad, last = judge(rows)
        joined = [r for r in step_lines(join_log)]
        if not joined:
            bad.append("the worker of ftlrun --join committed no step")
        with open(first_log) as f:
            first_text = f.read()
        if first.returncode != 0 or not re.search(re.escape(victim) + r" \(pid \d+\) was killed by SIGKILL", first_text):
            bad.append(f"the first ftlrun exited {first.returncode} without naming {victim} as lost")
        if joiner.returncode is None:
            bad.append("ftlrun --join was still running 60 s after the job ended")
        elif joiner.returncode != 0:
            bad.append(f"ftlrun --join exited {joiner.returncode}")
        if not os.path.exists(snapshot) or torch.load(snapshot)["epochs_run"] != EPOCHS - 1:
            bad.append("rank 0's snapshot does not say the last saved epoch (save_every 2: epoch 4, epochs_run 5)"
                       if os.path.exists(snapshot) else "no snapshot was saved")
        if bad:
            with open(join_log) as f:
                sys.stdout.write(first_text[-4000:] + "\n--- ftlrun --join\n" + f.read()[:6000])
    for b in bad:
        print("FAIL: " + b)
    print(f"the tutorial's loop under ftlrun through kill -9 of {victim} and ftlrun --join: {last + 1} steps; "
          + ("every step on every rank with one digest, every sample once" if not bad else f"{len(bad)} failures"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
