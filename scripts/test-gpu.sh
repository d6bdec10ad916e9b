#!/usr/bin/env bash
# test-gpu.sh: everything that needs a GPU, on a machine that has one (one NVIDIA GPU is enough; no network
# needed). Runs unchanged on a machine without a GPU, where it builds and then exits 77 saying so.
#
#  1. libraries: libuv, libsodium, msgpack-c, jansson, cmocka, xxhash (and pkg-config) are taken from the
#     system when pkg-config finds them, else unpacked with dpkg -x from the .deb files that
#     scripts/fetch-gpu-debs.sh downloaded into .device/debs (carried along with the working tree) into
#     .device/prefix, which CMake, pkg-config and the loader are then pointed at. No root needed.
#  2. configure and build with NCCL (/usr/include + /usr/lib/x86_64-linux-gnu, or NCCL_ROOT) and CUDA;
#  3. without a GPU (no nvidia-smi, or CUDA sees no device): exit 77;
#  4. (a) the NCCL comm tests (one rank: init, collectives, abort, re-init, shrink; asynchronous requests in
#         order and failing together; the bf16 compression kernels against the host reference) and the
#         rebuild choice;
#     (b) the CUDA example (examples/train_cuda.c) on one GPU, FTL_COMM=nccl, state in device memory;
#     (c) a hot spare on the same GPU taking over after kill -9 of the active worker, resuming the newest
#         checkpoint into device memory with the digest the checkpoint recorded (tests/gpu/test_hot_spare.py);
#     (d) 100 abort/rebuild cycles with no leak of device memory or file descriptors;
#     (e) the Python package's CUDA-tensor path (ftl.torch with CUDA tensors; then DDP on
#         ftl.torch.process_group; then DDP in loop mode), when python3 has torch with CUDA (else a visible SKIP);
#     then the benchmarks (bench/nccl: communicator rebuild; takeover with 100 MB and 1 GB of device state),
#     FTL_GPU_BENCH=0 skips them.
# Every timing is a JSON line on stdout, also collected in $FTL_GPU_OUT (default <build>/gpu-results.jsonl).
# Exit 0 when every part passed (skips allowed), 1 when one failed, 77 without a GPU.
# Settings: FTL_GPU_PART_TIMEOUT (240 s: a part that runs longer is killed and FAILs), NCCL_DEBUG (WARN
# for the communicator tests),
# FTL_BUILD_DIR (build-gpu), FTL_GPU_DEBS (.device/debs), FTL_GPU_PREFIX (.device/prefix),
# FTL_GPU_FORCE_DEBS=1 (use the .debs even where the system has the libraries), NCCL_ROOT, FTL_CUDA_DEVICE,
# FTL_GPU_ONLY (an extended regular expression: only the parts whose names match run, e.g. 'e_torch' to run
# again what failed; the communicator test a_nccl_comm always runs, it tells whether CUDA works at all).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build="${FTL_BUILD_DIR:-$root/build-gpu}"
debs="${FTL_GPU_DEBS:-$root/.device/debs}"
prefix="${FTL_GPU_PREFIX:-$root/.device/prefix}"
modules=(libuv libsodium msgpack jansson cmocka libxxhash)
say() { echo "test-gpu: $*" >&2; }
die() { say "$*"; exit 1; }

# ---- 1. libraries ----
have_modules() {
  command -v pkg-config >/dev/null && pkg-config --exists "${modules[@]}" 2>/dev/null
}
# dpkg-deb -x where it exists; else the archive's data member with ar and tar (any Linux with binutils).
unpack_one() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$prefix"
  else
    local member how
    member=$(ar t "$1" | grep '^data\.tar') || return 1
    case $member in *.xz) how=-J ;; *.zst) how=--zstd ;; *.gz) how=-z ;; *) how= ;; esac
    ar p "$1" "$member" | tar -x $how -f - -C "$prefix"
  fi
}
unpack_debs() {
  shopt -s nullglob
  local files=("$debs"/*.deb)
  (( ${#files[@]} )) || die "missing libraries (${modules[*]} via pkg-config) and no .deb files in $debs: run scripts/fetch-gpu-debs.sh on a machine with network and carry .device along"
  rm -rf "$prefix" && mkdir -p "$prefix"
  for f in "${files[@]}"; do unpack_one "$f" || die "cannot unpack $f"; done
  # The .pc files name /usr (in variables, or in -L/-I flags as cmocka's does): point them at the prefix.
  for pc in "$prefix"/usr/lib/*/pkgconfig/*.pc "$prefix"/usr/lib/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
    sed -i -E -e "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\1=$prefix/usr#" -e "s#(-[LI])/usr/#\1$prefix/usr/#g" "$pc"
  done
  local arch_lib
  arch_lib=$(ls -d "$prefix"/usr/lib/*-linux-gnu | head -1)
  export PATH="$prefix/usr/bin:$PATH"
  export PKG_CONFIG_PATH="$arch_lib/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  say "unpacked ${#files[@]} .deb files into $prefix"
}
if [[ "${FTL_GPU_FORCE_DEBS:-0}" == 1 ]] || ! have_modules; then
  unpack_debs
fi
have_modules || die "pkg-config still finds no ${modules[*]}: check $debs"

# ---- 2. configure and build ----
python=$(command -v python3 || true)
mkdir -p "$build"
cmake -S . -B "$build" -DFTL_PYTHON="${python:-/nonexistent}" ${NCCL_ROOT:+-DNCCL_ROOT="$NCCL_ROOT"} \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; die "configure failed"; }
grep -E '^-- ftl:' "$build/configure.log" >&2
grep -q 'nccl backend ON' "$build/configure.log" || die "the nccl backend is off (see above): set NCCL_ROOT, or CUDAToolkit_ROOT"
targets=(ftl ftlctl ftl-train-cuda test_comm_nccl test_comm_nccl_async test_comm_nccl_compress test_comm_nccl_cycles
         test_comm_rebuild bench_nccl_rebuild)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 \
  || { tail -40 "$build/build.log"; die "build failed"; }
say "built ${targets[*]} in $build"

# ---- 3. a GPU? ----
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  say "SKIP: no GPU on this machine (nvidia-smi absent or sees none): built, nothing to run; run this on a GPU machine"
  exit 77
fi
nvidia-smi -L >&2
out="${FTL_GPU_OUT:-$build/gpu-results.jsonl}"
is_bench="${FTL_GPU_BENCH:-1}"
export build
: >"$out"
declare -A result
# NCCL's own warnings name the cause of a failure that ncclGetErrorString only classifies: on for the C
# tests of the communicator (NCCL writes them, and its version line, to stdout, among their JSON lines).
nccl_warn=(env NCCL_DEBUG="${NCCL_DEBUG:-WARN}")
part_limit="${FTL_GPU_PART_TIMEOUT:-240}"
# run NAME COMMAND...: runs a part (at most $part_limit s, so that one hang cannot cost the rest); its JSON
# lines go to stdout and $out; records PASS, FAIL or SKIP (77).
run() {
  local name=$1; shift
  if [[ -n "${FTL_GPU_ONLY:-}" && $name != a_nccl_comm ]] && ! grep -Eq -- "$FTL_GPU_ONLY" <<<"$name"; then
    return 0
  fi
  say "---- $name: $*"
  local t0=$SECONDS cmd=("$@")
  # timeout runs programs, not this script's functions: a function goes along into a bash of its own.
  declare -F "$1" >/dev/null && cmd=(bash -c "$(declare -f "$1"); \"\$@\"" bash "$@")
  timeout -k 5 "$part_limit" "${cmd[@]}" >"$build/$name.log" 2>"$build/$name.err"
  local rc=$?
  grep '^{' "$build/$name.log" | tee -a "$out"
  case $rc in
    0) result[$name]=PASS ;;
    77) result[$name]=SKIP; grep -h '^SKIP' "$build/$name.log" >&2 ;;
    124|137) result[$name]="FAIL (hung: killed after ${part_limit} s)"; tail -20 "$build/$name.err" >&2; tail -5 "$build/$name.log" >&2 ;;
    *) result[$name]="FAIL (exit $rc)"; tail -20 "$build/$name.err" >&2; grep -v '^{' "$build/$name.log" | tail -5 >&2 ;;
  esac
  say "$name: ${result[$name]} ($((SECONDS - t0)) s)"
}

# ---- 4. the parts ----
run a_nccl_comm "${nccl_warn[@]}" "$build/tests/comm/test_comm_nccl"
if [[ ${result[a_nccl_comm]} == SKIP ]]; then
  say "SKIP: nvidia-smi lists a GPU but CUDA/NCCL cannot use it (see above)"
  exit 77
fi
run a_rebuild_choice "${nccl_warn[@]}" "$build/tests/comm/test_comm_rebuild"
run a_nccl_async "${nccl_warn[@]}" "$build/tests/comm/test_comm_nccl_async"
run a_nccl_compress "${nccl_warn[@]}" "$build/tests/comm/test_comm_nccl_compress"

train_one_gpu() {
  local dir key port
  dir=$(mktemp -d) key=$("$build/ctl/ftlctl" keygen)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  FTL_COMM=nccl FTL_NAME=gpu0 FTL_BIND=127.0.0.1:$port FTL_GOSSIP_KEY=$key FTL_RUN_DIR=$dir FTL_STEPS=300 \
    FTL_CHECKPOINT_DIR=$dir/ckpt FTL_CHECKPOINT_EVERY=100 timeout 300 "$build/examples/ftl-train-cuda" >"$dir/out.jsonl" \
    || { tail -3 "$dir/out.jsonl"; return 1; }
  python3 - "$dir/out.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
steps = [r for r in recs if "loss" in r]
final = next(r for r in recs if r.get("final"))
ms = sorted(r["step_ms"] for r in steps)
ok = len(steps) == 300 and steps[-1]["loss"] < 0.8 * steps[0]["loss"] and final["test_accuracy"] > 0.3
print(json.dumps({"test": "cuda_example", "steps": len(steps), "first_loss": steps[0]["loss"],
                  "last_loss": steps[-1]["loss"], "test_accuracy": final["test_accuracy"],
                  "step_ms_median": ms[len(ms) // 2], "step_ms_max": ms[-1], "digest": final["digest"]}))
sys.exit(0 if ok else 1)
PY
  local rc=$?
  ls "$dir/ckpt" >&2
  rm -rf "$dir"
  return $rc
}
run b_cuda_example train_one_gpu
run c_hot_spare python3 tests/gpu/test_hot_spare.py --train "$build/examples/ftl-train-cuda" --ctl "$build/ctl/ftlctl"
run d_rebuild_cycles "${nccl_warn[@]}" "$build/tests/comm/test_comm_nccl_cycles"
run e_torch_cuda env FTL_LIBRARY="$build/lib/libftl.so" PYTHONPATH="$root/python/src" python3 tests/gpu/torch_cuda.py
run e_torch_cuda_ddp env FTL_LIBRARY="$build/lib/libftl.so" PYTHONPATH="$root/python/src" python3 tests/gpu/torch_cuda.py --ddp
run e_torch_cuda_loop env FTL_LIBRARY="$build/lib/libftl.so" PYTHONPATH="$root/python/src" python3 tests/gpu/torch_cuda.py --loop

if [[ "$is_bench" != 0 ]]; then
  run bench_nccl_rebuild "${nccl_warn[@]}" "$build/bench/nccl/bench_nccl_rebuild" 10
  run bench_takeover python3 bench/nccl/takeover.py --train "$build/examples/ftl-train-cuda" --ctl "$build/ctl/ftlctl" --state-mb 100 1024
fi

# ---- summary ----
status=0
for name in $(printf '%s\n' "${!result[@]}" | sort); do
  say "$(printf '%-20s %s' "$name" "${result[$name]}")"
  [[ ${result[$name]} == FAIL* ]] && status=1
done
say "timings (JSON lines): $out"
exit $status
