#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (CMake preset `fuzz`, folder build-fuzz) and runs the
# bounded fuzz tests fuzz_spec_short (FUSEGEN_FUZZ_SECONDS, default 60), fuzz_tuning_load_short
# and fuzz_tuning_gen_short (FUSEGEN_FUZZ_TUNING_SECONDS, default 30 each) plus the corpus replays.
# Installs clang's fuzzer runtime (libclang-rt-14-dev) when it is missing and it runs as root.
#   scripts/test-fuzz.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
command -v clang >/dev/null 2>&1 || { echo "fusegen: clang is missing: install it (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/f.c"
if ! clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "fusegen: installing clang's fuzzer runtime (libclang-rt-14-dev)" >&2
    { [ -n "$(find /var/lib/apt/lists -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq; } &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-rt-14-dev >/dev/null ||
      { echo "fusegen: 'apt-get install libclang-rt-14-dev' failed: install clang's runtime and run again" >&2; exit 1; }
  else
    echo "fusegen: clang cannot link -fsanitize=fuzzer: run 'sudo apt-get install libclang-rt-14-dev'" >&2
    exit 1
  fi
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
ctest --preset fuzz "$@"
