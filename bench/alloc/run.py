#!/usr/bin/env python3
"""Allocator bench: the same workloads under glibc, jemalloc, mimalloc,
tcmalloc, memkind's memtier and tiermalloc (each by LD_PRELOAD), interleaved
run by run so that machine noise hits all of them alike.  Prints median time
and peak RSS per workload as ratios to jemalloc, their geometric means, and
checks tiermalloc's targets: <= 1.02x jemalloc's time (geomean, and each
workload's median; none slower than jemalloc in every round), <= 1.05x
its peak RSS (geomean); for the random large buffers (big-random,
big-mixed) time <= glibc's, minor faults <= 2x glibc's, peak RSS <=
jemalloc's.  Beside each wall-time ratio it prints the CPU-time ratio (user +
system of the child, all threads), which a loaded machine disturbs less;
the targets are checked on wall time.  Writes every run to OUT/alloc.csv.
An allocator whose library is not installed is left out, said on stderr.
ALLOC_SCALE (environment) scales every workload's step count."""
import argparse, csv, math, os, resource, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = ["small", "medium", "large", "mt-small", "mt-medium", "cross-thread", "realloc",
             "larson", "fragment", "big-churn", "big-random", "big-mixed", "rptest", "thread-churn"]
# large buffers of random sizes: measured against glibc as well
GLIBC_TARGETS = ("big-random", "big-mixed")
LIBDIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
# name, library file, extra environment
OTHERS = [("jemalloc", "libjemalloc.so.2", {}),
          ("mimalloc", "libmimalloc.so.2", {}),
          ("tcmalloc", "libtcmalloc_minimal.so.4", {}),
          # memtier needs a tier list; one DRAM tier on a one-node host
          ("memtier", "libmemtier.so.0", {"MEMKIND_MEM_TIERS": "KIND:DRAM,RATIO:1;POLICY:STATIC_RATIO"})]


def find(lib):
    for d in LIBDIRS:
        p = os.path.join(d, lib)
        if os.path.exists(p):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, help="runs per allocator and workload")
    ap.add_argument("--bin", default=os.path.join(TOP, "bench", "alloc", "alloc_bench"))
    ap.add_argument("--lib", default=os.environ.get("TIERMALLOC_LIB",
                                                    os.path.join(TOP, ".libs", "libtiermalloc.so")))
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "out"))
    ap.add_argument("--only", help="comma-separated allocators to run (jemalloc and tiermalloc always)")
    ap.add_argument("--base", help="another tiermalloc library (a build of the base branch), run in the "
                                   "same rounds as 'tier-base'")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    a = ap.parse_args()
    only = set(a.only.split(",")) | {"jemalloc", "tiermalloc"} if a.only else None
    allocs = [("glibc", "", {})] if not only or "glibc" in only else []
    for name, lib, env in OTHERS:
        if only and name not in only:
            continue
        p = find(lib)
        if p:
            allocs.append((name, p, env))
        else:
            print(f"alloc: {lib} not installed: {name} left out", file=sys.stderr)
    if not any(n == "jemalloc" for n, _, _ in allocs):
        sys.exit("libjemalloc.so.2 not found (apt-get install libjemalloc2)")
    if not os.path.exists(a.lib):
        sys.exit(f"{a.lib} not found: build first (make)")
    if a.base:
        allocs.append(("tier-base", a.base, {}))
    allocs.append(("tiermalloc", a.lib, {}))
    names = [n for n, _, _ in allocs]
    os.makedirs(a.out, exist_ok=True)
    rows, res = [], {}
    for w in a.workloads:
        for r in range(a.runs):
            for name, lib, extra in allocs:
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                env.pop("TIERMALLOC_CONF", None)
                env.update(extra)
                if lib:
                    env["LD_PRELOAD"] = lib
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run([a.bin, w], env=env, capture_output=True, text=True)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
                if out.returncode != 0:
                    sys.exit(f"alloc: {w} under {name} exited {out.returncode}: {out.stderr.strip()[-300:]}")
                _, t, rss, flt, chk = out.stdout.split()
                rows.append({"workload": w, "run": r, "allocator": name, "seconds": float(t),
                             "peak_rss_kib": int(rss), "minflt": int(flt), "checksum": chk,
                             "cpu_seconds": round(cpu, 4)})
                res.setdefault((w, name), []).append((float(t), int(rss), chk, int(flt), cpu))
    with open(os.path.join(a.out, "alloc.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)

    others = [n for n in names if n != "jemalloc"]
    print(f"{'workload':<13} {'jemalloc s':>10} " + " ".join(f"{n[:8] + '/je':>11}" for n in others) +
          f" {'RSS je MiB':>10} {'RSS tier/je':>11} {'faults tier/je':>14} {'cpu tier/je':>11}")
    tr, rr, bad = [], [], []
    for w in a.workloads:
        med = {n: statistics.median(x[0] for x in res[(w, n)]) for n in names}
        rss = {n: statistics.median(x[1] for x in res[(w, n)]) for n in names}
        flt = {n: statistics.median(x[3] for x in res[(w, n)]) for n in names}
        cpu = {n: statistics.median(x[4] for x in res[(w, n)]) for n in names}
        if len({x[2] for n in names for x in res[(w, n)]}) != 1:
            bad.append(w)
        t_ratio = med["tiermalloc"] / med["jemalloc"]
        r_ratio = rss["tiermalloc"] / rss["jemalloc"]
        tr.append(t_ratio)
        rr.append(r_ratio)
        print(f"{w:<13} {med['jemalloc']:10.3f} " + " ".join(f"{med[n] / med['jemalloc']:11.3f}" for n in others) +
              f" {rss['jemalloc'] / 1024:10.1f} {r_ratio:11.3f} {flt['tiermalloc'] / max(flt['jemalloc'], 1):14.3f}"
              f" {cpu['tiermalloc'] / max(cpu['jemalloc'], 1e-6):11.3f}")
    # per workload: median <= 1.02x, and not slower than jemalloc in every
    # round (rounds are interleaved: round r of both ran side by side)
    missed = []
    for w in a.workloads:
        je = [x[0] for x in res[(w, "jemalloc")]]
        ti = [x[0] for x in res[(w, "tiermalloc")]]
        med = statistics.median(ti) / statistics.median(je)
        every = all(t > j for t, j in zip(ti, je))
        if w in GLIBC_TARGETS and "glibc" in names:
            g = res[(w, "glibc")]
            gt_ = statistics.median(ti) / statistics.median(x[0] for x in g)
            gf = statistics.median(x[3] for x in res[(w, "tiermalloc")]) / max(statistics.median(x[3] for x in g), 1)
            rj = statistics.median(x[1] for x in res[(w, "tiermalloc")]) / statistics.median(x[1] for x in res[(w, "jemalloc")])
            ok = gt_ <= 1.0 and gf <= 2.0 and rj <= 1.0
            print(f"{w}: time {gt_:.3f}x glibc (<= 1), faults {gf:.3f}x glibc (<= 2), "
                  f"peak RSS {rj:.3f}x jemalloc (<= 1): {'met' if ok else 'MISSED'}")
            if not ok:
                missed.append(w)
        elif med > 1.02 or every:
            cj = statistics.median(x[4] for x in res[(w, "jemalloc")])
            ct = statistics.median(x[4] for x in res[(w, "tiermalloc")]) / max(cj, 1e-6)
            print(f"{w}: time {med:.3f}x jemalloc (<= 1.02){', slower in every round' if every else ''}: MISSED"
                  f" (CPU time {ct:.3f}x)")
            missed.append(w)
    gt = math.exp(sum(map(math.log, tr)) / len(tr))
    gr = math.exp(sum(map(math.log, rr)) / len(rr))
    print(f"{'geomean tiermalloc/jemalloc':<13} time {gt:.3f} peak RSS {gr:.3f}")
    ok_t, ok_r = gt <= 1.02, gr <= 1.05
    print(f"target time <= 1.02x jemalloc: {'met' if ok_t else 'MISSED'} ({gt:.3f}x); "
          f"peak RSS <= 1.05x: {'met' if ok_r else 'MISSED'} ({gr:.3f}x); "
          f"{a.runs} interleaved runs each, medians; csv: {os.path.join(a.out, 'alloc.csv')}")
    if bad:
        print("CHECKSUM MISMATCH between allocators in:", ", ".join(bad))
        return 1
    if missed:
        print("per-workload targets missed:", ", ".join(missed))
    return 0 if ok_t and ok_r and not missed else 3


if __name__ == "__main__":
    sys.exit(main())
