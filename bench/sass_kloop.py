#!/usr/bin/env python3
"""Sizes the wgmma k tile loop of every Hopper kernel in a `cuobjdump -sass` listing.

The instructions between a stage's arrival and its wgmma issue leave the tensor cores idle
(docs/decisions.md v62, v81: 91 -> 67 instructions a k tile gave 1-2% on every problem), so the
loop's length is worth watching. For each function with HGMMA instructions this finds the
smallest loop (a backward branch and its target label) that contains an HGMMA and prints its
instruction count and how many HGMMA it holds. Out-of-line blocks (a wait's retry placed at the
function's end) are not counted.

  cuobjdump -sass libfusegen_default.a | bench/sass_kloop.py            one line a kernel
  bench/sass_kloop.py LISTING --summary                                 one line for all
  bench/sass_kloop.py LISTING --against REFERENCE                       HGMMA per kernel, against
                                                                        another build's listing

--against counts every HGMMA of each kernel in both listings and names the kernels whose
counts differ (or that only one listing has), then says how many: a timing floor that stops
reading some accumulators lets ptxas drop the wgmmas that fed them, silently (docs/decisions.md
v85), and this is how a run notices.

Exit status 1 when no function with HGMMA was found (not a Hopper build, or an unknown
listing format), so a script that expects them notices.
"""
import argparse
import re
import signal
import sys

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
# A branch's target: a label (`(.L_x_12)) or, in newer cuobjdump, the address (BRA 0x1600).
TARGET_LABEL = re.compile(r"`\((\.L_x_\d+)\)")
TARGET_ADDRESS = re.compile(r"\bBRA(?:\.[A-Z]+)*\s+(?:!?U?P[T0-9]+\s*,\s*)?0x([0-9a-fA-F]+)\b")


def read_functions(lines):
    """Yields (name, instructions, labels): instructions as (address, text), labels as
    {label: address of the instruction after it}."""
    name, instructions, labels, pending = None, [], {}, []
    for line in lines:
        m = FUNCTION.match(line)
        if m:
            if name is not None:
                yield name, instructions, labels
            name, instructions, labels, pending = m.group(1), [], {}, []
            continue
        if name is None:
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTRUCTION.match(line)
        if m:
            address = int(m.group(1), 16)
            for label in pending:
                labels[label] = address
            pending = []
            instructions.append((address, m.group(2)))
    if name is not None:
        yield name, instructions, labels


def k_loop(instructions, labels):
    """(instruction count, HGMMA count) of the smallest loop holding an HGMMA, or None."""
    addresses = [a for a, _ in instructions]
    hgmma = [a for a, text in instructions if "HGMMA" in text]
    if not hgmma:
        return None
    best = None
    for address, text in instructions:
        label, direct = TARGET_LABEL.search(text), TARGET_ADDRESS.search(text)
        if "BRA" in text and label and label.group(1) in labels:
            start = labels[label.group(1)]
        elif direct:
            start = int(direct.group(1), 16)
        else:
            continue
        if start > address or not any(start <= h <= address for h in hgmma):
            continue
        span = sum(1 for a in addresses if start <= a <= address)
        if best is None or span < best[0]:
            best = (span, sum(1 for h in hgmma if start <= h <= address))
    return best


def hgmma_counts(functions):
    """{kernel: HGMMA instructions} for the kernels that have any."""
    counts = {name: sum(1 for _, text in instructions if "HGMMA" in text) for name, instructions, _ in functions}
    return {name: n for name, n in counts.items() if n > 0}


def compare_counts(mine, reference):
    """Lines naming each kernel whose HGMMA count differs from the reference's, then a summary."""
    lines = []
    for name in sorted(set(mine) | set(reference)):
        a, b = reference.get(name), mine.get(name)
        if a != b:
            lines.append(f"{name}: {'-' if a is None else a} -> {'-' if b is None else b} HGMMA")
    if lines:
        lines.append(f"HGMMA differs from the reference in {len(lines)} of {len(set(mine) | set(reference))} kernels")
    else:
        lines.append(f"HGMMA as in the reference in all {len(mine)} kernels")
    return lines


def read_listing(path):
    try:
        with (open(path, encoding="utf-8", errors="replace") if path else sys.stdin) as f:
            return list(read_functions(f))
    except OSError as e:
        sys.exit(f"sass_kloop.py: cannot read {path}: {e.strerror}")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("listing", nargs="?", help="cuobjdump -sass output (default: standard input)")
    ap.add_argument("--summary", action="store_true", help="one line: kernels, and the loops' range of lengths")
    ap.add_argument("--against", metavar="REFERENCE", help="compare HGMMA counts per kernel with this listing")
    args = ap.parse_args()
    functions = read_listing(args.listing)
    if args.against:
        mine, reference = hgmma_counts(functions), hgmma_counts(read_listing(args.against))
        if not mine and not reference:
            print("sass_kloop.py: no function with HGMMA instructions in either listing", file=sys.stderr)
            return 1
        print("\n".join(compare_counts(mine, reference)))
        return 0
    rows = []
    for name, instructions, labels in functions:
        if not any("HGMMA" in text for _, text in instructions):
            continue
        rows.append((name, k_loop(instructions, labels)))
    if not rows:
        print("sass_kloop.py: no function with HGMMA instructions in the listing", file=sys.stderr)
        return 1
    found = [loop for _, loop in rows if loop]
    if args.summary:
        if found:
            lengths = [n for n, _ in found]
            print(f"{len(rows)} kernels, k loop {min(lengths)}-{max(lengths)} instructions"
                  + ("" if len(found) == len(rows) else f" ({len(rows) - len(found)} without a loop found)"))
        else:
            print(f"{len(rows)} kernels, no k loop found")
        return 0
    for name, loop in rows:
        print(f"{loop[0]:5d} instructions, {loop[1]:2d} HGMMA  {name}" if loop else f"    - (no loop found)     {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
