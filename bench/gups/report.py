#!/usr/bin/env python3
"""Table and plot for bench/gups/run.sh."""
import csv, os, subprocess, sys

csv_path, log_path, shift_at, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
rows = list(csv.DictReader(open(csv_path)))
summ = {}
for line in open(log_path):
    if line.startswith("summary "):
        parts = line.split()
        kv = dict(p.split("=", 1) for p in parts[2:])
        summ[parts[1]] = kv
order = ("oracle", "tiermalloc", "kernel", "damon", "memtier", "first-touch")
names = sorted(summ, key=lambda n: (next((i for i, o in enumerate(order) if n.startswith(o)), 9), n))
oracle = float(summ["oracle"]["steady_hit"]) if "oracle" in summ else None
w = max(12, *(len(n) for n in names))
print(f"{'placement':<{w}} {'steady hit ratio':>16} {'vs oracle':>10} {'90% of shifted hot set fast after':>34} {'Mupdates/s':>11}")
for n in names:
    hit = float(summ[n]["steady_hit"])
    mups = [float(r["mups"]) for r in rows if r["name"] == n and r["phase"] == "1"][2:]
    rel = f"{100 * hit / oracle:.1f}%" if oracle else "-"
    react = summ[n]["reaction_s"]
    react = "static placement" if n == "oracle" else (f"not within {react[1:]} s" if react.startswith(">") else f"{react} s")
    print(f"{n:<{w}} {hit:16.4f} {rel:>10} {react:>34} {sum(mups) / max(len(mups), 1):11.2f}")
for n in names:
    if not n.startswith("tiermalloc") or not oracle:
        continue
    t = float(summ[n]["steady_hit"]) / oracle
    r = summ[n]["reaction_s"]
    rs = float(r.lstrip(">"))
    print(f"targets ({n}): steady hit >= 95% of oracle: {'met' if t >= 0.95 else 'MISSED'} ({100 * t:.1f}%); "
          f"shifted hot set 90% fast within 1 s: {'met' if not r.startswith('>') and rs <= 1.0 else 'MISSED'} ({r} s, "
          f"sampled every 0.25 s)")
# plot
data = os.path.join(out, "gups.dat")
with open(data, "w") as f:
    for n in names:
        f.write(f"# {n}\n")
        for r in rows:
            if r["name"] == n:
                f.write(f"{r['t']} {r['hit_ratio']} {r['hot_fast']}\n")
        f.write("\n\n")
png = os.path.join(out, "gups.png")
plot = ", ".join(f"'{data}' index {i} using 1:2 with lines lw 2 title '{n}'" for i, n in enumerate(names))
gp = f"""set terminal pngcairo size 900,480
set output '{png}'
set title 'GUPS in the tiered VM: share of accesses served by the fast tier'
set xlabel 'seconds'
set ylabel 'fast-tier hit ratio'
set yrange [0:1]
set key bottom right
set arrow from {shift_at},0 to {shift_at},1 nohead dt 2
set label 'hot set shifts' at {shift_at},0.65 offset 0.5,0
plot {plot}
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)
    print(f"plot: {png}; data: {csv_path}")
except (OSError, subprocess.CalledProcessError) as e:
    print(f"no plot ({e}); data: {csv_path}")
