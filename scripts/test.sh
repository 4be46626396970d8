#!/usr/bin/env bash
# Builds everything and runs the tests in parallel (one job per core), then prints the five
# slowest. GPU tests exit 77 (skipped) on a machine without a GPU.
#   scripts/test.sh [BUILD_DIR] [ctest args...]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fusegen_need
case ${1:-} in
  -*) echo "scripts/test.sh: the first argument is the build folder: scripts/test.sh [BUILD_DIR] [ctest args...] (e.g. scripts/test.sh build -R cli)" >&2
      exit 2 ;;
esac
build=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
cmake --build "$build" -j "$jobs"
cd "$build"
set +e
ctest --output-on-failure -j "$jobs" "$@" | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
# ctest's result lines: "  3/103 Test  #12: name ......   Passed    1.23 sec"
echo
echo "slowest tests:"
sed -nE 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: ([^ ]+) .* ([0-9]+\.[0-9]+) sec$/\2 \1/p' ctest.log |
  sort -rn | awk 'NR <= 5 { printf "  %8.2f s  %s\n", $1, $2 }'
exit "$rc"
