/* Helpers shared by the bench programs (gups, kv, scale, alloc_bench,
 * memc): a monotonic clock, the machine's CPU beyond the caller's, a
 * xorshift generator, weights by page and the fast-node balloon.  Header-only, static: each program stays one file to build. */
#ifndef TIER_BENCH_COMMON_H
#define TIER_BENCH_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of the whole machine beyond the calling thread's own since
 * bench_cpu_start, as a share of one core: tiering's background work (a
 * tiermalloc thread, kdamond, the kernel's migration and reclaim).  What
 * tiering costs inside the program's thread (NUMA hinting faults, write
 * faults) is in the thread's own time and shows in its operations.
 * /proc/stat counts in ticks: about +-1% of a core over a 20 s run. */
struct bench_cpu {
	double t, busy, self;
};

static inline double bench_busy_secs(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		       &v[6], &v[7]);
	fclose(f);
	if (n < 4)
		return -1;
	/* user nice system idle iowait irq softirq steal: all but idle, iowait */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static inline double bench_self_secs(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void bench_cpu_start(struct bench_cpu *m)
{
	m->t = now();
	m->busy = bench_busy_secs();
	m->self = bench_self_secs();
}

/* -1 when /proc/stat cannot be read */
static inline double bench_cpu_other(const struct bench_cpu *m)
{
	double busy = bench_busy_secs(), dt = now() - m->t;
	if (busy < 0 || m->busy < 0 || dt <= 0)
		return -1;
	double other = (busy - m->busy - (bench_self_secs() - m->self)) / dt;
	return other > 0 ? other : 0;
}

/* xorshift64: fast, deterministic for a seed, good enough for key choice */
static inline uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The first rank whose cumulative weight cdf[rank] reaches u (cdf
 * ascending, n entries): inverse-CDF sampling of a Zipf distribution. */
static inline long cdf_rank(const double *cdf, long n, double u)
{
	long lo = 0, hi = n - 1;
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Weights by page, for the page oracles (kv -o, memc -W): each entry a
 * page and the share of accesses it draws. */
struct bench_pw {
	uintptr_t page;
	double w;
};

static inline int bench_pw_by_page(const void *a, const void *b)
{
	uintptr_t x = ((const struct bench_pw *)a)->page, y = ((const struct bench_pw *)b)->page;
	return x < y ? -1 : x > y;
}

/* heaviest first */
static inline int bench_pw_by_weight(const void *a, const void *b)
{
	double x = ((const struct bench_pw *)a)->w, y = ((const struct bench_pw *)b)->w;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Sort v[0..n) by page and merge the entries of a page into one (weights
 * added); returns the pages. */
static inline long bench_pw_pages(struct bench_pw *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_pw_by_page);
	long np = 0;
	for (long i = 0; i < n; i++)
		if (np && v[np - 1].page == v[i].page)
			v[np - 1].w += v[i].w;
		else
			v[np++] = v[i];
	return np;
}

#ifdef BENCH_BALLOON
#include <errno.h>
#include <numaif.h>
#include <string.h>
#include <sys/mman.h>
/* Lock MIB MiB on node 0 and sleep forever, so that the fast node keeps
 * only so much free memory: bound and locked, it is neither reclaimed nor
 * swapped, but migration may still move it (DAMOS migrate_cold did:
 * bench/balloon.sh takes node 0's huge pages first and this only for the
 * rest).  Run in the background; WHO prefixes the error. */
static inline int bench_balloon(size_t mib, const char *who)
{
	size_t len = mib << 20;
	unsigned long n0 = 1;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mbind(m, len, MPOL_BIND, &n0, 65, 0) || mlock(m, len)) {
		fprintf(stderr, "%s: balloon: %s\n", who, strerror(errno));
		return 1;
	}
	printf("balloon %zu MiB on node 0\n", len >> 20);
	fflush(stdout);
	for (;;)
		pause();
}
#endif
#endif
