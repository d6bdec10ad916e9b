#!/usr/bin/env bash
# Installs the Debian packages ftl needs to build, test and fuzz, on a fresh Debian 12 machine.
# One list, used by the README and by .ci/run, so the two never drift apart.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libuv1-dev libsodium-dev libmsgpack-dev libjansson-dev libcmocka-dev libxxhash-dev libcurl4-openssl-dev
  iproute2 procps python3 python3-venv
  libopenmpi-dev openmpi-bin
  prometheus tmux
  graphviz
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
# prometheus is here for promtool and a server the metrics tests start themselves: its package must not
# start a daemon of its own (a policy-rc.d that says no, for the time of the install, where none exists).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
