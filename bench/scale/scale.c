/* scale: what tracking costs as the footprint grows, and what the advisor
 * sees.  Allocates a footprint in 64 MiB chunks, touches part of it, and
 * runs random accesses: a share to a hot set of whole 2 MiB blocks (written
 * or only read), the rest to the touched cold memory; after a while the hot
 * set moves.  Run it under LD_PRELOAD of tiermalloc (advise:true on one
 * node; tiering in the VM) or of plain jemalloc for the side-by-side rate.
 *
 *   scale [options]
 *     -f MIB   footprint (256)           -t MIB   touched part (all of it)
 *     -H MIB   hot set (5% of touched)   -c PERMILLE accesses to cold memory (100)
 *     -r       the hot set is only read  -a SECS  before the shift (8)
 *     -b SECS  after the shift (8)       -w SECS  steady window at the end of each phase (3)
 *     -R M     at most M million accesses per second (0: as fast as it goes)
 *     -n NAME  label
 * Output, one line per phase on stdout ("key=value ..."):
 *   name phase detect_s (time until 90% of the hot blocks rank above the
 *   cold ones, from tier.heat.of) rate_maps (accesses per second, millions,
 *   in the steady window) bg_share (all background costs, share of a core,
 *   in the window) cost_p50_us cost_p99_us (per-period cost over the run)
 *   minflt (minor faults in the window) meta_ours meta_je (bytes)
 *   seen_1s seen_10s seen_60s size_90 size_95 size_99 (advisor, MiB)
 *   pass_s (the sweep's last complete pass, s) window_s (how long a pass
 *   takes at the sweep's rate in the window: every block of the
 *   footprint visited once) steady_p99_us (per-period cost p99 outside
 *   bursts: a burst may spend bg_cpu_burst a period by design) pte_kib
 *   (the process's page tables, VmPTE) passes (the sweep's complete
 *   passes so far) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "../common.h"

#define MB (1ull << 20)
#define BLOCK (2 * MB)
#define CHUNK (64 * MB)
#define PG 4096ull

typedef int (*ctl_fn)(const char *, void *, size_t *, void *, size_t);
static ctl_fn tctl, jctl;

static uint64_t u64(const char *name)
{
	uint64_t v = 0;
	size_t l = sizeof(v);
	if (tctl)
		tctl(name, &v, &l, NULL, 0);
	return v;
}

static double dbl(const char *name)
{
	double v = 0;
	size_t l = sizeof(v);
	if (tctl)
		tctl(name, &v, &l, NULL, 0);
	return v;
}

static float heat_of(char *p)
{
	float h = -1;
	size_t l = sizeof(h);
	uintptr_t a = (uintptr_t)p;
	if (!tctl || tctl("tier.heat.of", &h, &l, &a, sizeof(a)))
		return -1;
	return h;
}

static uint64_t bg_cost_ns(void)
{
	return u64("stats.bg.cpu_ns") + u64("stats.bg.kernel_ns") + u64("stats.bg.fault_ns");
}

/* the process's page tables, KiB (VmPTE): what the kernel keeps for the
 * memory it maps, counted in no RSS */
static long pte_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmPTE:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static char **blocks;     /* every 2 MiB block of the touched part */
static long nblocks, nhot;
static long *hot;         /* indexes into blocks: the current hot set */
static bool readonly;
static unsigned cold_pm;
static double max_rate; /* accesses per second, 0: unlimited */
static volatile uint64_t sink;

/* accesses for `secs` seconds; returns the count */
static uint64_t run(double secs, uint64_t *seed)
{
	uint64_t n = 0, sum = 0;
	double start = now(), end = start + secs;
	while (now() < end) {
		if (max_rate > 0) { /* paced: sleep off any lead over the rate */
			double ahead = (double)n / max_rate - (now() - start);
			if (ahead > 0.001)
				usleep((useconds_t)(ahead * 1e6));
		}
		for (int k = 0; k < 4096; k++) {
			uint64_t r = rng(seed);
			char *p;
			if (r % 1000 < cold_pm)
				p = blocks[(r >> 10) % (uint64_t)nblocks];
			else
				p = blocks[hot[(r >> 10) % (uint64_t)nhot]];
			p += ((r >> 32) % (BLOCK / PG)) * PG + (r & 0x3f) * 8;
			if (readonly)
				sum += *(volatile uint64_t *)p;
			else
				(*(volatile uint64_t *)p)++;
		}
		n += 4096;
	}
	sink += sum;
	return n;
}

/* Whether 90% of the hot blocks rank above the hottest cold ones (the
 * 99th percentile of a sample of cold blocks, and at least 0.03). */
static bool detected(uint64_t *seed)
{
	if (!tctl)
		return false;
	enum { NS = 200 };
	float cold[NS];
	int nc = 0;
	for (int k = 0; k < 4 * NS && nc < NS; k++) {
		long i = (long)(rng(seed) % (uint64_t)nblocks);
		bool is_hot = false;
		for (long j = 0; j < nhot && !is_hot; j++)
			is_hot = hot[j] == i;
		if (!is_hot)
			cold[nc++] = heat_of(blocks[i]);
	}
	/* 99th percentile: the second largest of 200 */
	float a = 0, b = 0;
	for (int k = 0; k < nc; k++) {
		if (cold[k] > a) {
			b = a;
			a = cold[k];
		} else if (cold[k] > b) {
			b = cold[k];
		}
	}
	float thr = b > 0.03f ? b : 0.03f;
	long above = 0;
	for (long j = 0; j < nhot; j++)
		above += heat_of(blocks[hot[j]]) > thr;
	return above * 10 >= nhot * 9;
}

/* A hot set of distinct blocks, none of them in `avoid` (n entries). */
static void pick_hot(uint64_t *seed, const long *avoid, long n)
{
	for (long j = 0; j < nhot; j++) {
		long i;
		bool again;
		do {
			i = (long)(rng(seed) % (uint64_t)nblocks);
			again = false;
			for (long q = 0; q < n && !again; q++)
				again = avoid[q] == i;
			for (long q = 0; q < j && !again; q++)
				again = hot[q] == i;
		} while (again);
		hot[j] = i;
	}
}

static void phase(const char *name, int id, double secs, double window, uint64_t *seed)
{
	double t0 = now(), det = -1;
	/* until detected (or the phase's time less the window is up) */
	while (now() - t0 < secs - window) {
		run(0.05, seed);
		if (det < 0 && detected(seed))
			det = now() - t0;
	}
	uint64_t c0 = bg_cost_ns(), s0 = u64("stats.monitor.sweep_blocks");
	long f0 = minflt();
	double w0 = now();
	uint64_t acc = run(window, seed);
	double dt = now() - w0;
	uint64_t c1 = bg_cost_ns(), s1 = u64("stats.monitor.sweep_blocks");
	long f1 = minflt();
	size_t mapped = 0, ml = sizeof(mapped);
	if (tctl)
		tctl("stats.mapped", &mapped, &ml, NULL, 0);
	double sweep_rate = (double)(s1 - s0) / dt;
	double pass_est = sweep_rate > 0 ? (double)(mapped / BLOCK) / sweep_rate : -1;
	if (det < 0 && detected(seed))
		det = now() - t0;
	size_t meta_je = 0, l = sizeof(meta_je);
	uint64_t epoch = 1;
	if (jctl) {
		jctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
		jctl("stats.metadata", &meta_je, &l, NULL, 0);
	}
	printf("name=%s phase=%d detect_s=%.2f rate_maps=%.2f bg_share=%.5f cost_p50_us=%.0f "
	       "cost_p99_us=%.0f minflt=%ld meta_ours=%llu meta_je=%zu seen_1s=%.1f seen_10s=%.1f "
	       "seen_60s=%.1f size_90=%.1f size_95=%.1f size_99=%.1f pass_s=%.2f recent_share=%.5f "
	       "window_s=%.1f steady_p99_us=%.0f pte_kib=%ld passes=%llu\n",
	       name, id, det, (double)acc / dt / 1e6, (double)(c1 - c0) / 1e9 / dt,
	       (double)u64("stats.bg.period_cost_p50_ns") / 1e3,
	       (double)u64("stats.bg.period_cost_p99_ns") / 1e3, f1 - f0,
	       (unsigned long long)u64("stats.metadata"), meta_je,
	       (double)u64("stats.advise.seen_1s") / MB, (double)u64("stats.advise.seen_10s") / MB,
	       (double)u64("stats.advise.seen_60s") / MB, (double)u64("stats.advise.size_90") / MB,
	       (double)u64("stats.advise.size_95") / MB, (double)u64("stats.advise.size_99") / MB,
	       (double)u64("stats.monitor.pass_periods") * 0.1, dbl("stats.bg.share"), pass_est,
	       (double)u64("stats.bg.steady_cost_p99_ns") / 1e3, pte_kib(),
	       (unsigned long long)u64("stats.monitor.passes"));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned long long f = 256, t = 0, h = 0;
	double a = 8, b = 8, w = 3;
	const char *name = "scale";
	int opt;
	cold_pm = 100;
	while ((opt = getopt(argc, argv, "f:t:H:c:ra:b:w:n:R:")) != -1) {
		switch (opt) {
		case 'f': f = strtoull(optarg, NULL, 10); break;
		case 't': t = strtoull(optarg, NULL, 10); break;
		case 'H': h = strtoull(optarg, NULL, 10); break;
		case 'c': cold_pm = (unsigned)atoi(optarg); break;
		case 'r': readonly = true; break;
		case 'a': a = atof(optarg); break;
		case 'b': b = atof(optarg); break;
		case 'w': w = atof(optarg); break;
		case 'n': name = optarg; break;
		case 'R': max_rate = atof(optarg) * 1e6; break;
		default: return 2;
		}
	}
	if (!t || t > f)
		t = f;
	if (!h)
		h = t / 20;
	tctl = (ctl_fn)dlsym(RTLD_DEFAULT, "tier_mallctl");
	jctl = (ctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	size_t nchunks = (size_t)((f * MB + CHUNK - 1) / CHUNK);
	char **chunks = calloc(nchunks, sizeof(*chunks));
	nblocks = (long)(t * MB / BLOCK);
	nhot = (long)(h * MB / BLOCK);
	if (nhot < 1 || nhot >= nblocks) {
		fprintf(stderr, "scale: hot set must be at least one block and less than the touched part\n");
		return 2;
	}
	blocks = calloc((size_t)nblocks, sizeof(*blocks));
	hot = calloc((size_t)nhot, sizeof(*hot));
	long k = 0;
	for (size_t c = 0; c < nchunks; c++) {
		chunks[c] = aligned_alloc(BLOCK, CHUNK);
		if (!chunks[c]) {
			fprintf(stderr, "scale: out of memory at chunk %zu\n", c);
			return 1;
		}
		for (size_t off = 0; off < CHUNK && k < nblocks; off += BLOCK) {
			blocks[k++] = chunks[c] + off;
			memset(chunks[c] + off, 1, BLOCK);
		}
	}
	uint64_t seed = 88172645463325252ull;
	pick_hot(&seed, NULL, 0);
	phase(name, 1, a, w, &seed);
	/* which sources ran (the test asserts read-only detection only where
	 * one of them sees reads) */
	const char *src = NULL;
	size_t sl = sizeof(src);
	if (tctl && tctl("tier.heat.sources", &src, &sl, NULL, 0) == 0 && src)
		fprintf(stderr, "scale: heat sources: %s\n", src);
	/* the shift: a new hot set, none of it in the old one */
	long *old = malloc((size_t)nhot * sizeof(*old));
	memcpy(old, hot, (size_t)nhot * sizeof(*old));
	pick_hot(&seed, old, nhot);
	phase(name, 2, b, w, &seed);
	return 0;
}
