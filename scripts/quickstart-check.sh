#!/usr/bin/env bash
# The quick start (docs/quickstart.md) as a new user follows it, on a machine with a GPU: build
# fusegen (scripts/build.sh), install it, then the spec, CMakeLists.txt, main.c and the two Python
# programs, each taken from the page itself (so the page is what is tested), built and run. A
# line per step; the logs under $OUT/quickstart (default ./gpu-out/quickstart). Exit 0 when every
# step passed; 77 when every step up to the program's build passed and there is no GPU to run it
# (the CTest `quickstart` runs it so, on this build).
#   scripts/quickstart-check.sh [BUILD_DIR]
# BUILD_DIR (default build, as on the page): where scripts/build.sh builds; with
# FUSEGEN_QUICKSTART_REUSE=1 an existing build there is installed as it is (saves the default
# library's second build on a machine that has one, e.g. gpu-check.sh's build-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=${1:-build}
case $build in /*) ;; *) build=$repo/$build ;; esac
logs=${OUT:-$repo/gpu-out}/quickstart
mkdir -p "$logs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix proj=$work/project
mkdir -p "$proj"
failed=0
# step NAME COMMAND...: runs it with its output in $logs/NAME.log, prints one line
step() {
  local name=$1
  shift
  if "$@" >"$logs/$name.log" 2>&1; then
    printf 'quickstart %-22s ok\n' "$name"
  else
    printf 'quickstart %-22s FAILED (%s)\n' "$name" "$(tail -1 "$logs/$name.log")"
    failed=1
  fi
}
# block LANG N: the N-th fenced block of language LANG on the page
block() {
  awk -v open="\`\`\`$1" -v want="$2" '
    inb && /^```/ { exit }
    inb { print; next }
    $0 == open && ++n == want { inb = 1 }' docs/quickstart.md
}
# the last line of a Python program's output is a relative error: at most $2
small() { awk -v lim="$2" 'END { exit !($1 + 0 == $1 && $1 <= lim) }' "$1"; }

if [ "${FUSEGEN_QUICKSTART_REUSE:-0}" = 1 ] && [ -x "$build/fusegen" ]; then
  printf 'quickstart %-22s reusing %s\n' build "$build"
else
  step build scripts/build.sh "$build"
fi
step install cmake --install "$build" --prefix "$prefix"
block json 1 >"$proj/my.json"
block cmake 1 >"$proj/CMakeLists.txt"
block c 1 >"$proj/main.c"
for f in my.json CMakeLists.txt main.c; do
  [ -s "$proj/$f" ] || { echo "quickstart: no $f block on docs/quickstart.md"; exit 1; }
done
cp "$proj"/* "$logs/"
step check sh -c "'$build/fusegen' check '$proj/my.json' | tee /dev/stderr | grep -q ': ok: '"
step configure cmake -S "$proj" -B "$proj/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
step compile cmake --build "$proj/build" -j "$(nproc 2>/dev/null || echo 2)"
if ! nvidia-smi -L >/dev/null 2>&1; then
  printf 'quickstart %-22s skipped (no GPU)\n' run
  exit $((failed ? 1 : 77))
fi
# the page's promise: "proj_bias_relu_sm90a_128x128x64_s3: 0 of 131072 outputs wrong"
step run-c sh -c "'$proj/build/app' && '$proj/build/app' | grep -q ': 0 of 131072 outputs wrong'"
if python3 -c 'import torch' >/dev/null 2>&1; then
  block python 1 >"$work/default.py"
  block python 2 >"$work/mylib.py"
  export PYTHONPATH="$repo/integrations/pytorch${PYTHONPATH:+:$PYTHONPATH}"
  step python-default sh -c "FUSEGEN_LIBRARY='$build/libfusegen_default.so' python3 '$work/default.py'"
  step python-default-error small "$logs/python-default.log" 1e-2
  step python-mylib sh -c "FUSEGEN_LIBRARY='$proj/build/libmylib.so' python3 '$work/mylib.py'"
  step python-mylib-error small "$logs/python-mylib.log" 1e-4
else
  printf 'quickstart %-22s skipped (no torch)\n' python
fi
exit $failed
