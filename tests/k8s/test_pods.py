"""The Kubernetes path end to end, without Kubernetes: pods as network namespaces (pods.py) running the
example worker with the Deployment's environment, scaled the way `kubectl scale deployment/ftl-worker`
scales them. One run, stage after stage:
  1. 3 pods start: they find each other through the Service name and train together;
  2. scale to 5: the two new pods arrive in ONE view change, get the job's state, and training goes on;
  3. scale to 2: the three removed pods run preStop (`ftlctl leave`), get SIGTERM and exit 0; the others
     hear `left`, never `dead` (no failure-detection wait) and train on as 2;
  4. scale to 3, then cut one pod's link: the other two (a majority) train on, the cut pod waits for
     quorum (not ready); when the link returns it rejoins, gets the state and trains again. No death
     on either side is declared by refusal (proof of death is for crashes, not partitions).
At every stage `ftlctl status` inside every pod shows the expected world size and `ftlctl ready` answers
as the readiness probe should; after every step the parameter digests are equal on every rank.
    python3 test_pods.py --train PATH --ctl PATH [--limit S]
Exit 77 (ctest SKIP) when pods cannot run here (not root, no network namespaces). FTL_TEST_SEED=<seed>
replays the random choices (pod names, which pod is cut)."""

import argparse
import os
import random
import signal
import sys
import time

from pods import PodJob, wait_world, why_pods_cannot_run
from workers import digest_problems, final_groups, is_step, partly_reported

SKIP = 77
# The test's job: endless, with small slow steps (FTL_STEP_SLEEP_MS stands in for a model's compute) so
# a stage takes seconds. Everything else is the Deployment's (deploy/k8s/worker.env, deployment.yaml).
JOB = dict(FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000, FTL_STEP_SLEEP_MS=20)


def latest_epoch(job):
    return max((r["epoch"] for r in job.records() if is_step(r)), default=0)


def steps_in_new_views(pods, after_epoch, world=None):
    """Step lines of these pods in views newer than after_epoch (of `world` members, if given)."""
    return [r for p in pods for r in p.steps() if r["epoch"] > after_epoch and world in (None, r["world"])]


def check_digests(job, stage):
    """After every step so far, every rank of the step's view reports the same digest; no step missing."""
    groups, superseded = final_groups(job.records())
    problems = digest_problems(groups)
    assert not problems, f"{stage}: inconsistent steps:\n  " + "\n  ".join(problems[:10])
    missing = sorted(set(range(max(groups) + 1)) - set(groups))
    assert not missing, f"{stage}: steps never completed: {missing[:20]}"
    print(f"  {len(groups)} steps so far, digests equal on every rank after every step (steps run again in a "
          f"later view: {superseded}; completed on only some ranks: {len(partly_reported(groups))})")


def check_ready(job, ready, not_ready=()):
    """`ftlctl ready` (the readiness probe) in each pod: exit 0 in `ready`, 1 in `not_ready`."""
    for pod in list(ready) + list(not_ready):
        r = job.ctl(pod, "ready")
        expected = 0 if pod in ready else 1
        assert r.returncode == expected, (f"ftlctl ready in {pod.name} exited {r.returncode}, expected {expected}: "
                                          f"{r.stdout.strip()} {r.stderr.strip()}")
    print(f"  readiness: {len(ready)} ready" + (f", {len(not_ready)} not ready" if not_ready else ""))


def show_status(job, pod):
    s = job.status(pod)
    v = s["view"]
    print(f"  ftlctl status in {pod.name}: view {v['epoch']}, {v['phase']}, world_size {v['world_size']}, "
          f"members {s['counts']}")


def stage_start(job):
    print("stage 1: 3 pods start")
    pods = job.scale_up(3)
    took = job.wait("a step with all 3 pods", lambda: any(r["world"] == 3 for p in pods for r in p.steps()), 60)
    print(f"  the first step with all 3 completed {took:.2f} s after the pods started")
    wait_world(job, pods, 3, 30)
    show_status(job, pods[0])
    check_ready(job, pods)
    check_digests(job, "3 pods")


def stage_scale_up(job, n, world):
    """n new pods in one go: one view change to `world`, state transferred. Returns scale-up latencies."""
    before, at_step = latest_epoch(job), job.progress()
    new = job.scale_up(n)
    print(f"scale to {world}: {n} new pod(s) after step {at_step}")
    job.wait("a step by every new pod", lambda: all(p.steps() for p in new), 60)
    wait_world(job, job.pods(), world, 30)
    views = sorted({(r["epoch"], r["world"]) for r in steps_in_new_views(job.pods(), before)})
    assert views[0][1] == world, f"the pods joined in several view changes: (epoch, world) {views}"
    latencies = []
    for p in new:
        first = p.steps()[0]
        assert first["step"] >= at_step, f"{p.name} ran step {first['step']}: it did not get the job's state"
        latencies.append(first["t"] - p.started_at)
        print(f"  {p.name}: first step {first['step']} (view {first['epoch']}, rank {first['rank']} of "
              f"{first['world']}) {latencies[-1]:.2f} s after the pod started")
    print(f"  one view change: views since (epoch, world) {views}")
    show_status(job, new[-1])
    check_ready(job, job.pods())
    check_digests(job, f"scale to {world}")
    return latencies


def stage_scale_down(job, world):
    """Deletes the newest pods (as a ReplicaSet does) down to `world`. Returns the scale-down latency."""
    pods = job.pods()
    leaving, staying = pods[world:], pods[:world]
    before, at_step, t0 = latest_epoch(job), job.progress(), time.time()
    print(f"scale to {world}: deleting {[p.name for p in leaving]} after step {at_step}")
    hooks = job.terminate(leaving)
    for p in leaving:
        hook = hooks[p.name]
        assert hook.returncode == 0, f"preStop `ftlctl leave` in {p.name} exited {hook.returncode}: {hook.stderr}"
        assert p.proc.returncode == 0, f"{p.name} exited {p.proc.returncode} after preStop and SIGTERM"
    by_prestop = [p.name for p in leaving if "(ftlctl leave)" in p.log_text()]
    job.wait(f"a step with the {world} left", lambda: steps_in_new_views(staying, before, world), 30)
    first = min(steps_in_new_views(staying, before, world), key=lambda r: r["t"])
    latency = first["t"] - t0
    print(f"  preStop and SIGTERM: every deleted pod exited 0 ({len(by_prestop)} of {len(leaving)} had left "
          f"through preStop before SIGTERM came); the first step without them (step "
          f"{first['step']}, view {first['epoch']}) completed {latency:.2f} s after their deletion began")
    for s in staying:
        for p in leaving:
            assert s.heard("left", p.name), f"{s.name} did not hear {p.name} leave"
            assert not s.heard("dead", p.name), f"{s.name} declared {p.name} dead: it waited for failure detection"
    print("  the remaining pods heard every deleted pod leave (`left`), none declared dead")
    wait_world(job, staying, world, 30)
    show_status(job, staying[0])
    check_ready(job, staying)
    check_digests(job, f"scale to {world}")
    return latency


def stage_partition(job, rng):
    """Cuts one pod's link: the majority trains on, the cut pod waits for quorum, then rejoins."""
    pods = job.pods()
    cut = rng.choice(pods)
    rest = [p for p in pods if p is not cut]
    before, t0 = latest_epoch(job), time.time()
    print(f"partition: cutting {cut.name}'s link after step {job.progress()}")
    job.cut(cut)
    job.wait("the others train without the cut pod", lambda: steps_in_new_views(rest, before, len(rest)), 60)
    print(f"  the other {len(rest)} train on without it after {time.time() - t0:.2f} s")
    wait_world(job, rest, len(rest), 30)
    wait_world(job, [cut], len(pods), 30, phase="waiting for quorum")
    show_status(job, cut)
    check_ready(job, rest, not_ready=[cut])
    minority_epoch = latest_epoch(job)
    resumed_at = job.progress()
    job.wait_step(resumed_at + 20, 30)
    assert not steps_in_new_views([cut], before), f"{cut.name} trained on its own while cut off"
    print(f"  the cut pod paused (no step while cut off); the others went on to step {job.progress()}")
    job.heal(cut)
    t1 = time.time()
    job.wait("the cut pod trains again", lambda: steps_in_new_views([cut], minority_epoch), 60)
    first = steps_in_new_views([cut], minority_epoch)[0]
    print(f"  link restored: {cut.name} rejoined and completed step {first['step']} (view {first['epoch']}, "
          f"world {first['world']}) {first['t'] - t1:.2f} s later")
    wait_world(job, pods, len(pods), 30)
    show_status(job, cut)
    check_ready(job, pods)
    check_digests(job, "after the partition healed")
    # Proof of death (issue 18): a cut link answers nothing (or "unreachable"), never a refusal, so no
    # death during the partition, on either side, took the fast path.
    refused = [line for p in pods for line in p.log_text().splitlines()
               if 'msg="member dead"' in line and 'reason="refused by its own address"' in line]
    assert not refused, "a partition took the refusal path:\n  " + "\n  ".join(refused[:5])
    by_suspicion = sum('reason="suspicion timed out"' in p.log_text() for p in pods)
    print(f"  no death during the partition was declared by refusal ({by_suspicion} pod(s) timed a suspicion out)")


def stop_all(job):
    """Scale to 0: every pod runs preStop and exits 0. The digests are checked up to here: steps taken while
    every member is leaving belong to no job (each leaver may briefly see itself as the last one)."""
    check_digests(job, "the end")
    pods = job.pods()
    hooks = job.terminate(pods)
    bad = {p.name: (hooks[p.name].returncode, p.proc.returncode) for p in pods
           if hooks[p.name].returncode != 0 or p.proc.returncode != 0}
    assert not bad, f"pods that did not stop cleanly (preStop, exit): {bad}"
    print("scale to 0: every pod left through preStop and exited 0")


def run_scenario(job, rng):
    stage_start(job)
    up = stage_scale_up(job, 2, 5)
    down = stage_scale_down(job, 2)
    up += stage_scale_up(job, 1, 3)
    stage_partition(job, rng)
    stop_all(job)
    print(f"scale-up latency (pod start -> its first step): {', '.join(f'{x:.2f}' for x in up)} s; "
          f"scale-down latency (deletion -> first step without): {down:.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--limit", type=int, default=240, help="hard time limit in seconds")
    args = ap.parse_args()
    why = why_pods_cannot_run()
    if why:
        print(f"SKIP: the pod test {why}")
        return SKIP
    seed = int(os.environ.get("FTL_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"seed {seed} (FTL_TEST_SEED={seed} replays it)")

    def out_of_time(signum, frame):
        raise TimeoutError(f"the pod test ran past its limit of {args.limit} s")
    signal.signal(signal.SIGALRM, out_of_time)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
    signal.alarm(args.limit)
    job = PodJob(args.train, args.ctl, rng=rng, **JOB)
    print(f"pods' logs and JSON lines in {job.dir} (removed if the test passes)")
    return job.run_test(lambda: run_scenario(job, rng))

if __name__ == "__main__":
    sys.exit(main())
