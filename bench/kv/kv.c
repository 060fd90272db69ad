/* kv: a key-value workload of our own for the tiering bench: a table of
 * millions of small items (each malloc'ed, as a cache's items are, in a
 * random key order: popular items are scattered over the heap), gets and
 * sets with Zipf-distributed keys, the popular keys rotating.  Reports
 * over time the fast-tier hit ratio (the share of item accesses that land
 * on node-0 pages, from the known distribution and move_pages(2) status
 * queries), in the same CSV as bench/gups, so bench/gups/guest.sh runs it
 * against the same contenders.
 *
 *   kv [options]
 *     -f MIB    items' footprint (256): MIB MiB / 128-byte items
 *     -s S      Zipf exponent (0.99)       -g G     share of gets (0.9)
 *     -r        read-only (gets only)
 *     -a SECS   first phase (10)           -b SECS  after the rotation (10)
 *     -O FAST   block oracle: the same, by whole 2 MiB blocks (the ceiling of
 *               placing blocks: what a whole-block tierer can reach at best)
 *     -o FAST   oracle: the FAST MiB of pages most accessed in the first
 *               phase on node 0, the rest on node 1, moved at the start
 *     -i SECS   sampling interval (0.5)    -n NAME  label for the output
 *     -B MIB    balloon, as gups -B        -H MIB   ignored (gups' option)
 * Rotation: after the first phase, rank r maps to the key of rank
 * r + n/2: a new set of popular keys.  "hot" is the most popular items
 * that draw half of the accesses; hot_fast is the share of their
 * accesses on node 0, and the reaction is the time until it reaches 0.9.
 * The table's index (8 bytes a key) is not counted in the hit ratio. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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

#define ITEM 128
#define PG 4096ul
#define TOP 65536   /* ranks measured one by one */
#define TAIL 8192   /* ranks sampled from the rest */

struct item {
	uint64_t key;
	uint64_t val[(ITEM - 8) / 8];
};

static long n;
static double *cdf, *prob;
static struct item **idx;  /* key -> item */
static void **pages;
static int *status;

static long rank_of(double u) { return cdf_rank(cdf, n, u); }

static void *page_of(const void *p) { return (void *)((uintptr_t)p & ~(PG - 1)); }

/* Hit ratio with ranks shifted by `shift`; *hot_fast: the same over the
 * ranks below `hot` (renormalised). */
static double measure(long shift, long hot, double *hot_fast, uint64_t *seed)
{
	long top = n < TOP ? n : TOP, tail = n > TOP ? TAIL : 0, c = top + tail;
	double *w = malloc((size_t)c * sizeof(*w));
	for (long r = 0; r < top; r++) {
		pages[r] = page_of(idx[(r + shift) % n]);
		w[r] = prob[r];
	}
	for (long i = 0; i < tail; i++) {
		long r = TOP + (long)(rng(seed) % (uint64_t)(n - TOP));
		pages[top + i] = page_of(idx[(r + shift) % n]);
		w[top + i] = (1.0 - cdf[TOP - 1]) / (double)tail; /* the tail's mass, shared */
	}
	for (long off = 0; off < c; off += 16384) {
		long k = c - off < 16384 ? c - off : 16384;
		if (move_pages(0, (unsigned long)k, pages + off, NULL, status + off, 0)) {
			free(w);
			return -1;
		}
	}
	double hit = 0, hh = 0;
	for (long i = 0; i < c; i++)
		if (status[i] == 0) {
			hit += w[i];
			if (i < hot)
				hh += w[i];
		}
	*hot_fast = hh / cdf[hot - 1];
	free(w);
	return hit;
}

#define BLOCK (2ul << 20)

/* A page of a transparent huge page moves with its 512: split the huge
 * pages under the items first (MADV_COLD over part of one splits it;
 * MADV_NOHUGEPAGE keeps khugepaged off), so the page oracle places pages. */
static void split_thp(const struct bench_pw *v, long np)
{
	uintptr_t last = 0;
	for (long i = 0; i < np; i++) {
		uintptr_t b = v[i].page & ~(BLOCK - 1);
		if (b == last)
			continue;
		last = b;
		madvise((void *)b, BLOCK, MADV_NOHUGEPAGE);
		madvise((void *)v[i].page, PG, MADV_COLD);
	}
}

/* Block weights: each page gets the weight of its 2 MiB block (v sorted
 * by page), so that sorting by weight ranks whole blocks. */
static void by_block(struct bench_pw *v, long np)
{
	for (long i = 0; i < np;) {
		uintptr_t b = v[i].page & ~(BLOCK - 1);
		long j = i;
		double w = 0;
		for (; j < np && (v[j].page & ~(BLOCK - 1)) == b; j++)
			w += v[j].w;
		for (; i < j; i++)
			v[i].w = w + (double)b * 1e-30; /* ties: keep a block together */
	}
}

/* The oracle: pages by first-phase weight (rank r is key r then), the
 * heaviest FAST MiB on node 0, the rest on node 1; with blocks, whole
 * 2 MiB blocks by their weight (fast_mib rounded down to blocks). */
static int oracle(long fast_mib, bool blocks)
{
	struct bench_pw *v = malloc((size_t)n * sizeof(*v));
	for (long r = 0; r < n; r++)
		v[r] = (struct bench_pw){(uintptr_t)page_of(idx[r]), prob[r]};
	long np = bench_pw_pages(v, n);
	long fast_pages = fast_mib * (1l << 20) / (long)PG;
	if (blocks) {
		by_block(v, np);
		qsort(v, (size_t)np, sizeof(*v), bench_pw_by_weight);
		/* pages of the heaviest blocks up to fast_mib of blocks */
		long nb = fast_mib / 2, k = 0, seen = 0;
		uintptr_t last = 0;
		for (; k < np; k++) {
			uintptr_t b = v[k].page & ~(BLOCK - 1);
			if (b != last && ++seen > nb)
				break;
			last = b;
		}
		fast_pages = k;
	} else {
		split_thp(v, np);
		qsort(v, (size_t)np, sizeof(*v), bench_pw_by_weight);
	}
	void **pp = malloc((size_t)np * sizeof(*pp));
	int *nodes = malloc((size_t)np * sizeof(*nodes)), *st = malloc((size_t)np * sizeof(*st));
	for (long i = 0; i < np; i++) {
		pp[i] = (void *)v[i].page;
		nodes[i] = i < fast_pages ? 0 : 1;
	}
	/* the program's own arrays out of the way too: the fast tier is
	 * the items' (tiermalloc and the kernel decide for them as they
	 * like; this is the ceiling) */
	const void *arr[3] = {cdf, prob, idx};
	for (int a = 0; a < 3; a++) {
		uintptr_t b = (uintptr_t)page_of(arr[a]) + PG, e = b + ((size_t)n * 8 & ~(PG - 1)) - PG;
		for (uintptr_t q = b; q < e; q += 16384 * PG) {
			long k = (long)((e - q) / PG < 16384 ? (e - q) / PG : 16384);
			void *ap[16384];
			int an[16384], as[16384];
			for (long i = 0; i < k; i++) {
				ap[i] = (void *)(q + (uintptr_t)i * PG);
				an[i] = 1;
			}
			move_pages(0, (unsigned long)k, ap, an, as, MPOL_MF_MOVE);
		}
	}
	/* the cold pages out first, making room for the hot ones */
	long rc = 0, lo[2] = {fast_pages < np ? fast_pages : np, 0}, hi[2] = {np, lo[0]};
	for (int pass = 0; pass < 2 && rc >= 0; pass++)
		for (long off = lo[pass]; off < hi[pass] && rc >= 0; off += 16384) {
			long k = hi[pass] - off < 16384 ? hi[pass] - off : 16384;
			rc = move_pages(0, (unsigned long)k, pp + off, nodes + off, st + off, MPOL_MF_MOVE);
			if (rc < 0 && errno == ENOMEM && pass == 1) { /* node 0 full: the rest stays */
				fprintf(stderr, "kv: oracle: node 0 full after %ld of %ld hot pages\n", off, hi[pass]);
				rc = 0;
				break;
			}
		}
	free(pp);
	free(nodes);
	free(st);
	free(v);
	return rc < 0 ? -1 : 0;
}

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/* MiB of pages on node 0 out of v[0..np) (sorted, may repeat) */
static double fast_mib_of(void **v, long np)
{
	long k = 0;
	for (long i = 0; i < np; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	long fast = 0;
	int st[4096];
	for (long off = 0; off < k; off += 4096) {
		long c = k - off < 4096 ? k - off : 4096;
		if (move_pages(0, (unsigned long)c, v + off, NULL, st, 0))
			return -1;
		for (long i = 0; i < c; i++)
			fast += st[i] == 0;
	}
	return (double)fast * (double)PG / 1048576.0;
}

/* Where the fast tier went, at the end: the items' pages and the
 * program's own arrays (which the oracle leaves out). */
static void where_fast(const char *name)
{
	void **v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return;
	for (long k = 0; k < n; k++)
		v[k] = page_of(idx[k]);
	qsort(v, (size_t)n, sizeof(*v), by_addr);
	double items = fast_mib_of(v, n);
	double arr[3];
	const void *a[3] = {cdf, prob, idx};
	long np = (long)((size_t)n * 8 / PG);
	for (int j = 0; j < 3; j++) {
		for (long i = 0; i < np; i++)
			v[i] = (char *)page_of(a[j]) + i * PG;
		arr[j] = fast_mib_of(v, np);
	}
	fprintf(stderr, "fast %s items_mib=%.1f cdf_mib=%.1f prob_mib=%.1f idx_mib=%.1f\n", name, items, arr[0], arr[1],
		arr[2]);
	free(v);
}

int main(int argc, char **argv)
{
	long fmib = 256, oracle_fast = 0;
	bool oracle_blocks = false;
	double s_exp = 0.99, gets = 0.9, a = 10, bsecs = 10, interval = 0.5;
	const char *name = "kv";
	int opt;
	while ((opt = getopt(argc, argv, "f:s:g:ra:b:o:O:i:n:B:H:")) != -1) {
		switch (opt) {
		case 'B':
			return bench_balloon((size_t)atol(optarg), "kv");
		case 'f': fmib = atol(optarg); break;
		case 's': s_exp = atof(optarg); break;
		case 'g': gets = atof(optarg); break;
		case 'r': gets = 1; break;
		case 'a': a = atof(optarg); break;
		case 'b': bsecs = atof(optarg); break;
		case 'o': oracle_fast = atol(optarg); break;
		case 'O': oracle_fast = atol(optarg); oracle_blocks = true; break;
		case 'i': interval = atof(optarg); break;
		case 'n': name = optarg; break;
		case 'H': break;
		default: return 2;
		}
	}
	n = fmib * (1l << 20) / ITEM;
	if (n < 2 * TOP) {
		fprintf(stderr, "kv: footprint too small: at least %ld MiB\n", (2 * TOP * ITEM + (1l << 20) - 1) >> 20);
		return 2;
	}
	cdf = malloc((size_t)n * sizeof(*cdf));
	prob = malloc((size_t)n * sizeof(*prob));
	idx = malloc((size_t)n * sizeof(*idx));
	pages = calloc(TOP + TAIL, sizeof(*pages));
	status = calloc(TOP + TAIL, sizeof(*status));
	double sum = 0;
	for (long r = 0; r < n; r++)
		sum += prob[r] = pow((double)(r + 1), -s_exp);
	double acc = 0;
	long hot = 0;
	for (long r = 0; r < n; r++) {
		prob[r] /= sum;
		acc += prob[r];
		cdf[r] = acc;
		if (!hot && acc >= 0.5)
			hot = r + 1;
	}
	if (hot > TOP)
		hot = TOP;
	/* items in a random key order: popularity is scattered over the heap */
	long *perm = malloc((size_t)n * sizeof(*perm));
	uint64_t seed = 88172645463325252ull;
	for (long i = 0; i < n; i++)
		perm[i] = i;
	for (long i = n - 1; i > 0; i--) {
		long j = (long)(rng(&seed) % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (long i = 0; i < n; i++) {
		struct item *it = malloc(sizeof(*it));
		it->key = (uint64_t)perm[i];
		for (size_t k = 0; k < sizeof(it->val) / 8; k++)
			it->val[k] = it->key + k;
		idx[perm[i]] = it;
	}
	free(perm);
	if (oracle_fast && oracle(oracle_fast, oracle_blocks)) {
		perror("kv: oracle placement");
		return 1;
	}
	uint64_t gp = (uint64_t)(gets * 4294967296.0);
	long shift = 0;
	struct bench_cpu cpu;
	bench_cpu_start(&cpu);
	double t0 = now(), next = t0, reaction = -1, phase_start = t0, steady_sum = 0, last_t = t0;
	int steady_n = 0, phase = 1;
	uint64_t ops = 0, last_ops = 0, sink = 0;
	printf("name,t,phase,hit_ratio,hot_fast,mups\n");
	for (;;) {
		for (int k = 0; k < 4096; k++) {
			uint64_t r = rng(&seed);
			long rank = rank_of((double)(r >> 11) * 0x1.0p-53);
			struct item *it = idx[(rank + shift) % n];
			if ((rng(&seed) & 0xffffffffu) < gp) {
				for (size_t j = 0; j < sizeof(it->val) / 8; j++) /* get: read the value */
					sink += it->val[j];
			} else {
				for (size_t j = 0; j < sizeof(it->val) / 8; j++) /* set: write it */
					it->val[j] = r + j;
			}
		}
		ops += 4096;
		double t = now();
		if (t < next)
			continue;
		double hf = 0, hit = measure(shift, hot, &hf, &seed);
		double kops = (double)(ops - last_ops) / (t - last_t) / 1e6;
		last_ops = ops;
		next = now() + interval;
		last_t = now(); /* the measure's own time is not the workload's */
		printf("%s,%.2f,%d,%.4f,%.4f,%.2f\n", name, t - t0, phase, hit, hf, kops);
		fflush(stdout);
		if (phase == 2 && reaction < 0 && hf >= 0.9)
			reaction = t - phase_start;
		if (phase == 1 && t - phase_start >= 0.6 * a) {
			steady_sum += hit;
			steady_n++;
		}
		if (phase == 1 && t - phase_start >= a) {
			phase = 2;
			phase_start = t;
			shift = n / 2;
		} else if (phase == 2 && t - phase_start >= bsecs) {
			break;
		}
	}
	where_fast(name);
	fprintf(stderr, "summary %s steady_hit=%.4f reaction_s=%s%.2f other_cpu=%.4f\n", name,
		steady_n ? steady_sum / steady_n : 0, reaction < 0 ? ">" : "",
		reaction < 0 ? bsecs : reaction, bench_cpu_other(&cpu));
	return sink == 42; /* keep the gets */
}
