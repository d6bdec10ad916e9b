"""Settings and local hostile input, with the real programs: a bad setting refused at start naming its
variable (ftl-agent and the example), a name that would climb out of the run directory, and a control
client that pipelines requests without reading (the agent's peak RSS stays bounded and others are still
answered). One scenario per run: python3 test_settings.py --agent A --ctl C --train T SCENARIO."""

import argparse
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time

RSS_BOUND_MIB = 48  # the agent idles at about 6 MiB; the flood used to take it past 1,200 MiB


def run(cmd, env, timeout=20, preexec=None):
    return subprocess.run([cmd], env=env, capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)


def base_env(run_dir, port=7391):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FTL_")}
    env.update(FTL_NAME="w0", FTL_BIND=f"127.0.0.1:{port}", FTL_INSECURE="1", FTL_RUN_DIR=run_dir,
               FTL_LOG_LEVEL="warn")
    return env


def expect_refused(cmd, env, var, *also):
    r = run(cmd, env)
    assert r.returncode == 2, f"{var}: exit {r.returncode}, stderr: {r.stderr}"
    for needle in (var,) + also:
        assert needle in r.stderr, f"{needle!r} not in: {r.stderr}"
    print(f"refused, naming {var}: {r.stderr.strip().splitlines()[-1]}")


def scenario_malformed_seeds_are_refused_at_start(a, d):
    for seeds in ("127.0.0.1", "::::", "garbage", "1.2.3.4:99999"):
        expect_refused(a.agent, dict(base_env(d), FTL_SEEDS=seeds), "FTL_SEEDS")
        expect_refused(a.train, dict(base_env(d), FTL_SEEDS=seeds, FTL_STEPS="1"), "FTL_SEEDS")


# Mistakes that used to leave a worker training alone and exiting 0: a seed list with no seed in it, and
# misspelled names (each refused, naming the closest known one).
SEED_LISTS_WITHOUT_A_SEED = (",,,", ",", " , ")
MISSPELLED = (("FTL_SEED", "FTL_SEEDS"), ("FTL_MIN_WORKER", "FTL_MIN_WORKERS"), ("FTL_MAX_WORKER", "FTL_MAX_WORKERS"),
              ("FTL_SEEDS_", "FTL_SEEDS"), ("FTL_GOSIP_KEY", "FTL_GOSSIP_KEY"), ("FTL_INSECRE", "FTL_INSECURE"),
              ("FTL_CLUSTERS", "FTL_CLUSTER"), ("FTL_CHECKPOINT_DIRS", "FTL_CHECKPOINT_DIR"),
              ("FTL_EXPECTED_WORKER", "FTL_EXPECTED_WORKERS"), ("FTL_COMM_COMPRES", "FTL_COMM_COMPRESS"),
              ("FTL_SETTLE", "FTL_SETTLE_MS"), ("FTL_STEP", "FTL_STEPS"), ("FTL_LOGLEVEL", "FTL_LOG_LEVEL"))


def scenario_empty_seed_list_or_misspelled_setting_is_refused(a, d):
    for seeds in SEED_LISTS_WITHOUT_A_SEED:
        expect_refused(a.agent, dict(base_env(d), FTL_SEEDS=seeds), "FTL_SEEDS", "holds no seed")
        expect_refused(a.train, dict(base_env(d), FTL_SEEDS=seeds, FTL_STEPS="1"), "FTL_SEEDS", "holds no seed")
    for typo, closest in MISSPELLED:
        expect_refused(a.train, dict(base_env(d), FTL_STEPS="1", **{typo: "2"}), typo, f"did you mean {closest}?")
    expect_refused(a.agent, dict(base_env(d), FTL_MIN_WORKER="2"), "FTL_MIN_WORKER", "FTL_MIN_WORKERS")
    # unset, FTL_SEEDS makes the first worker of a job: it trains alone, as documented
    r = run(a.train, dict(base_env(d), FTL_STEPS="2", FTL_DATA_SIZE="200"), timeout=60)
    assert r.returncode == 0, f"a first worker without FTL_SEEDS: exit {r.returncode}, stderr: {r.stderr}"


def scenario_name_that_leaves_the_run_dir_is_refused(a, d):
    run_dir = os.path.join(d, "a", "b")
    expect_refused(a.agent, dict(base_env(run_dir), FTL_NAME="../../escape"), "FTL_NAME", "A-Z a-z 0-9 . _ -")
    assert not os.path.exists(os.path.join(d, "escape.sock")), "a socket was made outside the run directory"
    for name in ('w"0', "w 0", "w/0", "w\x010"):
        expect_refused(a.agent, dict(base_env(d), FTL_NAME=name), "FTL_NAME")


def scenario_example_empty_steps_or_batch_is_refused(a, d):
    for var in ("FTL_STEPS", "FTL_BATCH"):
        expect_refused(a.train, dict(base_env(d), **{var: ""}), var, "empty")


def scenario_example_out_of_memory_names_the_variable(a, d):
    limit = 2 << 30  # an address space of 2 GiB: 64 GiB of extra state cannot fit, on any machine
    set_limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    r = run(a.train, dict(base_env(d), FTL_EXTRA_STATE_MB="65536", FTL_STEPS="1"), preexec=set_limit)
    assert r.returncode == 2 and "FTL_EXTRA_STATE_MB=65536" in r.stderr and "out of memory" in r.stderr, r.stderr
    print(r.stderr.strip())


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def status_answered_within(a, sock, limit_s):
    t0 = time.monotonic()
    r = subprocess.run([a.ctl, "--socket", sock, "status", "--json"], capture_output=True, text=True,
                       timeout=limit_s)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    return took


def scenario_control_client_that_never_reads_keeps_agent_memory_bounded(a, d):
    env = base_env(d, port=7392)
    agent = subprocess.Popen([a.agent], env=env, stderr=subprocess.DEVNULL)
    sock = os.path.join(d, "w0.sock")
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            assert time.monotonic() < deadline and agent.poll() is None, "the agent did not start"
            time.sleep(0.05)
        before = peak_rss_mib(agent.pid)
        flood = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        flood.connect(sock)
        flood.setblocking(False)
        payload = b'{"cmd":"status"}\n' * 1_000_000
        sent, last_progress = 0, time.monotonic()
        while sent < len(payload) and time.monotonic() - last_progress < 2.0:
            try:
                n = flood.send(payload[sent:sent + (1 << 16)])
                sent += n
                last_progress = time.monotonic()
            except BlockingIOError:
                time.sleep(0.01)
        took = status_answered_within(a, sock, 10)
        peak = peak_rss_mib(agent.pid)
        print(f"flood: {sent} of {len(payload)} bytes of requests taken; agent peak RSS {before:.1f} -> "
              f"{peak:.1f} MiB (bound {RSS_BOUND_MIB}); ftlctl status answered in {took * 1000:.0f} ms")
        assert peak < RSS_BOUND_MIB, f"peak RSS {peak:.1f} MiB"
        assert took < 5.0, f"status took {took:.2f} s while a client flooded"
        flood.close()
        took = status_answered_within(a, sock, 10)
        assert agent.poll() is None, "the agent exited"
        print(f"after the flooding client closed: status in {took * 1000:.0f} ms, peak RSS "
              f"{peak_rss_mib(agent.pid):.1f} MiB")
    finally:
        agent.kill()
        agent.wait()


def start_agent(a, env, log_path):
    log = open(log_path, "w")
    agent = subprocess.Popen([a.agent], env=env, stderr=log)
    sock = os.path.join(env["FTL_RUN_DIR"], env["FTL_NAME"] + ".sock")
    deadline = time.monotonic() + 10
    while not os.path.exists(sock):
        assert time.monotonic() < deadline and agent.poll() is None, "the agent did not start"
        time.sleep(0.05)
    return agent, sock


def scenario_tcp_timeouts_are_counted_not_each_logged(a, d):
    env = base_env(d, port=7393)
    log_path = os.path.join(d, "agent.log")
    agent, sock = start_agent(a, env, log_path)
    idle = []
    try:
        for _ in range(40):  # connect, send nothing: each one times out unauthenticated
            idle.append(socket.create_connection(("127.0.0.1", 7393)))
        deadline = time.monotonic() + 30
        timeouts = 0
        while time.monotonic() < deadline and timeouts < 40:
            r = subprocess.run([a.ctl, "--socket", sock, "status", "--json"], capture_output=True, text=True,
                               timeout=10)
            counters = json.loads(r.stdout)["counters"]
            # over the caps on unauthenticated connections, the oldest is closed at once (too_many)
            timeouts = counters["tcp_timeouts"] + counters["tcp_dropped"]["too_many"]
            time.sleep(0.5)
        with open(log_path) as f:
            lines = [line for line in f if "timed out" in line]
        print(f"{timeouts} TCP timeouts or refusals counted, {len(lines)} WARN line(s) written")
        assert timeouts >= 40, f"counters.tcp_timeouts + tcp_dropped.too_many is {timeouts}"
        assert len(lines) <= 2, f"{len(lines)} lines for 40 timeouts"
    finally:
        for c in idle:
            c.close()
        agent.kill()
        agent.wait()


TCP_RSS_BOUND_MIB = 32  # idle ~6 MiB, plus what unauthenticated connections may hold together (8 MiB)


def flood_gossip_port(port, conns, declared, send, hold):
    """conns connections to the gossip port, each declaring a frame of `declared` bytes and sending up to
    `send` bytes of it (errors, such as the agent closing on us, end that connection's part). Returns the
    sockets still open when hold is true."""
    socks = []
    for _ in range(conns):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.setblocking(False)
            socks.append([s, struct.pack(">I", declared) + b"P", send])
        except OSError:
            pass
    chunk = b"\xab" * (1 << 20)
    sent = 0
    deadline = time.monotonic() + 20
    while any(left > 0 for _, _, left in socks) and time.monotonic() < deadline:
        for item in socks:
            sock, prefix, left = item
            if left <= 0:
                continue
            data = prefix or chunk[:min(len(chunk), left)]
            try:
                n = sock.send(data)
                sent += n
                if prefix:
                    item[1] = prefix[n:]
                else:
                    item[2] = left - n
            except BlockingIOError:
                continue
            except OSError:
                item[2] = 0
    if not hold:
        for sock, _, _ in socks:
            sock.close()
        return sent, []
    return sent, [sock for sock, _, _ in socks]


def scenario_unauthenticated_tcp_memory_is_bounded(a, d):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cluster import Cluster, wait_until
    c = Cluster(a.agent, a.ctl)
    held = []
    try:
        w0, w1, w2 = c.add("w0"), c.add("w1"), c.add("w2")
        wait_until("three members alive at w0",
                   lambda: (c.view(w0) or {}) and all(st == "alive" for st, _ in c.view(w0).values())
                   and len(c.view(w0)) == 3, 30)
        before = peak_rss_mib(w0.proc.pid)
        # The attack as reported: 60 connections each sending a 63 MiB frame, with no key.
        sent, _ = flood_gossip_port(w0.port, 60, 63 << 20, 63 << 20, hold=False)
        took = status_answered_within(a, w0.socket, 10)
        print(f"60 x 63 MiB: {sent / 2**20:.1f} MiB taken before the agent closed them; status in "
              f"{took * 1000:.0f} ms")
        # Then the most a keyless peer may make it hold: 60 connections each sending all but the last byte
        # of the largest frame allowed without a key, kept open while a member is killed.
        sent, held = flood_gossip_port(w0.port, 60, 256 << 10, (256 << 10) - 1, hold=True)
        took = status_answered_within(a, w0.socket, 10)
        w2.signal(9)
        detect = wait_until("w0 declares the killed w2 dead during the flood",
                            lambda: (c.view(w0) or {}).get("w2", ("",))[0] == "dead", 30)
        took = max(took, status_answered_within(a, w0.socket, 10))
        peak = peak_rss_mib(w0.proc.pid)
        dropped = c.status(w0)["counters"]["tcp_dropped"]
        print(f"agent peak RSS (VmHWM) {before:.1f} -> {peak:.1f} MiB (bound {TCP_RSS_BOUND_MIB}); w2 declared "
              f"dead in {detect:.2f} s during the flood; status answered in {took * 1000:.0f} ms at most; "
              f"tcp_dropped {dropped}")
        assert peak < TCP_RSS_BOUND_MIB, f"peak RSS {peak:.1f} MiB"
        assert took < 5.0, f"status took {took:.2f} s during the flood"
        # 60 x 256 KiB is over the 8 MiB all unauthenticated connections may hold: the oldest went, or, on a
        # loaded machine where the sends took longer than the 2 s given to show the key, they were closed
        # for that first (the bound on memory is the RSS check above either way)
        assert dropped["too_large"] >= 1 and dropped["buffer_full"] + dropped["unopened"] >= 1, dropped
        # A push-pull between members still works afterwards (a join of a new member through w0).
        for sock in held:
            sock.close()
        held = []
        w3 = c.add("w3", seed=w0.addr)
        wait_until("w3 joins through w0", lambda: (c.view(w3) or {}).get("w1", ("",))[0] == "alive", 30)
    finally:
        for sock in held:
            sock.close()
        c.close()


FOLLOWER_RSS_BOUND_MIB = 48  # 50 followers that never read used to take the agent to 274-364 MiB


def scenario_events_followers_that_never_read_are_dropped_and_memory_stays_bounded(a, d):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cluster import Cluster, wait_until
    from growth import flood_members, follow_without_reading, read_to_the_end, rss_mib
    c = Cluster(a.agent, a.ctl)
    conns = []
    try:
        w0 = c.add("w0", FTL_LOG_LEVEL="error")
        wait_until("w0 answers", lambda: c.status(w0), 10)
        idle = rss_mib(w0.proc.pid)
        conns = follow_without_reading(w0.socket, 50)
        dropped = lambda: c.status(w0)["counters"].get("control_followers_dropped", 0)
        for attempt in range(5):  # UDP on a busy machine loses datagrams: flood again until every follower fell
            # behind; 40 rounds of 2000 alives make join and update events, and a repeat goes 40 rounds further
            # (round r carries incarnation r+1: the rounds already sent are old news)
            flood_members(a.flood, w0.port, c.key, 2000, 40 * (attempt + 1), "ev")
            time.sleep(0.5)
            if dropped() >= 50:
                break
        peak = rss_mib(w0.proc.pid, "VmHWM")
        closed, final = read_to_the_end(conns, 15)
        for conn in conns:
            conn.close()
        conns = []
        time.sleep(0.5)
        after = rss_mib(w0.proc.pid)
        counted = dropped()
        print(f"50 followers that never read: agent RSS {idle:.1f} MiB idle, peak {peak:.1f} MiB, {after:.1f} MiB "
              f"after they closed (bound {FOLLOWER_RSS_BOUND_MIB}); {closed} dropped, {final} with the final "
              f"line, {counted} counted")
        assert peak < FOLLOWER_RSS_BOUND_MIB and after < FOLLOWER_RSS_BOUND_MIB, f"peak {peak:.1f}, after {after:.1f}"
        assert closed == 50 and final == 50 and counted == 50, (closed, final, counted)
    finally:
        for conn in conns:
            conn.close()
        c.close()


def scenario_member_table_stops_at_its_limit(a, d):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cluster import Cluster, wait_until
    from growth import flood_members
    limit = 40
    c = Cluster(a.agent, a.ctl)
    try:
        w0 = c.add("w0", FTL_MAX_MEMBERS=limit, FTL_LOG_LEVEL="error")
        w1 = c.add("w1", seed=w0.addr, FTL_LOG_LEVEL="error")
        wait_until("w1 alive at w0", lambda: (c.view(w0) or {}).get("w1", ("",))[0] == "alive", 30)
        refused = 0
        for _ in range(10):  # UDP on a busy machine loses some datagrams: offer the names again
            flood_members(a.flood, w0.port, c.key, 2 * limit, 2, "fake")
            st = c.status(w0)
            refused = st["counters"]["dropped"].get("member_table_full", 0)
            if refused:
                break
        held = len(st["members"])
        print(f"{2 * limit} fake names gossiped with the key: {held} members held (FTL_MAX_MEMBERS={limit}), "
              f"{refused} refused (counters.dropped.member_table_full)")
        assert held == limit and refused > 0, (held, refused)
        # A member known before the table filled still changes: w1 restarted (kill -9, same name and port)
        # joins w0 again with its new life, taken in place of the old one.
        old_life = c.view(w0)["w1"][1]
        c.restart("w1")
        took = wait_until("w0 takes w1's new life", lambda: (c.view(w0) or {}).get("w1", ("", old_life))[1] != old_life
                          and c.view(w0)["w1"][0] == "alive", 30)
        print(f"w1 restarted: its new life alive at w0 in {took:.2f} s with the table full "
              f"({len(c.status(w0)['members'])} members)")
    finally:
        c.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agent", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--flood", help="tests/agent/member_flood (the growth scenarios)")
    p.add_argument("scenario")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ftl-settings-test-") as d:
        try:
            globals()["scenario_" + a.scenario](a, d)
        except AssertionError as e:
            print(f"FAIL {a.scenario}: {e}")
            return 1
    print(f"PASS {a.scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
