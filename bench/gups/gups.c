/* gups: random read-modify-write updates over a footprint with a hot set,
 * reporting over time the fast-tier hit ratio: the share of its accesses
 * that land on fast-tier pages, computed from the known access
 * distribution and move_pages(2) status queries.
 *
 *   gups [options]
 *     -f MIB    footprint (256)            -H MIB   hot set size (32)
 *     -p P      share of accesses to the hot set (0.9)
 *     -m MODE   uniform | hot | shift (shift)
 *     -a SECS   first phase (10)           -b SECS  after the shift (10)
 *     -o FAST   oracle: place the hot set plus FAST-HOT MiB more on node 0
 *               and the rest on node 1 with mbind, at the start; no malloc
 *     -i SECS   sampling interval (0.25)    -n NAME  label for the output
 *     -B MIB    balloon: lock MIB MiB on node 0 and sleep (run it in the
 *               background to leave the fast node only so much free memory)
 * The footprint is malloc'ed in 1 MiB blocks (tiermalloc or glibc decides
 * where); the hot set is the LAST blocks allocated, which a fast-first
 * placement under a budget puts on the slow tier; after the shift it moves
 * to the blocks just before.  Output (CSV on stdout):
 *   name,t,phase,hit_ratio,hot_fast,mups
 * and at the end, to stderr:
 *   summary name steady_hit=.. reaction_s=.. (phase 2 time to 90% hot fast) */
#define _GNU_SOURCE
#include <numaif.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#define BENCH_BALLOON
#include "../common.h"

#define MB (1ul << 20)
#define PG 4096ul
#define BLK (MB - 64 * 1024) /* 960 KiB: a 1 MiB slot with jemalloc's page of padding */
#define BPG (BLK / PG - 1)   /* whole pages per block, after page alignment */

static long nblocks, hotn;
static uint64_t **blk; /* page-aligned start of each block */
static void **pages;
static int *status;

/* hit ratio for a hot set at blocks [h0, h0+hotn), and the share of that
 * hot set on node 0 */
static double measure(long h0, double p, double *hot_fast)
{
	long n = 0;
	for (long b = 0; b < nblocks; b++)
		for (unsigned long k = 0; k < BPG; k++)
			pages[n++] = (char *)blk[b] + k * PG;
	for (long off = 0; off < n; off += 16384) {
		long c = n - off < 16384 ? n - off : 16384;
		if (move_pages(0, (unsigned long)c, pages + off, NULL, status + off, 0))
			return -1;
	}
	double hit = 0, hot_pages = (double)(hotn * (long)BPG), all = (double)n;
	long hf = 0;
	for (long i = 0; i < n; i++) {
		long b = i / (long)BPG;
		bool hot = b >= h0 && b < h0 + hotn;
		double prob = (1 - p) / all + (hot ? p / hot_pages : 0);
		if (status[i] == 0) {
			hit += prob;
			hf += hot;
		}
	}
	*hot_fast = (double)hf / hot_pages;
	return hit;
}

int main(int argc, char **argv)
{
	long fmib = 256, hmib = 32, oracle_fast = 0;
	double p = 0.9, a = 10, bsecs = 10, interval = 0.25;
	const char *mode = "shift", *name = "run";
	int opt;
	while ((opt = getopt(argc, argv, "f:H:p:m:a:b:o:i:n:B:")) != -1) {
		switch (opt) {
		case 'B':
			return bench_balloon((size_t)atol(optarg), "gups");
		case 'f': fmib = atol(optarg); break;
		case 'H': hmib = atol(optarg); break;
		case 'p': p = atof(optarg); break;
		case 'm': mode = optarg; break;
		case 'a': a = atof(optarg); break;
		case 'b': bsecs = atof(optarg); break;
		case 'o': oracle_fast = atol(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'n': name = optarg; break;
		default: return 2;
		}
	}
	bool uniform = !strcmp(mode, "uniform"), shift = !strcmp(mode, "shift");
	nblocks = fmib;
	hotn = hmib;
	if (2 * hotn > nblocks)
		return 2;
	blk = calloc((size_t)nblocks, sizeof(*blk));
	pages = calloc((size_t)(nblocks * (long)BPG), sizeof(*pages));
	status = calloc((size_t)(nblocks * (long)BPG), sizeof(*status));
	if (oracle_fast) {
		/* one mapping; hot set and enough others on node 0 up front */
		char *m = mmap(NULL, (size_t)nblocks * MB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long n0 = 1, n1 = 2;
		long fast_blocks = oracle_fast, first_hot = nblocks - hotn;
		long others = fast_blocks - hotn; /* the first blocks fill the rest */
		for (long b = 0; b < nblocks; b++) {
			bool fast = b >= first_hot || b < others;
			if (mbind(m + b * MB, MB, MPOL_BIND, fast ? &n0 : &n1, 65, 0)) {
				perror("gups: mbind");
				return 1;
			}
			blk[b] = (uint64_t *)(m + b * MB);
			memset(blk[b], 1, BLK);
		}
	} else {
		for (long b = 0; b < nblocks; b++) {
			char *x = malloc(BLK);
			blk[b] = (uint64_t *)(((uintptr_t)x + PG - 1) & ~(PG - 1));
			memset(x, 1, BLK);
		}
	}
	long h0 = uniform ? 0 : nblocks - hotn;
	uint64_t words_hot = (uint64_t)hotn * BPG * (PG / 8), words_blk = BPG * (PG / 8);
	uint64_t s = 88172645463325252ull, pp = (uint64_t)(p * 4294967296.0);
	struct bench_cpu cpu;
	bench_cpu_start(&cpu);
	double t0 = now(), next = t0, reaction = -1, phase_start = t0, steady_sum = 0;
	int steady_n = 0, phase = 1;
	uint64_t ops = 0, last_ops = 0;
	double last_t = t0;
	printf("name,t,phase,hit_ratio,hot_fast,mups\n");
	for (;;) {
		for (int k = 0; k < 4096; k++) {
			uint64_t r = rng(&s);
			uint64_t w;
			if (!uniform && (r & 0xffffffffu) < pp) {
				w = rng(&s) % words_hot;
				uint64_t b = (uint64_t)h0 + w / words_blk;
				blk[b][w % words_blk] += r;
			} else {
				w = rng(&s) % ((uint64_t)nblocks * words_blk);
				blk[w / words_blk][w % words_blk] += r;
			}
		}
		ops += 4096;
		double t = now();
		if (t < next)
			continue;
		next = t + interval;
		double hf = 0, hit = measure(h0, uniform ? 0 : p, &hf);
		double mups = (double)(ops - last_ops) / (t - last_t) / 1e6;
		last_ops = ops;
		last_t = t;
		printf("%s,%.2f,%d,%.4f,%.4f,%.2f\n", name, t - t0, phase, hit, hf, mups);
		fflush(stdout);
		if (phase == 2 && reaction < 0 && hf >= 0.9)
			reaction = t - phase_start;
		/* steady state: the last 40% of the first phase */
		if (phase == 1 && t - phase_start >= 0.6 * a) {
			steady_sum += hit;
			steady_n++;
		}
		if (phase == 1 && t - phase_start >= a) {
			if (!shift)
				break;
			phase = 2;
			phase_start = t;
			h0 = nblocks - 2 * hotn; /* the blocks just before the old hot set */
		} else if (phase == 2 && t - phase_start >= bsecs) {
			break;
		}
	}
	fprintf(stderr, "summary %s steady_hit=%.4f reaction_s=%s%.2f other_cpu=%.4f\n", name,
		steady_n ? steady_sum / steady_n : 0, reaction < 0 ? ">" : "",
		reaction < 0 ? bsecs : reaction, bench_cpu_other(&cpu));
	return 0;
}
