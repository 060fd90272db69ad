#!/usr/bin/env python3
"""Plot, notes and table for bench/gups/run.sh: the file names and the
project's targets first, the table last, and under it one sentence on
what the numbers mean for a user.
  report.py CSV LOG SHIFT_SECONDS OUT"""
import csv, os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hitplot import budget_of, default_bg_pct, hit_plot, label  # noqa: E402

csv_path, log_path, shift_at, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
rows = list(csv.DictReader(open(csv_path)))
summ = {}
for line in open(log_path):
    if line.startswith("summary "):
        parts = line.split()
        summ[parts[1]] = dict(p.split("=", 1) for p in parts[2:])
order = ("oracle", "tiermalloc", "kernel", "damon", "memtier", "first-touch")
names = sorted(summ, key=lambda n: (next((i for i, o in enumerate(order) if n.startswith(o)), 9), n))
oracle = float(summ["oracle"]["steady_hit"]) if "oracle" in summ else None
dflt = default_bg_pct()


def rel(n):
    return float(summ[n]["steady_hit"]) / oracle if oracle else None


def cpu(n):
    c = float(summ[n].get("other_cpu", "-1"))
    return c if c >= 0 else None


def react(n):
    r = summ[n]["reaction_s"]
    return None if r.startswith(">") else float(r)


png = os.path.join(out, "gups.png")
ok = hit_plot(rows, names, png, "GUPS in the tiered VM: share of accesses served by the fast tier", shift_at, dflt)
stats = os.path.join(out, "gups-stats.txt")
print(f"plot: {png if ok else '(not drawn)'}; data: {csv_path}; tiermalloc's statistics: {stats}")

tms = [n for n in names if budget_of(n) is not None]
if oracle:
    print("project targets (steady hit >= 95% of the oracle; 90% of the shifted hot set fast within 1 s, "
          "sampled every 0.25 s):")
    for n in tms:
        r, t = react(n), rel(n)
        print(f"  {label(n, dflt)}: steady {100 * t:.1f}% {'met' if t >= 0.95 else 'missed'}; "
              f"shift {'not within ' + summ[n]['reaction_s'][1:] + ' s' if r is None else f'{r:.2f} s'} "
              f"{'met' if r is not None and r <= 1.0 else 'missed'}")
print()

labels = {n: label(n, dflt) for n in names}
w = max(12, *(len(v) for v in labels.values()))
print(f"{'placement':<{w}} {'steady hit ratio':>16} {'vs oracle':>10} {'90% of shifted hot set fast after':>34} "
      f"{'Mupdates/s':>11} {'other CPU':>10}")
for n in names:
    hit = float(summ[n]["steady_hit"])
    mups = [float(r["mups"]) for r in rows if r["name"] == n and r["phase"] == "1"][2:]
    rs = summ[n]["reaction_s"]
    rs = "static placement" if n == "oracle" else (f"not within {rs[1:]} s" if rs.startswith(">") else f"{rs} s")
    c = cpu(n)
    print(f"{labels[n]:<{w}} {hit:16.4f} {f'{100 * rel(n):.1f}%' if oracle else '-':>10} {rs:>34} "
          f"{sum(mups) / max(len(mups), 1):11.2f} {f'{100 * c:.1f}%' if c is not None else '-':>10}")
print()


# What it means for a user: which budget to pick here, and why.
def meaning():
    d = next((n for n in tms if budget_of(n) == dflt), None)
    if not oracle or not d:
        return "(no tiermalloc run at the default budget beside the oracle: nothing to conclude)"
    best = max(tms, key=rel)
    k = (f"; the kernel's own tiering (numa_balancing=2) keeps {100 * rel('kernel'):.0f}%"
         if "kernel" in summ else "")
    # the shift: a default that kept its hits but did not follow the moved
    # hot set is not one to recommend from this run
    r = react(d)
    shift = ""
    if r is None:
        fol = [n for n in tms if n != d and react(n) is not None]
        by = f" ({label(fol[0], dflt)} did, in {react(fol[0]):.2f} s)" if fol else ""
        shift = (f"; but it did not follow the shifted hot set within {summ[d]['reaction_s'][1:]} s in this "
                 f"run{by}")
    elif r > 1.0:
        shift = f"; it followed the shifted hot set in {r:.2f} s (target 1 s)"
    if best == d or rel(d) >= rel(best) - 0.05:
        keep = ", so keep the default" if r is not None else ""
        return (f"What this means: the default (bg_cpu {dflt:g}% of a core) keeps {100 * rel(d):.0f}% of the "
                f"oracle's fast-tier hits here, as much as a larger budget buys on this machine{keep}{shift}{k}.")
    c = cpu(best)
    cost = f" for {100 * c:.0f}% of a core" if c is not None else ""
    return (f"What this means: on this machine the default (bg_cpu {dflt:g}% of a core) keeps {100 * rel(d):.0f}% "
            f"of the oracle's fast-tier hits and bg_cpu {budget_of(best):g}% keeps {100 * rel(best):.0f}%{cost}, "
            f"so pick TIERMALLOC_CONF=bg_cpu:{budget_of(best) / 100:g} here when the hot set matters more than "
            f"that core (emulation makes each fault and TLB flush of watching memory 10-100 times dearer than on "
            f"hardware, where the default is the place to start){k}.")

print(meaning())
