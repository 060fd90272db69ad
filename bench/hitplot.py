"""The hit-ratio-over-time plot of the tiered-VM benches (bench/gups/report.py,
bench/report.py), and the names a reader sees for each contender.

Each contender family has its own colour and dash pattern; tiermalloc's
lines are solid and thick, the baselines thin and dashed; the legend sits
outside the data, and a note under the plot says what the oracle is."""
import os, subprocess, sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gnuplot(script):
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
        return True
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"(no plot: {e})", file=sys.stderr)
        return False


def default_bg_pct():
    """bg_cpu's default in % of a core, from the knob table of the built
    command (None when it cannot be asked)."""
    try:
        out = subprocess.run([os.path.join(TOP, "tools", "tiermalloc"), "knobs"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "bg_cpu" and len(f) > 2:
            try:
                return float(f[2]) * 100
            except ValueError:
                return None
    return None


def budget_of(name):
    """20.0 for tiermalloc-20%, None for any other contender."""
    if name.startswith("tiermalloc-") and name.endswith("%"):
        try:
            return float(name[len("tiermalloc-"):-1])
        except ValueError:
            return None
    return None


def label(name, default_pct):
    b = budget_of(name)
    if b is not None:
        return f"tiermalloc, default (bg_cpu {b:g}%)" if b == default_pct else f"tiermalloc, bg_cpu {b:g}%"
    return {"oracle": "oracle (static, see below)",
            "tiermalloc-place": "tiermalloc, placement only",
            "kernel": "kernel NUMA-balancing tiering",
            "first-touch": "first touch (no tiering)",
            "damon": "kernel DAMON tiering (DAMOS)",
            "memtier-STATIC": "memkind memtier, static ratio",
            "memtier-DYNAMIC": "memkind memtier, by size"}.get(name, name)


# (colour, dash pattern, width) per contender; tiermalloc's budgets take
# TM_COLOURS in order, the default first
TM_COLOURS = ["#d62728", "#ff7f0e", "#8c1aff", "#b8860b"]
STYLE = {"oracle": ("#000000", "(12,6)", 2.0),
         "tiermalloc-place": ("#e377c2", "solid", 2.5),
         "kernel": ("#1f77b4", "(8,5)", 2.0),
         "first-touch": ("#7f7f7f", "(2,5)", 2.0),
         "damon": ("#2ca02c", "(14,5,3,5)", 2.0),
         "memtier-STATIC": ("#17becf", "(6,4,2,4,2,4)", 2.0),
         "memtier-DYNAMIC": ("#8c564b", "(20,6)", 2.0)}


def style(name, tm_index):
    if budget_of(name) is not None:
        return TM_COLOURS[tm_index % len(TM_COLOURS)], "solid", 3.5
    return STYLE.get(name, ("#bcbd22", "(3,3)", 2.0))


def hit_plot(rows, names, png, title, shift_at=None, default_pct=None):
    """rows: dicts with name, t, hit_ratio; names in legend order."""
    data = os.path.splitext(png)[0] + ".dat"
    with open(data, "w") as f:
        for n in names:
            f.write(f"# {n}\n")
            for r in rows:
                if r["name"] == n:
                    f.write(f"{r['t']} {r['hit_ratio']}\n")
            f.write("\n\n")
    # the default budget first among tiermalloc's colours
    tms = sorted((n for n in names if budget_of(n) is not None), key=lambda n: (budget_of(n) != default_pct, n))
    lines = []
    for i, n in enumerate(names):
        colour, dash, width = style(n, tms.index(n) if n in tms else 0)
        lines.append(f"'{data}' index {i} using 1:2 with lines lw {width} lc rgb '{colour}' dt {dash} "
                     f"title '{label(n, default_pct)}'")
    shift = ""
    if shift_at is not None:
        shift = (f"set arrow from {shift_at},0 to {shift_at},1.05 nohead lc rgb '#555555' dt 3\n"
                 f"set label 'hot set shifts' at {shift_at},1.0 offset 0.5,0 tc rgb '#555555'\n")
    oracle = ("oracle: the first hot set placed on the fast tier up front and never moved (static placement); "
              "after the shift it still holds the old hot set, so its hit ratio falls.")
    return gnuplot(f"""set terminal pngcairo noenhanced size 1150,560 font ',10'
set output '{png}'
set title '{title}'
set xlabel 'seconds'
set ylabel 'fast-tier hit ratio'
set yrange [0:1.05]
set grid ytics lc rgb '#dddddd'
set key outside right top vertical Left reverse width 1 spacing 1.3
set bmargin 6
set label '{oracle}' at screen 0.01,0.025 font ',9'
{shift}plot {", ".join(lines)}
""")
