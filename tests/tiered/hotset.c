/* hotset: the promotion test program.  Allocates TOTAL MiB with malloc in
 * 1 MiB blocks, picks a HOT MiB subset that the allocator put on a slow
 * node, and touches it (a write per page, over and over).  It reports, from
 * move_pages status queries, how long until >= 90% of the hot set sits on
 * node 0.  With -s it then shifts: a new hot subset from the slow node, and
 * the same measurement, plus how much of the old hot set left node 0.
 *   hotset [-s] [-t SECONDS] [-c SECONDS] [-y USEC] TOTAL_MIB HOT_MIB
 *     -c: then keep touching that long, reporting the background thread's CPU
 *     -y: sleep USEC after each round over the hot set (leaves CPU to others)
 *     -w: before that window, keep touching until tier.heat.sources holds
 *         the text given (up to 60 s): the budget has settled the sources
 *     -g GOAL: the share of the hot set on node 0 that ends a phase (0.9)
 *     -k SECONDS: after the last phase, keep touching that long and fail
 *         unless the hot set stayed: the median of its share on node 0,
 *         sampled every 0.25 s, at least GOAL less 5 points (a default
 *         that churns reaches the goal and loses it)
 *     -R: reads only (the hot set is read, never written)
 *     -p STRIDE: scattered: the hot set is one page in STRIDE of every block
 *         (wherever it is), HOT_MIB ignored: what a key-value store's
 *         popular items look like to whole-block placement; then prints how
 *         many 2 MiB blocks hold pages on both tiers (the kernel's answer)
 * Output lines: "phase N reached F% after S s" or "phase N timeout F%". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <numaif.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MB (1u << 20)
#define PG 4096
#define ALLOC (MB - 64 * 1024) /* fits 1 MiB with jemalloc's padding */
#define NPG 236                /* whole pages used per block after page alignment */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int stride = 1; /* -p: one page in stride is hot */
static int reads;      /* -R */
static volatile char sink;

/* Where every step-th page of blocks[0..n) is, by the kernel (move_pages
 * status), in batches: each(page, status, ctx).  -1 if a query fails. */
static int each_status(char **blocks, int n, int step, void (*each)(void *, int, void *), void *ctx)
{
	static void *pages[64 * NPG];
	static int status[64 * NPG];
	for (int i = 0; i < n;) {
		int k = 0, j = i;
		for (; j < n && k + NPG <= 64 * NPG; j++)
			for (int p = 0; p < NPG; p += step)
				pages[k++] = blocks[j] + (size_t)p * PG;
		if (move_pages(0, (unsigned long)k, pages, NULL, status, 0))
			return -1;
		for (int x = 0; x < k; x++)
			each(pages[x], status[x], ctx);
		i = j;
	}
	return 0;
}

struct tally {
	long fast, slow, total;
};

static void count_page(void *page, int st, void *ctx)
{
	(void)page;
	struct tally *t = ctx;
	t->total++;
	t->fast += st == 0;
	t->slow += st > 0;
}

/* Share of the hot pages of blocks[0..n) on node 0, and on node 1+ (out). */
static double on_fast(char **blocks, int n, double *slow)
{
	struct tally t = {0, 0, 0};
	if (each_status(blocks, n, stride, count_page, &t))
		return -1;
	if (slow)
		*slow = t.total ? (double)t.slow / (double)t.total : 0;
	return t.total ? (double)t.fast / (double)t.total : 0;
}

/* 2 MiB blocks (the allocator's unit) holding pages on node 0 and on a
 * slow node at once: placed page by page, as the kernel reports it (a
 * whole-block engine leaves none; -1 if the blocks lie too far apart). */
enum { MIXED_SPAN = 1 << 16 };
struct seen {
	uintptr_t lo;
	unsigned char at[MIXED_SPAN]; /* bit 0: a page on node 0, bit 1: on a slow node */
};

static void see_page(void *page, int st, void *ctx)
{
	struct seen *v = ctx;
	if (st >= 0)
		v->at[((uintptr_t)page >> 21) - v->lo] |= st == 0 ? 1 : 2;
}

static int mixed_blocks(char **blocks, int n)
{
	static struct seen v;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < n; i++) {
		uintptr_t b = (uintptr_t)blocks[i] >> 21;
		lo = b < lo ? b : lo;
		hi = b + 1 > hi ? b + 1 : hi;
	}
	if (!n || hi - lo >= MIXED_SPAN)
		return -1;
	memset(&v, 0, sizeof(v));
	v.lo = lo;
	if (each_status(blocks, n, 1, see_page, &v))
		return -1;
	int mixed = 0;
	for (uintptr_t b = 0; b < hi - lo; b++)
		mixed += v.at[b] == 3;
	return mixed;
}

static int node_of(char *b)
{
	int st;
	void *p = b;
	return move_pages(0, 1, &p, NULL, &st, 0) ? -1 : st;
}

static int pace_us; /* -y: sleep this long after each round over the hot set */
static double goal = 0.9; /* -g */

static void touch(char **hot, int n, unsigned round)
{
	if (pace_us)
		usleep((useconds_t)pace_us);
	char acc = 0;
	for (int i = 0; i < n; i++)
		for (size_t off = (round * 64u) % PG; off < (size_t)NPG * PG; off += (size_t)stride * PG)
			if (reads)
				acc += hot[i][off];
			else
				hot[i][off]++;
	sink = acc;
}

/* With -v, tiermalloc's counters (when preloaded) beside each sample. */
static int verbose;
static void progress(double t, double f)
{
	if (!verbose)
		return;
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	uint64_t pro = 0, dem = 0;
	size_t used = 0, l8 = 8;
	if (ctl) {
		ctl("stats.promoted_bytes", &pro, &l8, NULL, 0);
		ctl("stats.demoted_bytes", &dem, &l8, NULL, 0);
		ctl("tier.0.committed", &used, &l8, NULL, 0);
	}
	printf("  t=%.2f hot-on-fast=%.1f%% promoted=%lluM demoted=%lluM fast-committed=%zuM\n", t,
	       f * 100, (unsigned long long)(pro >> 20), (unsigned long long)(dem >> 20), used >> 20);
	fflush(stdout);
}

static uint64_t stat_u64(const char *name)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	uint64_t v = 0;
	size_t l = sizeof(v);
	if (ctl)
		ctl(name, &v, &l, NULL, 0);
	return v;
}

static bool stat_bool(const char *name)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	bool v = false;
	size_t l = sizeof(v);
	return ctl && ctl(name, &v, &l, NULL, 0) == 0 && v;
}

/* All the background costs tiermalloc counts against its budget: its
 * threads, its share of kdamond, the write faults it caused. */
static uint64_t bg_cpu_ns(void)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	static const char *const names[] = {"stats.bg.cpu_ns", "stats.bg.kernel_ns", "stats.bg.fault_ns"};
	uint64_t sum = 0;
	for (size_t k = 0; ctl && k < sizeof(names) / sizeof(*names); k++) {
		uint64_t v = 0;
		size_t l = sizeof(v);
		ctl(names[k], &v, &l, NULL, 0);
		sum += v;
	}
	return sum;
}

/* Keep touching hot for secs: the background thread's CPU share at a
 * steady state (nothing left to move). */
static const char *settled; /* -w: text tier.heat.sources must hold first */

static bool sources_hold(const char *text)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	const char *s = NULL;
	size_t l = sizeof(s);
	return ctl && ctl("tier.heat.sources", &s, &l, NULL, 0) == 0 && s && strstr(s, text);
}

static void steady(char **hot, int n, double secs)
{
	unsigned round = 0;
	double t0 = now();
	while (now() - t0 < 2) /* let the last moves settle first */
		touch(hot, n, round++);
	if (settled) {
		double w0 = now();
		bool held;
		while (!(held = sources_hold(settled)) && now() - w0 < 60)
			touch(hot, n, round++);
		printf("sources %s \"%s\" after %.1f s more\n", held ? "hold" : "still lack", settled,
		       now() - w0);
	}
	/* a burst (bg_cpu_burst) ends once nothing is left to gain: the
	 * window measures the steady state after it */
	double b0 = now();
	while (stat_bool("stats.bg.burst") && now() - b0 < 30)
		touch(hot, n, round++);
	printf("burst over after %.1f s more%s\n", now() - b0, stat_bool("stats.bg.burst") ? " (still in one)" : "");
	/* three windows, the median reported: one window now and then holds
	 * a burst that a stray move began (TCG makes heat noisy) */
	struct win {
		double all, mig, dt;
		uint64_t moved, bursts;
	} w[3], t;
	for (int k = 0; k < 3; k++) {
		uint64_t c0 = bg_cpu_ns(), m0 = stat_u64("stats.migrate_ns"), bu0 = stat_u64("stats.bg.bursts");
		uint64_t p0 = stat_u64("stats.promoted_bytes") + stat_u64("stats.demoted_bytes");
		t0 = now();
		while (now() - t0 < secs)
			touch(hot, n, round++);
		w[k].dt = now() - t0;
		w[k].moved = stat_u64("stats.promoted_bytes") + stat_u64("stats.demoted_bytes") - p0;
		w[k].all = (double)(bg_cpu_ns() - c0) / 1e9 / w[k].dt * 100;
		w[k].mig = (double)(stat_u64("stats.migrate_ns") - m0) / 1e9 / w[k].dt * 100;
		w[k].bursts = stat_u64("stats.bg.bursts") - bu0;
		printf("window %d: %.2f%% of a core, %llu MiB moved, %llu bursts began\n", k + 1, w[k].all,
		       (unsigned long long)(w[k].moved >> 20), (unsigned long long)w[k].bursts);
	}
	for (int a = 0; a < 3; a++) /* sort by cost: w[1] is the median */
		for (int b = a + 1; b < 3; b++)
			if (w[b].all < w[a].all) {
				t = w[a];
				w[a] = w[b];
				w[b] = t;
			}
	double slow;
	/* tracking is what bg_cpu holds; moving is bounded by the rate
	 * limits, and is still going on where the hot set is not all fast */
	printf("steady: background costs (threads, kdamond share, faults) %.2f%% of a core over %.1f s"
	       " (%llu MiB moved, migration %.2f%%, tracking %.2f%%, hot set %.1f%% fast at the end; median of 3 windows)\n",
	       w[1].all, w[1].dt, (unsigned long long)(w[1].moved >> 20), w[1].mig,
	       w[1].all > w[1].mig ? w[1].all - w[1].mig : 0, 100 * on_fast(hot, n, &slow));
}

/* On a timeout: which hot blocks stayed slow, and tiermalloc's counters. */
static void diagnose(char **hot, int n)
{
	int slow = 0, part = 0;
	for (int i = 0; i < n; i++) {
		double s, f = on_fast(&hot[i], 1, &s);
		slow += f == 0;
		part += f > 0 && f < 1;
	}
	printf("  hot blocks: %d entirely slow, %d partly, of %d\n", slow, part, n);
	int (*ctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "tier_mallctl");
	const char *names[] = {"stats.failed_pages", "stats.promoted_bytes", "stats.demoted_bytes",
			       "stats.heat.damon.samples", "stats.heat.pagemap.samples", "stats.bg.periods"};
	for (size_t k = 0; ctl && k < sizeof(names) / sizeof(*names); k++) {
		uint64_t v = 0;
		size_t l = sizeof(v);
		ctl(names[k], &v, &l, NULL, 0);
		printf("  %s %llu\n", names[k], (unsigned long long)v);
	}
}

/* Touch hot until >= 90% of it is on node 0, or timeout. */
static int phase(int id, char **hot, int n, double timeout)
{
	double t0 = now(), next = t0;
	unsigned round = 0;
	for (;;) {
		touch(hot, n, round++);
		double t = now();
		if (t < next)
			continue;
		next = t + (verbose ? 0.25 : 0.05);
		double f = on_fast(hot, n, NULL);
		progress(t - t0, f);
		if (f >= goal) {
			printf("phase %d reached %.1f%% after %.2f s\n", id, f * 100, t - t0);
			fflush(stdout);
			return 0;
		}
		if (t - t0 > timeout) {
			printf("phase %d timeout %.1f%% after %.2f s\n", id, f * 100, t - t0);
			diagnose(hot, n);
			fflush(stdout);
			return 1;
		}
	}
}

/* -k: keep touching hot for secs; 0 if it stayed on node 0. */
static int hold(char **hot, int n, double secs)
{
	enum { MAXS = 1024 };
	double v[MAXS], t0 = now(), next = t0, lo = 1;
	int k = 0;
	unsigned round = 0;
	while (now() - t0 < secs) {
		touch(hot, n, round++);
		double t = now();
		if (t < next || k == MAXS)
			continue;
		next = t + 0.25;
		v[k] = on_fast(hot, n, NULL);
		lo = v[k] < lo ? v[k] : lo;
		for (int i = k++; i > 0 && v[i] < v[i - 1]; i--) { /* insertion: kept sorted */
			double x = v[i];
			v[i] = v[i - 1];
			v[i - 1] = x;
		}
	}
	double med = k ? v[k / 2] : 0;
	printf("held: median %.1f%%, lowest %.1f%% over %.0f s (%d samples)\n", med * 100, lo * 100, secs, k);
	fflush(stdout);
	return k && med >= goal - 0.05 ? 0 : 4;
}

int main(int argc, char **argv)
{
	int shift = 0, opt;
	double timeout = 20, steady_secs = 0, hold_secs = 0;
	while ((opt = getopt(argc, argv, "svt:c:y:w:Rp:g:k:")) != -1) {
		if (opt == 's')
			shift = 1;
		else if (opt == 'v')
			verbose = 1;
		else if (opt == 't')
			timeout = atof(optarg);
		else if (opt == 'c')
			steady_secs = atof(optarg);
		else if (opt == 'y')
			pace_us = atoi(optarg);
		else if (opt == 'w')
			settled = optarg;
		else if (opt == 'g')
			goal = atof(optarg);
		else if (opt == 'R')
			reads = 1;
		else if (opt == 'k')
			hold_secs = atof(optarg);
		else if (opt == 'p')
			stride = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else
			return 2;
	}
	if (argc - optind != 2)
		return 2;
	int total = atoi(argv[optind]), hotn = atoi(argv[optind + 1]);
	char **all = calloc((size_t)total, sizeof(*all));
	char **hot = calloc((size_t)hotn, sizeof(*hot)), **hot2 = calloc((size_t)hotn, sizeof(*hot2));
	for (int i = 0; i < total; i++) {
		all[i] = malloc(ALLOC);
		memset(all[i], 1, ALLOC);
	}
	/* only whole pages inside each block count */
	for (int i = 0; i < total; i++)
		all[i] = (char *)(((uintptr_t)all[i] + PG - 1) & ~(uintptr_t)(PG - 1));
	if (stride > 1) { /* scattered: every block holds some of the hot set */
		double slow, f = on_fast(all, total, &slow);
		printf("start: scattered hot set, one page in %d of %d MiB, %.1f%% on node 0, %.1f%% on slow nodes\n",
		       stride, total, f * 100, slow * 100);
		fflush(stdout);
		int rc = phase(1, all, total, timeout);
		printf("mixed: %d blocks of 2 MiB hold pages on both tiers\n", mixed_blocks(all, total));
		if (steady_secs > 0)
			steady(all, total, steady_secs);
		return rc;
	}
	int h = 0, h2 = 0;
	for (int i = total - 1; i >= 0 && (h < hotn || (shift && h2 < hotn)); i--) {
		if (node_of(all[i]) <= 0)
			continue;
		if (h < hotn)
			hot[h++] = all[i];
		else
			hot2[h2++] = all[i];
	}
	if (h < hotn || (shift && h2 < hotn)) {
		printf("not enough blocks on slow nodes (%d, %d)\n", h, h2);
		return 3;
	}
	double slow;
	double f = on_fast(hot, hotn, &slow);
	printf("start: hot set %d MiB, %.1f%% on node 0, %.1f%% on slow nodes\n", hotn, f * 100,
	       slow * 100);
	fflush(stdout);
	int rc = phase(1, hot, hotn, timeout);
	if (shift && !rc) {
		rc = phase(2, hot2, hotn, timeout);
		double old = on_fast(hot, hotn, NULL);
		printf("old hot set: %.1f%% still on node 0\n", old * 100);
	}
	if (!rc && hold_secs > 0)
		rc = hold(shift ? hot2 : hot, hotn, hold_secs);
	if (steady_secs > 0)
		steady(shift ? hot2 : hot, hotn, steady_secs);
	return rc;
}
