#!/usr/bin/env bash
# The compressed allreduce's speed-up where the network, not the CPU, is the limit. On bare loopback the
# "link" is memcpy in the kernel, as fast as the rounding and widening themselves, so halving the bytes
# saves little (about 1.1x at 64 MiB on 2 cores); on a real link the bytes are the cost. This limits `lo`
# with a token bucket (tc tbf, one rate for all loopback traffic), runs the uncompressed, bf16 and bf16-ef
# allreduce at 64 MiB, prints their JSON lines and compressed_speedup.py's ratios, each tagged with the link,,
# and removes the limit again, also when interrupted. Needs root; everything else on the machine that uses
# loopback is slowed while it runs.
# Usage: bench/comm/compressed_on_link.sh [build dir] [rate ...]   (rates as tc writes them; default 2gbit
# 10gbit 25gbit; ranks from FTL_BENCH_RANKS, default 2)
set -euo pipefail
build="${1:-build}"
shift || true
rates=("${@:-2gbit 10gbit 25gbit}")
read -r -a rates <<<"${rates[*]}"
ranks="${FTL_BENCH_RANKS:-2}"
bench="$build/bench/comm/bench_comm_tcp"
speedup="$(dirname "$0")/compressed_speedup.py"
size=$((64 << 20))
if tc qdisc show dev lo | grep -q "qdisc tbf"; then
  echo "compressed_on_link: lo already has a tbf qdisc: remove it first (tc qdisc del dev lo root)" >&2
  exit 2
fi
trap 'tc qdisc del dev lo root 2>/dev/null || true' EXIT INT TERM
for rate in "${rates[@]}"; do
  # burst: a few 64 KiB loopback packets; latency: room for a whole 64 MiB transfer to queue.
  tc qdisc add dev lo root tbf rate "$rate" burst 4mb latency 100ms
  lines=$(for mode in auto bf16 bf16ef; do "$bench" "$ranks" "$mode" "$size" | tail -n 1; done)
  { echo "$lines"; "$speedup" <<<"$lines"; } | sed "s/}\$/,\"link\":\"lo tbf $rate\"}/"
  tc qdisc del dev lo root
done
