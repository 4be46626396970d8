#!/usr/bin/env bash
# The dispatch model alone against every recorded measurement of the repo: each all-variants
# file under bench/results/<gpu>/ and each shipped tuning file of the default library, judged
# by bench/select_vs_best.py --model (its summary line per file). Run after a change of
# runtime/dispatch.c, from the repo root, with a build that has the dispatch-order tool:
#   bench/judge_model.sh [BUILD_DIR]        (default: build; PYTHON: the interpreter, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${1:-build}/tests/unit/runtime/fusegen_test_dispatch_order
[ -x "$tool" ] || { echo "bench/judge_model.sh: no $tool (build the tests first)" >&2; exit 2; }
for f in bench/results/*/all-variants*.csv bench/results/*/all-variants*.log specs/tuning/default.*.json; do
  [ -e "$f" ] || continue
  printf '%-48s %s\n' "$f" "$("${PYTHON:-python3}" bench/select_vs_best.py --model "$tool" "$f" 2>&1 | awk 'END { sub(/^ +/, ""); print }')"
done
