#!/usr/bin/python3
"""The route and replay figures of docs/performance.md as ratios against another build, measured interleaved.

Usage: bench_ratios.py [--runs R] [--routes SPEC,SPEC] [--limit S] BUILD_DIR OTHER_BUILD_DIR [OTHER_SRC_DIR]

Replay: BUILD's and OTHER's bench_replay, streamed (-s) and in memory (-m), R times each (default
3) alternating, 256-rank stencil on ring:32:8:4 with up*/down*, analytic engine; prints the best
messages per wall second of each and the ratios (digests must agree: the same results).
Routes: each build's bench_routes on the given specs (default auto:4096,torus2d:32:16:8), once each
per run, with a limit per spec (default 300 s); prints the best set-up wall of each and the ratio.
OTHER's bench_routes is compiled from this source tree's tests/bench/bench_routes.c against
OTHER_BUILD/lib/libnetmodel.a and OTHER_SRC_DIR/netmodel/include when it has none (it uses only
netmodel calls that older builds have too).
"""
import os
import re
import subprocess
import sys

argv = sys.argv[1:]
runs, limit, routes = 3, 300, "auto:4096,torus2d:32:16:8"
pos = []
i = 0
while i < len(argv):
    a = argv[i]
    if a == "--runs":
        runs = int(argv[i + 1]); i += 2
    elif a == "--limit":
        limit = int(argv[i + 1]); i += 2
    elif a == "--routes":
        routes = argv[i + 1]; i += 2
    elif a.startswith("-"):
        sys.exit(__doc__)
    else:
        pos.append(os.path.abspath(a)); i += 1
if len(pos) < 2:
    sys.exit(__doc__)
new, old = pos[0], pos[1]
here = os.path.dirname(os.path.abspath(__file__))


def routes_exe(build):
    exe = os.path.join(build, "bin", "bench_routes")
    if os.path.exists(exe) or len(pos) < 3 or build != old:
        return exe
    subprocess.run(["gcc", "-O2", "-std=c11", "-I", os.path.join(pos[2], "netmodel", "include"),
                    os.path.join(here, "bench_routes.c"), os.path.join(build, "lib", "libnetmodel.a"),
                    "-linih", "-lm", "-o", exe], check=True)
    return exe


def replay(build, mode):
    out = subprocess.run([os.path.join(build, "bin", "bench_replay"), mode, "-r", "1", "200", "ring:32:8:4",
                          "network.routing=updown", "analytic"], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("stencil"))
    return float(re.search(r" msgs_per_s=(\d+)", line).group(1)), re.search(r"digest=(\w+)", line).group(1)


def route(build, spec):
    out = subprocess.run([routes_exe(build), "-t", str(limit), spec], capture_output=True, text=True).stdout
    m = re.search(r"load_wall=([\d.]+) s", out)
    return float(m.group(1)) if m else None, out.strip()


best = {}
digests = set()
for r in range(runs):
    for build, tag in ((old, "other"), (new, "this")):
        for mode in ("-s", "-m"):
            rate, dig = replay(build, mode)
            digests.add(dig)
            k = (tag, mode)
            best[k] = max(best.get(k, 0), rate)
print(f"# replay, 256-rank stencil, analytic, best of {runs}; load {os.getloadavg()[0]:.1f}")
for tag in ("other", "this"):
    print(f"{tag:5s} streamed {best[(tag, '-s')] / 1e6:.3f} M msg/s, in memory {best[(tag, '-m')] / 1e6:.3f} M msg/s")
print(f"streamed this/other x{best[('this', '-s')] / best[('other', '-s')]:.2f}; "
      f"this streamed/in memory x{best[('this', '-s')] / best[('this', '-m')]:.2f}; "
      f"digests {'agree' if len(digests) == 1 else 'DIFFER: ' + ', '.join(sorted(digests))}")
for spec in routes.split(","):
    walls = {}
    for r in range(runs):
        for build, tag in ((old, "other"), (new, "this")):
            w, text = route(build, spec)
            if w is None:
                walls.setdefault(tag, None)
                print(f"{tag:5s} {text}")
            elif walls.get(tag, 1e99) is not None:
                walls[tag] = min(walls.get(tag, 1e99), w)
    a, b = walls.get("this"), walls.get("other")
    ratio = f"x{a / b:.3f}" if a is not None and b else "-"
    print(f"routes {spec}: this {a if a is None else f'{a:.2f} s'}, other {b if b is None else f'{b:.2f} s'}, "
          f"this/other {ratio} (best of {runs}; load {os.getloadavg()[0]:.1f})")
