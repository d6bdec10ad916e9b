"""Multi-process training tests: real ftl-train-example workers on loopback, real kill -9, SIGTERM,
SIGSTOP and joins, judged from the workers' JSON lines (see workers.py for how a step's outcome is read).
One scenario per run, each with a hard time limit:
    python3 test_training.py --train PATH --ctl PATH [--limit S] SCENARIO
Random choices (which worker, at which step) print their seed; FTL_TEST_SEED=<seed> replays them."""

import argparse
import os
import random
import shutil
import signal
import sys
import time

from workers import (TrainingJob, digest_problems, final_groups, is_step, loss_by_samples, partly_reported,
                     used_indices)

# Every test job: small steps slowed down a little (FTL_STEP_SLEEP_MS stands in for compute) so that a
# kill lands mid-training and a run takes seconds; collective deadline well under the test's limit.
JOB = dict(FTL_BATCH=16, FTL_DATA_SIZE=20000, FTL_STEP_SLEEP_MS=10, FTL_COLLECTIVE_TIMEOUT_MS=10000,
           FTL_LOG_LEVEL="info")

rng = random.Random()
jobs = []  # every job a scenario started: main() closes them all, and shows their logs on failure


def new_job(train, ctl, **env):
    job = TrainingJob(train, ctl, **env)
    jobs.append(job)
    return job


def start_job(job, n, env_of=lambda name: {}):
    """Starts n workers and waits until they train together (the first views may be smaller while the
    workers are still finding each other). env_of(name) gives a worker's own extra settings."""
    for i in range(n):
        job.add(f"w{i}", **env_of(f"w{i}"))
    took = job.wait_step(0, 10 + job.start_timeout)
    together = job.wait(f"a step with all {n} workers", lambda: any(
        r["world"] == n for w in job.workers() for r in w.steps()), 10 + job.start_timeout)
    print(f"{n} workers started; the first step completed after {took:.2f} s, the first with all {n} "
          f"{together:.2f} s later")


def finish(job, among=None, timeout=None):
    """Waits for the workers to finish training; every one must exit 0 and report the same final digest.
    The default bound is 60 s plus twice the step sleep of every step still to run (the PyTorch tests
    sleep 80 ms a step: 600 steps left are 48 s of sleep alone)."""
    among = among or [w for w in job.workers() if w.is_running()]
    if timeout is None:
        steps_left = max(0, int(job.job_env.get("FTL_STEPS", 0)) - job.progress())
        timeout = 60 + 2 * steps_left * int(job.job_env.get("FTL_STEP_SLEEP_MS", 0)) / 1000
    codes = job.wait_exit(timeout, among)
    assert all(c == 0 for c in codes.values()), f"exit codes {codes}"
    finals = {w.name: w.final() for w in among}
    assert all(finals.values()), f"a worker did not report its final line: {finals}"
    # a sharded model's digest is of its shard: one digest per shard index (what its final line names)
    shard = {n: f.get("shard") for n, f in finals.items()}
    for index in set(shard.values()):
        digests = {n: f["digest"] for n, f in finals.items() if shard[n] == index}
        assert len(set(digests.values())) == 1, f"final digests differ: {digests}"
    f = next(iter(finals.values()))
    print(f"finished: {f['steps']} steps, test accuracy {f['test_accuracy']:.3f}, digest {f['digest']} on "
          f"{len(finals)} workers")
    return f


def check_every_step(job, steps):
    """After every step, every rank of the view that completed it reports the same digest; no step is
    missing. Returns the final groups."""
    groups, superseded = final_groups(job.records())
    problems = digest_problems(groups)
    assert not problems, "inconsistent steps:\n  " + "\n  ".join(problems[:10])
    missing = sorted(set(range(steps)) - set(groups))
    assert not missing, f"steps never completed: {missing[:20]}"
    views = sorted({(g[0]["epoch"], g[0]["world"]) for g in groups.values()})
    print(f"{len(groups)} steps, digests equal on every rank after every step; views (epoch, world): {views}; "
          f"steps superseded by a later view: {superseded}; completed on only some ranks: "
          f"{partly_reported(groups) or 'none'}")
    return groups


def first_step_of(job, name, after_epoch=0):
    lines = [r for r in job.agents[name].steps() if r["epoch"] > after_epoch]
    return lines[0] if lines else None


def worlds_after(groups, step):
    return {g[0]["world"] for s, g in groups.items() if s > step}


def log_says(job, observer, event, subject):
    return f'msg="member {event}" member={subject} ' in job.agents[observer].log_text()


def scenario_kill9(train, ctl):
    """kill -9 of a random worker at a random step: the others go on, digests equal after every step."""
    steps = 250
    job = new_job(train, ctl, FTL_STEPS=steps, **JOB)
    start_job(job, 4)
    victim, at = f"w{rng.randrange(4)}", rng.randint(20, 120)
    job.wait_step(at, 30)
    job.kill(victim)
    killed_at = job.progress()
    print(f"kill -9 {victim} after step {killed_at}")
    finish(job, [w for w in job.workers() if w.name != victim])
    groups = check_every_step(job, steps)
    assert 3 in worlds_after(groups, killed_at), "no step ran with the 3 survivors"


def scenario_join(train, ctl):
    """A worker joins mid-training: it receives the state, and its digest equals the others' from its
    first step on. The running workers' step in flight is not aborted by the join's view (it keeps every
    member of theirs): it finishes, and they move to the new view at their next step."""
    steps = 250
    job = new_job(train, ctl, FTL_STEPS=steps, **JOB)
    start_job(job, 3)
    job.wait_step(rng.randint(40, 100), 30)
    job.add("w3")
    joined = job.progress()
    print(f"w3 started after step {joined}")
    job.wait("w3 completes a step", lambda: job.agents["w3"].steps(), 30)
    first = job.agents["w3"].steps()[0]
    print(f"w3's first step: {first['step']} (epoch {first['epoch']}, rank {first['rank']} of "
          f"{first['world']}), {first['t'] - job.agents['w3'].started_at:.2f} s after it started")
    assert first["step"] >= joined, "w3 ran a step the job had already done"
    finish(job)
    groups = check_every_step(job, steps)
    mine = [r for r in job.agents["w3"].steps()]
    assert all(r in groups[r["step"]] for r in mine), "w3 reported a step outside the job's final view"
    assert groups[first["step"]][0]["world"] == 4
    for name in ("w0", "w1", "w2"):
        log = job.agents[name].log_text()
        log = log[:log.find('msg="member left"')] if 'msg="member left"' in log else log  # the job's end aborts
        assert "the step in flight finishes in it" in log, f"{name} did not keep its step in flight at the join"
        assert "aborting the collectives in progress: a new view" not in log, f"{name} aborted a step at the join"


def scenario_joins_between_fast_steps(train, ctl):
    """Joins while a step takes about a millisecond. A join's view lets the running workers' step in flight
    finish, so a worker that moves to the new view at its next step may leave a peer still inside the old
    view's collective: that peer must lose it at once and run the step again in the new view, never wait
    for the collective timeout (10 s here). Every step stays consistent, and no worker stops for long."""
    steps = 8000
    job = new_job(train, ctl, FTL_STEPS=steps, **{**JOB, "FTL_STEP_SLEEP_MS": 1})
    start_job(job, 3)
    for j in range(3):
        job.add(f"j{j}")
        job.wait(f"j{j} trains", lambda: bool(job.agents[f"j{j}"].steps()), 30)
    finish(job)
    check_every_step(job, steps)
    gaps = {w.name: max(b["t"] - a["t"] for a, b in zip(w.steps(), w.steps()[1:])) for w in job.workers()}
    print("longest gap between two steps, by worker: " + ", ".join(f"{n} {g:.3f} s" for n, g in gaps.items()))
    assert max(gaps.values()) < 3.0, f"a worker stopped for {max(gaps.values()):.2f} s at a join"


def scenario_leave(train, ctl):
    """SIGTERM: the worker leaves gracefully, the others go on without waiting for failure detection."""
    steps = 250
    job = new_job(train, ctl, FTL_STEPS=steps, **JOB)
    start_job(job, 4)
    timing = job.status_json()["timing"]
    job.wait_step(rng.randint(40, 100), 30)
    left_at, t0 = job.progress(), time.time()
    job.kill("w2", signal.SIGTERM)
    assert job.wait_exit(15, [job.agents["w2"]]) == {"w2": 0}, "w2 did not exit 0 after SIGTERM"
    others = [w for w in job.workers() if w.name != "w2"]
    job.wait("a step with the 3 others", lambda: any(r["world"] == 3 for w in others for r in w.steps()), 30)
    first = min((r for w in others for r in w.steps() if r["world"] == 3), key=lambda r: r["t"])
    print(f"SIGTERM to w2 after step {left_at}: the first step without it (step {first['step']}) completed "
          f"{first['t'] - t0:.2f} s later (failure detection bound of the profile: "
          f"{timing['detection_bound_ms'] / 1000:.2f} s)")
    finish(job, others)
    check_every_step(job, steps)
    for w in others:
        assert log_says(job, w.name, "left", "w2"), f"{w.name} did not hear w2 leave"
        assert not log_says(job, w.name, "dead", "w2"), f"{w.name} declared w2 dead: it waited for detection"


def scenario_sigstop(train, ctl, steps=700):
    """SIGSTOP longer than the suspicion timeout (until the others declared it dead): the job goes on
    without the stopped worker; after SIGCONT it rejoins cleanly: a later view, the job's state, equal
    digests. The steps are the C example's (10 ms each): the stop spans the detection bound, a few
    hundred of them; a program with slower steps passes fewer."""
    job = new_job(train, ctl, FTL_STEPS=steps, **JOB)
    start_job(job, 4)
    timing = job.status_json()["timing"]
    job.wait_step(rng.randint(30, 80), 30)
    victim = job.agents["w1"]
    victim.signal(signal.SIGSTOP)
    stopped_at, t0 = job.progress(), time.time()
    last_epoch = max(r["epoch"] for r in job.records() if "epoch" in r)
    others = [w for w in job.workers() if w is not victim]
    job.wait("the others train without w1",
             lambda: any(r["world"] == 3 and r["epoch"] > last_epoch for w in others for r in w.steps()), 30)
    print(f"SIGSTOP w1 after step {stopped_at}; the others went on with 3 after {time.time() - t0:.2f} s "
          f"(suspicion max {timing['suspicion_max_ms']} ms, detection bound {timing['detection_bound_ms']} ms)")
    # Stay stopped past the detection bound, so that w1 is dead to the others when it wakes up.
    time.sleep(max(0.0, timing["detection_bound_ms"] / 1000 + 0.5 - (time.time() - t0)))
    for w in others:
        assert log_says(job, w.name, "dead", "w1"), f"{w.name} did not declare the stopped w1 dead"
    victim.signal(signal.SIGCONT)
    resumed_at, t1 = job.progress(), time.time()
    job.wait("w1 trains again in a later view",
             lambda: first_step_of(job, "w1", after_epoch=last_epoch) is not None, 40)
    back = first_step_of(job, "w1", after_epoch=last_epoch)
    print(f"SIGCONT after step {resumed_at}: w1 trained again at step {back['step']} (epoch {back['epoch']}, "
          f"world {back['world']}) {back['t'] - t1:.2f} s later")
    finish(job)
    groups = check_every_step(job, steps)
    assert back in groups[back["step"]], "w1's step after resuming is not the job's"


def scenario_exactly_once(train, ctl, size=6000, batch=16, steps=170):
    """Within one data epoch with a kill -9 and a join, every sample index is used exactly once.
    (At 3 to 4 ranks of 16, one epoch of 6000 takes 94 to 125 steps; another program passes its own.)"""
    job = new_job(train, ctl, FTL_STEPS=steps,
                  **{**JOB, "FTL_DATA_SIZE": size, "FTL_BATCH": batch, "FTL_LOG_INDICES": 1})
    start_job(job, 4)
    victim = f"w{rng.randrange(4)}"
    job.wait_step(rng.randint(10, 30), 30)
    job.kill(victim)
    killed_at = job.progress()
    survivors = [w for w in job.workers() if w.name != victim]
    job.wait("the survivors train with 3",
             lambda: any(r["world"] == 3 for w in survivors for r in w.steps()), 30)
    job.add("w4")
    joined_at = job.progress()
    print(f"kill -9 {victim} after step {killed_at}; w4 started after step {joined_at}")
    finish(job, survivors + [job.agents["w4"]])
    groups = check_every_step(job, steps)
    used = used_indices(job.records())
    epoch_of = {r["step"]: r["data_epoch"] for r in job.records() if "indices" in r}
    assert epoch_of[killed_at + 1] == 0 and epoch_of[job.agents["w4"].steps()[0]["step"]] == 0, \
        "the kill and the join did not both fall in data epoch 0"
    counts = used[0]
    twice = sorted(i for i, c in counts.items() if c > 1)
    missing = sorted(set(range(size)) - set(counts))
    outside = sorted(i for i in counts if not 0 <= i < size)
    assert not twice and not missing and not outside, \
        f"data epoch 0: {len(twice)} used twice {twice[:10]}, {len(missing)} never {missing[:10]}, " \
        f"{len(outside)} out of range"
    later = {e: c for e, c in used.items() if e > 0}
    assert all(n == 1 for c in later.values() for n in c.values()), "a later epoch used an index twice"
    worlds = sorted({g[0]["world"] for s, g in groups.items() if epoch_of.get(s) == 0})
    print(f"data epoch 0: all {size} indices used exactly once over world sizes {worlds}; epoch 1 so far: "
          f"{sum(len(c) for c in later.values())} distinct indices, none twice")


def run_for_curve(train, ctl, steps, disrupt):
    # FTL_EXPECTED_WORKERS: both runs start as one view of 4 (on a loaded machine a worker that starts
    # late would otherwise leave the first steps to a smaller world, and the first bins would differ).
    job = new_job(train, ctl, FTL_STEPS=steps, FTL_EXPECTED_WORKERS=4,
                  **{**JOB, "FTL_DATA_SIZE": 40000, "FTL_BATCH": 32})
    start_job(job, 4)
    among = disrupt(job)
    final = finish(job, among)
    return check_every_step(job, steps), final


def binned(curve, width):
    bins = {}
    for seen, loss in curve:
        bins.setdefault(int(seen // width), []).append(loss)
    return {b: sum(v) / len(v) for b, v in bins.items() if len(v) >= 5}


def scenario_loss_curve(train, ctl):
    """The loss curve of a run with a kill -9 and a join follows the curve of an undisturbed run.

    Both runs use the same data, seed, per-rank batch and sample order, so until the first view change
    they are the same computation. After the kill the global batch is 3 x 32 instead of 4 x 32: the same
    samples are grouped into different steps, and each sample gets 4/3 as many updates of the same
    learning rate; the curves then differ, though only a little. They are compared at matching sample
    counts (not steps), averaged over bins of 6400 samples (50 steps of 4 x 32): the per-step batch loss
    has a standard deviation of about 0.1 (per-sample loss ~1, batch ~100), so a bin's mean carries noise of
    ~0.015, ~1.5% of the loss. In a single-process simulation of this schedule (kill at 80, join at 160,
    and kill at 30, join at 200) the binned curves differed by at most 4%. The tolerance is 10% per bin,
    about twice that plus the noise: a broken rescale (lost or repeated updates, a joiner starting from
    zeros, a step applied twice) moves the loss by far more. Final test accuracy: within 0.03."""
    steps = 300

    def undisturbed(job):
        return None

    def kill_and_join(job):
        job.wait_step(80, 30)
        job.kill("w1")
        job.wait_step(160, 40)
        job.add("w4")
        return [w for w in job.workers() if w.name != "w1"]

    ref_groups, ref_final = run_for_curve(train, ctl, steps, undisturbed)
    groups, final = run_for_curve(train, ctl, steps, kill_and_join)
    ref_curve, curve = loss_by_samples(ref_groups), loss_by_samples(groups)
    ref_bins, bins = binned(ref_curve, 6400), binned(curve, 6400)
    worst = 0.0
    for b in sorted(set(ref_bins) & set(bins)):
        rel = abs(bins[b] - ref_bins[b]) / ref_bins[b]
        worst = max(worst, rel)
        print(f"  samples {b * 6400:6d}+: loss {ref_bins[b]:.4f} undisturbed, {bins[b]:.4f} with failures "
              f"({rel * 100:.1f}%)")
        assert rel < 0.10, f"loss at {b * 6400} samples differs by {rel * 100:.1f}%"
    same_start = ref_groups[0][0]["world"] == groups[0][0]["world"] == 4
    if same_start:
        first_change = min(s for s, g in groups.items() if g[0]["world"] != 4)
        identical = all(ref_groups[s][0]["digest"] == groups[s][0]["digest"] for s in range(first_change))
        print(f"both runs started with 4 workers: steps before the first view change identical: {identical}")
        assert identical, "same data, seed and world size gave different parameters"
    gap = abs(final["test_accuracy"] - ref_final["test_accuracy"])
    print(f"largest bin difference {worst * 100:.1f}%; test accuracy {ref_final['test_accuracy']:.3f} "
          f"undisturbed, {final['test_accuracy']:.3f} with failures")
    assert gap < 0.03, f"test accuracy differs by {gap:.3f}"
    assert bins[max(bins)] < 0.75 * bins[min(bins)], "the loss did not go down"


def scenario_quorum_loss_waits_and_says_what_is_missing(train, ctl):
    """2 of 4 lost without a proof of their deaths (issue 17, item 2): stopped with SIGSTOP, as a host that
    hangs or drops off the network looks (their ports still accept and no witness sees a death, so only
    suspicion declares them dead; a kill -9 here would be proven and cost no quorum, docs/concepts/quorum.md).
    The survivors lack a majority of the view, so they wait, past the 37 s after which one used to exit with
    a connect error, and say which members are missing; `ftlctl status` says how to resolve it; `ftlctl
    quorum reset` on one survivor lets both go on as a view of 2."""
    steps = 400
    job = new_job(train, ctl, FTL_STEPS=steps, FTL_MAX_RETRIES=3, **JOB)
    start_job(job, 4)
    job.wait_step(rng.randint(30, 60), 30)
    victims = rng.sample(["w1", "w2", "w3"], 2)  # w0 (the coordinator) survives: the reset goes to the other
    survivors = [w for w in job.workers() if w.name not in victims]
    for v in victims:  # both at once: neither is left running to see the other go
        job.kill(v, signal.SIGSTOP)
    killed_at, t0 = job.progress(), time.time()
    print(f"SIGSTOP {victims} after step {killed_at}; waiting 45 s")
    time.sleep(45)
    codes = job.exit_codes(survivors)
    assert all(c is None for c in codes.values()), f"a survivor exited while waiting for quorum: {codes}"
    assert job.progress() <= killed_at + 1, f"the survivors trained without quorum (step {job.progress()})"
    for w in survivors:
        s = job.status(w)
        view = s["view"]
        assert view["phase"] == "waiting for quorum", f"{w.name}: phase {view['phase']}"
        for v in victims:
            assert v in view.get("missing", ""), f"{w.name}'s status does not name {v} as missing: {view}"
        assert s["execute"]["state"] == "waiting_for_view", f"{w.name}: ftl_execute is {s['execute']}"
        text = job.ctl(w, "status").stdout
        assert "quorum reset" in text and "missing" in text, f"{w.name}: ftlctl status says nothing to do:\n{text}"
        assert "execute      waiting_for_view" in text, f"{w.name}: ftlctl status does not show ftl_execute's state:\n{text}"
        assert "waiting for quorum: members gone from view" in w.log_text(), f"{w.name} did not log what is missing"
    print(f"after {time.time() - t0:.0f} s both survivors wait; status: missing {view['missing']}")
    # On the survivor that is not the coordinator: the waiver reaches the coordinator in its readies.
    reset = job.ctl(survivors[1], "quorum", "reset")
    assert reset.returncode == 0, f"ftlctl quorum reset failed: {reset.stdout} {reset.stderr}"
    print(f"ftlctl quorum reset on {survivors[1].name}: {reset.stdout.strip()}")
    job.wait("the survivors train as 2", lambda: any(r["world"] == 2 for w in survivors for r in w.steps()), 30)
    again = job.ctl(survivors[0], "quorum", "reset")
    assert again.returncode != 0 and "not waiting for quorum" in again.stderr, \
        f"a reset outside a quorum loss was not refused: {again.returncode} {again.stderr}"
    finish(job, survivors)
    groups = check_every_step(job, steps)
    assert 2 in worlds_after(groups, killed_at), "no step ran with the 2 survivors after the reset"


def scenario_replica_that_loses_a_shard_waits_whole(train, ctl):
    """Replicas (FTL_REPLICA*, issue 40): 3 replicas of 2 workers train as one view laid out replica by
    replica. kill -9 of one shard takes its replica out: the other two replicas train on as ranks 0-3 with
    their indices kept, its partner waits as a spare and runs no step; the shard restarted makes the replica
    whole again and it rejoins as ranks 4-5. Digests are equal after every step throughout."""
    steps = 600
    job = new_job(train, ctl, FTL_STEPS=steps, **JOB)
    replica = {f"w{i}": (f"host{i // 2}", i % 2) for i in range(6)}
    start_job(job, 6, lambda name: dict(FTL_REPLICA=replica[name][0], FTL_REPLICA_INDEX=replica[name][1],
                                        FTL_REPLICA_SIZE=2))

    def layout(world, after=-1):
        """{rank: worker} of the steps after `after` in views of this size, checked replica by replica."""
        by_rank = {r["rank"]: r["worker"] for r in job.records()
                   if is_step(r) and r["world"] == world and r["step"] > after}
        assert sorted(by_rank) == list(range(world)), f"ranks of world {world}: {by_rank}"
        for rank, name in by_rank.items():
            host, index = replica[name]
            assert index == rank % 2 and replica[by_rank[rank - index]][0] == host, \
                f"world {world} is not laid out replica by replica (rank = replica * 2 + index): {by_rank}"
        return [replica[by_rank[r]][0] for r in range(0, world, 2)]

    job.wait("a step of every rank in the first view", lambda: len(
        {r["rank"] for r in job.records() if is_step(r) and r["world"] == 6}) == 6, 30)  # Python workers: slower
    first = layout(6)
    job.wait_step(40, 30)
    job.kill("w3")
    killed_at = job.progress()
    print(f"kill -9 w3 (host1's index 1) after step {killed_at}")
    job.wait("steps of the two whole replicas", lambda: any(
        r["world"] == 4 for w in job.workers() for r in w.steps()), 30)
    time.sleep(1)  # a while without host1 whole: its index 0 must not train meanwhile (checked at the end)
    phase = (job.status(job.agents["w2"]) or {}).get("view", {}) or {}
    assert phase.get("phase") == "hot spare", f"w2 (its replica lost a shard) is not a spare: {phase}"
    four = layout(4)
    assert four == [h for h in first if h != "host1"], f"the whole replicas did not keep their order: {four}"
    job.restart("w3")
    job.wait("host1 whole again trains", lambda: any(
        r["world"] == 6 and r["step"] > killed_at for r in job.agents["w3"].steps()), 40)
    finish(job)
    groups = check_every_step(job, steps)
    back = layout(6, after=killed_at)
    assert back == four + ["host1"], f"host1 did not rejoin after the replicas that stayed: {back}"
    print(f"replicas by rank: {first}, then {four} without host1's shard, then {back}")
    world2 = [r for r in job.agents["w2"].steps() if r["world"] == 4]
    assert not world2, f"w2 trained without its partner: {world2[:3]}"


def scenario_scale_max_at_run_time(train, ctl):
    """`ftlctl scale --max N` (issue 41 item 5): a job of 3 (FTL_MAX_WORKERS=3) with a spare grows to 4 when
    an operator raises the maximum on any worker, then shrinks to 2 when it is lowered (the youngest step
    down to spares); digests are equal after every step and the job finishes on every worker."""
    steps = 700
    job = new_job(train, ctl, FTL_STEPS=steps, FTL_MAX_WORKERS=3, **JOB)
    for i in range(4):
        job.add(f"w{i}")
    job.wait("a step of 3 workers", lambda: any(r["world"] == 3 for w in job.workers() for r in w.steps()), 40)
    # which worker is the spare depends on the order the processes came up in (generations): read the ranks
    three = {r["rank"]: r["worker"] for r in job.records() if is_step(r) and r["world"] == 3}
    assert sorted(three) == [0, 1, 2], f"ranks of the first view: {three}"

    def scale(name, n):
        r = job.ctl(job.agents[name], "scale", "--max", str(n))
        assert r.returncode == 0, f"ftlctl scale --max {n} on {name}: {r.stderr}"
        return job.progress()

    grown_at = scale(three[1], 4)  # a member that is not the coordinator: the request travels in its readies
    at = grown_at
    job.wait("a step of 4 workers", lambda: any(
        r["world"] == 4 and r["step"] > at for w in job.workers() for r in w.steps()), 30)
    spare = next(w.name for w in job.workers() if w.name not in three.values())
    status = job.status(job.agents[spare])["view"]
    assert status["max_workers"] == 4 and status["world_size"] == 4, f"after scale --max 4, on {spare}: {status}"
    at = scale(three[0], 2)
    job.wait("a step of 2 workers", lambda: any(
        r["world"] == 2 and r["step"] > at for w in job.workers() for r in w.steps()), 30)
    refused = job.ctl(job.agents[three[0]], "scale", "--max", "5000")
    assert refused.returncode == 2 and "--max takes a number of workers" in refused.stderr, refused.stderr
    print(f"scaled 3 -> 4 after step {grown_at}, then -> 2 after step {at}")
    four = {r["rank"]: r["worker"] for r in job.records() if is_step(r) and r["world"] == 4}
    kept = {four[0], four[1]}  # the view's first two: survivors keep their order, the youngest step down
    finish(job, [job.agents[n] for n in sorted(kept)])
    groups = check_every_step(job, steps)
    worlds = [g[0]["world"] for s, g in sorted(groups.items())]
    assert 4 in worlds and worlds[-1] == 2, f"worlds over the job: {sorted(set(worlds))}, last {worlds[-1]}"
    late = {r["worker"] for s, g in groups.items() if s > at + 50 for r in g}
    assert late == kept, f"steps after the scale down ran on {late}, not on the view's first two {kept}"
    # The two that stepped down hold the state of step ~{at}: when the job ends and they are all that is
    # left, they must not train it again from there (a worker the job went on without drops its state).
    stepped_down = [w for w in job.workers() if w.name not in kept]
    codes = job.wait_exit(30, stepped_down)
    assert all(c == 0 for c in codes.values()), f"the spares' exit codes: {codes}"
    for w in stepped_down:
        assert "the job's state is gone" in w.log_text(), f"{w.name} did not leave as a spare at the job's end"
        assert not [r for r in w.steps() if r["step"] > at + 50], f"{w.name} trained the job again"


def scenario_slow_rank_is_named(train, ctl):
    """A slow worker (issue 41 item 3): one of 3 takes 60 ms more a step (FTL_STEP_SLEEP_MS) than the
    others; every worker's status names it as the slow rank, with a lead (the others' wait for it) of
    the right order, and the healthy ones lead by far less; `ftlctl status` says it in a sentence."""
    job = new_job(train, ctl, FTL_STEPS=100000, **{**JOB, "FTL_STEP_SLEEP_MS": 20})
    start_job(job, 3, env_of=lambda name: {"FTL_STEP_SLEEP_MS": 80} if name == "w2" else {})

    def pace(name):
        return (job.status(job.agents[name]).get("view") or {}).get("pace") or {}

    job.wait("w2 named slow on every worker", lambda: all(
        pace(n).get("slow_name") == "w2" for n in ("w0", "w1", "w2")), 60)
    for name in ("w0", "w1", "w2"):
        p = pace(name)
        rows = {r["name"]: r for r in p["ranks"]}
        slow = rows["w2"]
        assert p["slow_rank"] == slow["rank"], f"on {name}: {p}"
        # the others wait about 60 ms a step for w2 (sleeps are at least what they ask: allow much more)
        assert 30 <= slow["lead_ms"] <= 60 * 4, f"on {name}: w2's lead {slow['lead_ms']} ms: {p}"
        for other in ("w0", "w1"):
            assert rows[other]["lead_ms"] < slow["lead_ms"] / 2, f"on {name}: {other} leads too: {p}"
    text = job.ctl(job.agents["w0"], "status").stdout
    assert "(w2) is slow" in text, text
    print("w2 named slow:", {r["name"]: round(r["lead_ms"], 1) for r in pace("w0")["ranks"]})


def scenario_slow_rank_is_replaced(train, ctl):
    """FTL_SLOW_POLICY=replace (issue 41 item 3): a job of 3 (FTL_MAX_WORKERS=3) with a spare, one worker 60 ms
    a step slower than the others: once named slow, a view benches it and the next one trains on the spare in
    its place; the slow worker waits as a spare (its status says so, every view says who is benched), the
    job's steps speed up, digests are equal after every step and the job finishes on the three."""
    steps = 600
    job = new_job(train, ctl, FTL_STEPS=steps, FTL_MAX_WORKERS=3, FTL_SLOW_POLICY="replace",
                  **{**JOB, "FTL_STEP_SLEEP_MS": 20})
    start_job(job, 3, env_of=lambda name: {"FTL_STEP_SLEEP_MS": 80} if name == "w1" else {})
    job.add("w3")  # the youngest: the spare
    job.wait("w3 trains in w1's place", lambda: any(
        r["world"] == 3 for r in job.agents["w3"].steps()), 60)
    view = job.status(job.agents["w1"])["view"]
    assert view["phase"] == "hot spare" and view["benched"] == "w1", f"w1 after the swap: {view}"
    assert "pace" not in view, f"a spare shows the verdict of a view it left: {view}"
    at = min(r["step"] for r in job.agents["w3"].steps())
    assert "is slow (FTL_SLOW_POLICY=replace): a spare takes its place" in job.agents["w0"].log_text()
    kept = ["w0", "w2", "w3"]
    finish(job, [job.agents[n] for n in kept])
    groups = check_every_step(job, steps)
    late = {r["worker"] for s, g in groups.items() if s > at for r in g}
    assert late == set(kept), f"steps after the swap (step {at}) ran on {late}"
    before = [r["t"] for r in job.agents["w0"].steps() if r["step"] < at]
    after = [r["t"] for r in job.agents["w0"].steps() if r["step"] > at + 20]
    pace_before = (before[-1] - before[len(before) // 2]) / (len(before) - 1 - len(before) // 2)
    pace_after = (after[-1] - after[0]) / (len(after) - 1)
    assert pace_after < pace_before, f"steps took {pace_before:.3f} s with w1, {pace_after:.3f} s after"
    print(f"w1 benched after step {at}: {pace_before * 1000:.0f} ms a step before, {pace_after * 1000:.0f} after")
    codes = job.wait_exit(30, [job.agents["w1"]])
    assert codes["w1"] == 0, f"w1 (the benched spare) exited {codes}"


def scenario_slow_rank_is_rebalanced(train, ctl, size=3000, batch=96, steps=240):
    """FTL_SLOW_POLICY=rebalance (issue 41 item 3): a job of 3 with a fixed global batch, one worker three
    times as slow per sample (FTL_SAMPLE_SLEEP_US): the shares move so that it takes fewer samples than the
    others (every status shows the shares, `ftlctl status` names the rank that takes the least); every data
    epoch's samples are still used exactly once, digests are equal after every step and the job finishes, in
    reproducible mode with the very bits one worker alone computes."""
    reproducible = dict(FTL_GLOBAL_BATCH=batch, FTL_REPRODUCIBLE=1, FTL_MAX_BATCH_PER_RANK=8)
    job = new_job(train, ctl, FTL_STEPS=steps, FTL_SLOW_POLICY="rebalance", **reproducible,
                  **{**JOB, "FTL_STEP_SLEEP_MS": 0, "FTL_SAMPLE_SLEEP_US": 300, "FTL_DATA_SIZE": size,
                     "FTL_LOG_INDICES": 1})
    start_job(job, 3, env_of=lambda name: {"FTL_SAMPLE_SLEEP_US": 900} if name == "w2" else {})

    def shares(name):
        rows = ((job.status(job.agents[name]).get("view") or {}).get("pace") or {}).get("ranks") or []
        return {r["name"]: r.get("share", 0) for r in rows}
    job.wait("w2's share moves below the others' on every worker", lambda: all(
        0 < shares(n).get("w2", 0) < min(shares(n)["w0"], shares(n)["w1"]) for n in ("w0", "w1", "w2")), 60)
    print("shares:", shares("w0"))
    text = job.ctl(job.agents["w0"], "status").stdout
    assert "(w2) takes the least of the global batch" in text, text
    assert "shares of the global batch follow the ranks' speed" in job.agents["w0"].log_text()
    final = finish(job)
    groups = check_every_step(job, steps)
    solo = new_job(train, ctl, FTL_STEPS=steps, **reproducible, **{**JOB, "FTL_STEP_SLEEP_MS": 0, "FTL_DATA_SIZE": size})
    start_job(solo, 1)
    alone = finish(solo, solo.workers())["digest"]
    assert alone == final["digest"], f"the rebalanced job's bits ({final['digest']}) differ from one worker's ({alone})"
    used = used_indices(job.records())
    whole = [e for e in used if (e + 1) * size <= steps * batch]  # the data epochs the job finished
    assert whole, f"no data epoch finished: {sorted(used)}"
    for e in whole:
        assert sorted(used[e]) == list(range(size)) and set(used[e].values()) == {1}, \
            f"data epoch {e}: {sum(c > 1 for c in used[e].values())} used twice, {size - len(used[e])} never"
    late = [r for r in job.records() if "indices" in r and r["step"] >= steps - 20 and groups.get(r["step"])
            and r["epoch"] == groups[r["step"]][0]["epoch"]]
    taken = {w: sum(len(r["indices"]) for r in late if r["worker"] == w) for w in ("w0", "w1", "w2")}
    assert taken["w2"] < min(taken["w0"], taken["w1"]), f"samples of the last 20 steps by worker: {taken}"
    print(f"samples of the last 20 steps: {taken}; data epochs {whole} each used exactly once")


def show_logs():
    for job in jobs:
        print(f"--- run directory {job.dir} (kept)")
        for w in job.workers():
            print(f"--- {w.name}: exit code {w.proc.poll() if w.proc else None}; last log lines:")
            print("".join(w.log_text().splitlines(True)[-6:]), end="")
            steps = w.steps()
            print(f"    last step line: {steps[-1] if steps else None}")


SKIP = 77  # ctest's SKIP_RETURN_CODE for these scenarios: a skip is reported as one, never as a pass


class Skip(Exception):
    """Raised by a scenario that cannot run here (a tool missing): run() returns SKIP with the reason."""


def run(name, scenario, train, ctl, limit):
    """Runs one scenario under a hard time limit; 0 if it passed, SKIP if it could not run here
    (test_torch_training.py runs its own)."""
    seed = int(os.environ.get("FTL_TEST_SEED", random.randrange(1 << 32)))
    rng.seed(seed)
    print(f"seed {seed} (FTL_TEST_SEED={seed} replays the random choices)")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(AssertionError("hard time limit")))
    signal.alarm(limit)
    for var in ("FTL_GOSSIP_KEY", "FTL_GOSSIP_KEY_FILE", "FTL_INSECURE", "FTL_SEEDS", "FTL_ADVERTISE",
                "FTL_MIN_WORKERS", "FTL_MAX_WORKERS", "FTL_STEPS", "FTL_LOG_INDICES"):
        os.environ.pop(var, None)
    started = time.monotonic()
    try:
        scenario(train, ctl)
    except Skip as e:
        print(f"SKIP {name}: {e}")
        return SKIP
    except Exception as e:
        print(f"FAIL {name} after {time.monotonic() - started:.1f} s: {e}")
        show_logs()
        return 1
    finally:
        for job in jobs:
            job.close()
    for job in jobs:
        shutil.rmtree(job.dir, ignore_errors=True)
    print(f"PASS {name} in {time.monotonic() - started:.1f} s")
    return 0


def main_of(scope, limit=140):
    """The command line of a scenario file: --train, --ctl, --limit and a scenario, run as scope's
    scenario_<name> (test_metrics.py and test_top.py use it too)."""
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True, help="the ftl-train-example binary")
    p.add_argument("--ctl", required=True)
    p.add_argument("--limit", type=int, default=limit, help="hard time limit in seconds")
    p.add_argument("scenario")
    args = p.parse_args()
    return run(args.scenario, scope["scenario_" + args.scenario], args.train, args.ctl, args.limit)


def main():
    return main_of(globals())


if __name__ == "__main__":
    sys.exit(main())
