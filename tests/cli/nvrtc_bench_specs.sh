#!/bin/sh
# fusegen check --nvrtc-ptx over the benchmark's own specs (bench/specs, fusegen-bench --spec):
# they keep compiling as the templates change. To PTX only: ptxas and its spill check are the
# default library's tests' (nvrtc_default_library, spill_table), and a third of the time is saved.
# SPEC...: those (paths relative to SOURCE_DIR), else all.
#   nvrtc_bench_specs.sh FUSEGEN SOURCE_DIR [SPEC...]
set -u
fusegen=$1
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$src" || exit 1

# The benchmark's own specs (fusegen-bench --spec) keep compiling as the templates change.
[ $# -gt 0 ] || set -- bench/specs/*.json
for spec in "$@"; do
    "$fusegen" check --nvrtc-ptx "$spec" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 0 ] || grep -v '^fusegen: ' "$tmp/out" | grep -q -v '^ok '; then
        echo "FAIL $spec: rc=$rc"; cat "$tmp/out" "$tmp/err"; fail=1
    else
        echo "PASS $spec compiles to PTX with NVRTC"
    fi
done

if [ $fail -eq 0 ]; then echo "all passed"; else echo "some failed"; fi
exit $fail
