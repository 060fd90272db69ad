#!/usr/bin/env python3
"""Table and plot for bench/scale/run.sh: one row per footprint."""
import csv, os, statistics, subprocess, sys

csv_path, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(csv_path)))
if not rows:
    sys.exit("scale: no rows")
def pick(f, wl, al, ph):
    for r in rows:
        if r["footprint_mib"] == f and r["workload"] == wl and r["allocator"] == al and r["phase"] == ph:
            return r
    return None
def num(r, k, default=float("nan")):
    try:
        return float(r[k]) if r else default
    except ValueError:
        return default
def det(r):
    d = num(r, "detect_s", -1)
    return "never" if d < 0 else f"{d:.1f}"
feet = sorted({r["footprint_mib"] for r in rows}, key=int)
hdr = ("footprint", "touched", "bg CPU % (written)", "bg CPU % (read-only)", "period cost p50/p99/steady p99 us",
       "metadata % of footprint", "page tables added (KiB)", "minor faults/s added", "detect s (start/shift)", "sweep pass s", "window s",
       "hot set seen (1 s, MiB)", "fast tier for 95% (MiB)", "rate vs jemalloc")
lines = []
for f in feet:
    w1, w2 = pick(f, "written", "tiermalloc", "1"), pick(f, "written", "tiermalloc", "2")
    r2 = pick(f, "read-only", "tiermalloc", "2")
    jw = pick(f, "written", "jemalloc", "2")
    ut, uj = pick(f, "unpaced", "tiermalloc", "2"), pick(f, "unpaced", "jemalloc", "2")
    fmib = int(f)
    meta = (num(w2, "meta_ours", 0) + num(w2, "meta_je", 0)) / (fmib << 20) * 100
    flt = "-"
    # the kernel's page tables over jemalloc's for the same workload (armed
    # memory never touched would cost 4 KiB a 2 MiB block)
    pte = f"{num(w2, 'pte_kib') - num(jw, 'pte_kib'):.0f}" if w2 and jw and w2.get("pte_kib") and jw.get("pte_kib") else "-"
    if w2 and jw:
        flt = f"{(num(w2, 'minflt') - num(jw, 'minflt')) / max(float(os.environ.get('W', 4)), 1):.0f}"
    rt = [num(r, "rate_maps") for r in rows if r["footprint_mib"] == f and r["workload"] == "unpaced" and r["allocator"] == "tiermalloc" and r["phase"] == "2"]
    rj = [num(r, "rate_maps") for r in rows if r["footprint_mib"] == f and r["workload"] == "unpaced" and r["allocator"] == "jemalloc" and r["phase"] == "2"]
    rate = f"{statistics.median(rt) / statistics.median(rj):.3f}" if rt and rj and statistics.median(rj) > 0 else "-"
    lines.append((f"{fmib} MiB", f"{w2['touched_mib'] if w2 else '?'} MiB",
                  f"{100 * num(w2, 'bg_share'):.2f}", f"{100 * num(r2, 'bg_share'):.2f}",
                  f"{num(w2, 'cost_p50_us'):.0f}/{num(w2, 'cost_p99_us'):.0f}/{num(w2, 'steady_p99_us'):.0f}", f"{meta:.3f}", pte, flt,
                  f"{det(w1)}/{det(w2)}", f"{num(w2, 'pass_s'):.1f}", f"{num(w2, 'window_s'):.0f}", f"{num(w2, 'seen_1s'):.0f}",
                  f"{num(w2, 'size_95'):.0f}", rate))
w = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(hdr)]
print(" | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
print("-|-".join("-" * x for x in w))
for l in lines:
    print(" | ".join(v.ljust(w[i]) for i, v in enumerate(l)))
# plot: background CPU and detection time against the footprint
dat = os.path.join(out, "scale.dat")
with open(dat, "w") as fp:
    for f in feet:
        w2 = pick(f, "written", "tiermalloc", "2")
        r2 = pick(f, "read-only", "tiermalloc", "2")
        fp.write(f"{f} {100 * num(w2, 'bg_share', 0):.4f} {100 * num(r2, 'bg_share', 0):.4f} {max(num(w2, 'detect_s', -1), 0):.2f} {num(w2, 'cost_p99_us', 0):.0f}\n")
png = os.path.join(out, "scale.png")
gp = f"""set terminal pngcairo size 900,500
set output '{png}'
set logscale x 2
set xlabel 'footprint (MiB)'
set ylabel 'background CPU, % of a core'
set y2label 'time to detect a shifted hot set (s)'
set ytics nomirror
set y2tics
set key top left
set grid
plot '{dat}' using 1:2 with linespoints title 'bg CPU, written hot set', \\
     '{dat}' using 1:3 with linespoints title 'bg CPU, read-only hot set', \\
     '{dat}' using 1:4 axes x1y2 with linespoints title 'detection after the shift (s)', \\
     1 with lines dashtype 2 title 'bg_cpu budget (1%)'
"""
try:
    subprocess.run(["gnuplot"], input=gp.encode(), check=True)
    print(f"plot: {png}")
except (OSError, subprocess.CalledProcessError) as e:
    print(f"plot: gnuplot failed ({e})")
