#!/usr/bin/env python3
"""Where a kernel waits, from ncu's SASS source page.

Reads the CSV of `ncu -i REPORT --page source --print-source sass --csv` (the `profile`
step of scripts/gpu-all.sh brings them back in $OUT/profile.tar.gz) and prints the share of
warp stall samples and of executed instructions per opcode, then the instructions with the
most stall samples. A stall is charged to the instruction that waits: a store or an
arithmetic instruction high in the list usually waits on the load that feeds it.

    scripts/ncu-source.py FILE-source.csv [--top N]
"""

import argparse
import collections
import csv


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu's source page of one kernel, as CSV")
    parser.add_argument("--top", type=int, default=25, help="instructions listed")
    args = parser.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))
    at = next(i for i, r in enumerate(rows) if "Source" in r and "Address" in r)
    head = rows[at]

    def column(prefix):
        return next(i for i, c in enumerate(head) if c.startswith(prefix))

    source = head.index("Source")
    stalls = column("Warp Stall Sampling (All")
    executed = column("Instructions Executed")
    lines = [r for r in rows[at + 1 :] if len(r) == len(head)]
    all_stalls = sum(number(r[stalls]) for r in lines) or 1.0
    all_executed = sum(number(r[executed]) for r in lines) or 1.0
    print(f"{len(lines)} instructions, {all_stalls:.0f} stall samples, {all_executed:.0f} executed (warps)")
    by_stalls, by_executed = collections.Counter(), collections.Counter()
    for r in lines:
        words = r[source].split()
        if words and words[0].startswith("@"):
            words = words[1:]
        op = words[0].split(".")[0] if words else "?"
        by_stalls[op] += number(r[stalls])
        by_executed[op] += number(r[executed])
    print("\n| opcode | stall samples % | executed % |\n| --- | --- | --- |")
    for op, n in by_stalls.most_common(15):
        print(f"| {op} | {100 * n / all_stalls:.1f} | {100 * by_executed[op] / all_executed:.1f} |")
    print("\n| stall samples % | executed | instruction |\n| --- | --- | --- |")
    for r in sorted(lines, key=lambda r: -number(r[stalls]))[: args.top]:
        print(f"| {100 * number(r[stalls]) / all_stalls:.1f} | {number(r[executed]):.0f} | `{r[source].strip()}` |")


if __name__ == "__main__":
    main()
