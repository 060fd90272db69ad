#!/usr/bin/env python3
"""Allocator bench: the same workloads under glibc, jemalloc and tiermalloc
(each by LD_PRELOAD), interleaved run by run so that machine noise hits all
three alike.  Prints median time and peak RSS per workload as ratios to
jemalloc, their geometric means, and checks the targets:
tiermalloc <= 1.02x jemalloc time (geomean), <= 1.05x its peak RSS (geomean).
Writes every run to bench/out/alloc.csv."""
import argparse, csv, math, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = ["small", "medium", "large", "mt-small", "mt-medium", "cross-thread", "realloc"]


def find_jemalloc():
    for p in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"):
        if os.path.exists(p):
            return p
    sys.exit("libjemalloc.so.2 not found (apt-get install libjemalloc2)")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, help="runs per allocator and workload")
    ap.add_argument("--bin", default=os.path.join(TOP, "bench", "alloc", "alloc_bench"))
    ap.add_argument("--lib", default=os.environ.get("TIERMALLOC_LIB",
                                                    os.path.join(TOP, ".libs", "libtiermalloc.so")))
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "out"))
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    a = ap.parse_args()
    allocs = [("glibc", ""), ("jemalloc", find_jemalloc()), ("tiermalloc", a.lib)]
    for _, lib in allocs[1:]:
        if not os.path.exists(lib):
            sys.exit(f"{lib} not found: build first (make)")
    os.makedirs(a.out, exist_ok=True)
    rows, res = [], {}
    for w in a.workloads:
        for r in range(a.runs):
            for name, lib in allocs:
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                env.pop("TIERMALLOC_CONF", None)
                if lib:
                    env["LD_PRELOAD"] = lib
                out = subprocess.run([a.bin, w], env=env, capture_output=True, text=True, check=True)
                _, t, rss, chk = out.stdout.split()
                rows.append({"workload": w, "run": r, "allocator": name, "seconds": float(t),
                             "peak_rss_kib": int(rss), "checksum": chk})
                res.setdefault((w, name), []).append((float(t), int(rss), chk))
    with open(os.path.join(a.out, "alloc.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)

    print(f"{'workload':<13} {'glibc s':>8} {'jemalloc s':>10} {'tier s':>8} "
          f"{'glibc/je':>8} {'tier/je':>8} {'RSS je MiB':>10} {'RSS tier/je':>11}")
    tr, rr, bad = [], [], []
    for w in a.workloads:
        med = {n: statistics.median(x[0] for x in res[(w, n)]) for n, _ in allocs}
        rss = {n: statistics.median(x[1] for x in res[(w, n)]) for n, _ in allocs}
        sums = {x[2] for n, _ in allocs for x in res[(w, n)]}
        if len(sums) != 1:
            bad.append(w)
        t_ratio = med["tiermalloc"] / med["jemalloc"]
        r_ratio = rss["tiermalloc"] / rss["jemalloc"]
        tr.append(t_ratio)
        rr.append(r_ratio)
        print(f"{w:<13} {med['glibc']:8.3f} {med['jemalloc']:10.3f} {med['tiermalloc']:8.3f} "
              f"{med['glibc'] / med['jemalloc']:8.3f} {t_ratio:8.3f} {rss['jemalloc'] / 1024:10.1f} "
              f"{r_ratio:11.3f}")
    gt = math.exp(sum(map(math.log, tr)) / len(tr))
    gr = math.exp(sum(map(math.log, rr)) / len(rr))
    print(f"{'geomean':<13} {'':8} {'':10} {'':8} {'':8} {gt:8.3f} {'':10} {gr:11.3f}")
    ok_t, ok_r = gt <= 1.02, gr <= 1.05
    print(f"target time <= 1.02x jemalloc: {'met' if ok_t else 'MISSED'} ({gt:.3f}x); "
          f"peak RSS <= 1.05x: {'met' if ok_r else 'MISSED'} ({gr:.3f}x); "
          f"{a.runs} interleaved runs each, medians; csv: {os.path.join(a.out, 'alloc.csv')}")
    if bad:
        print("CHECKSUM MISMATCH between allocators in:", ", ".join(bad))
        return 1
    return 0 if ok_t and ok_r else 3


if __name__ == "__main__":
    sys.exit(main())
