#!/usr/bin/env bash
# Allreduce busbw of ftl's tcp backend against Open MPI on loopback, 2, 4 and 8 processes: one JSON line
# per figure on stdout. MPI runs twice: as it comes (shared memory between processes on one host) and
# forced onto TCP (--mca btl tcp,self), which is the like-for-like comparison with a TCP backend. ftl runs
# twice too: over tcp (ftl_tcp, against mpi_tcp) and with shared memory between its local ranks (ftl_shm,
# against mpi, whose default is shared memory on one host).
# Compressed: ftl_tcp_bf16 and ftl_tcp_bf16ef (bf16 on the wire, effective busbw = f32 bytes over time),
# then one allreduce_compressed_speedup line per rank count and mode: the ratio to ftl_tcp at 64 MiB.
# Usage: bench/comm/run.sh [build dir] [ranks...]
set -euo pipefail
build="${1:-build}"
shift || true
ranks=("${@:-2 4 8}")
read -r -a ranks <<<"${ranks[*]}"
dir="$build/bench/comm"
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for n in "${ranks[@]}"; do
  "$dir/bench_comm_tcp" "$n" | tee -a "$lines"
  for mode in bf16 bf16ef; do
    "$dir/bench_comm_tcp" "$n" "$mode" | tee -a "$lines"
  done
  FTL_COMM_SHM=auto "$dir/bench_comm_tcp" "$n"
  if [ -x "$dir/bench_comm_mpi" ]; then
    mpirun --allow-run-as-root --oversubscribe -np "$n" "$dir/bench_comm_mpi" mpi
    mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -np "$n" "$dir/bench_comm_mpi" mpi_tcp
  fi
done
"$(dirname "$0")/compressed_speedup.py" <"$lines"
