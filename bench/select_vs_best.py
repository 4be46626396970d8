#!/usr/bin/env python3
"""How good the dispatch's choice is: from `fusegen-bench --all-variants --csv FILE` (every
eligible variant of the library timed beside the selected one), for each problem the selected
variant's time over the fastest variant's whose check passed, and the geometric mean and the
largest of those ratios (issue targets: within 3% on every problem, 1% on the geometric mean with
tuning; 10% and 4% for the model alone).

    bench/select_vs_best.py FILE.csv [FILE.csv ...]
    bench/select_vs_best.py --model TOOL [--sms N] FILE.csv [...]

--model judges the dispatch model alone (no tuning) instead of the selected column: its choice
is the first variant timed for the problem in the order that TOOL (the dispatch-order test
program, tests/unit/runtime/fusegen_test_dispatch_order, `--show SMS M N K [N2]`: the model's
order for the default library) prints, for a device of N SMs (default 132).

A FILE ending in .log is a fusegen-bench --all-variants log instead: its plain GEMMs ("fusegen
GEMM alone" lines, the selected kernel first, every other eligible one after it; a FAIL line
counts as a failed check) are judged the same way, the problem's name getting " (plain)".

A FILE ending in .json is a tuning file (fusegen-tune) instead, judged with --model only: for
each entry the model's first variant against the entry's measured winner and runner-up (the
file's device's SM count; --sms is ignored), counted as the winner (ratio 1), the runner-up
(runner_up_ms / winner_ms) or another variant (not timed there, so no ratio).

A problem whose selected variant failed its check, or that has no selected row, is reported and
makes the exit status 1. Exit status: 0, 1 (a problem could not be judged), 2 (bad input).
"""
import csv
import json
import math
import re
import subprocess
import sys


def model_order(tool, sms, key, spec_kernel):
    """The model's order of spec_kernel's variants for the problem key (kind, name, m, n, k, n2)."""
    args = [tool, "--show", str(sms), key[2], key[3], key[4]] + ([key[5]] if key[5] not in ("", "0") else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    order, inside = [], False
    for line in out.splitlines():
        if not line.startswith(" "):
            inside = line.split(" ", 1)[0] == spec_kernel
        elif inside:
            order.append(line.strip())
    return order


def spec_kernel_of(variant):
    """The spec kernel of a default-library variant name: the part before _sm80_ / _sm90a_."""
    for family in ("_sm90a_", "_sm80_"):
        if family in variant:
            return variant.split(family, 1)[0]
    return variant


PROBLEM_LINE = re.compile(r"^\[\d+/\d+\] (.+): m=(\d+) n=(\d+) k=(\d+)")
PLAIN_LINE = re.compile(r"^  fusegen GEMM alone \((\S+)\)\s+(?:([0-9.]+) ms|rel err \S+\s+FAIL)")


def plain_rows(f):
    """The plain GEMMs of a fusegen-bench log as CSV-like rows (the first of a problem selected)."""
    rows, problem = [], None
    for line in f:
        m = PROBLEM_LINE.match(line)
        if m:
            problem, first = m.groups(), True
            continue
        m = PLAIN_LINE.match(line)
        if m and problem:
            name, ms = m.groups()
            rows.append({"kind": "plain", "problem": problem[0] + " (plain)", "m": problem[1], "n": problem[2],
                         "k": problem[3], "n2": "0", "kernel": name, "selected": "1" if first else "0",
                         "fusegen_ms": ms or "nan", "check": "ok" if ms else "FAIL"})
            first = False
    return rows


def judge_tuning(path, tool):
    """The model's first variant against a tuning file's winners and runners-up."""
    try:
        with open(path) as f:
            t = json.load(f)
        sms, entries = int(t["device"]["sms"]), t["entries"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"select_vs_best: {path}: not a tuning file ({e})", file=sys.stderr)
        return None
    print(f"{path}")
    winner = runner_up = other = unknown = 0
    ratios = []
    for e in entries:
        key = ("tuning", "", str(e["m_bucket"]), str(e["n"]), str(e["k"]), str(e.get("n2", 0)))
        order = model_order(tool, sms, key, e["spec_kernel"])
        first = order[0] if order else None
        if first is None:   # a spec kernel the tool's library does not have
            unknown += 1
        elif first == e["winner"]:
            winner += 1
            ratios.append(1.0)
        elif first == e.get("runner_up"):
            runner_up += 1
            ratios.append(float(e["runner_up_ms"]) / float(e["winner_ms"]))
        else:
            other += 1
    n = winner + runner_up + other
    if not n:
        print(f"select_vs_best: {path}: no entry of a spec kernel the model's library has", file=sys.stderr)
        return 1
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    print(f"  model's first: the winner on {winner} of {n} entries, the runner-up on {runner_up} "
          f"(model/best over those: geometric mean {geo:.3f}, max {max(ratios):.3f}), another variant on "
          f"{other}" + (f"; {unknown} entries of spec kernels not in the model's library" if unknown else ""))
    return 0


def judge(path, tool=None, sms=132):
    try:
        with open(path, newline="") as f:
            rows = plain_rows(f) if path.endswith(".log") else list(csv.DictReader(f))
    except (OSError, csv.Error) as e:
        print(f"select_vs_best: {path}: {e}", file=sys.stderr)
        return None
    needed = {"kind", "problem", "m", "n", "k", "n2", "fusegen_ms", "kernel", "selected", "check"}
    if not rows or not needed <= set(rows[0]):
        print(f"select_vs_best: {path}: not a fusegen-bench --all-variants CSV", file=sys.stderr)
        return None
    problems = {}
    for r in rows:
        problems.setdefault((r["kind"], r["problem"], r["m"], r["n"], r["k"], r["n2"]), []).append(r)
    ratios, bad = [], 0
    print(f"{path}")
    for key, group in problems.items():
        chosen = [r for r in group if r["selected"] == "1"]
        if tool:   # the model's first variant among those timed
            timed = {r["kernel"]: r for r in group}
            first = next((v for v in model_order(tool, sms, key, spec_kernel_of(group[0]["kernel"])) if v in timed), None)
            chosen = [timed[first]] if first else []
        passed = [r for r in group if r["check"] == "ok"]
        if not chosen or chosen[0]["check"] != "ok" or not passed:
            print(f"  {key[1]:32s} no selected variant that passed its check")
            bad += 1
            continue
        best = min(passed, key=lambda r: float(r["fusegen_ms"]))
        ratio = float(chosen[0]["fusegen_ms"]) / float(best["fusegen_ms"])
        ratios.append(ratio)
        shape = f"{key[2]}x{key[3]}x{key[4]}" + (f"->{key[5]}" if key[5] not in ("", "0") else "")
        better = f"  (best: {best['kernel']})" if ratio > 1.03 else ""
        print(f"  {key[1]:32s} {shape:22s} selected/best {ratio:.3f} of {len(group)} variants{better}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"  selected/best: geometric mean {geo:.3f}, max {max(ratios):.3f} over {len(ratios)} problems; "
              f"{sum(1 for x in ratios if x > 1.03)} above 1.03")
    return bad


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    args, tool, sms = sys.argv[1:], None, 132
    while args and args[0] in ("--model", "--sms"):
        if len(args) < 2:
            print(__doc__.strip(), file=sys.stderr)
            return 2
        if args[0] == "--model":
            tool = args[1]
        else:
            sms = int(args[1])
        args = args[2:]
    status = 0
    for path in args:
        if path.endswith(".json") and not tool:
            print(f"select_vs_best: {path}: a tuning file needs --model", file=sys.stderr)
            return 2
        bad = judge_tuning(path, tool) if path.endswith(".json") else judge(path, tool, sms)
        if bad is None:
            return 2
        if bad:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
