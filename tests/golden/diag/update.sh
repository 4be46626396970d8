#!/bin/sh
# Regenerates cases/*.err from the current `fusegen check` output. Review every change by eye
# (git diff) before committing: the .err files are the specification of the diagnostics.
#   tests/golden/diag/update.sh path/to/fusegen
set -eu
fusegen=${1:?usage: update.sh path/to/fusegen}
case $fusegen in /*) ;; *) fusegen=$(pwd)/$fusegen ;; esac
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir "$work/cases"
cp "$here"/cases/*.json "$work/cases/"
for name in deep_array deep_object long_key long_utf8_name; do
    cmake -DGEN_CASE="$name" -DGEN_OUT="$work/cases/$name.json" -P "$here/gen_cases.cmake"
done
cd "$work"
for json in cases/*.json; do
    name=$(basename "$json" .json)
    rc=0
    "$fusegen" check "$json" >/dev/null 2>"$here/cases/$name.err" || rc=$?
    if [ "$rc" -ne 1 ]; then
        echo "warning: $name: exit code $rc, expected 1" >&2
    fi
done
echo "updated $(ls "$here"/cases/*.err | wc -l) .err files; review them with git diff"
