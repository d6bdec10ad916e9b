"""bench/report.py: the figures a user of ftl cares about, each beside its anchor measured in the same run on
the same machine, as one Markdown table and one chart (matplotlib), from one command:

    FTL_LIBRARY=build-rel/lib/libftl.so PYTHONPATH=python/src .venv/bin/python bench/report.py \
        --build build-rel --python .venv/bin/python [--runs 3] [--out build-rel/report]

What it runs (every one an existing benchmark; their own docstrings say how each figure is taken):
  recovery   kill -9 -> first step, 4 workers: the C example and the PyTorch ResNet (examples/
             torch_resnet_digits.py) under ftl (bench/rescale/rescale.py), and the PyTorch ResNet's DDP
             twin under torchrun --standalone --max-restarts 3 (bench/torch/torchrun_kill.py);
  join       a new C-example worker's start -> its first step, 1 MB of extra state (rescale.py --only join);
  allreduce  busbw at 2 ranks over TCP from 4 KiB to 64 MiB: ftl (bench_comm_tcp) against Open MPI forced
             onto TCP (mpirun --mca btl tcp,self bench_comm_mpi), when mpirun and bench_comm_mpi exist;
  execute    the cost of ftl_execute around an empty step (bench_execute_overhead);
  detection  the simulator's crash detection, train and lan profiles, 32 nodes (bench_detection), against
             memberlist's figures quoted in that benchmark (not re-measured: no Go here).
Writes OUT/report.md, OUT/report.png and OUT/report.json (every JSON line the benchmarks printed, by
benchmark; --from-json redraws the table and chart from it)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SIZES = [4096, 65536, 1 << 20, 16 << 20, 64 << 20]


def lines_of(cmd, env=None, timeout=1800):
    """The JSON lines a benchmark prints on stdout (its other lines, and stderr, go to ours)."""
    print(f"report: {' '.join(cmd)}", file=sys.stderr, flush=True)
    out = subprocess.run(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, text=True,
                         timeout=timeout, check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def median_of(lines, **match):
    """The "median" of the one line whose fields include match."""
    found = [line for line in lines if all(line.get(k) == v for k, v in match.items())]
    return found[0].get("median") if found else None


def run_all(args):
    b, py, runs = args.build, args.python, str(args.runs)
    rescale = [py, os.path.join(ROOT, "bench", "rescale", "rescale.py"), "--ctl", f"{b}/ctl/ftlctl", "--runs", runs]
    got = {}
    got["kill_c"] = lines_of([*rescale, "--train", f"{b}/examples/ftl-train-example", "--only", "kill", "--nodes", "4"])
    got["kill_torch"] = lines_of([*rescale, "--torch", py, "--torch-script",
                                  os.path.join(ROOT, "examples", "torch_resnet_digits.py"), "--only", "kill",
                                  "--nodes", "4"])
    got["kill_torchrun"] = lines_of([py, os.path.join(ROOT, "bench", "torch", "torchrun_kill.py"), "--torchrun",
                                     args.torchrun, "--nodes", "4", "--runs", runs, "--limit", str(args.limit)])
    got["join_c"] = lines_of([*rescale, "--train", f"{b}/examples/ftl-train-example", "--only", "join"])
    got["allreduce_ftl"] = lines_of([f"{b}/bench/comm/bench_comm_tcp", "2"])
    mpi = f"{b}/bench/comm/bench_comm_mpi"
    got["allreduce_mpi"] = lines_of(["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "tcp,self",
                                     "-np", "2", mpi, "mpi_tcp"]) if shutil.which("mpirun") and os.path.exists(mpi) else []
    got["execute"] = lines_of([f"{b}/bench/rescale/bench_execute_overhead"], env={"FTL_LOG_LEVEL": "error"})
    got["detection"] = lines_of([f"{b}/bench/membership/bench_detection", "20"])
    return got


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def table(got):
    torchrun = [line for line in got["kill_torchrun"] if line.get("figure") == "kill_to_first_step_s"]
    tr = torchrun[0] if torchrun else {}
    tr_text = (f"{tr['median']:.1f} s ({tr['restarted']} of {tr['runs']} runs restarted)" if tr.get("restarted")
               else f"no restart in {tr.get('runs', 0)} of {tr.get('runs', 0)} runs")
    rows = [
        ("kill -9 -> first step, C example, 4 workers", ms(median_of(got["kill_c"], phase="total_s")), "-"),
        ("kill -9 -> first step, PyTorch ResNet, 4 workers", ms(median_of(got["kill_torch"], phase="total_s")),
         f"torchrun: {tr_text}"),
        ("join: start -> first step, C example, 1 MB state",
         ms(median_of(got["join_c"], phase="start_to_first_step_s", extra_state_mb=1)), "-"),
    ]
    by_size = {}
    for line in got["allreduce_ftl"] + got["allreduce_mpi"]:
        by_size.setdefault(line["bytes"], {})[line["impl"]] = line["busbw_GBps"]
    for size in SIZES:
        have = by_size.get(size, {})
        f, m = have.get("ftl_tcp"), have.get("mpi_tcp")
        ratio = f" ({f / m:.2f}x)" if f and m else ""
        rows.append((f"allreduce busbw, 2 ranks, TCP, {size // 1024} KiB", f"{f} GB/s{ratio}" if f else "-",
                     f"Open MPI tcp: {m} GB/s" if m else "-"))
    ex = next((line for line in got["execute"] if line.get("figure") == "overhead_us_per_step"), None)
    rows.append(("ftl_execute around an empty step", f"{ex['value']:.2f} us" if ex else "-", "-"))
    for profile, anchor in (("train", "-"), ("lan", "memberlist lan (serf, quoted): 9.3 s")):
        d = next((line for line in got["detection"] if line.get("profile") == profile and line.get("nodes") == 32
                  and line.get("loss") == 0), None)
        rows.append((f"crash detection (simulator), {profile} profile, 32 nodes",
                     f"{d['median_s']:.2f} s" if d else "-", anchor))
    out = ["| figure | ftl | anchor, same run |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out) + "\n"


def chart(got, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names, values, colours = [], [], []
    for label, key in (("ftl, C", "kill_c"), ("ftl, PyTorch", "kill_torch")):
        v = median_of(got[key], phase="total_s")
        if v is not None:
            names.append(label), values.append(v), colours.append("#2ca02c")
    tr = next((line for line in got["kill_torchrun"] if line.get("figure") == "kill_to_first_step_s"), {})
    limit = got.get("torchrun_limit_s", 60.0)
    names.append("torchrun, PyTorch")
    values.append(tr.get("median") or limit)  # no restart: drawn at the limit it was given, hatched
    colours.append("#d62728")
    bars = left.bar(names, values, color=colours, bottom=0.01)
    if not tr.get("median"):
        bars[-1].set_hatch("//")
        bars[-1].set_facecolor("white")
        bars[-1].set_edgecolor("#d62728")
    for bar, v, name in zip(bars, values, names):
        text = f"no restart\nin {limit:g} s" if name.startswith("torchrun") and not tr.get("median") else (
            f"{v * 1000:.0f} ms" if v < 1 else f"{v:.1f} s")
        left.annotate(text, (bar.get_x() + bar.get_width() / 2, v), ha="center", va="bottom", fontsize=9)
    left.set_yscale("log")
    left.set_ylim(0.01, max(values) * 4)
    left.set_ylabel("seconds, kill -9 -> first step (log)")
    left.set_title("Recovery, 4 workers")
    for impl, colour in (("ftl_tcp", "#2ca02c"), ("mpi_tcp", "#1f77b4")):
        pts = sorted((line["bytes"], line["busbw_GBps"]) for line in got["allreduce_ftl"] + got["allreduce_mpi"]
                     if line.get("impl") == impl)
        if pts:
            right.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colour,
                       label={"ftl_tcp": "ftl tcp", "mpi_tcp": "Open MPI tcp"}[impl])
    right.set_xscale("log", base=2)
    right.set_xlabel("bytes")
    right.set_ylabel("busbw GB/s")
    right.set_title("Allreduce, 2 ranks, loopback TCP")
    right.legend()
    fig.suptitle(f"ftl against its anchors, one run, {time.strftime('%Y-%m-%d')}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build-rel", help="a build tree with the benchmarks (Release)")
    p.add_argument("--python", default=sys.executable, help="an interpreter with torch (the PyTorch figures)")
    p.add_argument("--torchrun", default=None, help="torchrun (default: beside --python)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--limit", type=float, default=60.0, help="seconds torchrun gets to train again after a kill")
    p.add_argument("--out", default=None, help="where the report goes (default BUILD/report)")
    p.add_argument("--from-json", metavar="FILE", help="only redraw the table and chart from an earlier run's lines")
    args = p.parse_args()
    args.torchrun = args.torchrun or os.path.join(os.path.dirname(args.python), "torchrun")
    out = args.out or os.path.join(args.build, "report")
    os.makedirs(out, exist_ok=True)
    if args.from_json:
        with open(args.from_json) as f:
            got = json.load(f)
    else:
        got = run_all(args)
        got["torchrun_limit_s"] = args.limit
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump(got, f)
    text = table(got)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(f"# ftl against its anchors ({time.strftime('%Y-%m-%d')}, one run on this machine)\n\n{text}")
    chart(got, os.path.join(out, "report.png"))
    print(text)
    print(f"report: {out}/report.md, report.png" + ("" if args.from_json else ", report.json"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
