#!/usr/bin/env python3
"""Item 4 of "Nothing lost, whoever joins": the shared-memory setup serves only the job's ranks.

Drives tests/comm/test_comm_shm_stranger (built by ctest's build) three times, each a 3-rank job on this
host whose communicators go through shared memory, with a stranger process setuid to nobody:
  measure K  K communicator builds alone, then K with the stranger racing the ranks to every setup socket
             it sees in /proc/net/unix and idling on it: build times with and without, builds kept on
             shared memory;
  idle       4 builds where the stranger always reaches the socket first, one silent connection and one
             of garbage: every build on shared memory and fast;
  pose       4 builds where the stranger, first at the socket, poses as every rank with the right comm id
             and an eventfd: whether it ever receives the memfd and maps the segment read-write.
Held when every build stays on shared memory, none waits out the connect deadline (3 s) and the stranger
never maps the segment. Needs root (to become another user). Prints one line,
`item 4: held|broken — <figures>`; exit 0 when held."""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLOW_MS = 1500  # half the test's connect deadline: a build this slow waited on the stranger


def run(program, args, limit_s):
    """The JSON line the program printed, or None (with its output on stderr)."""
    try:
        p = subprocess.run([program, *args], capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        print(f"{' '.join(args)}: no answer in {limit_s} s", file=sys.stderr)
        return None
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    print(f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}", file=sys.stderr)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--builds", type=int, default=6, help="builds alone and builds attacked (at most 8 each)")
    a = p.parse_args()
    program = os.path.join(a.build, "tests", "comm", "test_comm_shm_stranger")
    if not os.access(program, os.X_OK):
        print(f"item 4: broken — {program} not found: build the tests first (cmake --build {a.build})")
        return 1
    if os.geteuid() != 0:
        print("item 4: broken — needs root, to run the stranger as another user (nobody)")
        return 1
    m = run(program, ["measure", str(min(max(a.builds, 1), 8))], 50)
    idle = run(program, ["idle"], 40)
    pose = run(program, ["pose"], 40)
    if m is None or idle is None or pose is None:
        print("item 4: broken — the job did not complete (see above)")
        return 1
    k = m["builds"]
    held = (m["attacked_on_shm"] == k and m["attacked_slowest_ms"] < SLOW_MS and m["segments_taken"] == 0
            and idle["on_shm"] == idle["builds"] and idle["slowest_build_ms"] < SLOW_MS
            and pose["on_shm"] == pose["builds"] and pose["segments_taken"] == 0)
    print(f"item 4: {'held' if held else 'broken'} — racing stranger: {m['attacked_on_shm']}/{k} builds on shared "
          f"memory, median {m['attacked_median_ms']} ms, slowest {m['attacked_slowest_ms']} ms (alone "
          f"{m['quiet_on_shm']}/{k}, median {m['quiet_median_ms']} ms; it reached {m['attacked']} sockets); "
          f"stranger first at the socket: idling {idle['on_shm']}/{idle['builds']} on shared memory, slowest "
          f"{idle['slowest_build_ms']} ms; posing as every rank {pose['segments_taken']} segments mapped, "
          f"{pose['on_shm']}/{pose['builds']} on shared memory; rank 0 dropped "
          f"{m['strangers_dropped'] + idle['strangers_dropped'] + pose['strangers_dropped']} connections",
          flush=True)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
