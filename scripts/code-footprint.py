#!/usr/bin/env python3
"""How much code one request touches: the distinct 64-byte lines of machine
code a request runs, from callgrind profiles written with
`--dump-instr=yes` (per-instruction counts).

    SETTLE=20 VALGRIND_OPTS=--dump-instr=yes scripts/mc-callgrind.sh set 1 8 target/cg
    scripts/code-footprint.py REQUESTS target/cg/callgrind.out.*-01 [--top N] [--by fn|file|line]

REQUESTS is the request count mc-callgrind.sh prints. A line counts as
min(1, runs of its most-run instruction / REQUESTS): 1 for a line every
request runs. The sum is the code the request path spans, the figure to
set against the 32 KiB L1 instruction cache (BENCHMARKS.md, session 29);
`--top N` lists the N largest shares by function, source file or source
line (the source of the line's most-run instruction, inlining included).
"""
import argparse
import collections
import re

NAMED = re.compile(r"^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn)=\((\d+)\)(?: (.*))?$")


def parse(path, lines):
    """Adds each code line's largest instruction count to `lines`:
    (object, address // 64) -> [count, function, file, source line]."""
    names = {}
    npos = 1
    obj = fn = src = None
    last_addr = last_line = 0
    call_cost_next = False
    with open(path, errors="replace") as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not s:
                continue
            if s.startswith("positions:"):
                npos = len(s.split()) - 1
                continue
            m = NAMED.match(s)
            if m:
                kind, idx, name = m.groups()
                space = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}.get(kind, "fl")
                if name:
                    names[(space, idx)] = name
                if kind == "ob":
                    obj = idx
                elif kind == "fn":
                    fn = names.get(("fn", idx), idx)
                elif kind in ("fl", "fi", "fe"):
                    src = names.get(("fl", idx), idx)
                continue
            if s.startswith("calls="):
                # The next cost line is the call's inclusive cost, not
                # instructions run at that address.
                call_cost_next = True
                continue
            if not (s[0].isdigit() or s[0] in "+-*"):
                continue
            parts = s.split()
            addr, line = parts[0], parts[1] if npos > 1 else "*"
            last_addr = relative(addr, last_addr, 16 if addr.startswith("0x") else 10)
            last_line = relative(line, last_line, 10)
            if call_cost_next:
                call_cost_next = False
                continue
            count = int(parts[npos]) if len(parts) > npos else 0
            key = (obj, last_addr >> 6)
            if count > lines[key][0]:
                lines[key] = [count, fn, src, last_line]


def relative(token, last, base):
    """Callgrind's position compression: absolute, `+n`, `-n` or `*`."""
    if token == "*":
        return last
    if token[0] in "+-":
        return last + int(token, 10)
    return int(token, base)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("requests", type=float)
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--by", choices=["fn", "file", "line"], default="fn")
    args = ap.parse_args()
    lines = collections.defaultdict(lambda: [0, None, None, 0])
    for path in args.profiles:
        parse(path, lines)
    share = {k: min(1.0, v[0] / args.requests) for k, v in lines.items()}
    total = sum(share.values())
    print(f"code lines touched per request: {total:.0f} ({total * 64 / 1024:.1f} KiB)")
    if args.top:
        groups = collections.Counter()
        for k, (_, fn, src, line) in lines.items():
            label = {"fn": fn, "file": src, "line": f"{src}:{line}"}[args.by]
            groups[str(label)] += share[k]
        for label, n in groups.most_common(args.top):
            print(f"{n:7.1f}  {label}")


if __name__ == "__main__":
    main()
