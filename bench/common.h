/* Helpers shared by the bench programs (gups, kv, scale, alloc_bench,
 * memc): a monotonic clock, a xorshift generator and the fast-node
 * balloon.  Header-only, static: each program stays one file to build. */
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

#ifdef BENCH_BALLOON
#include <errno.h>
#include <numaif.h>
#include <string.h>
#include <sys/mman.h>
/* Lock MIB MiB on node 0 and sleep forever, so that the fast node keeps
 * only so much free memory: bound and locked, it is neither demoted nor
 * swapped.  Run in the background; WHO prefixes the error. */
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
