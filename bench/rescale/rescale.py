"""bench/rescale: how fast an elastic job recovers, on loopback with real processes (issue 5).

1. kill -9 (and SIGSTOP) of one worker (--burst K: of K at once) -> first completed step in the new view, at N = 4 and 8 (train profile), split
   into detection (kill -> the last survivor marks it dead), agreement (-> the last survivor has the new
   view), comm build, state sync and the first step; each milestone is the moment the LAST survivor
   reached it, read from the workers' structured logs and JSON lines; also how many survivors' logs say
   the death was declared by a witness on its host (agent/witness.h), by refusal (proof of death) or by a
   suspicion timeout.
2. a new worker's start -> its first completed step, with 1 MB and 100 MB of extra registered state, and the
   running workers' longest time between two steps across the join (running_pause_s; step_interval_s is
   their usual one, so the pause the join adds is the difference), and where it goes (pause_*_s: to the new
   view, comm build, state sync, first step).
3. --only grow: 4 workers and a kept spare (FTL_SPARES=1); a fifth starts: from the moment rank 0 sees it
   to the spare's first step as a member (seen_to_spare_step_s), and the running workers' longest gap.
4. --only cold: N workers launched at once in a random order, each seeded with the first one's address alone
   (pods behind one Service name, machines pointed at the first): launch -> the first step in a view of all N.
Prints one JSON line per figure (medians over --runs). Usage:
  python3 bench/rescale/rescale.py --train build/examples/ftl-train-example --ctl build/ctl/ftlctl [--nodes 4,8,32]
--torch PYTHON runs examples/torch_digits.py under that interpreter instead of --train (set FTL_LIBRARY
and PYTHONPATH=python/src as for the Python tests); its lines say program "torch", the C example's "c"."""

import argparse
import datetime
import json
import os
import random
import re
import shlex
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "agent"))
from workers import TrainingJob  # noqa: E402

LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")


def log_events(worker, pattern):
    """Times (epoch seconds) of the worker's log lines matching pattern, with the match."""
    out = []
    with open(worker.log, errors="replace") as f:
        for line in f:
            m = re.search(pattern, line)
            t = LOG_TIME.match(line)
            if m and t:
                when = datetime.datetime.fromisoformat(t.group(1)).replace(tzinfo=datetime.timezone.utc)
                out.append((when.timestamp(), m))
    return out


def first_after(events, t0, pred=lambda m: True):
    times = [t for t, m in events if t >= t0 - 0.002 and pred(m)]
    return min(times) if times else None


def program(args):
    """The training program: the C example, or the PyTorch one under --torch's interpreter."""
    if args.torch:
        return [args.torch, *(shlex.split(args.torch_script) if args.torch_script else
                              [os.path.join(os.path.dirname(__file__), "..", "..", "examples", "torch_digits.py")])]
    return args.train


def loopback(args, i):
    """Worker i's address: 127.0.0.1, or with --spread its own loopback address (127.0.0.2, 127.0.0.3, ...),
    as pods have theirs: the gossip port admits a bounded number of unproven connections per source address,
    so hundreds of workers behind one address meet a limit no real cluster meets."""
    return f"127.0.{1 + i // 250}.{2 + i % 250}" if args.spread else "127.0.0.1"


def start_workers(args, job, n):
    """Starts w0..w(n-1), with --wave K in waves of K, each wave's agents answering before the next starts."""
    wave = args.wave or n
    for first in range(0, n, wave):
        added = [job.add(f"w{i}", host=loopback(args, i)) for i in range(first, min(n, first + wave))]
        if first + wave < n:
            job.wait(f"wave {first // wave} answers", lambda: all(job.status(w) is not None for w in added),
                     TrainingJob.start_timeout * 3)


def one_kill(args, n, sig=signal.SIGKILL):
    # FTL_EXPECTED_WORKERS: one view of n from the start (the PyTorch example takes seconds to import torch).
    # --spares K: K more workers wait above FTL_MAX_WORKERS=n as hot spares; they are started after the job
    # trains, so they are its youngest members, and the spare taken in counts as a survivor.
    spares = args.spares
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=100000, FTL_STEP_SLEEP_MS=args.step_ms,
                      FTL_MIN_WORKERS=2, FTL_EXPECTED_WORKERS=n, FTL_LOG_LEVEL="info", FTL_PROFILE=args.profile,
                      **({"FTL_MAX_WORKERS": n} if spares else {}))
    try:
        start_workers(args, job, n)
        job.wait_step(30, 60 + n)
        ranked = list(job.workers())
        for i in range(spares):
            job.add(f"spare{i}")
        if spares:  # every spare's agent answers and the job trains on: they wait, imported and gossiping
            job.wait("the spares are members", lambda: all(job.status(w) is not None for w in job.workers()),
                     TrainingJob.start_timeout)
            time.sleep(1.0)  # past FTL_SETTLE_MS (500): a spare that just joined would follow a view later
            job.wait_step(job.progress() + 10, 60)
        epoch0 = max(r["epoch"] for r in job.records() if "epoch" in r)
        victims = random.sample(ranked, args.burst)
        # The oldest spare takes the (first) dead member's place (rendezvous/rdv_candidate.h).
        survivors = [w for w in ranked if w not in victims] + [w for w in job.workers() if w not in ranked][:args.burst]
        t_kill = time.time()
        for victim in victims:  # --burst: all of them at once
            job.kill(victim.name, sig)
        job.wait("a step in a new view on every survivor",
                 lambda: all(any(s.get("epoch", 0) > epoch0 for s in w.steps()) for w in survivors), 60)
        def last(pattern, pred=lambda m: True):
            ts = [first_after(log_events(w, pattern), t_kill, pred) for w in survivors]
            return None if None in ts else max(ts)
        dead = r'msg="member dead" member=(?:' + "|".join(re.escape(v.name) for v in victims) + ') '
        t_dead = max(last(r'msg="member dead" member=' + re.escape(v.name) + ' ') for v in victims)
        # Which path declared it, where the log says (proof of death, issue 18): counted over survivors.
        reasons = [m.group(1) for w in survivors for t, m in log_events(w, dead + r'.*reason="([^"]*)"')
                   if t >= t_kill - 0.002]
        t_view = last(r'msg="view committed.*epoch=(\d+)', lambda m: int(m.group(1)) > epoch0)
        t_comm = last(r'msg="communicator built.*epoch=(\d+)', lambda m: int(m.group(1)) > epoch0)
        t_sync = last(r'msg="state synced from rank 0" epoch=(\d+)', lambda m: int(m.group(1)) > epoch0)
        t_step = max(min(s["t"] for s in w.steps() if s.get("epoch", 0) > epoch0) for w in survivors)
        # Views committed between the kill and the first step, as one survivor saw them (a burst: ideally one).
        views = {int(m.group(1)) for t, m in log_events(survivors[0], r'msg="view committed.*epoch=(\d+)')
                 if t_kill - 0.002 <= t <= t_step and int(m.group(1)) > epoch0}
        return {"detection_s": t_dead - t_kill, "agreement_s": t_view - t_dead, "comm_build_s": t_comm - t_view,
                "state_sync_s": t_sync - t_comm, "first_step_s": t_step - t_sync, "total_s": t_step - t_kill,
                "victim_rank": next((r["rank"] for r in reversed(victims[0].steps())), -1),
                "views_to_recover": len(views),
                "declared_by_witness": sum(r == "witnessed on its host" for r in reasons),
                "declared_by_refusal": sum(r == "refused by its own address" for r in reasons),
                "declared_by_suspicion": sum(r == "suspicion timed out" for r in reasons)}
    finally:
        job.close()


def one_join(args, n, extra_mb):
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=100000, FTL_STEP_SLEEP_MS=args.step_ms,
                      FTL_MIN_WORKERS=2, FTL_EXPECTED_WORKERS=n, FTL_EXTRA_STATE_MB=extra_mb, FTL_LOG_LEVEL="info")
    try:
        for i in range(n):
            job.add(f"w{i}")
        job.wait_step(30, 120)
        epoch0 = max(r["epoch"] for r in job.records() if "epoch" in r)
        joiner = job.add("joiner")
        job.wait("the joiner's first step", lambda: bool(joiner.steps()), 120)
        first = joiner.steps()[0]["t"]
        time.sleep(0.5)  # a few steps of the new view, so the gap that spans the join is closed
        sync = log_events(joiner, r'msg="state synced from rank 0".*took_ms=([\d.]+)')
        running = [w for w in job.workers() if w is not joiner]
        return {"start_to_first_step_s": first - joiner.started_at,
                "state_sync_s": float(sync[0][1].group(1)) / 1000 if sync else None,
                "running_pause_s": max(longest_gap(w.steps(), joiner.started_at, first) for w in running),
                "step_interval_s": statistics.median(median_gap(w.steps(), joiner.started_at) for w in running),
                **pause_phases(running, epoch0, joiner.started_at)}
    finally:
        job.close()


def one_grow(args, n):
    """--only grow: n members and one kept spare (FTL_SPARES=1); a new worker starts. The spare becomes a
    member in the next view (it settled long ago) and the newcomer waits in its place: the job grows by a
    worker that had its program loaded, the moment the newcomer is seen."""
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=100000, FTL_STEP_SLEEP_MS=args.step_ms,
                      FTL_MIN_WORKERS=2, FTL_EXPECTED_WORKERS=n + 1, FTL_SPARES=1, FTL_LOG_LEVEL="info")
    try:
        for i in range(n + 1):
            job.add(f"w{i}")
        job.wait_step(30, 120)
        time.sleep(1.0)  # past FTL_SETTLE_MS: the spare has settled
        idle = [w for w in job.workers() if not w.steps()]  # the youngest agent: not always the last started
        assert len(idle) == 1, f"{len(idle)} workers wait, not one kept spare"
        spare = idle[0]
        newcomer = job.add("newcomer")
        job.wait("the spare's first step", lambda: bool(spare.steps()), 120)
        first = spare.steps()[0]["t"]
        rank0 = next(w for w in job.workers() if w.steps() and w.steps()[-1]["rank"] == 0)
        seen = first_after(log_events(rank0, r'msg="member join" member=newcomer '), newcomer.started_at)
        time.sleep(0.5)  # a few steps of the new view, so the gap that spans the change is closed
        running = [w for w in job.workers() if w not in (spare, newcomer)]
        return {"newcomer_start_to_seen_s": seen - newcomer.started_at, "seen_to_spare_step_s": first - seen,
                "running_pause_s": max(longest_gap(w.steps(), seen, first) for w in running),
                "step_interval_s": statistics.median(median_gap(w.steps(), newcomer.started_at) for w in running),
                "newcomer_steps": len(newcomer.steps())}
    finally:
        job.close()


def one_cold(args, n):
    """--only cold: n workers launched together, in a random order (the seed often starts after the others
    have tried it), all seeded with w0 alone, the job waiting for all n (FTL_MIN_WORKERS)."""
    job = TrainingJob(program(args), args.ctl, FTL_STEPS=100000, FTL_STEP_SLEEP_MS=args.step_ms,
                      FTL_MIN_WORKERS=n, FTL_EXPECTED_WORKERS=n, FTL_LOG_LEVEL="info")
    try:
        workers = [job.add(f"w{i}", start=False) for i in range(n)]  # w1.. are seeded with w0's address
        launched = time.time()
        for w in random.sample(workers, n):
            w.start()

        def all_in_a_step():
            return [s["t"] for w in workers for s in w.steps() if s.get("world") == n]
        job.wait(f"a step in a view of all {n}", lambda: bool(all_in_a_step()), 120)
        return {"launch_to_first_step_s": min(all_in_a_step()) - launched}
    finally:
        job.close()


def pause_phases(running, epoch0, since):
    """Where the running workers' pause across a view change goes, each milestone the moment the LAST of them
    reached it: their last step in the old view -> the new view committed -> its communicator built -> the
    state synced -> their first step in it (the step itself is part of the pause, as in running_pause_s).
    A join lets the step in flight finish in the old view, so the view usually comes first: negative."""
    def last(pattern):
        ts = [first_after(log_events(w, pattern), since, lambda m: int(m.group(1)) > epoch0) for w in running]
        return None if None in ts else max(ts)
    t_old = max(max((s["t"] for s in w.steps() if s.get("epoch", 0) <= epoch0), default=since) for w in running)
    t_view = last(r'msg="view committed.*epoch=(\d+)')
    t_comm = last(r'msg="communicator built.*epoch=(\d+)')
    t_sync = last(r'msg="state synced from rank 0" epoch=(\d+)')
    t_step = max(min(s["t"] for s in w.steps() if s.get("epoch", 0) > epoch0) for w in running)
    if None in (t_view, t_comm, t_sync):
        return {}
    return {"pause_to_view_s": t_view - t_old, "pause_comm_build_s": t_comm - t_view,
            "pause_state_sync_s": t_sync - t_comm, "pause_first_step_s": t_step - t_sync}


def longest_gap(steps, since, until):
    """The longest time between two consecutive steps of a running worker that ends after since and starts
    before until (the join's window): how long the join paused it, a normal step included."""
    times = [r["t"] for r in steps]
    return max((b - a for a, b in zip(times, times[1:]) if b > since and a < until), default=0.0)


def median_gap(steps, before):
    """A running worker's usual time between steps, before the joiner started."""
    times = [r["t"] for r in steps if r["t"] < before]
    return statistics.median(b - a for a, b in zip(times, times[1:]))


def report(figure, runs, **labels):
    for key in runs[0]:
        values = [r[key] for r in runs if r[key] is not None]
        if not values or key in ("victim_rank", "views_to_recover") or key.startswith("declared_by"):
            continue
        line = {"bench": "rescale", "figure": figure, "phase": key, **labels, "runs": len(values),
                "median": round(statistics.median(values), 4), "min": round(min(values), 4),
                "max": round(max(values), 4)}
        print(json.dumps(line), flush=True)
    for key in ("declared_by_witness", "declared_by_refusal", "declared_by_suspicion"):
        if key in runs[0]:
            print(json.dumps({"bench": "rescale", "figure": figure, "count": key, **labels,
                              "runs": len(runs), "total": sum(r[key] for r in runs)}), flush=True)
    if "views_to_recover" in runs[0]:
        print(json.dumps({"bench": "rescale", "figure": figure, "count": "views_to_recover", **labels,
                          "runs": len(runs), "each": [r["views_to_recover"] for r in runs]}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train")
    p.add_argument("--torch", metavar="PYTHON", help="run examples/torch_digits.py with this interpreter")
    p.add_argument("--torch-script", metavar="PATH", help="another ftl PyTorch program for --torch "
                   "(examples/torch_resnet_digits.py, say)")
    p.add_argument("--ctl", required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--step-ms", type=int, default=20)
    p.add_argument("--only", choices=["kill", "stop", "join", "grow", "cold"])
    p.add_argument("--nodes", default="4,8", help="cluster sizes for the kill figure, comma-separated")
    p.add_argument("--burst", type=int, default=1, help="workers killed at once in the kill figure")
    p.add_argument("--profile", default="train", help="the kill figure's FTL_PROFILE (train, lan, local)")
    p.add_argument("--wave", type=int, default=0, help="start the kill figure's workers in waves of this many")
    p.add_argument("--spread", action="store_true",
                   help="each worker on its own loopback address (127.0.0.2, ...), as pods on their own IPs")
    p.add_argument("--spares", type=int, default=0,
                   help="hot spares beside the N workers in the kill figure (FTL_MAX_WORKERS=N); the promoted "
                        "spare's first step is in first_step_s and total_s")
    args = p.parse_args()
    if not args.train and not args.torch:
        p.error("give --train (the C example) or --torch (an interpreter for the PyTorch example)")
    kind = "torch" if args.torch else "c"
    if args.torch:
        TrainingJob.start_timeout = 60  # importing torch takes seconds, more on a loaded machine
    random.seed(args.runs)
    if args.only in (None, "kill"):
        for n in (int(x) for x in args.nodes.split(",")):
            report("kill9_to_first_step", [one_kill(args, n) for _ in range(args.runs)], nodes=n, profile=args.profile,
                   program=kind, **({"burst": args.burst} if args.burst > 1 else {}),
                   **({"spares": args.spares} if args.spares else {}))
    if args.only in (None, "stop"):
        for n in (int(x) for x in args.nodes.split(",")):
            report("sigstop_to_first_step", [one_kill(args, n, signal.SIGSTOP) for _ in range(args.runs)],
                   nodes=n, profile="train", program=kind)
    if args.only in (None, "grow"):
        report("grow_by_kept_spare", [one_grow(args, 4) for _ in range(max(2, args.runs // 2))], nodes=4,
               spares=1, program=kind)
    if args.only in (None, "cold"):
        for n in (int(x) for x in args.nodes.split(",")):
            report("cold_start_to_first_step", [one_cold(args, n) for _ in range(args.runs)], nodes=n, program=kind)
    if args.only in (None, "join"):
        for mb in (1, 100):
            report("join_to_first_step", [one_join(args, 4, mb) for _ in range(max(2, args.runs // 2))],
                   nodes=4, extra_state_mb=mb, program=kind)


if __name__ == "__main__":
    main()
