"""agents_at_scale: many real ftl-agent processes on one machine (issue 26, item 4): do they converge, do
they stay quiet (no false deaths while nobody fails), what does each cost, and how fast does a crash reach
every survivor.

    python3 bench/membership/agents_at_scale.py --agent build-rel/agent/ftl-agent --ctl build-rel/ctl/ftlctl \
        [--agents 256] [--minutes 10] [--kills 3]

1. starts --agents agents (train profile, one key, the first three as seeds), and waits until a sample of
   them sees every agent alive: the time that took;
2. lets them run --minutes with nobody failing, then counts the deaths their logs declared (false deaths)
   and reads each agent's resident memory (VmRSS) and threads;
3. kills --kills agents one at a time with kill -9 and times each kill to the moment the last survivor's log
   says it is dead, with the path that declared it (on one host, the witness: agent/witness.h).
One JSON line per figure. The agents' logs are removed unless --keep."""

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import time
import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "agent"))
from cluster import Cluster  # noqa: E402

LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z")


def emit(**fields):
    print(json.dumps({"bench": "agents_at_scale", **fields}), flush=True)


def dead_lines(agent, victim=None):
    """(time, reason) of the agent's "member dead" lines (about victim, if given)."""
    who = re.escape(victim) if victim else r"\S+"
    pattern = re.compile(r'msg="member dead" member=' + who + r' .*reason=(?:"([^"]*)"|(\S+))')
    out = []
    with open(agent.log, errors="replace") as f:
        for line in f:
            m, t = pattern.search(line), LOG_TIME.match(line)
            if m and t:
                when = datetime.datetime.fromisoformat(t.group(1)).replace(tzinfo=datetime.timezone.utc)
                out.append((when.timestamp(), m.group(1) or m.group(2)))
    return out


def proc_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--agents", type=int, default=256)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--kills", type=int, default=3)
    p.add_argument("--sample", type=int, default=12, help="agents asked whether they see everyone")
    p.add_argument("--keep", action="store_true", help="keep the agents' logs (the folder is printed)")
    p.add_argument("--no-witness", action="store_true",
                   help="FTL_WITNESS=0: deaths found as between hosts (refusal, suspicion), not by the witness")
    args = p.parse_args()
    rng = random.Random(args.agents)
    cluster = Cluster(args.agent, args.ctl)
    print(f"agents_at_scale: logs in {cluster.dir}", file=sys.stderr)
    try:
        t0 = time.time()
        for i in range(args.agents):
            seeds = ",".join(a.addr for a in list(cluster.agents.values())[:3]) or None
            cluster.add(f"a{i:03d}", seed=seeds, FTL_LOG_LEVEL="info", FTL_WITNESS=0 if args.no_witness else 1)
        started_s = time.time() - t0
        sample = rng.sample(list(cluster.agents.values()), min(args.sample, args.agents))

        def sees_all(agent):
            v = cluster.view(agent)
            return v is not None and sum(1 for s, _ in v.values() if s == "alive") == args.agents
        deadline = time.time() + 300
        while not all(sees_all(a) for a in sample):
            if time.time() > deadline:
                emit(figure="converged", ok=False, after_s=300)
                return 1
            time.sleep(1.0)
        emit(figure="converged", agents=args.agents, witness=not args.no_witness, start_all_s=round(started_s, 2),
             every_sampled_agent_sees_all_s=round(time.time() - t0, 2))

        time.sleep(args.minutes * 60)
        false = [(a.name, r) for a in cluster.agents.values() for _, r in dead_lines(a)]
        exited = [a.name for a in cluster.agents.values() if not a.is_running()]
        emit(figure="quiet_period", minutes=args.minutes, false_deaths=len(false), reasons=sorted({r for _, r in false}),
             agents_exited=len(exited))
        rss = [proc_field(a.proc.pid, "VmRSS") for a in cluster.agents.values() if a.is_running()]
        threads = [proc_field(a.proc.pid, "Threads") for a in cluster.agents.values() if a.is_running()]
        emit(figure="per_agent", rss_kib_median=statistics.median(rss), rss_kib_max=max(rss),
             threads_median=statistics.median(threads))

        alive = [a for a in cluster.agents.values() if a.is_running()]
        for k in range(args.kills):
            victim = rng.choice(alive)
            alive.remove(victim)
            t_kill = time.time()
            victim.signal(signal.SIGKILL)
            deadline = t_kill + 30
            while True:
                seen = [dead_lines(a, victim.name) for a in alive]
                if all(seen) or time.time() > deadline:
                    break
                time.sleep(0.2)
            knew = [min(t for t, _ in s) for s in seen if s]
            reasons = sorted({r for s in seen for _, r in s})
            emit(figure="crash_to_all_survivors_know_s", kill=k, survivors=len(alive), knew=len(knew),
                 value=round(max(knew) - t_kill, 4) if len(knew) == len(alive) else None,
                 median=round(statistics.median(knew) - t_kill, 4) if knew else None, reasons=reasons)
            time.sleep(3)
        return 0
    finally:
        cluster.close()
        if not args.keep:
            shutil.rmtree(cluster.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
