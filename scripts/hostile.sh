#!/usr/bin/env bash
# Hostile neighbours (issue 24): each attack of items 1-5 and 9 against a local job or agent on loopback,
# one line per item, `item N: held|broken — <figure>`; exits 1 if any item broke. Under 5 minutes on 2
# cores. Usage: scripts/hostile.sh [BUILD_DIR] (default build; built first if ftl-train-example is missing).
#   1, 2  scripts/hostile/wrong_peers.py     a joiner with other state; a stray lineage with a higher epoch
#   3     scripts/hostile/preauth_flood.py   idle and trickling unauthenticated TCP connections vs join/heal
#   4     scripts/hostile/shm_stranger.py    another local user at the shared-memory setup socket
#   5     scripts/hostile/metrics_slowloris.py  trickling connections vs /metrics scrapes
#   8     scripts/hostile/settings.py        empty seed lists and misspelled FTL_* names (not in the issue's list)
#   9     scripts/hostile/growth.py          non-reading event followers and a member flood vs memory
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -x "$build/examples/ftl-train-example" ]; then
  cmake -S . -B "$build" >/dev/null && cmake --build "$build" -j"$(nproc)" >/dev/null || exit 2
fi
python="${FTL_PYTHON:-python3}"
start=$(date +%s)
broken=0
for attack in wrong_peers preauth_flood shm_stranger metrics_slowloris settings growth; do
  "$python" "scripts/hostile/$attack.py" --build "$build" || broken=1
done
echo "hostile: $(( $(date +%s) - start )) s; $([ $broken = 0 ] && echo 'every item held' || echo 'some item BROKE')"
exit $broken
