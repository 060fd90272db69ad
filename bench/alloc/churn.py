#!/usr/bin/env python3
"""Large-buffer churn (alloc_bench large-churn: 4 threads each allocate a
5-25 MiB buffer, touch every page and free it, in a loop) under glibc,
jemalloc, tiermalloc (default, and large_cache:0, i.e. jemalloc's eager
purge), and tcmalloc and mimalloc where installed, each by LD_PRELOAD,
interleaved run by run.  Prints median time, minor faults and peak RSS,
and each as a ratio to jemalloc; checks tiermalloc against the targets of
issue 11 part 6 (time <= glibc's, peak RSS <= 1.1x jemalloc's), printed,
not asserted.  Writes every run to bench/out/large-churn.csv."""
import argparse, csv, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from run import find as lib  # noqa: E402  (the allocator lookup of bench/alloc/run.py)


def run(binary, n, preload, conf):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("TIERMALLOC_CONF", None)
    if preload:
        env["LD_PRELOAD"] = preload
    if conf:
        env["TIERMALLOC_CONF"] = conf
    p = subprocess.Popen([binary, "large-churn", str(n)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.stdout.close()
    if status != 0:
        sys.exit(f"large-churn failed under {preload or 'glibc'} {conf}: status {status}")
    _, t, _, _, chk = out.split()
    return float(t), ru.ru_minflt, ru.ru_maxrss, chk


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3, help="runs per allocator")
    ap.add_argument("--buffers", type=int, default=50, help="buffers per thread")
    ap.add_argument("--bin", default=os.path.join(TOP, "bench", "alloc", "alloc_bench"))
    ap.add_argument("--lib", default=os.environ.get("TIERMALLOC_LIB",
                                                    os.path.join(TOP, ".libs", "libtiermalloc.so")))
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "out"))
    a = ap.parse_args()
    je = lib("libjemalloc.so.2")
    if not je:
        sys.exit("libjemalloc.so.2 not found (apt-get install libjemalloc2)")
    if not os.path.exists(a.lib) or not os.path.exists(a.bin):
        sys.exit(f"{a.lib} or {a.bin} not found: build first (make, make bench/alloc/alloc_bench)")
    allocs = [("glibc", "", ""), ("jemalloc", je, ""), ("tiermalloc", a.lib, ""),
              ("tier-nocache", a.lib, "large_cache:0")]
    for name, so in (("tcmalloc", "libtcmalloc_minimal.so.4"), ("mimalloc", "libmimalloc.so.2")):
        path = lib(so)
        if path:
            allocs.append((name, path, ""))
    os.makedirs(a.out, exist_ok=True)
    rows, res = [], {}
    for r in range(a.runs):
        for name, so, conf in allocs:
            t, flt, rss, chk = run(a.bin, a.buffers, so, conf)
            rows.append({"run": r, "allocator": name, "seconds": t, "minflt": flt,
                         "peak_rss_kib": rss, "checksum": chk})
            res.setdefault(name, []).append((t, flt, rss, chk))
    path = os.path.join(a.out, "large-churn.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    med = {n: [statistics.median(x[i] for x in res[n]) for i in range(3)] for n, _, _ in allocs}
    j = med["jemalloc"]
    print(f"large-churn, 4 threads x {a.buffers} buffers of 5-25 MiB, {a.runs} interleaved runs, "
          f"medians; {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs")
    print(f"{'allocator':<13} {'s':>8} {'minflt':>9} {'RSS MiB':>8} {'s/je':>7} {'flt/je':>7} "
          f"{'RSS/je':>7}")
    for n, _, _ in allocs:
        t, flt, rss = med[n]
        print(f"{n:<13} {t:8.2f} {flt:9.0f} {rss / 1024:8.1f} {t / j[0]:7.3f} {flt / j[1]:7.3f} "
              f"{rss / j[2]:7.3f}")
    sums = {x[3] for n in res for x in res[n]}
    tm, g = med["tiermalloc"], med["glibc"]
    print(f"target time <= glibc's: {'met' if tm[0] <= g[0] else 'MISSED'} "
          f"({tm[0] / g[0]:.2f}x glibc); peak RSS <= 1.1x jemalloc's: "
          f"{'met' if tm[2] <= 1.1 * j[2] else 'MISSED'} ({tm[2] / j[2]:.3f}x); csv: {path}")
    if len(sums) != 1:
        print("CHECKSUM MISMATCH between allocators")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
