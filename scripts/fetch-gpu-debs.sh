#!/usr/bin/env bash
# fetch-gpu-debs.sh: on a machine with network (Debian 12, like the development machines), downloads the
# .deb files that scripts/test-gpu.sh unpacks on a GPU machine that has none of libuv, libsodium, msgpack-c,
# jansson, cmocka and xxhash (nor pkg-config, perhaps) and no network to fetch them. They go to .device/debs
# (git ignores /.device/; FTL_GPU_DEBS picks another folder), which travels with the working tree as a
# carried path, so the whole must stay under the device machine's 64 MiB: checked at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${FTL_GPU_DEBS:-.device/debs}"
limit_mib=64
# The -dev packages (headers, .pc files, the .so links) and the runtime libraries they point at; pkgconf in
# case the GPU machine has no pkg-config. apt-get download fetches exactly these, without dependencies.
packages=(
  libuv1 libuv1-dev
  libsodium23 libsodium-dev
  libmsgpackc2 libmsgpack-dev
  libjansson4 libjansson-dev
  libcmocka0 libcmocka-dev
  libxxhash0 libxxhash-dev
  pkgconf pkgconf-bin libpkgconf3
)
mkdir -p "$dest"
rm -f "$dest"/*.deb
(cd "$dest" && apt-get download "${packages[@]}")
echo "fetch-gpu-debs: ${#packages[@]} packages in $dest:"
ls -1 "$dest"

# What travels: tracked and untracked-not-ignored files, plus the carried .device folder.
tree_bytes=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
carried_bytes=$(du -sb .device | cut -f1)
total_mib=$(( (tree_bytes + carried_bytes) / 1048576 ))
echo "fetch-gpu-debs: working tree $((tree_bytes / 1024)) KiB + .device $((carried_bytes / 1024)) KiB = ${total_mib} MiB (limit ${limit_mib} MiB)"
if (( total_mib >= limit_mib )); then
  echo "fetch-gpu-debs: too large to travel: remove build outputs under .device or untracked files" >&2
  exit 1
fi
