#!/usr/bin/env python3
"""Summary, plots and the quick mode's checks for one bench/run output folder.

  report.py [--quick] OUT     summary.md on stdout; PNG plots into OUT
  report.py --check OUT       TAP lines: is every output there and well
                              formed (columns, rows, numbers, every
                              contender, PNGs)?  Exit 1 if not.
Every figure is a ratio measured side by side in one run: to the oracle
(tiering), to jemalloc (allocators)."""
import csv, math, os, re, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hitplot import default_bg_pct, gnuplot, hit_plot  # noqa: E402

VM_PARTS = [("gups-uniform", "GUPS, uniform"), ("gups-hot", "GUPS, hot set"),
            ("gups-shift", "GUPS, shifting hot set"), ("kv", "Zipf KV, 90% gets"),
            ("kv-ro", "Zipf KV, read-only")]
SHIFTED = {"gups-shift", "kv", "kv-ro"}
GUPS_COLS = ["name", "t", "phase", "hit_ratio", "hot_fast", "mups"]
SRV_COLS = ["name", "server", "op", "requests", "rps", "p50_us", "p99_us", "migrated_pages"]
ALLOC_COLS = ["workload", "run", "allocator", "seconds", "peak_rss_kib", "minflt", "checksum", "cpu_seconds"]
ALLOCATORS = ["glibc", "jemalloc", "mimalloc", "tcmalloc", "memtier", "tiermalloc"]
SERVER_OPS = [("redis", "SET"), ("redis", "GET"), ("memcached", "GET90")]
ORDER = ("oracle", "tiermalloc", "kernel", "damon", "memtier", "first-touch")


def params(out):
    p = {}
    try:
        for line in open(os.path.join(out, "meta.txt")):
            if line.startswith("params:"):
                p.update(kv.split("=", 1) for kv in line.split()[1:])
    except OSError:
        pass
    return p


def contenders(p):
    budgets = p.get("GUPS_BUDGETS", "1,20").split(",")
    return (["oracle", "tiermalloc-place"] + [f"tiermalloc-{b}%" for b in budgets] +
            ["kernel", "first-touch", "damon", "memtier-STATIC", "memtier-DYNAMIC"])


def order_key(n):
    return (next((i for i, o in enumerate(ORDER) if n.startswith(o)), 9), n)


def read_csv(path):
    try:
        with open(path, newline="") as f:
            r = csv.reader(f)
            rows = list(r)
    except OSError:
        return None, []
    if not rows:
        return [], []
    return rows[0], rows[1:]


def dicts(path):
    head, rows = read_csv(path)
    if not head:
        return []
    return [dict(zip(head, r)) for r in rows if len(r) == len(head)]


def log_words(path):
    """A part's log, line by line, split into words (nothing if unreadable)."""
    try:
        with open(path) as f:
            for line in f:
                yield line.split()
    except OSError:
        return


def log_info(path):
    summ, mig = {}, {}
    for w in log_words(path):
        if w[:1] == ["summary"] and len(w) >= 3:
            summ[w[1]] = dict(x.split("=", 1) for x in w[2:] if "=" in x)
        elif w[:1] == ["migrated"] and len(w) == 3:
            mig[w[1]] = int(w[2])
    return summ, mig


def fast_mib(path):
    """kv's "fast NAME items_mib= cdf_mib= prob_mib= idx_mib=" lines: the
    program's memory on node 0 at its end.  Contenders that do not bind
    their memory may use node 0's watermark reserve as well (the balloon
    leaves it free), so the same FAST can mean more for them."""
    out = {}
    for w in log_words(path):
        if w[:1] == ["fast"] and len(w) >= 3:
            v = [fnum(x.split("=", 1)[1]) for x in w[2:] if "_mib=" in x]
            if v and None not in v:
                out[w[1]] = sum(v)
    return out


def fnum(x):
    try:
        v = float(str(x).lstrip(">"))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, spec=".3f", none="-"):
    return none if x is None else format(x, spec)


def min_migration_mib(part, p):
    """The least a placement must move: the hot set in (and as much out,
    the fast tier being full) once per hot set placed."""
    h = fnum(p.get("B_H"))
    if h is None:
        return None
    return {"gups-hot": 2 * h, "gups-shift": 4 * h}.get(part)


def vm_part(out, part, title, p, tgt):
    rows = dicts(os.path.join(out, part + ".csv"))
    summ, mig = log_info(os.path.join(out, part + ".log"))
    if not rows:
        print(f"### {title}\n\nno data ({part}.csv missing or empty: see {part}.log)\n")
        return {}
    names = sorted({r["name"] for r in rows}, key=order_key)
    ops = {n: statistics.mean(fnum(r["mups"]) or 0 for r in rows if r["name"] == n) for n in names}
    oracle = fnum(summ.get("oracle", {}).get("steady_hit"))
    mn = min_migration_mib(part, p)
    fm = fast_mib(os.path.join(out, part + ".log"))
    print(f"### {title}\n")
    print("| contender | steady hit | vs oracle | reaction after the shift | ops vs oracle | migrated MiB | vs minimum | other CPU, % of a core |"
          + (" node 0 MiB at the end |" if fm else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|" if fm else ""))
    res = {}
    for n in names:
        s = summ.get(n, {})
        hit = fnum(s.get("steady_hit"))
        r = s.get("reaction_s", "")
        if n == "oracle":
            react = "static"
        elif part not in SHIFTED:
            react = "-"
        elif r.startswith(">"):
            react = f"not within {r[1:]} s"
        else:
            react = f"{r} s" if r else "-"
        mib = mig[n] * 4096 / 2**20 if n in mig else None
        rel = ratio(hit, oracle)
        ro = ratio(ops[n], ops.get("oracle"))
        vm = ratio(mib, mn) if mn else None
        oc = fnum(s.get("other_cpu"))
        oc = oc if oc is not None and oc >= 0 else None
        res[n] = {"hit": hit, "rel": rel, "react": r, "ops": ro, "mig": vm, "mib": mib, "cpu": oc}
        print(f"| {n} | {fmt(hit, '.4f')} | {fmt(rel and 100 * rel, '.1f')}% | {react} | "
              f"{fmt(ro)} | {fmt(mib, '.1f')} | {fmt(vm, '.2f') if mn else 'n/a'} | {fmt(oc and 100 * oc, '.1f')} |"
              + (f" {fmt(fm.get(n), '.1f')} |" if fm else ""))
    print()
    if mn:
        print(f"Minimum migration: {mn:.0f} MiB (the hot set in and as much out, per hot set placed).\n")
    print("Other CPU: the guest's CPU time beyond the workload thread's own over the run (a tiermalloc "
          "thread, kdamond, kernel migration), share of one core; costs inside the workload's thread "
          "(hinting and write faults) show in its operations instead.\n")
    if fm:
        print("Node 0 MiB at the end: the program's items and arrays on the fast node when it ended (the fast "
              "tier is FAST MiB; a contender that does not bind its memory may also fill node 0's watermark "
              "reserve, which the balloon leaves free).\n")
    # hit ratio over time, the shift marked
    a = fnum(p.get("B_A")) if part in SHIFTED else None
    hit_plot(rows, names, os.path.join(out, part + ".png"),
             f"{title}: share of accesses served by the fast tier (tiered VM)", a, default_bg_pct())
    for n, v in res.items():
        tgt.setdefault(n, {})[part] = v
    return res


def bars(out, name, title, ylabel, cols, rows):
    """clustered bars: rows = [(label, [value or None per column])]"""
    data = os.path.join(out, name + ".dat")
    with open(data, "w") as f:
        f.write("label " + " ".join(f'"{c}"' for c in cols) + "\n")
        for label, vals in rows:
            f.write(f'"{label}" ' + " ".join("?" if v is None else f"{v:.4f}" for v in vals) + "\n")
    gnuplot(f"""set terminal pngcairo size 1000,480
set output '{os.path.join(out, name + ".png")}'
set title '{title}'
set ylabel '{ylabel}'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set key outside right
set yrange [0:*]
plot for [i=2:{len(cols) + 1}] '{data}' using i:xtic(1) title columnheader(i)
""")


def servers(out, p):
    rows = dicts(os.path.join(out, "servers.csv"))
    print("### Servers in the tiered VM (redis-server + redis-benchmark, memcached + bench/memc)\n")
    if not rows:
        print("no data (servers.csv missing or empty: see servers.log)\n")
        return {}
    val = {(r["name"], r["server"], r["op"]): r for r in rows}
    names = sorted({r["name"] for r in rows}, key=order_key)
    print("| contender | " + " | ".join(f"{s} {o} req/s vs oracle | p99 vs oracle" for s, o in SERVER_OPS) +
          " | req/s vs first touch (mean) |")
    print("|---|" + "---|---|" * len(SERVER_OPS) + "---|")
    res = {}
    for n in names:
        cells, rel, ft = [], [], []
        for s, o in SERVER_OPS:
            r, ref, f0 = val.get((n, s, o)), val.get(("oracle", s, o)), val.get(("first-touch", s, o))
            rr = ratio(fnum(r["rps"]), fnum(ref["rps"])) if r and ref else None
            pr = ratio(fnum(r["p99_us"]), fnum(ref["p99_us"])) if r and ref else None
            fr = ratio(fnum(r["rps"]), fnum(f0["rps"])) if r and f0 else None
            cells += [fmt(rr), fmt(pr)]
            rel.append(rr)
            if fr is not None:
                ft.append(fr)
        res[n] = rel
        print(f"| {n} | " + " | ".join(cells) + f" | {fmt(statistics.mean(ft) if ft else None)} |")
    print("\nAbsolute (req/s, p99 us): " + "; ".join(
        f"{n} " + ", ".join(f"{s} {o} {val[(n, s, o)]['rps']}/{val[(n, s, o)]['p99_us']}"
                            for s, o in SERVER_OPS if (n, s, o) in val) for n in names) + ".\n")
    share = item_shares(os.path.join(out, "servers.log"))
    if share:
        print("memcached's items (bench/memc/memc -W after the measured run: each key's value found in the "
              "server's memory, its node asked of the kernel): the share of the Zipf gets served from node 0, "
              "against the page oracle (the best placement of the fast tier's size over the server's item "
              "pages, the same for every contender up to where the allocator put the items).\n")
        print("| contender | item hit share | page oracle | vs page oracle | items found |")
        print("|---|---|---|---|---|")
        for n in names:
            h, o, f = share.get(n, (None, None, None))
            print(f"| {n} | {fmt(h, '.4f')} | {fmt(o, '.4f')} | {fmt(ratio(h, o) and 100 * ratio(h, o), '.1f')}% | "
                  f"{fmt(f, '.0f')} |")
        print()
    bars(out, "summary-servers", "Servers in the tiered VM: requests per second relative to the oracle",
         "req/s vs oracle", [f"{s} {o}" for s, o in SERVER_OPS], [(n, res[n]) for n in names])
    return res


def alloc(out):
    rows = dicts(os.path.join(out, "alloc.csv"))
    print("### Allocator workloads on the host (time and peak RSS, ratios to jemalloc; medians)\n")
    if not rows:
        print("no data (alloc.csv missing or empty: see alloc.log)\n")
        return {}
    ws = list(dict.fromkeys(r["workload"] for r in rows))
    al = [a for a in ALLOCATORS if any(r["allocator"] == a for r in rows)]
    med = {}
    for w in ws:
        for a in al:
            x = [r for r in rows if r["workload"] == w and r["allocator"] == a]
            if x:
                med[(w, a)] = (statistics.median(float(r["seconds"]) for r in x),
                               statistics.median(int(r["peak_rss_kib"]) for r in x))
    print("| workload | jemalloc s | " + " | ".join(f"{a} time" for a in al if a != "jemalloc") +
          " | jemalloc RSS MiB | " + " | ".join(f"{a} RSS" for a in al if a != "jemalloc") + " |")
    print("|---|---|" + "---|" * (len(al) - 1) + "---|" + "---|" * (len(al) - 1))
    res = {a: [] for a in al}
    for w in ws:
        je = med.get((w, "jemalloc"))
        if not je:
            continue
        tr = {a: ratio(med[(w, a)][0], je[0]) if (w, a) in med else None for a in al}
        rr = {a: ratio(med[(w, a)][1], je[1]) if (w, a) in med else None for a in al}
        for a in al:
            res[a].append((w, tr[a], rr[a]))
        print(f"| {w} | {je[0]:.3f} | " + " | ".join(fmt(tr[a]) for a in al if a != "jemalloc") +
              f" | {je[1] / 1024:.1f} | " + " | ".join(fmt(rr[a]) for a in al if a != "jemalloc") + " |")
    geo = {}
    for a in al:
        t = [x[1] for x in res[a] if x[1]]
        r = [x[2] for x in res[a] if x[2]]
        geo[a] = (math.exp(sum(map(math.log, t)) / len(t)) if t else None,
                  math.exp(sum(map(math.log, r)) / len(r)) if r else None)
    print("| geomean | | " + " | ".join(fmt(geo[a][0]) for a in al if a != "jemalloc") + " | | " +
          " | ".join(fmt(geo[a][1]) for a in al if a != "jemalloc") + " |\n")
    sums = {w: {r["checksum"] for r in rows if r["workload"] == w} for w in ws}
    bad = [w for w, s in sums.items() if len(s) != 1]
    if bad:
        print(f"CHECKSUM MISMATCH between allocators in: {', '.join(bad)}\n")
    tmap = {(w, a): t for a in al for w, t, _ in res[a]}
    bars(out, "summary-alloc", "Allocator workloads on the host: time relative to jemalloc",
         "time vs jemalloc", al, [(w, [tmap.get((w, a)) for a in al]) for w in ws])
    return {"geo": geo, "per": res}


def targets(tgt, srv, al, footprint=None):
    print("### Targets (issue 11, part 5)\n")
    tms = sorted(n for n in tgt if n.startswith("tiermalloc-") and n != "tiermalloc-place")
    for n in tms:
        parts = tgt[n]
        steady = [(k, v["rel"]) for k, v in parts.items() if v["rel"] is not None and k != "gups-uniform"]
        miss = [f"{k} {100 * r:.1f}%" for k, r in steady if r < 0.95]
        print(f"* {n}, steady hit >= 95% of the oracle on every workload: "
              f"{'met' if steady and not miss else 'MISSED'}" + (f" ({', '.join(miss)})" if miss else ""))
        for k in sorted(SHIFTED & set(parts)):
            mine = parts[k]["react"]
            if not mine:
                continue
            mv = fnum(mine) if not mine.startswith(">") else math.inf
            others = {o: tgt[o][k]["react"] for o in tgt if o != n and o != "oracle" and k in tgt[o]
                      and not o.startswith("tiermalloc")}
            worse = [o for o, r in others.items() if r and not r.startswith(">") and (fnum(r) or 0) <= mv]
            print(f"* {n}, {k}: reaction {mine} s, ahead of every contender: "
                  f"{'met' if mv != math.inf and not worse else 'MISSED'}" + (f" (not ahead of {', '.join(worse)})" if worse else ""))
        ops = [(k, v["ops"]) for k, v in parts.items() if v["ops"] is not None]
        lo = [f"{k} {o:.3f}" for k, o in ops if o < 0.98]
        print(f"* {n}, >= 0.98x the oracle's operations: {'met' if ops and not lo else 'MISSED'}" +
              (f" ({', '.join(lo)})" if lo else ""))
        mg = [(k, v["mig"]) for k, v in parts.items() if v["mig"] is not None]
        hi = [f"{k} {m:.2f}x" for k, m in mg if m > 1.2]
        print(f"* {n}, bytes migrated <= 1.2x the minimum: {'met' if mg and not hi else 'MISSED'}" +
              (f" ({', '.join(hi)})" if hi else (f" ({', '.join(f'{k} {m:.2f}x' for k, m in mg)})" if mg else "")))
        u = parts.get("gups-uniform", {}).get("mib")
        if u is not None and footprint:
            # issue 19: where every block is alike nothing is gained by moving
            print(f"* {n}, uniform GUPS: bytes migrated < 5% of the footprint: "
                  f"{'met' if u < 0.05 * footprint else 'MISSED'} ({u:.1f} MiB, {100 * u / footprint:.1f}%)")
        if n in srv:
            r = [x for x in srv[n] if x is not None]
            print(f"* {n}, server throughput >= 0.95x the oracle's: "
                  f"{'met' if r and min(r) >= 0.95 else 'MISSED'} ({', '.join(f'{x:.3f}' for x in r)})")
    if al and "tiermalloc" in al.get("geo", {}):
        g = al["geo"]["tiermalloc"][0]
        per = [f"{w} {t:.3f}" for w, t, _ in al["per"]["tiermalloc"] if t and t > 1.02]
        print(f"* tiermalloc, allocator workloads <= 1.02x jemalloc's time: geomean {fmt(g)}; "
              f"{'met on every workload' if not per else 'MISSED on ' + ', '.join(per)}")
    print()


def report(out, quick):
    p = params(out)
    try:
        meta = open(os.path.join(out, "meta.txt")).read().strip()
    except OSError:
        meta = "(no meta.txt)"
    print(f"## Bench summary{' (quick mode: sizes and times too small to mean anything)' if quick else ''}\n")
    print("```\n" + meta + "\n```\n")
    tgt = {}
    for part, title in VM_PARTS:
        if os.path.exists(os.path.join(out, part + ".csv")):
            vm_part(out, part, title, p, tgt)
    if tgt:
        names = sorted(tgt, key=order_key)
        parts = [k for k, _ in VM_PARTS if any(k in tgt[n] for n in names)]
        bars(out, "summary-hit", "Steady fast-tier hit ratio relative to the oracle (tiered VM)",
             "hit ratio vs oracle", parts, [(n, [tgt[n].get(k, {}).get("rel") for k in parts]) for n in names])
    srv = servers(out, p) if os.path.exists(os.path.join(out, "servers.csv")) else {}
    al = alloc(out) if os.path.exists(os.path.join(out, "alloc.csv")) else {}
    targets(tgt, srv, al, fnum(p.get("B_F")))
    print("Plots: " + ", ".join(sorted(f for f in os.listdir(out) if f.endswith(".png"))))


# ---------------------------------------------------------------- checks
class Tap:
    def __init__(self):
        self.n = self.bad = 0

    def ok(self, cond, what):
        self.n += 1
        self.bad += not cond
        print(f"{'ok' if cond else 'not ok'} {self.n} - {what}")
        return cond


def is_png(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 1000
    except OSError:
        return False


def numbers_parse(rows, cols, skip):
    return all(len(r) == len(cols) and all(fnum(v) is not None for i, v in enumerate(r) if cols[i] not in skip)
               for r in rows)


def check(out):
    t = Tap()
    p = params(out)
    t.ok(bool(p), "meta.txt has the run's parameters")
    want = contenders(p)
    vm, host = p.get("vm") != "0", p.get("host") != "0"
    parts = p.get("parts", ",".join(k for k, _ in VM_PARTS) + ",servers").split(",")
    for part, _ in [x for x in VM_PARTS if x[0] in parts] if vm else []:
        head, rows = read_csv(os.path.join(out, part + ".csv"))
        t.ok(head == GUPS_COLS, f"{part}.csv: columns {','.join(GUPS_COLS)}")
        t.ok(len(rows) > 0 and numbers_parse(rows, GUPS_COLS, {"name"}),
             f"{part}.csv: {len(rows)} rows, every number parses")
        names = {r[0] for r in rows}
        summ, mig = log_info(os.path.join(out, part + ".log"))
        part_exited(t, out, part)
        miss = [n for n in want if n not in names or n not in summ or fnum(summ[n].get("steady_hit")) is None]
        t.ok(not miss, f"{part}: rows and a summary for every contender" + (f" (missing {', '.join(miss)})" if miss else ""))
        hits = [fnum(r[3]) for r in rows if len(r) == 6]
        t.ok(hits and all(h is not None and 0 <= h <= 1 for h in hits), f"{part}: hit ratios within [0, 1]")
        t.ok(not [n for n in want if n not in mig], f"{part}: pages migrated counted for every contender")
        # the heat-driven contenders must have moved something: a count of
        # 0 is what a broken migrator or silent heat sources give
        dyn = [n for n in want if n.startswith("tiermalloc-") and n.endswith("%")]
        still = [n for n in dyn if mig.get(n, 0) <= 0]
        t.ok(dyn and not still, f"{part}: {', '.join(f'{n} {mig.get(n, 0)}' for n in dyn)} pages migrated, "
             "above 0" + (f" (none for {', '.join(still)})" if still else ""))
        cpu = {n: fnum(summ.get(n, {}).get("other_cpu")) for n in want}
        # bench_cpu_other gives -1 where it could not measure; 0 is a
        # measurement (kv's damon: the hot set already fast, kdamond idle)
        t.ok(all(c is not None and c >= 0 for c in cpu.values()),
             f"{part}: other CPU measured (not -1) for every contender")
        t.ok(is_png(os.path.join(out, part + ".png")), f"{part}.png written")
        balloon_held(t, out, part)
    if vm and "servers" in parts:
        check_servers(t, out, want)
        balloon_held(t, out, "servers")
    if host:
        check_alloc(t, out)
    pngs = (["summary-hit"] + (["summary-servers"] if "servers" in parts else []) if vm else []) + (["summary-alloc"] if host else [])
    for png in pngs:
        t.ok(is_png(os.path.join(out, png + ".png")), f"{png}.png written")
    try:
        s = open(os.path.join(out, "summary.md")).read()
    except OSError:
        s = ""
    secs = ([f"### {t}" for k, t in VM_PARTS if k in parts] + (["### Servers"] if "servers" in parts else [])
            if vm else []) + (["### Allocator"] if host else [])
    t.ok(all(h in s for h in secs + ["### Targets"]),
         "summary.md has the " + ", ".join(x[4:] for x in secs) + " and targets sections")
    print(f"1..{t.n}")
    return 1 if t.bad else 0


def part_exited(t, out, part):
    """bench/guest.sh's "# part NAME: exit N" line: the part ran to its end."""
    try:
        with open(os.path.join(out, part + ".log")) as f:
            m = re.search(rf"^# part {re.escape(part)}: exit (\d+),", f.read(), re.M)
    except OSError:
        m = None
    t.ok(m is not None and m.group(1) == "0", f"{part}: the part exited 0 ({m.group(1) if m else 'no exit line'})")


def balloon_held(t, out, part):
    """bench/balloon.sh's balloon_check: node 0 gained no room during any
    contender (DAMOS once demoted a locked balloon, and the contenders
    after it had four times the fast memory of the others)."""
    try:
        with open(os.path.join(out, part + ".log")) as f:
            bad = re.findall(r"^# balloon: .*after (\S+),.*not comparable", f.read(), re.M)
    except OSError:
        bad = ["(no log)"]
    t.ok(not bad, f"{part}: node 0's balloon held through every contender" +
         (f" (not after {', '.join(bad)})" if bad else ""))


def item_shares(path):
    """guest.sh's "itemshare NAME memcached HIT ORACLE FOUND" lines."""
    out = {}
    for w in log_words(path):
        if w[:1] == ["itemshare"] and len(w) == 6:
            out[w[1]] = (fnum(w[3]), fnum(w[4]), fnum(w[5]))
    return out


def check_servers(t, out, want):
    part_exited(t, out, "servers")
    share = item_shares(os.path.join(out, "servers.log"))
    bad = [n for n in want if n not in share or None in share[n] or not share[n][2] or
           not 0 <= share[n][0] <= 1 or not 0 < share[n][1] <= 1]
    t.ok(not bad, "servers: memcached's item hit share and page oracle found for every contender" +
         (f" (missing or out of range: {', '.join(bad)})" if bad else ""))
    head, rows = read_csv(os.path.join(out, "servers.csv"))
    t.ok(head == SRV_COLS, f"servers.csv: columns {','.join(SRV_COLS)}")
    t.ok(len(rows) > 0 and numbers_parse(rows, SRV_COLS, {"name", "server", "op"}),
         f"servers.csv: {len(rows)} rows, every number parses")
    have = {(r[0], r[1], r[2]) for r in rows if len(r) == len(SRV_COLS) and (fnum(r[4]) or 0) > 0}
    miss = [f"{n}/{s} {o}" for n in want for s, o in SERVER_OPS if (n, s, o) not in have]
    t.ok(not miss, "servers: req/s > 0 for every contender, redis SET and GET, memcached" +
         (f" (missing {', '.join(miss)})" if miss else ""))


def check_alloc(t, out):
    head, rows = read_csv(os.path.join(out, "alloc.csv"))
    t.ok(head == ALLOC_COLS, f"alloc.csv: columns {','.join(ALLOC_COLS)}")
    t.ok(len(rows) > 0 and numbers_parse(rows, ALLOC_COLS, {"workload", "allocator"}),
         f"alloc.csv: {len(rows)} rows, every number parses")
    ws = {r[0] for r in rows}
    have = {(r[0], r[2]) for r in rows if len(r) == len(ALLOC_COLS)}
    miss = [f"{w}/{a}" for w in sorted(ws) for a in ALLOCATORS if (w, a) not in have]
    t.ok(ws and not miss, f"alloc: {len(ws)} workloads under each of {', '.join(ALLOCATORS)}" +
         (f" (missing {', '.join(miss)})" if miss else ""))
    sums = {}
    for r in rows:
        if len(r) == len(ALLOC_COLS):
            sums.setdefault(r[0], set()).add(r[6])
    bad = [w for w, s in sums.items() if len(s) != 1]
    t.ok(sums and not bad, "alloc: every allocator computed the same checksum per workload" +
         (f" (differ: {', '.join(bad)})" if bad else ""))


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "--check":
        return check(a[1])
    quick = "--quick" in a
    a = [x for x in a if x != "--quick"]
    if len(a) != 1 or not os.path.isdir(a[0]):
        print(__doc__, file=sys.stderr)
        return 2
    report(a[0], quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
