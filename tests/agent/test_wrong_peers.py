"""A wrong or stray peer must never cost the job its work (issue 24, items 1 and 2): real
ftl-train-example workers on loopback. One scenario per run, under test_training.py's harness (hard limit,
logs on failure):
    python3 test_wrong_peers.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import json
import signal
import subprocess
import sys
import time

from test_training import JOB, digest_problems, final_groups, main_of, new_job, start_job


def keeps_stepping(job, names, steps, timeout):
    """Every named worker is still running and completes `steps` more steps within timeout seconds."""
    base = {n: job.agents[n].last_step() for n in names}
    job.wait(f"{', '.join(names)} complete {steps} more steps", lambda: all(
        job.agents[n].last_step() >= base[n] + steps for n in names), timeout)
    stopped = {n: job.agents[n].proc.poll() for n in names if not job.agents[n].is_running()}
    assert not stopped, f"workers of the job stopped: {stopped}"


def refused_alone(job, joiner, says):
    """The joiner is refused with one sentence containing every string of `says`, exits non-zero, and the
    job's workers never stop."""
    members = [w.name for w in job.workers() if w.name != joiner.name]
    job.wait(f"{joiner.name} exits", lambda: not joiner.is_running(), 40)
    code = joiner.proc.poll()
    refusal = [l for l in joiner.log_text().splitlines() if "refused by the job" in l]
    assert code not in (0, None), f"{joiner.name} exited {code}; a refused joiner must fail"
    assert refusal, f"no 'refused by the job' line in {joiner.name}'s log"
    for s in says:
        assert s in refusal[0], f"the refusal does not say {s!r}: {refusal[0]}"
    print(f"{joiner.name} exited {code}: {refusal[0][:400]}")
    keeps_stepping(job, members, 50, 40)
    worlds = {r["world"] for n in members for r in job.agents[n].steps()}
    times = [r["t"] for r in job.agents[members[0]].steps()]
    pause = max(b - a for a, b in zip(times, times[1:]))
    print(f"the job's {len(members)} workers went on stepping (worlds seen: {sorted(worlds)}; the longest time "
          f"between two steps of {members[0]}: {pause * 1000:.0f} ms)")
    print(f"FIGURE: {joiner.name} refused alone, naming the difference; the job never stopped (longest pause "
          f"between two steps {pause * 1000:.0f} ms)")


def scenario_joiner_with_other_state_is_refused_alone(train, ctl):
    """Three workers train; a fourth registers one more buffer (1 MiB of ballast). It is refused alone,
    naming the buffer, before any collective it could poison; the three never stop stepping."""
    job = new_job(train, ctl, FTL_STEPS=10**9, **JOB)
    start_job(job, 3)
    joiner = job.add("w3", FTL_EXTRA_STATE_MB=1)
    refused_alone(job, joiner, ["'ballast'", "3 buffers here, 2 in the job"])


def scenario_joiner_with_other_settings_is_refused_alone(train, ctl):
    """A joiner whose sampler disagrees with the job's (another data set size) is refused alone the same
    way, naming the setting and both values."""
    job = new_job(train, ctl, FTL_STEPS=10**9, **JOB)
    start_job(job, 3)
    joiner = job.add("w3", FTL_DATA_SIZE=12000)
    refused_alone(job, joiner, ["data set size", "12000", "20000"])


def latest(w, field):
    steps = w.steps()
    return steps[-1][field] if steps else 0


def scenario_stray_lineage_never_rolls_the_job_back(train, ctl):
    """A job of three trains; a lone worker of another lineage (same key, its seeds elsewhere) trains fewer
    steps but sees joins and leaves, so its view epoch is higher than the job's. A bridge that knows both
    joins: the stray's steps are discarded, never the job's (no job worker's step number ever goes down),
    the stray says so at warn level naming both lineages' steps and as an event on `ftlctl events`, and
    all five then train in one view with equal digests."""
    job = new_job(train, ctl, FTL_STEPS=10**9, FTL_MIN_WORKERS=1, **JOB)
    start_job(job, 3, lambda name: {"FTL_EXPECTED_WORKERS": 3})
    members = [job.agents[f"w{i}"] for i in range(3)]
    job.wait("the job passes step 150", lambda: members[0].last_step() >= 150, 30)

    def add_seeded(name, seeds):
        w = job.add(name, start=False)
        w.env.pop("FTL_SEEDS", None)
        if seeds:
            w.env["FTL_SEEDS"] = seeds
        w.start()
        return w
    stray = add_seeded("s0", None)
    job.wait("s0 trains alone", lambda: stray.last_step() >= 10, 30)
    for i in (1, 2):  # joins and leaves raise the stray's epoch, not its work
        helper = add_seeded(f"s{i}", stray.addr)
        job.wait(f"s{i} trains with s0", lambda: any(r["world"] == 2 for r in helper.steps()), 30)
        job.kill(helper.name, signal.SIGTERM)
        job.wait(f"s0 trains alone again", lambda: latest(stray, "world") == 1 and not helper.is_running(), 30)
    job_epoch, stray_epoch = latest(members[0], "epoch"), latest(stray, "epoch")
    assert stray_epoch > job_epoch, f"the stray's epoch {stray_epoch} is not above the job's {job_epoch}"
    events = subprocess.Popen([ctl, "--socket", stray.socket, "events", "--follow", "--json"],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    before = {w.name: w.last_step() for w in members}
    bridge = add_seeded("c0", f"{stray.addr},{members[0].addr}")
    print(f"job at step {before['w0']} in view epoch {job_epoch}; stray at step {stray.last_step()} in view epoch "
          f"{stray_epoch}; c0 knows both")
    everyone = members + [stray, bridge]
    job.wait("all five train in one view", lambda: all(any(r["world"] == 5 for r in w.steps()) for w in everyone), 60)
    for w in members:
        numbers = [r["step"] for r in w.steps()]
        back = [(a, b) for a, b in zip(numbers, numbers[1:]) if b < a]
        assert not back, f"{w.name} went back from step {back[0][0]} to {back[0][1]}: the job lost its work"
        assert "merged into another lineage" not in w.log_text(), f"{w.name} says its job merged into the stray's"
    events.terminate()
    out = events.communicate(timeout=10)[0]
    merged = [json.loads(line) for line in out.splitlines() if '"lineage merged"' in line]
    assert merged, f"no lineage merged event on s0's ftlctl events:\n{out[-2000:]}"
    assert merged[0]["steps_kept"] > merged[0]["steps_discarded"], merged[0]
    warn = [l for l in stray.log_text().splitlines() if "merged into another lineage" in l]
    assert warn and "level=warn" in warn[0], f"no warn-level line about the merge in s0's log: {warn}"
    assert "old_steps=" in warn[0] and "new_steps=" in warn[0], warn[0]
    print(f"s0 warned: {warn[0][:300]}")
    print(f"event: {merged[0]}")
    print(f"FIGURE: the job kept its {merged[0]['steps_kept']} steps (view epoch {job_epoch}); the stray's "
          f"{merged[0]['steps_discarded']} (view epoch {stray_epoch}) were discarded; no job step went back")
    groups, _ = final_groups(job.records())
    problems = digest_problems({s: g for s, g in groups.items() if g[0]["world"] == 5})
    assert not problems, "inconsistent steps after the merge:\n  " + "\n  ".join(problems[:10])


def main():
    return main_of(globals())


if __name__ == "__main__":
    sys.exit(main())
