#!/usr/bin/env python3
"""Compares fusegen-tune runs of two or more builds (A, B, C, ...), each run a tuning file that
`fusegen-tune -o` wrote from scratch; every build after A is compared with A, one table each.

    bench/ab_tune_compare.py [--bare KERNEL] A1.json A2.json ... -- B1.json ... [-- C1.json ...]

For every entry (spec kernel, M bucket, N, K, N2) it prints the median winner time of each side
over its runs and B / A. With --bare KERNEL, also each side's time over KERNEL's winner at the
same M, N and K from the same side's runs (the example library's `linear`: the bare GEMM a
fused kernel is held to). Runs should alternate (A B A B) on one machine, back to back.
Exit status: 0, or 2 on bad input.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_compare import split_groups  # noqa: E402


def bad(message):
    print(f"ab_tune_compare.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """(spec_kernel, m_bucket, n, k, n2) -> winner_ms, from one tuning file."""
    try:
        with open(path) as f:
            doc = json.load(f)
        return {(e["spec_kernel"], e["m_bucket"], e["n"], e["k"], e["n2"]): float(e["winner_ms"])
                for e in doc["entries"]}
    except (OSError, ValueError, KeyError, TypeError) as err:
        bad(f"{path}: not a tuning file ({err})")


def medians(paths):
    runs = [load(p) for p in paths]
    keys = set().union(*runs)
    return {key: statistics.median([r[key] for r in runs if key in r]) for key in keys}


def main(argv):
    bare = None
    if len(argv) >= 2 and argv[0] == "--bare":
        bare, argv = argv[1], argv[2:]
    groups = split_groups(argv)
    if not groups:
        bad("usage: bench/ab_tune_compare.py [--bare KERNEL] A1.json ... -- B1.json ... [-- C1.json ...]")
    sides = [medians(g) for g in groups]
    a = sides[0]

    def over_bare(side, key):
        ref = side.get((bare, key[1], key[2], key[3], 0)) if bare else None
        return f"{side[key] / ref:8.3f}" if ref else "       -"

    for i, b in enumerate(sides[1:], 1):
        name = chr(ord("A") + i)
        print(f"{len(groups[0])} run(s) of A, {len(groups[i])} of {name}; winner times in ms (medians)")
        head = f"{'kernel':28} {'m':>5} {'n':>6} {'k':>6} {'A':>9} {name:>9} {name + '/A':>7}"
        if bare:
            head += f" {'A/bare':>8} {name + '/bare':>8}"
        print(head)
        ratios = []
        for key in sorted(set(a) & set(b)):
            if key[0] == bare:
                continue
            r = b[key] / a[key]
            ratios.append(r)
            line = f"{key[0][:28]:28} {key[1]:5d} {key[2]:6d} {key[3]:6d} {a[key]:9.4f} {b[key]:9.4f} {r:7.3f}"
            if bare:
                line += f" {over_bare(a, key)} {over_bare(b, key)}"
            print(line)
        if ratios:
            print(f"geometric mean {name}/A {statistics.geometric_mean(ratios):.3f} over {len(ratios)} entries\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
