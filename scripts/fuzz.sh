#!/usr/bin/env bash
# Fuzzes every decoder with libFuzzer for a while; fails if any target crashes or breaks a property.
#   scripts/fuzz.sh [seconds per target, default 30]
# Configures a clang ASan/UBSan libFuzzer build in build-fuzz, writes the seed corpus (from valid
# encodings, see tests/fuzz/seedgen.c), and runs each target on a scratch copy of its corpus, so the
# tree is left as it was. Reproducers go to fuzz-artifacts/ (gitignored); rerun one with
#   build-fuzz/tests/fuzz/<target> fuzz-artifacts/<target>-crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
build="${FTL_FUZZ_BUILD_DIR:-build-fuzz}"
# Every target tests/fuzz/CMakeLists.txt builds (its ftl_fuzz_targets list), so a new one is fuzzed here too.
read -r -a targets <<<"$(sed -n 's/^set(ftl_fuzz_targets \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)"
if ((${#targets[@]} == 0)); then
  echo "fuzz.sh: no ftl_fuzz_targets list found in tests/fuzz/CMakeLists.txt" >&2
  exit 1
fi

CC=clang cmake -S . -B "$build" -DFTL_FUZZ=ON -DFTL_SANITIZE=ON >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target fuzz_corpus "${targets[@]}"

mkdir -p fuzz-artifacts
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

failed=()
for target in "${targets[@]}"; do
  cp -r "$build/tests/fuzz/corpus/$target" "$scratch/$target"
  echo "== $target for ${seconds}s"
  if ! "$build/tests/fuzz/$target" "$scratch/$target" \
      -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="fuzz-artifacts/$target-" -print_final_stats=1 2>"$scratch/$target.log"; then
    tail -n 60 "$scratch/$target.log"
    failed+=("$target")
  fi
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' \
    "$scratch/$target.log" || true
done

if ((${#failed[@]})); then
  echo "fuzz.sh: crash or broken property in: ${failed[*]} (reproducers in fuzz-artifacts/)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran ${seconds}s each, no crash"
