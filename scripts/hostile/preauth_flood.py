#!/usr/bin/env python3
"""Item 3 of "Nothing lost, whoever joins": idle and trickling connections to the gossip port, without the
key, must not keep a joining or restarting agent out.

Starts two agents (w0, w1), measures a join of a new agent through w0 and its rejoin after a kill -9 and a
restart on the same port, then does both again (with another agent) while 1,000 connections from
127.0.0.2-127.0.0.33 hold w0's gossip port open, half idle, half trickling a frame a byte a second, each
reopened as soon as w0 closes it. Held when each attacked time is within --margin seconds of the
unattacked one and w0 still runs. Prints one line, `item 3: held|broken — <figures>`; exit 0 when held."""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
import conn_flood  # noqa: E402

FRAME_HEAD = (1000).to_bytes(4, "big") + b"P"  # a push-pull frame of 1000 bytes, never finished


def everyone_alive(c, names, at):
    view = c.view(at) or {}
    return all(view.get(n, ("",))[0] == "alive" for n in names)


def wait(cond, limit):
    """Seconds until cond() held, or None past limit."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if cond():
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def join_time(c, name, limit):
    """A new agent seeded with w0 only: seconds until w0 sees it alive and it sees w0 and w1 alive."""
    start = time.monotonic()
    new = c.add(name, seed=c.agents["w0"].addr)
    ok = wait(lambda: everyone_alive(c, [name], c.agents["w0"]) and everyone_alive(c, ["w0", "w1"], new), limit)
    return None if ok is None else time.monotonic() - start


def rejoin_time(c, name, limit):
    """name killed (-9) and started again on its port: seconds until w0 sees the new generation alive and
    the new process sees w0 and w1 alive."""
    w0 = c.agents["w0"]
    old_gen = (c.view(w0) or {}).get(name, ("", -1))[1]
    start = time.monotonic()
    new = c.restart(name)

    def back():
        st, gen = (c.view(w0) or {}).get(name, ("", -1))
        return st == "alive" and gen != old_gen and everyone_alive(c, ["w0", "w1"], new)
    ok = wait(back, limit)
    return None if ok is None else time.monotonic() - start


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def fmt(t):
    return "never" if t is None else f"{t:.2f} s"


def run(c, a):
    w0 = c.add("w0")
    c.add("w1")
    if wait(lambda: everyone_alive(c, ["w0", "w1"], w0), 20) is None:
        return False, "item 3: broken — w0 and w1 did not form a cluster unattacked"
    calm_join = join_time(c, "calm", a.limit)
    calm_rejoin = rejoin_time(c, "calm", a.limit)
    with conn_flood.flooding(w0.port, a, 2 * a.limit + 10, FRAME_HEAD, "mix") as report:
        time.sleep(2.0)  # the flood opens its connections and w0 starts closing them
        hit_join = join_time(c, "hit", a.limit)
        hit_rejoin = rejoin_time(c, "hit", a.limit)
        counters = (c.status(w0) or {}).get("counters", {})
        rss = peak_rss_mib(w0.proc.pid)
    w0_runs = w0.is_running()
    held = (w0_runs and None not in (calm_join, calm_rejoin, hit_join, hit_rejoin)
            and hit_join <= calm_join + a.margin and hit_rejoin <= calm_rejoin + a.margin)
    dropped = counters.get("tcp_dropped", {})
    return held, (f"item 3: {'held' if held else 'broken'} — join {fmt(calm_join)} unattacked, {fmt(hit_join)} "
                  f"under {a.conns} idle/trickling keyless connections; rejoin after restart {fmt(calm_rejoin)} "
                  f"-> {fmt(hit_rejoin)} (margin {a.margin:.0f} s); flood made {report.get('connects', 0)} "
                  f"connects, at most {report.get('peak_open', 0)} open; w0 closed {dropped.get('too_many', 0)} "
                  f"for too_many, timed out {counters.get('tcp_timeouts', 0)}, peak RSS {rss:.1f} MiB"
                  f"{'' if w0_runs else '; w0 EXITED'}")


def add_arguments(p):
    p.add_argument("--margin", type=float, default=2.0, help="seconds an attacked time may exceed the unattacked")
    p.add_argument("--limit", type=float, default=12.0, help="seconds a join may take before it counts as never")


if __name__ == "__main__":
    sys.exit(conn_flood.hostile_main(__doc__, run, add_arguments))
