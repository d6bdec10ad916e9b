"""bench/rescale/hsdp.py: what a death and a rejoin cost an HSDP job on ftl (issue 40's targets).

Runs tests/python/hsdp_elastic.py (3 replicas x 2 shards, FSDP2 on ftl.torch.hsdp_mesh, real processes on
this machine: kill -9 of one shard mid-step, its restart, its replica rejoining) with shards of --shard-mb
of parameters each, and reads the workers' step reports (each one's wall time at the end of each step):
- kill_to_step_s: from the kill to the moment every surviving replica's worker has finished its first step
  of the view without the dead replica (the step that was running, run again);
- join_pause_s: the running replicas' longest pause at the rejoin: from the end of their last step in the
  view of four to the end of their first step in the view of six (which includes sending every shard and
  its Adam state to the two workers of the returning replica), less the 0.1 s the test waits between
  steps while its replica is out;
- step_s: the median time of one step of the view of four (for scale: both figures above include a step).
One JSON line per run and one with the medians. Usage (FTL_LIBRARY and PYTHONPATH as for the Python tests):
  python3 bench/rescale/hsdp.py --runs 3 --shard-mb 100
With --one-replica, FSDP without replicas (hsdp_elastic.py --one-replica: one replica of 3 shards keeping
copies of each other): kill_to_step_s is the kill to the end of the job's next step, which waits for the
killed shard's restart (a Python process importing torch) and its state from the copy; with --spare as well,
its replacement waits from the start as a hot spare of the same index, and no process starts after the kill.
  python3 bench/rescale/hsdp.py --runs 3 --shard-mb 10 --one-replica [--spare]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python", "hsdp_elastic.py")
WAIT_BETWEEN_STEPS_S = 0.1  # hsdp_elastic.py's pace while a replica is out


def one_run(shard_mb, one_replica, spare):
    shards = 3 if one_replica else 2
    hidden = max(16, int(shard_mb * 2**20 * shards / 4 / 10))  # Linear(8, h) + Linear(h, 1): 10 h floats
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, HSDP_HIDDEN=str(hidden))
        env.setdefault("OMP_NUM_THREADS", "1")  # as ctest runs it: six workers of 2 threads each on 2 cores crawl
        r = subprocess.run([sys.executable, TEST, "--reports", out.name] + ["--one-replica"] * one_replica
                           + ["--spare"] * spare, env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            sys.exit(f"hsdp_elastic.py failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        data = json.load(open(out.name))
    reports, killed = data["reports"], data["killed_at"]
    if one_replica:  # nothing trains until the killed shard is back: the kill to the job's next step
        after = [r for r in reports if r["t"] > killed]
        first = min(r["step"] for r in after)
        steps = {}
        for r in reports:
            if r["worker"] == "r0s0":
                steps[r["step"]] = r["t"]
        gaps = [steps[s + 1] - steps[s] for s in steps if s + 1 in steps and steps[s] < killed and s + 1 < first]
        return {"shard_mb": round(10 * hidden * 4 / shards / 2**20, 1),
                "kill_to_step_s": round(max(r["t"] for r in after if r["step"] == first) - killed, 4),
                "step_s": round(statistics.median(gaps), 4) if gaps else None}
    survivors = {r["worker"] for r in reports if r["world"] == 4}
    first4 = [min(r["t"] for r in reports if r["worker"] == w and r["world"] == 4 and r["t"] > killed)
              for w in survivors]
    pauses, steps4 = [], []
    for w in survivors:
        mine = sorted((r["t"], r["world"]) for r in reports if r["worker"] == w and r["t"] > killed)
        for (t0, w0), (t1, w1) in zip(mine, mine[1:]):
            if w0 == 4 and w1 == 6:
                pauses.append(t1 - t0 - WAIT_BETWEEN_STEPS_S)
            if w0 == 4 and w1 == 4:
                steps4.append(t1 - t0 - WAIT_BETWEEN_STEPS_S)
    return {"shard_mb": round(10 * hidden * 4 / 2 / 2**20, 1), "kill_to_step_s": round(max(first4) - killed, 4),
            "join_pause_s": round(max(pauses), 4) if pauses else None,
            "step_s": round(statistics.median(steps4), 4) if steps4 else None}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--shard-mb", type=float, default=100.0, help="parameters per shard, in MiB (float32)")
    p.add_argument("--one-replica", action="store_true",
                   help="FSDP without replicas: one replica of 3 shards with copy_shards=True; kill_to_step_s is "
                        "then the kill to the job's next step, the killed shard's restart included")
    p.add_argument("--spare", action="store_true",
                   help="with --one-replica: the killed shard's replacement waits as a hot spare from the start")
    a = p.parse_args()
    runs = []
    name = ("fsdp_1x3_copies" + "_spare" * a.spare) if a.one_replica else "hsdp_3x2"
    for i in range(a.runs):
        runs.append(one_run(a.shard_mb, a.one_replica, a.spare))
        print(json.dumps({"bench": name, "run": i, **runs[-1]}), flush=True)
    if a.one_replica:
        print(json.dumps({"bench": name, "shard_mb": runs[0]["shard_mb"], "runs": a.runs,
                          "kill_to_step_s_median": statistics.median(r["kill_to_step_s"] for r in runs)}))
        return
    print(json.dumps({"bench": "hsdp_3x2", "shard_mb": runs[0]["shard_mb"], "runs": a.runs,
                      "kill_to_step_s_median": statistics.median(r["kill_to_step_s"] for r in runs),
                      "join_pause_s_median": statistics.median(r["join_pause_s"] for r in runs
                                                               if r["join_pause_s"] is not None),
                      "step_s_median": statistics.median(r["step_s"] for r in runs if r["step_s"] is not None)}))


if __name__ == "__main__":
    main()
