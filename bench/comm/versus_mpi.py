#!/usr/bin/env python3
"""ftl's tcp allreduce against Open MPI forced onto TCP (--mca btl tcp,self), run after run, interleaved.

Why interleaved rounds: on a shared 2-core machine one run of each says little (the spread between runs of
the same program is as wide as the gap being measured), so each round runs ftl and then MPI at every rank
count, and the verdict for a size is how many rounds ftl was at least as fast in: the issue's target is
every size from 4 KiB to 64 MiB at >= 1.0x in 5 of 5 rounds.

    bench/comm/versus_mpi.py --build build-rel --ranks 2 4 --rounds 5

One JSON line per rank count and size: the busbw of each side in each round (GB/s), the ratio ftl/MPI per
round, how many rounds ftl won (ratio >= 1.0), and the median ratio. The raw lines of the two benchmarks
(bench_comm_tcp, bench_comm_mpi) go to stderr with --raw."""
import argparse
import json
import shutil
import statistics
import subprocess
import sys

MAX_BYTES = 64 << 20


def busbw_by_size(cmd, impl, raw):
    got = {}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800).stdout
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec.get("bench") == "allreduce" and rec.get("impl") == impl:
            got[rec["bytes"]] = rec["busbw_GBps"]
            if raw:
                print(line, file=sys.stderr)
    return got


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build-rel")
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-bytes", type=int, default=4 << 10)
    p.add_argument("--raw", action="store_true")
    args = p.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("versus_mpi: mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)")
    bench = f"{args.build}/bench/comm"
    rounds = {n: [] for n in args.ranks}
    for _ in range(args.rounds):
        for n in args.ranks:
            ftl = busbw_by_size([f"{bench}/bench_comm_tcp", str(n), "auto", str(MAX_BYTES)], "ftl_tcp", args.raw)
            mpi = busbw_by_size(["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "tcp,self",
                                 "-np", str(n), f"{bench}/bench_comm_mpi", "mpi_tcp", str(MAX_BYTES)], "mpi_tcp", args.raw)
            rounds[n].append((ftl, mpi))
    for n, runs in rounds.items():
        sizes = sorted(b for b in runs[0][0] if args.min_bytes <= b <= MAX_BYTES and all(b in m for _, m in runs))
        for b in sizes:
            ftl = [f[b] for f, _ in runs]
            mpi = [m[b] for _, m in runs]
            ratios = [f / m for f, m in zip(ftl, mpi)]
            print(json.dumps({"bench": "allreduce_vs_mpi_tcp", "ranks": n, "bytes": b, "ftl_busbw_GBps": ftl,
                              "mpi_busbw_GBps": mpi, "ratios": [round(r, 3) for r in ratios],
                              "rounds_won": sum(r >= 1.0 for r in ratios), "rounds": len(ratios),
                              "median_ratio": round(statistics.median(ratios), 3)}), flush=True)


if __name__ == "__main__":
    main()
