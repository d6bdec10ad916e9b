"""figures: the docs' pictures, made from real runs on this machine, never drawn by hand.

Two steps, so that the site builds without running a job and the pictures can be re-made in one command:
  run   runs the jobs and writes what they measured to docs/img/*.json:
          job-survives.json       five pods (network namespaces, the Kubernetes harness of tests/k8s) of the
                                  C example train while one is killed (kill -9), the rest are split 3|1 by a
                                  network partition that then heals, and a new pod joins: every step's loss
                                  and world size against time, and the moments;
          recovery-timeline.json  kill -9 -> first step at N=4, split into detection, agreement, comm build,
                                  state sync and the first step (medians of bench/rescale/rescale.py's
                                  one_kill), for the C example and, with --torch, the PyTorch one;
  plot  draws docs/img/*.png from those files (matplotlib), and docs/img/architecture.svg from the
        diagram's text, docs/img/architecture.dot (Graphviz's dot).
  all   run, then plot.
    sudo python3 docs/gen/figures.py all --train build/examples/ftl-train-example --ctl build/ctl/ftlctl \
        [--torch .venv/bin/python]
`run` needs root (network namespaces, as tests/k8s); exit 77 where pods cannot run. ctest's
docs_figures_plot re-plots the committed data into a scratch folder, so the drawing code cannot rot."""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
IMG = os.path.join(ROOT, "docs", "img")
for sub in ("tests/agent", "tests/k8s", "bench/rescale"):
    sys.path.insert(0, os.path.join(ROOT, sub))

SKIP = 77
PHASES = [("detection_s", "detection"), ("agreement_s", "agreement"), ("comm_build_s", "comm build"),
          ("state_sync_s", "state sync"), ("first_step_s", "first step")]


# ---- run ----

def run_survival(args):
    """The job of job-survives.json: 5 pods; kill -9, a 3|1 partition and its heal, a join."""
    from pods import PodJob, why_pods_cannot_run
    from workers import is_step
    why = why_pods_cannot_run()
    if why:
        print(f"SKIP: the survival figure {why}")
        sys.exit(SKIP)
    rng = random.Random(args.seed)
    # Slow steps (a model's compute) and a short reap, as tests/k8s/test_partition.py; the rest is the
    # Deployment's environment.
    job = PodJob(args.train, args.ctl, rng=rng, FTL_STEPS=10**9, FTL_BATCH=16, FTL_DATA_SIZE=20000,
                 FTL_STEP_SLEEP_MS=40, FTL_REAP_AFTER_MS=4000)
    events = []
    t0 = time.time()

    def mark(what):
        events.append({"t": round(time.time() - t0, 3), "what": what})
        print(f"{time.time() - t0:6.2f} s  {what}", flush=True)

    def steps_of(pods, world):
        return [r for p in pods for r in p.steps() if r["world"] == world and r["t"] > events[-1]["t"] + t0]

    def body():
        pods = job.scale_up(5)
        job.wait("a step with all 5", lambda: any(r["world"] == 5 for p in pods for r in p.steps()), 60)
        mark("5 pods train")
        time.sleep(args.phase)
        victim = rng.choice(pods)
        job.kill(victim.name)
        mark("kill -9")
        alive = [p for p in pods if p is not victim]
        job.wait("a step of the 4", lambda: steps_of(alive, 4), 60)
        time.sleep(args.phase)
        rng.shuffle(alive)
        job.partition([alive[:3], alive[3:]])  # the 3 have quorum and train on; the 1 waits
        mark("partition 3|1")
        time.sleep(args.phase * 1.5)
        job.heal_partition()
        mark("heal")
        job.wait("a step of the 4 after the heal", lambda: steps_of(alive, 4), 60)
        time.sleep(args.phase)
        joiner = job.add()
        mark("a pod joins")
        job.wait("the joiner's step", lambda: steps_of(alive + [joiner], 5), 60)
        time.sleep(args.phase)
        mark("end")
        # One point per (pod, step) line: during the partition each side's steps are its own.
        steps = sorted(([round(r["t"] - t0, 3), r["step"], r["world"], round(r["loss"], 4), r["rank"]]
                        for r in job.records() if is_step(r) and r["t"] >= t0), key=lambda s: s[0])
        data = {"what": "5 pods of the C example (examples/train_softmax.c), tests/k8s harness",
                "made": time.strftime("%Y-%m-%d", time.gmtime()), "events": events,
                "steps_columns": ["t", "step", "world", "loss", "rank"], "steps": steps}
        write_json("job-survives.json", data)
    return job.run_test(body)


def run_timeline(args):
    """recovery-timeline.json: the phases of kill -9 -> first step at N=4, medians over --runs."""
    import rescale
    from workers import TrainingJob
    rows = []
    programs = [("C example", {"train": args.train, "torch": None})]
    if args.torch:
        programs.append(("PyTorch example", {"train": None, "torch": args.torch}))
    for label, prog in programs:
        if prog["torch"]:
            TrainingJob.start_timeout = 60  # importing torch takes seconds
        ns = types.SimpleNamespace(ctl=args.ctl, step_ms=20, burst=1, spares=0, torch_script=None, **prog)
        runs = [rescale.one_kill(ns, 4) for _ in range(args.runs)]
        rows.append({"program": label, "nodes": 4, "runs": len(runs),
                     **{key: round(statistics.median(r[key] for r in runs), 4) for key, _ in PHASES},
                     "total_s": round(statistics.median(r["total_s"] for r in runs), 4)})
        print(json.dumps(rows[-1]), flush=True)
    write_json("recovery-timeline.json", {"what": "kill -9 -> first step, bench/rescale/rescale.py one_kill",
                                          "made": time.strftime("%Y-%m-%d", time.gmtime()), "rows": rows})


def write_json(name, data):
    os.makedirs(IMG, exist_ok=True)
    with open(os.path.join(IMG, name), "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


# ---- plot ----

def plot_survival(data, out):
    import matplotlib.pyplot as plt
    cols = {c: i for i, c in enumerate(data["steps_columns"])}
    steps = data["steps"]
    t = [s[cols["t"]] for s in steps]
    fig, (ax_loss, ax_world) = plt.subplots(2, 1, sharex=True, figsize=(10, 5.2),
                                            gridspec_kw={"height_ratios": [2, 1]})
    ax_loss.scatter(t, [s[cols["loss"]] for s in steps], s=2, color="#1f77b4", alpha=0.5, linewidths=0)
    ax_loss.set_ylabel("training loss\n(every rank's steps)")
    ax_world.scatter(t, [s[cols["world"]] for s in steps], s=3, color="#2ca02c", linewidths=0)
    ax_world.set_ylabel("world size of\nthe step's view")
    ax_world.set_xlabel("seconds")
    ax_world.set_ylim(0, max(s[cols["world"]] for s in steps) + 1)
    for e in data["events"]:
        if e["what"] == "end":
            continue
        for ax in (ax_loss, ax_world):
            ax.axvline(e["t"], color="#d62728", linestyle="--", linewidth=0.9)
        ax_loss.annotate(e["what"], (e["t"], 1.0), xycoords=("data", "axes fraction"), xytext=(3, -12),
                         textcoords="offset points", fontsize=9, color="#d62728")
    ax_loss.set_title("A job survives a kill -9, a partition and a join: no restart, no step lost")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "job-survives.png"), dpi=110)
    plt.close(fig)


def plot_timeline(data, out):
    import matplotlib.pyplot as plt
    rows = data["rows"]
    colours = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#2ca02c"]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.8 * len(rows)))
    for y, row in enumerate(rows):
        left = 0.0
        for (key, name), colour in zip(PHASES, colours):
            ms = max(row[key], 0.0) * 1000
            ax.barh(y, ms, left=left, color=colour, label=name if y == 0 else None)
            if ms >= 4:
                ax.text(left + ms / 2, y, f"{ms:.0f}", ha="center", va="center", fontsize=8, color="white")
            left += ms
        ax.text(left + 2, y, f"{row['total_s'] * 1000:.0f} ms", va="center", fontsize=9)
    ax.set_yticks(range(len(rows)), [f"{r['program']}, N={r['nodes']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds after kill -9 (medians of %d runs; each phase ends when the last survivor "
                  "reaches it)" % rows[0]["runs"])
    ax.legend(ncol=len(PHASES), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=9)
    ax.set_xlim(0, max(r["total_s"] for r in rows) * 1000 * 1.15)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "recovery-timeline.png"), dpi=110)
    plt.close(fig)


def plot(data_dir, out):
    import matplotlib
    matplotlib.use("Agg")
    os.makedirs(out, exist_ok=True)
    for name, draw in (("job-survives.json", plot_survival), ("recovery-timeline.json", plot_timeline)):
        with open(os.path.join(data_dir, name)) as f:
            draw(json.load(f), out)
        print(f"figures: {os.path.join(out, name.replace('.json', '.png'))}")
    svg = os.path.join(out, "architecture.svg")
    subprocess.run(["dot", "-Tsvg", "-o", svg, os.path.join(data_dir, "architecture.dot")], check=True)
    print(f"figures: {svg}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("run", "plot", "all"))
    p.add_argument("--train", help="the C example (build/examples/ftl-train-example)")
    p.add_argument("--ctl", help="ftlctl (build/ctl/ftlctl)")
    p.add_argument("--torch", metavar="PYTHON", help="also time the PyTorch example under this interpreter")
    p.add_argument("--runs", type=int, default=3, help="kill -9 runs per program for the timeline")
    p.add_argument("--phase", type=float, default=4.0, help="seconds between the survival job's moments")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--data", default=IMG, help="where plot reads the .json files")
    p.add_argument("--out", default=IMG, help="where plot writes the .png files")
    args = p.parse_args()
    if args.what in ("run", "all"):
        if not args.train or not args.ctl:
            p.error("run needs --train and --ctl")
        status = run_survival(args)
        if status:
            return status
        run_timeline(args)
    if args.what in ("plot", "all"):
        plot(args.data, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
