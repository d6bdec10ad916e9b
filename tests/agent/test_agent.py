"""Multi-process tests of ftl-agent on loopback: real processes, real kill -9, SIGSTOP, SIGTERM, wrong
keys and floods, observed only through ftlctl. One scenario per run (ctest gives each its own time
limit): python3 test_agent.py --agent PATH --ctl PATH SCENARIO."""

import argparse
import os
import signal
import socket
import sys
import time

from cluster import Agent, Cluster, _die_with_parent, wait_until

N = 8


def all_see(c, subject, status, among=None):
    """Every running agent (other than subject) sees subject in this status."""
    def check():
        for a in among or c.running(exclude=(subject,)):
            v = c.view(a)
            if v is None or v.get(subject, (None,))[0] != status:
                return False
        return True
    return check


def converged(c, n, exclude=()):
    def check():
        for a in c.running(exclude=exclude):
            s = c.status(a)
            if s is None or s["counts"]["alive"] != n:
                return False
        return True
    return check


def start_cluster(c, n=N, **settings):
    for i in range(n):
        c.add(f"w{i}", **settings)
    took = wait_until(f"{n} agents see {n} alive", converged(c, n), 30)
    print(f"{n} agents converged in {took:.2f} s")
    return took


def bound_s(c):
    return c.status(c.agents["w0"])["timing"]["detection_bound_ms"] / 1000.0


def dead_lines(c, subject):
    return [a.name for a in c.agents.values() if f'msg="member dead" member={subject} ' in a.log_text()]


REFUSED = 'reason="refused by its own address"'
SUSPICION = 'reason="suspicion timed out"'
WITNESSED = 'reason="witnessed on its host"'


def death_lines(c, subject, generation=None):
    """The log lines, over every agent, that declare or accept subject's death (of one life if given)."""
    head = f'msg="member dead" member={subject} '
    return [line for a in c.agents.values() for line in a.log_text().splitlines()
            if head in line and (generation is None or f" generation={generation} " in line)]


def follow_events(c, agent):
    """ftlctl events --follow --json on agent, in the background: read its lines after stopping it."""
    import subprocess
    out = open(os.path.join(c.dir, f"events-{agent.name}.jsonl"), "w+")
    proc = subprocess.Popen([c.ctl_bin, "--socket", agent.socket, "events", "--follow", "--json"], stdout=out,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return proc, out


def scenario_kill9_is_declared_dead_by_refusal(c):
    """Proof of death: the killed process's port refuses, so it is declared dead at once, not after a
    suspicion timeout, and the log and `ftlctl events` say which path it took. The witness is off: on one
    host it would see the death first (scenario kill9_is_witnessed_on_its_host)."""
    import json
    start_cluster(c, FTL_WITNESS=0)
    proc, out = follow_events(c, c.agents["w0"])
    c.agents["w5"].signal(signal.SIGKILL)
    took = wait_until("every survivor reports w5 dead", all_see(c, "w5", "dead"), bound_s(c) + 5)
    lines = death_lines(c, "w5")
    by_refusal = [line for line in lines if REFUSED in line]
    print(f"kill -9: w5 dead everywhere after {took:.2f} s; {len(by_refusal)} agent(s) declared it by refusal")
    assert by_refusal, f"no agent declared w5 dead by refusal: {lines}"
    assert not [line for line in lines if SUSPICION in line], f"a suspicion timed out for w5: {lines}"
    proofs = sum(c.status(a)["counters"]["deaths"]["refused by its own address"] for a in c.running())
    assert proofs == len(by_refusal), f"status counts {proofs} deaths by refusal, the logs {len(by_refusal)}"
    time.sleep(0.3)
    proc.terminate()
    proc.wait()
    out.seek(0)
    events = [json.loads(line) for line in out if line.strip().startswith("{")]
    dead = [e for e in events if e.get("event") == "dead" and e.get("name") == "w5"]
    assert dead and dead[0].get("reason") in ("refused by its own address", "gossip") and dead[0].get("from"), \
        f"ftlctl events does not say how w5 died: {dead}"
    print(f"ftlctl events on w0: w5 dead, reason {dead[0]['reason']!r}, declared by {dead[0]['from']}")


def scenario_kill9_is_witnessed_on_its_host(c):
    """The witness (agent/witness.h): agents on one host watch each other's life locks, which the kernel
    releases as the killed process's threads exit, before its memory is freed and its sockets close. So a
    kill -9 is declared dead by a witness, told to every member directly, and seen everywhere well within
    a second; the counters and the log agree on how many witnessed it."""
    start_cluster(c)
    watching = [c.status(a)["counters"].get("witness_watching") for a in c.running()]
    assert all(w == N - 1 for w in watching), f"each agent should watch the {N - 1} others: {watching}"
    c.agents["w5"].signal(signal.SIGKILL)
    took = wait_until("every survivor reports w5 dead", all_see(c, "w5", "dead"), 5)
    lines = death_lines(c, "w5")
    witnessed = [line for line in lines if WITNESSED in line]
    print(f"kill -9: w5 dead everywhere after {took:.3f} s; {len(witnessed)} agent(s) witnessed it")
    assert witnessed, f"no agent witnessed w5's death: {lines}"
    assert not [line for line in lines if SUSPICION in line], f"a suspicion timed out for w5: {lines}"
    assert took < 1.0, f"a witnessed death took {took:.2f} s to reach everyone"
    counted = sum(c.status(a)["counters"]["deaths"]["witnessed on its host"] for a in c.running())
    assert counted == len(witnessed), f"status counts {counted} witnessed deaths, the logs {len(witnessed)}"


class ForkingAgent(Agent):
    """An agent whose process forked a child that sleeps on, holding what it inherited (agent_that_forks)."""

    def start(self):
        import subprocess
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.cluster.forking_agent_bin], env=self.env, stdout=log, stderr=log,
                                         preexec_fn=_die_with_parent)

    def child_pid(self):
        for line in self.log_text().splitlines():
            if line.startswith("forked child pid="):
                return int(line.split("=", 1)[1])
        return None


def scenario_kill9_after_fork_is_declared_dead_by_refusal(c):
    """A DataLoader-style fork: the child of w5 outlives kill -9 of w5. It closed w5's sockets when it was
    born, so w5's port refuses and w5 is declared dead by refusal within the kill -9 bound, as without the
    fork (had the child kept them, the port would stay open and only a suspicion timeout would end w5). The
    witness is off, as in kill9_is_declared_dead_by_refusal."""
    for i in range(N):
        if i == 5:
            c.member_class = ForkingAgent
        c.add(f"w{i}", FTL_WITNESS=0)
        c.member_class = Agent
    took = wait_until(f"{N} agents see {N} alive", converged(c, N), 30)
    victim = c.agents["w5"]
    child = wait_until("w5 says which child it forked", victim.child_pid, 10) and victim.child_pid()
    print(f"{N} agents converged in {took:.2f} s; w5 forked child {child}")
    bound = bound_s(c)
    try:
        victim.signal(signal.SIGKILL)
        took = wait_until("every survivor reports w5 dead", all_see(c, "w5", "dead"), bound + 5)
        os.kill(child, 0)  # the child still lives, holding whatever it inherited
    finally:
        os.kill(child, signal.SIGKILL)
    lines = death_lines(c, "w5")
    by_refusal = [line for line in lines if REFUSED in line]
    print(f"kill -9 of a process with a forked child: w5 dead everywhere after {took:.2f} s (profile bound "
          f"{bound:.2f} s); {len(by_refusal)} agent(s) declared it by refusal")
    assert by_refusal, f"no agent declared w5 dead by refusal (the child kept its port open?): {lines}"
    assert not [line for line in lines if SUSPICION in line], f"a suspicion timed out for w5: {lines}"
    assert took <= bound + 2.0, f"detection took {took:.2f} s, bound {bound:.2f} s"


def scenario_sigstop_never_takes_the_refusal_path(c):
    """A paused process keeps its sockets open (its kernel still accepts), so it goes through suspicion."""
    start_cluster(c)
    victim = c.agents["w3"]
    victim.signal(signal.SIGSTOP)
    took = wait_until("every other agent reports w3 dead", all_see(c, "w3", "dead"), bound_s(c) + 10)
    lines = death_lines(c, "w3")
    print(f"SIGSTOP: w3 dead everywhere after {took:.2f} s, by suspicion ({len(lines)} log lines)")
    assert not [line for line in lines if REFUSED in line], f"w3 was declared dead by refusal: {lines}"
    assert not [line for line in lines if WITNESSED in line], f"w3's pause was taken for a death: {lines}"
    assert [line for line in lines if SUSPICION in line], f"no suspicion timed out for w3: {lines}"
    victim.signal(signal.SIGCONT)


def scenario_restart_on_same_port_is_a_join_not_a_death(c):
    """kill -9 and an immediate restart on the same port: the new process is a new member (a join), and
    only the old life may be declared dead."""
    start_cluster(c)
    old_gen = c.view(c.agents["w0"])["w6"][1]
    c.restart("w6")
    def new_gen():
        v = c.view(c.agents["w6"])
        return v and v["w6"][1] != old_gen and v["w6"][1]
    wait_until("the restarted w6 answers", new_gen, 10)
    gen = new_gen()
    def new_life_everywhere():
        for a in c.running(exclude=("w6",)):
            v = c.view(a)
            if v is None or v.get("w6", (None, 0)) != ("alive", gen):
                return False
        return True
    took = wait_until("w6's new generation alive everywhere", new_life_everywhere, 15)
    time.sleep(bound_s(c))
    assert new_life_everywhere(), "w6's new life did not stay alive everywhere"
    assert not death_lines(c, "w6", gen), f"the new w6 was declared dead: {death_lines(c, 'w6', gen)}"
    joins = sum('msg="member join" member=w6 ' in line and f" generation={gen} " in line
                for a in c.running(exclude=("w6",)) for line in a.log_text().splitlines())
    print(f"restart on the same port: w6 (generation {gen}) joined {joins} agents' views, alive everywhere after "
          f"{took:.2f} s; old life declared dead {len(death_lines(c, 'w6', old_gen))} times, the new one never")
    assert joins == N - 1, f"only {joins} agents logged w6's new life as a join"


def start_twin(c, name, seeds):
    """A second process given a live member's name, with a port and run directory of its own (as two pods
    given one name would be), joining through seeds. Kept in c.agents under name + "-twin" so the cluster
    kills it and a failure prints its log."""
    import tempfile
    from cluster import free_port
    port = free_port()
    run_dir = tempfile.mkdtemp(prefix="ftl-agent-test-twin-")
    env = dict(c.agents[name].env, FTL_BIND=f"127.0.0.1:{port}", FTL_RUN_DIR=run_dir, FTL_SEEDS=seeds)
    twin = Agent(c, name, port, env)
    twin.log = os.path.join(run_dir, f"{name}.log")
    twin.socket = os.path.join(run_dir, f"{name}.sock")
    c.agents[name + "-twin"] = twin
    twin.start()
    return twin


def scenario_live_members_name_is_refused_to_a_second_process(c):
    """A second process started with a live member's name (its own port and run directory) is refused: it
    exits 1 saying the name is taken, by whom at which address; the members that refused it, the live holder
    included, warn naming both addresses and the fix; the live member is never displaced."""
    start_cluster(c, n=3)
    holder = c.agents["w1"]
    gen = c.view(c.agents["w0"])["w1"][1]
    twin = start_twin(c, "w1", seeds=f"{c.agents['w0'].addr},{holder.addr}")
    took = wait_until("the second w1 exits", lambda: not twin.is_running(), 30)
    print(f"the second w1 exited {twin.proc.returncode} after {took:.2f} s")
    assert twin.proc.returncode == 1, f"the second w1 exited {twin.proc.returncode}, not 1"
    said = [line for line in twin.log_text().splitlines() if line.startswith("ftl-agent: ")]
    assert said and "the name w1 is taken" in said[-1] and holder.addr in said[-1] and "FTL_NAME" in said[-1], \
        f"the second w1 did not say its name is taken by {holder.addr}: {said}"
    print(said[-1])
    refused = f"refused the name w1 to a second process at {twin.addr}: the live member w1 at {holder.addr}"
    warned = [a.name for a in c.running() if refused in a.log_text()]
    assert "w1" in warned, f"the live w1 did not warn about the second process (warned: {warned})"
    assert "FTL_NAME" in next(line for line in holder.log_text().splitlines() if refused in line)
    counted = sum(c.status(a)["counters"]["names_refused"] for a in c.running())
    print(f"warned by {warned}; {counted} claims counted (counters.names_refused)")
    assert counted >= len(warned)
    def holder_alive_everywhere():
        for a in c.running():
            v = c.view(a)
            if v is None or v.get("w1") != ("alive", gen) or c.status(a)["counts"]["alive"] != 3:
                return False
        return True
    assert holder_alive_everywhere(), "the live w1 was displaced"
    time.sleep(bound_s(c))
    assert holder_alive_everywhere(), "the live w1 did not stay alive with its own life everywhere"
    assert not death_lines(c, "w1"), f"w1 was declared dead: {death_lines(c, 'w1')}"


def scenario_converge(c):
    start_cluster(c)


def scenario_started_before_its_seed(c):
    """Workers started together race their seed's bind: one that found nobody at its first join asks again
    soon while it is alone (250 ms, doubling: 0.25, 0.75, 1.75, 3.75, 7.75 s after its start), not a whole
    reseed interval later (20 s here, so the two cannot be mistaken on a loaded machine)."""
    seed = c.add("w0", start=False)
    early = c.add("w1", FTL_RESEED_INTERVAL_MS=20000)
    time.sleep(1.0)
    seed.start()
    took = wait_until("w0 and w1 see each other", converged(c, 2), 30)
    print(f"started 1 s before its seed: joined {took:.2f} s after the seed started")
    assert took < 10.0, f"the early worker joined only after {took:.2f} s (the reseed interval is 20 s)"
    assert c.status(early) is not None


def scenario_kill9(c):
    start_cluster(c)
    bound = bound_s(c)
    victim = c.agents["w5"]
    victim.signal(signal.SIGKILL)
    # Generous slack over the formula's bound: 8 processes share 2 cores here.
    took = wait_until("every survivor reports w5 dead", all_see(c, "w5", "dead"), bound + 5)
    print(f"kill -9: every survivor reported w5 dead after {took:.2f} s (profile bound {bound:.2f} s)")
    assert took <= bound + 2.0, f"detection took {took:.2f} s, bound {bound:.2f} s"


def scenario_sigstop_long(c):
    start_cluster(c)
    s = c.status(c.agents["w0"])
    victim = c.agents["w3"]
    victim.signal(signal.SIGSTOP)
    took = wait_until("every other agent reports w3 dead", all_see(c, "w3", "dead"), bound_s(c) + 10)
    print(f"SIGSTOP: w3 reported dead after {took:.2f} s (suspicion max {s['timing']['suspicion_max_ms']} ms)")
    victim.signal(signal.SIGCONT)
    took = wait_until("w3 alive everywhere after SIGCONT", all_see(c, "w3", "alive"), 20)
    print(f"SIGCONT: w3 refuted and is alive everywhere after {took:.2f} s")
    wait_until("w3 itself sees everyone alive", converged(c, N), 10)


def scenario_sigstop_short(c):
    start_cluster(c)
    timing = c.status(c.agents["w0"])["timing"]
    victim = c.agents["w3"]
    pause = 0.8 * timing["probe_interval_ms"] / 1000.0  # shorter than any suspicion timeout
    for _ in range(5):
        victim.signal(signal.SIGSTOP)
        time.sleep(pause)
        victim.signal(signal.SIGCONT)
        time.sleep(1.0)
    time.sleep(2.0)
    assert not dead_lines(c, "w3"), f"w3 was reported dead by {dead_lines(c, 'w3')}"
    assert all_see(c, "w3", "alive")(), "w3 is not alive everywhere"
    print(f"5 pauses of {pause * 1000:.0f} ms: w3 never reported dead")


def scenario_leave(c):
    """ftlctl leave and SIGTERM are leaves everywhere, never deaths: the witness sees each life lock released
    cleanly (marked leaving), not by the kernel."""
    start_cluster(c)
    r = c.ctl(c.agents["w2"], "leave", timeout=30)
    assert r.returncode == 0, f"ftlctl leave failed: {r.stdout} {r.stderr}"
    wait_until("w2's agent exits after leaving", lambda: not c.agents["w2"].is_running(), 10)
    took = wait_until("w2 left everywhere", all_see(c, "w2", "left"), 10)
    print(f"ftlctl leave: w2 left everywhere after {took:.2f} s")
    c.agents["w4"].signal(signal.SIGTERM)
    took = wait_until("w4 left everywhere after SIGTERM", all_see(c, "w4", "left"), 10)
    wait_until("w4's agent exits after SIGTERM", lambda: not c.agents["w4"].is_running(), 10)
    print(f"SIGTERM: w4 left everywhere after {took:.2f} s")
    time.sleep(bound_s(c))
    for who in ("w2", "w4"):
        assert not dead_lines(c, who), f"{who} was reported dead (not left) by {dead_lines(c, who)}"


def bad_mac_drops(c):
    return sum(c.status(a)["counters"]["keyring_dropped"]["bad_mac"] for a in c.running(exclude=("intruder",)))


def scenario_wrong_key(c):
    start_cluster(c)
    before = bad_mac_drops(c)
    intruder = c.add("intruder", key=c.keygen())
    time.sleep(3.0)
    s = c.status(intruder)
    assert s["counts"]["alive"] == 1, f"the intruder sees {s['counts']['alive']} alive members"
    for a in c.running(exclude=("intruder",)):
        assert "intruder" not in c.view(a), f"{a.name} knows the intruder"
    dropped = bad_mac_drops(c) - before
    # It knows no one, so all it sends is its sealed join (and rejoins every reseed interval).
    print(f"wrong key: intruder isolated; the cluster dropped {dropped} of its packets for a bad MAC")
    assert dropped > 0
    # A flood of random datagrams at one agent's gossip port changes nothing but counters.
    target = c.agents["w1"]
    before = c.status(target)["counters"]["dropped"]["keyring"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i in range(3000):
            s.sendto(os.urandom(1 + i % 1400), ("127.0.0.1", target.port))
    time.sleep(1.0)
    after = c.status(target)
    assert after["counters"]["dropped"]["keyring"] - before >= 2500, "the flood was not counted"
    assert after["counts"]["alive"] == N and target.is_running()
    assert converged(c, N, exclude=("intruder",))(), "the flood cost a member"
    print(f"flood: {after['counters']['dropped']['keyring'] - before} datagrams dropped and counted, {N} alive")


def keys_of(c, a):
    import json
    r = c.ctl(a, "keys", "list", "--json")
    return json.loads(r.stdout)["keys"] if r.returncode == 0 else None


def census_of(c, a):
    """`keys list --json` on a as (M, {fingerprint: row}), or None when it does not answer."""
    import json
    r = c.ctl(a, "keys", "list", "--json")
    if r.returncode != 0:
        return None
    reply = json.loads(r.stdout)
    return reply["members"], {row["fingerprint"]: row for row in reply["census"]}


def fingerprint_of(c, a, key):
    return next(fp for fp, row in census_of(c, a)[1].items() if row["key"] == key)


def everyone_counts(c, want, field="holders"):
    """Every running agent's census shows want = {fingerprint: (N, M)} (N in the given field)."""
    def check():
        for a in c.running():
            got = census_of(c, a)
            if got is None:
                return False
            members, rows = got
            if any(members != m or rows.get(fp, {}).get(field) != n for fp, (n, m) in want.items()):
                return False
        return True
    return check


def wait_for_key_ops_to_settle(c, quiet_s=1.0, timeout=15):
    """Until no agent has received a key op for quiet_s (dozens of gossip intervals): each has passed the
    op on as often as any rumor, so a member that joins now hears of it only through a new op."""
    def heard():
        return sum(c.status(a)["counters"]["received"]["key_op"] for a in c.running())
    start = quiet_since = time.monotonic()
    last = heard()
    while time.monotonic() - quiet_since < quiet_s:
        assert time.monotonic() - start < timeout, f"key ops still gossiped after {timeout} s"
        time.sleep(0.1)
        now = heard()
        if now != last:
            last, quiet_since = now, time.monotonic()
    return time.monotonic() - start


def scenario_key_rotation(c):
    """install, use, remove from w0, each step let reach every member as `keys list` shows it (N/N
    holding the new key before `use`, the new key primary on N/N before `remove`): no member is lost."""
    start_cluster(c)
    w0 = c.agents["w0"]
    old = keys_of(c, w0)[0]
    new = c.keygen()
    fp_old = fingerprint_of(c, w0, old)
    steps = (("install", lambda k: k is not None and new in k, "holders"),
             ("use", lambda k: k is not None and k[0] == new, "primary_of"),
             ("remove", lambda k: k is not None and old not in k, None))
    for step, check, field in steps:
        r = c.ctl(w0, "keys", step, old if step == "remove" else new, "--wait", "10")
        assert r.returncode == 0, f"keys {step}: {r.stdout}{r.stderr}"
        assert "on every live member after" in r.stdout, r.stdout  # as w0's census counts it
        print(f"keys {step} --wait: {r.stdout.splitlines()[-1]}")
        took = wait_until(f"keys {step} reaches every agent",
                          lambda: all(check(keys_of(c, a)) for a in c.running()), 10)
        if field:
            fp_new = fingerprint_of(c, w0, new)
            took = wait_until(f"keys list shows keys {step} on {N}/{N} everywhere",
                              everyone_counts(c, {fp_new: (N, N)}, field), 10)
        print(f"keys {step}: on every agent after {took:.2f} s")
    # The keyrings change first; the others' fingerprints of the old key reach w0 by gossip after.
    wait_until("the removed key is no longer counted on w0", lambda: fp_old not in census_of(c, w0)[1], 10)
    time.sleep(1.0)
    assert converged(c, N)(), "a member was lost during rotation"
    for a in c.agents.values():
        assert 'msg="member dead"' not in a.log_text(), f"{a.name} saw a death during rotation"


def scenario_keys_list_counts_members_that_hold_each_key(c):
    """`keys list` shows N/M per key on every member. A key installed before w4 joined is held by 4 of 5
    (every agent says so and names w4, w4 included); `keys use` of it is refused cluster-wide and changes
    nothing; installed again it reaches w4, shows 5/5, and can be used."""
    start_cluster(c, 4)
    w0 = c.agents["w0"]
    old, new = keys_of(c, w0)[0], c.keygen()
    fp_old = fingerprint_of(c, w0, old)
    assert c.ctl(w0, "keys", "install", new).returncode == 0
    fp_new = fingerprint_of(c, w0, new)
    took = wait_until("every agent counts the new key 4/4",
                      everyone_counts(c, {fp_old: (4, 4), fp_new: (4, 4)}), 15)
    print(f"keys install on 4 agents: 4/4 everywhere after {took:.2f} s")

    took = wait_for_key_ops_to_settle(c)
    print(f"the install stopped being gossiped after {took:.2f} s")
    c.add("w4")  # started with the cluster's first key alone, after the install: it never hears of it
    wait_until("5 agents see 5 alive", converged(c, 5), 30)
    took = wait_until("every agent counts the old key 5/5 and the new 4/5",
                      everyone_counts(c, {fp_old: (5, 5), fp_new: (4, 5)}), 15)
    print(f"w4 joined: old key 5/5, new key 4/5 on every agent after {took:.2f} s")
    for a in c.running():
        rows = census_of(c, a)[1]
        assert rows[fp_new]["lacking"] == ["w4"], f"{a.name}: {rows[fp_new]}"
        assert (rows[fp_new]["key"] is None) == (a.name == "w4"), f"{a.name}: {rows[fp_new]}"
        assert rows[fp_old]["primary_of"] == 5 and rows[fp_new]["primary_of"] == 0, f"{a.name}: {rows}"
    text = c.ctl(c.agents["w2"], "keys", "list").stdout
    print(text, end="")
    assert f"{new}  {fp_new}  4/5" in text and "lacking: w4" in text, text
    at_w4 = [line.split() for line in c.ctl(c.agents["w4"], "keys", "list").stdout.splitlines() if fp_new in line]
    assert at_w4 and at_w4[0][:6] == ["(not", "installed", "here)", fp_new, "4/5", "0/5"], at_w4

    before = {a.name: keys_of(c, a) for a in c.running()}
    r = c.ctl(c.agents["w1"], "keys", "use", new)
    print(f"keys use at 4/5: exit {r.returncode}: {(r.stdout + r.stderr).strip()}")
    assert r.returncode != 0 and "held by 4 of 5 live members (lacking: w4)" in r.stderr, r.stdout + r.stderr
    time.sleep(1.0)
    assert {a.name: keys_of(c, a) for a in c.running()} == before, "a keyring changed"

    assert c.ctl(c.agents["w3"], "keys", "install", new).returncode == 0
    took = wait_until("every agent counts the new key 5/5",
                      everyone_counts(c, {fp_old: (5, 5), fp_new: (5, 5)}), 15)
    print(f"keys install again: 5/5 everywhere after {took:.2f} s")
    r = c.ctl(w0, "keys", "use", new)
    assert r.returncode == 0, r.stdout + r.stderr
    took = wait_until("the new key is primary on 5/5 everywhere",
                      everyone_counts(c, {fp_new: (5, 5)}, "primary_of"), 15)
    print(f"keys use at 5/5: primary on 5/5 everywhere after {took:.2f} s")
    assert converged(c, 5)(), "a member was cut off"
    for a in c.agents.values():
        assert 'msg="member dead"' not in a.log_text(), f"{a.name} saw a death"


def scenario_keys_use_of_a_key_not_installed_is_refused(c):
    start_cluster(c, 4)
    before = {a.name: keys_of(c, a) for a in c.running()}
    w0 = c.agents["w0"]
    r = c.ctl(w0, "keys", "use", c.keygen())
    print(f"keys use of a key not installed: exit {r.returncode}: {(r.stdout + r.stderr).strip()}")
    assert r.returncode != 0, "keys use of a key no one holds was accepted"
    assert "not installed" in r.stdout + r.stderr, r.stdout + r.stderr
    time.sleep(2.0)
    assert {a.name: keys_of(c, a) for a in c.running()} == before, "a keyring changed"
    assert converged(c, 4)(), "a member was cut off"


def scenario_restart(c):
    start_cluster(c)
    old_gen = c.view(c.agents["w0"])["w6"][1]
    c.agents["w6"].signal(signal.SIGKILL)
    wait_until("w6 dead everywhere", all_see(c, "w6", "dead"), bound_s(c) + 5)
    c.restart("w6")
    def new_life_everywhere():
        for a in c.running(exclude=("w6",)):
            v = c.view(a)
            if v is None or v.get("w6", (None, 0))[0] != "alive" or v["w6"][1] == old_gen:
                return False
        return True
    took = wait_until("w6's new generation alive everywhere", new_life_everywhere, 15)
    print(f"restart: w6 back with a new generation, alive everywhere after {took:.2f} s")
    wait_until("w6 sees everyone", converged(c, N), 10)


def scenario_ipv6(c):
    for i in range(4):
        c.add(f"v{i}", host="::1", FTL_META=f"rack=r{i}")
    took = wait_until("4 agents on [::1] see 4 alive", converged(c, 4), 30)
    print(f"IPv6: 4 agents on [::1] converged in {took:.2f} s")
    c.agents["v2"].signal(signal.SIGKILL)
    took = wait_until("v2 dead everywhere", all_see(c, "v2", "dead"), 15)
    print(f"IPv6: kill -9 of v2 seen by all after {took:.2f} s")
    metas = {m["name"]: m.get("meta") for m in c.status(c.agents["v0"])["members"]}
    assert metas.get("v1") == "rack=r1", f"metadata did not travel: {metas}"


def scenario_bad_config(c):
    import subprocess
    env = dict(os.environ, FTL_NAME="x", FTL_BIND="127.0.0.1:notaport", FTL_INSECURE="1", FTL_RUN_DIR=c.dir)
    r = subprocess.run([c.agent_bin], env=env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "FTL_BIND" in r.stderr, r.stderr
    env = dict(os.environ, FTL_NAME="x", FTL_BIND="127.0.0.1:7946", FTL_RUN_DIR=c.dir)
    env.pop("FTL_GOSSIP_KEY", None)
    env.pop("FTL_INSECURE", None)
    r = subprocess.run([c.agent_bin], env=env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "FTL_GOSSIP_KEY" in r.stderr and "keygen" in r.stderr, r.stderr
    env = dict(os.environ, FTL_NAME="x", FTL_BIND="0.0.0.0:7946", FTL_INSECURE="1", FTL_RUN_DIR=c.dir)
    r = subprocess.run([c.agent_bin], env=env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "FTL_ADVERTISE" in r.stderr, r.stderr
    print("bad settings are refused with the variable named")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agent", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--forking-agent", help="agent_that_forks, for the fork scenario")
    p.add_argument("--limit", type=int, default=120, help="hard time limit in seconds")
    p.add_argument("scenario")
    args = p.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(AssertionError("hard time limit")))
    signal.alarm(args.limit)
    for var in ("FTL_GOSSIP_KEY", "FTL_GOSSIP_KEY_FILE", "FTL_INSECURE", "FTL_SEEDS", "FTL_ADVERTISE"):
        os.environ.pop(var, None)
    c = Cluster(args.agent, args.ctl)
    c.forking_agent_bin = args.forking_agent
    try:
        globals()["scenario_" + args.scenario](c)
    except Exception as e:
        print(f"FAIL {args.scenario}: {e}")
        for a in c.agents.values():
            print(f"--- last log lines of {a.name}:")
            print("".join(a.log_text().splitlines(True)[-8:]))
        return 1
    finally:
        c.close()
    print(f"PASS {args.scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
