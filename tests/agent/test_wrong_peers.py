"""A wrong or stray peer must never cost the job its work (issue 24, items 1 and 2): real
ftl-train-example workers on loopback. One scenario per run, under test_training.py's harness (hard limit,
logs on failure):
    python3 test_wrong_peers.py --train PATH --ctl PATH [--limit S] SCENARIO"""

import sys
import time

from test_training import JOB, main_of, new_job, start_job


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


def main():
    return main_of(globals())


if __name__ == "__main__":
    sys.exit(main())
