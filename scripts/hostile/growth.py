#!/usr/bin/env python3
"""Item 9 of issue 24, as an attack: unbounded growth on the control socket and in the member table.

1. 50 `events --follow` clients that never read, while a key holder gossips fake members to the agent (a
   stream of join and update events): the agent must drop each follower once its backlog is full, with a
   final line saying why, and keep its memory bounded during the attack and after the followers close.
2. The same key holder gossips 20,000 fake names: the member table must stop at FTL_MAX_MEMBERS (16384
   unless set) and count the names it refused (counters.dropped.member_table_full).

Prints one line, `item 9: held|broken — <figures>`; exit 0 when held. Stdlib only; runs ftl-agent, ftlctl
and tests/agent/member_flood from --build, on loopback only, for under a minute."""
import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "agent"))
from growth import flood_members, follow_without_reading, read_to_the_end, rss_mib  # noqa: E402

RSS_BOUND_MIB = 64  # the agent idles at about 6 MiB; 50 stuck followers used to take it to 274-364 MiB


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.bind(("127.0.0.1", 0))
        return u.getsockname()[1]


def status(ctl, sock):
    r = subprocess.run([ctl, "--socket", sock, "status", "--json"], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError(f"ftlctl status: {r.stderr.strip()}")
    return json.loads(r.stdout)


def start_agent(agent, env, sock):
    proc = subprocess.Popen([agent], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(sock):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the agent did not start")
        time.sleep(0.05)
    return proc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build", help="the build folder (ftl-agent, ftlctl, member_flood)")
    p.add_argument("--agent", help="ftl-agent to attack (default: BUILD/agent/ftl-agent)")
    p.add_argument("--followers", type=int, default=50)
    p.add_argument("--names", type=int, default=20000, help="fake names gossiped in part 2")
    a = p.parse_args()
    agent = a.agent or os.path.join(a.build, "agent", "ftl-agent")
    ctl = os.path.join(a.build, "ctl", "ftlctl")
    flood = os.path.join(a.build, "tests", "agent", "member_flood")
    key = base64.b64encode(os.urandom(32)).decode()
    with tempfile.TemporaryDirectory(prefix="ftl-growth-") as d:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("FTL_")}
        env.update(FTL_NAME="g0", FTL_BIND=f"127.0.0.1:{port}", FTL_GOSSIP_KEY=key, FTL_RUN_DIR=d,
                   FTL_LOG_LEVEL="error")
        sock = os.path.join(d, "g0.sock")
        proc = start_agent(agent, env, sock)
        conns = []
        try:
            idle = rss_mib(proc.pid, "VmRSS")
            conns = follow_without_reading(sock, a.followers)
            # 2,000 names, 40 rounds: 80,000 alives, each a join or update event for every follower
            flood_members(flood, port, key, 2000, 40, "ev")
            time.sleep(1.0)
            peak = rss_mib(proc.pid, "VmHWM")
            closed, final = read_to_the_end(conns, 10)
            for c in conns:
                c.close()
            conns = []
            time.sleep(1.0)
            after = rss_mib(proc.pid, "VmRSS")
            st = status(ctl, sock)
            dropped_followers = st["counters"].get("control_followers_dropped", 0)
            # part 2: more names than the table may hold
            for _ in range(10):  # UDP: some datagrams are lost on a busy machine; offer the names again
                flood_members(flood, port, key, a.names, 2, "fake")
                time.sleep(0.5)
                st = status(ctl, sock)
                members = len(st["members"])
                refused = st["counters"]["dropped"].get("member_table_full", 0)
                if refused or members >= a.names:
                    break
            peak_all = rss_mib(proc.pid, "VmHWM")
        finally:
            for c in conns:
                c.close()
            proc.kill()
            proc.wait()
    held = (peak < RSS_BOUND_MIB and after < RSS_BOUND_MIB and closed == a.followers and final == a.followers
            and members <= 16384 and refused > 0)
    print(f"item 9: {'held' if held else 'broken'} — {a.followers} followers that never read: agent RSS "
          f"{idle:.0f} MiB idle, peak {peak:.0f} MiB, {after:.0f} MiB after they closed (bound {RSS_BOUND_MIB}); "
          f"{closed} dropped by the agent, {final} with a final line (counted {dropped_followers}); "
          f"{a.names} fake names gossiped: {members} members held, {refused} refused (member_table_full); "
          f"peak RSS overall {peak_all:.0f} MiB")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
