#!/bin/sh
# bench/judge_model.sh with this build's dispatch model: a line for every recorded file, and the
# model alone within issue 35's targets for the heuristic on the recorded H100 runs (each
# bench/results/h100 all-variants file: selected/best geometric mean <= 1.04, max <= 1.10).
#   judge_model_test.sh PYTHON SOURCE_DIR BUILD_DIR
py=$1 src=$2 build=$3
fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
out=$(cd "$src" && PYTHON=$py bench/judge_model.sh "$build")
rc=$?
echo "$out"
check "exit 0" '[ $rc -eq 0 ]'
n=$(ls "$src"/bench/results/*/all-variants*.csv "$src"/bench/results/*/all-variants*.log "$src"/specs/tuning/default.*.json 2>/dev/null | wc -l)
check "a line for each of the $n recorded files" '[ "$(echo "$out" | grep -c "selected/best\|model.s first")" -eq "$n" ]'
h100=$(echo "$out" | grep '^bench/results/h100/all-variants')
check "H100 all-variants files judged" '[ -n "$h100" ]'
bad=$(echo "$h100" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "mean") g = $(i + 1); if ($i == "max") m = $(i + 1) }
                             sub(/,/, "", g); sub(/,/, "", m); if (g + 0 > 1.04 || m + 0 > 1.10 || g == "") print $1 }')
check "H100: geometric mean <= 1.04 and max <= 1.10 in each (over: ${bad:-none})" '[ -z "$bad" ]'
exit $fail
