#!/bin/sh
# Runs `fusegen check` and `fusegen generate` under valgrind (memcheck) on every spec in the
# folders given (or on the spec files given; generate only where check accepts the spec),
# failing on any memory error or leak (valgrind's exit status 9). Exit statuses 0 and 1 of fusegen itself are both fine here: bad specs are
# part of the input.
#   valgrind_generator.sh FUSEGEN TEMPLATE_DIR SPEC_DIR_OR_FILE...
set -u
fusegen=$1
templates=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-valgrind.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

vg() {
    valgrind --quiet --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=all \
        --show-leak-kinds=all --track-fds=no --log-file="$tmp/vg.log" "$@" >"$tmp/out.log" 2>&1
}

runs=0
fails=0
# the specs: each folder's *.json, each file as given (appended, then the arguments dropped:
# paths with blanks stay whole)
n=$#
for arg in "$@"; do
    if [ -d "$arg" ]; then
        for spec in "$arg"/*.json; do set -- "$@" "$spec"; done
    else
        set -- "$@" "$arg"
    fi
done
shift "$n"
for spec in "$@"; do
    [ -f "$spec" ] || continue
    rejected=0
    for cmd in check generate; do
        # A spec that check rejects stops generate at the same point: the two commands share
        # every step up to the rejection (main.c: a command's own work starts once the specs are
        # accepted), and that path has just run under valgrind.
        [ "$cmd" = generate ] && [ "$rejected" -eq 1 ] && continue
        if [ "$cmd" = generate ]; then
            rm -rf "$tmp/gen"
            vg "$fusegen" generate "$spec" -o "$tmp/gen" --templates "$templates" --depfile "$tmp/gen.d"
        else
            vg "$fusegen" check "$spec" --templates "$templates"
        fi
        rc=$?
        runs=$((runs + 1))
        [ "$cmd" = check ] && [ "$rc" -eq 1 ] && rejected=1
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
            fails=$((fails + 1))
            echo "FAIL: fusegen $cmd $spec: exit status $rc"
            cat "$tmp/vg.log"
            tail -n 20 "$tmp/out.log"
        fi
    done
done
echo "valgrind: $runs runs, $fails failed"
[ "$runs" -gt 0 ] || { echo "valgrind: no spec found"; exit 1; }
[ "$fails" -eq 0 ]
