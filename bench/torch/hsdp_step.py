"""HSDP step time on ftl's groups against the same HSDP on gloo's: examples/torch_char_gpt_hsdp.py (FSDP2 on
ftl.torch.hsdp_mesh, loop mode, two ftlrun replicas of 2 shards) against its twin
examples/torch_char_gpt_hsdp_torchrun.py (FSDP2 on init_device_mesh over gloo, torchrun, 4 ranks), the same
model, data, batch and steps, on this machine, in --runs interleaved rounds (a load change hits both alike).

The figure is the median time between consecutive step lines of rank 0 (the "t" each step's line carries),
after --warmup steps; the ratio line divides ftl's median of rounds by gloo's (the issue's target: at most
1.0). One JSON line per mode and round, then the ratio.

    FTL_LIBRARY=build/lib/libftl.so PYTHONPATH=python/src python bench/torch/hsdp_step.py [--steps 300] [--runs 3]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def step_times(lines, warmup):
    """Seconds between rank 0's consecutive committed steps, after the warm-up."""
    t = {}
    for line in lines:
        line = line[line.find("{"):]
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("rank") == 0 and "loss" in r and r["step"] >= warmup:
            t[r["step"]] = r["t"]
    steps = sorted(t)
    return [t[b] - t[a] for a, b in zip(steps, steps[1:]) if b == a + 1]


def run_gloo(env):
    program = os.path.join(EXAMPLES, "torch_char_gpt_hsdp_torchrun.py")
    with tempfile.TemporaryDirectory() as logs:  # each rank's stdout a file (on one pipe lines interleave)
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                               "4", "--log-dir", logs, "--redirects", "1", program],
                              env={**env, "FTL_REPLICA_SIZE": "2"}, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"hsdp_step: the torchrun twin failed:\n{done.stderr[-2000:]}")
        return [line for out in glob.glob(os.path.join(logs, "**", "stdout.log"), recursive=True)
                for line in open(out)]


def run_ftl(env):
    program = os.path.join(EXAMPLES, "torch_char_gpt_hsdp.py")
    env = {**env, "FTL_EXPECTED_WORKERS": "4"}  # the first view holds both replicas
    replicas = []
    for i in range(2):
        join = ["--join"] if i else []
        replicas.append(subprocess.Popen([sys.executable, "-m", "ftl.run", "--nproc", "2", "--replica-per-node",
                                          "--name-prefix", f"host{i}", *join, program], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        time.sleep(1)  # the first replica's seeds are up before the second looks for them
    lines = []
    for p in replicas:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            sys.exit(f"hsdp_step: an ftlrun replica exited {p.returncode}")
        lines += out.splitlines()
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    env = {**os.environ, "FTL_STEPS": str(args.steps), "OMP_NUM_THREADS": "1"}
    medians = {"gloo": [], "ftl": []}
    for round_ in range(args.runs):
        for mode, run in (("gloo", run_gloo), ("ftl", run_ftl)):
            times = step_times(run(env), args.warmup)
            medians[mode].append(statistics.median(times))
            print(json.dumps({"bench": "hsdp_step", "mode": mode, "round": round_, "steps": len(times) + 1,
                              "step_ms_median": round(1e3 * medians[mode][-1], 3)}), flush=True)
    ratio = statistics.median(medians["ftl"]) / statistics.median(medians["gloo"])
    print(json.dumps({"bench": "hsdp_step", "figure": "ftl_over_gloo", "ratio": round(ratio, 3),
                      "gloo_ms": round(1e3 * statistics.median(medians["gloo"]), 3),
                      "ftl_ms": round(1e3 * statistics.median(medians["ftl"]), 3), "runs": args.runs}))


if __name__ == "__main__":
    main()
