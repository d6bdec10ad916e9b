#!/bin/sh
# Chaos soak, not part of CI: 6 training workers as pods in network namespaces (root), random kill -9,
# SIGSTOP/SIGCONT, joins, leaves and 1-30 s partitions from a seeded schedule (scripts/soak.py says what
# it reports). Same seed and duration: the same schedule.
#   scripts/soak.sh [MINUTES (30)] [SEED (random)]      (builds into build/ first)
set -eu
cd "$(dirname "$0")/.."
minutes=${1:-30}
seed=${2:-}
cmake -S . -B build >/dev/null
cmake --build build -j2 --target ftl-train-example ftlctl >/dev/null
exec python3 scripts/soak.py --train build/examples/ftl-train-example --ctl build/ctl/ftlctl \
	--minutes "$minutes" ${seed:+--seed "$seed"}
