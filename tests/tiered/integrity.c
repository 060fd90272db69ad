/* integrity: data must never be lost or corrupted by migration.
 *   integrity SECONDS MIB THREADS
 * Writer threads each own a share of MIB MiB of 4 KiB slots (allocated with
 * malloc in 1 MiB blocks) and keep rewriting them with a pattern derived
 * from (slot, version), checking the old pattern first.  Meanwhile the main
 * thread forces migrations back and forth with tier.demote / tier.promote.
 * Prints the wrong bytes found (must be 0) and the pages moved. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tiermalloc.h"

#define SLOT 4096
#define PER_BLOCK 240 /* slots per 1 MiB malloc block (960 KiB) */

static unsigned char **slot;
static uint32_t *version;
static long nslots;
static int nthreads;
static _Atomic bool stop;
static _Atomic long wrong, checks;

static unsigned char pattern(long s, uint32_t v, size_t i)
{
	return (unsigned char)((uint64_t)s * 2654435761u ^ v * 40503u ^ i * 97u);
}

static void *writer(void *arg)
{
	long id = (long)(intptr_t)arg;
	uint64_t r = (uint64_t)id * 0x9e3779b97f4a7c15ull + 1;
	long lo = nslots * id / nthreads, hi = nslots * (id + 1) / nthreads;
	while (!atomic_load(&stop)) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		long s = lo + (long)(r % (uint64_t)(hi - lo));
		unsigned char *p = slot[s];
		long bad = 0;
		for (size_t i = 0; i < SLOT; i++)
			bad += p[i] != pattern(s, version[s], i);
		uint32_t v = ++version[s];
		for (size_t i = 0; i < SLOT; i++)
			p[i] = pattern(s, v, i);
		if (bad)
			atomic_fetch_add(&wrong, bad);
		atomic_fetch_add(&checks, 1);
	}
	return NULL;
}

static uint64_t stat64(const char *n)
{
	uint64_t v = 0;
	size_t l = sizeof(v);
	tier_mallctl(n, &v, &l, NULL, 0);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	double secs = atof(argv[1]);
	long mib = atol(argv[2]);
	nthreads = atoi(argv[3]);
	nslots = mib * PER_BLOCK;
	slot = calloc((size_t)nslots, sizeof(*slot));
	version = calloc((size_t)nslots, sizeof(*version));
	for (long b = 0; b < mib; b++) {
		unsigned char *blk = malloc(PER_BLOCK * SLOT);
		for (long k = 0; k < PER_BLOCK; k++) {
			long s = b * PER_BLOCK + k;
			slot[s] = blk + k * SLOT;
			for (size_t i = 0; i < SLOT; i++)
				slot[s][i] = pattern(s, 0, i);
		}
	}
	pthread_t th[64];
	for (long t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t want = (size_t)mib << 19, moved = 0, len = sizeof(moved), total = 0;
	int rounds = 0, fails = 0;
	do {
		/* half of it down, then everything slow back up */
		if (tier_mallctl(rounds & 1 ? "tier.promote" : "tier.demote", &moved, &len, &want,
				 sizeof(want)))
			fails++;
		total += moved;
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	atomic_store(&stop, true);
	for (long i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* a last full check of every slot */
	for (long s = 0; s < nslots; s++)
		for (size_t i = 0; i < SLOT; i++)
			if (slot[s][i] != pattern(s, version[s], i))
				atomic_fetch_add(&wrong, 1);
	printf("wrong_bytes %ld checks %ld rounds %d failed_actions %d bytes_moved %zu pages_moved %llu "
	       "failed_pages %llu\n",
	       atomic_load(&wrong), atomic_load(&checks), rounds, fails, total,
	       (unsigned long long)stat64("stats.moved_pages"),
	       (unsigned long long)stat64("stats.failed_pages"));
	return atomic_load(&wrong) ? 1 : 0;
}
