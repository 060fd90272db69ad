/* The large-buffer cache (src/large.c): freed huge buffers (jemalloc's
 * oversize ones, 8 MiB and up) are reused without faulting their pages in
 * again, the first one too (the cache is set up before it is served),
 * contents stay right (calloc zeroes a reused buffer), the stats
 * show the cache, it is given back after a pause, a request that no held
 * buffer fits is filled with their pages (moved, not faulted in again;
 * live buffers, calloc and realloc untouched), the other arenas' dirty
 * pages are purged when the cut leaves RSS over the bound, a thread's
 * 4-8 MiB requests are checked once another thread set the cache up, and
 * large_cache:0 keeps
 * jemalloc's eager purge.  Counts, not times. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "../tap.h"
#include "tiermalloc.h"

#define MIB ((size_t)1 << 20)
#define PAGES(n) ((long)((n) / 4096))

static long faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static long rss_pages(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res;
}

/* "large cache: on; huge allocations checked: C; emptied: P times, B bytes; held ...: H bytes" */
static bool cache_stats(unsigned long long *checks, unsigned long long *purges, unsigned long long *held)
{
	tap_out_reset();
	tier_stats_print(tap_out_cb, NULL, NULL);
	const char *s = strstr(tap_out, "\nlarge cache: on true, ");
	unsigned long long bytes;
	return s && sscanf(s, "\nlarge cache: on true, huge allocations checked %llu, emptied %llu, "
			      "bytes emptied %llu, held at the last check %llu",
			   checks, purges, &bytes, held) == 4;
}

/* n rounds of: allocate size bytes, write every page, free; the faults */
static long churn(size_t size, int n)
{
	long f0 = faults();
	for (int i = 0; i < n; i++) {
		volatile unsigned char *b = malloc(size);
		if (!b)
			return -1;
		for (size_t o = 0; o < size; o += 4096)
			b[o] = (unsigned char)i;
		free((void *)b);
	}
	return faults() - f0;
}


/* Threads churning huge buffers at once: bytes live (a request counts as
 * live once asked for) and their peak. */
static _Atomic long live, live_peak;

static void *churn_thread(void *arg)
{
	static const size_t mib[] = {10, 24, 5, 20, 7, 16};
	unsigned t = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < 30; i++) {
		size_t size = mib[(t + i) % 6] * MIB;
		long now = atomic_fetch_add(&live, (long)size) + (long)size;
		for (long p = atomic_load(&live_peak); now > p && !atomic_compare_exchange_weak(&live_peak, &p, now);)
			;
		volatile unsigned char *b = malloc(size);
		if (!b)
			return (void *)1;
		for (size_t o = 0; o < size; o += 4096)
			b[o] = (unsigned char)i;
		free((void *)b);
		atomic_fetch_sub(&live, (long)size);
	}
	return NULL;
}

/* In a fresh process: 4 threads churn; exit 0 when peak RSS stayed within
 * the start's RSS + the peak of live huge bytes + the slack (4 MiB) + 10 MiB
 * (jemalloc's extra page per extent, stacks, stats); prints the figures. */
static int concurrent(void)
{
	long base = rss_pages() * 4096;
	pthread_t th[4];
	for (unsigned t = 0; t < 4; t++)
		pthread_create(&th[t], NULL, churn_thread, (void *)(uintptr_t)t);
	bool failed = false;
	for (unsigned t = 0; t < 4; t++) {
		void *r;
		pthread_join(th[t], &r);
		failed |= r != NULL;
	}
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	long peak = u.ru_maxrss * 1024, bound = base + atomic_load(&live_peak) + (long)(14 * MIB);
	unsigned long long checks = 0, purges = 0, held = 0;
	cache_stats(&checks, &purges, &held);
	/* the huge arena (index opt.narenas) still keeps freed extents:
	 * jemalloc wrote its decay of 0 after publishing the arena, and a
	 * setup by another thread meanwhile was undone (every free purged) */
	unsigned narenas = 0;
	size_t sz = sizeof(narenas);
	ssize_t decay = -1;
	char name[64];
	if (mallctl("opt.narenas", &narenas, &sz, NULL, 0) == 0) {
		snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", narenas);
		sz = sizeof(decay);
		mallctl(name, &decay, &sz, NULL, 0);
	}
	printf("peak RSS %ld MiB, start %ld MiB + live peak %ld MiB + 14 MiB = %ld MiB; %llu of 120 checked; "
	       "%ld faults, %llu MiB held, decay %zd ms\n",
	       peak / (long)MIB, base / (long)MIB, atomic_load(&live_peak) / (long)MIB, bound / (long)MIB, checks,
	       u.ru_minflt, held / MIB, decay);
	fflush(stdout);
	/* the 5 and 7 MiB buffers are the cache's too (from 4 MiB), once any
	 * thread's first oversize request (8 MiB) has set it up: only thread
	 * 2's first (5 MiB) may come before that */
	return failed ? 2 : peak <= bound && checks >= 119 && decay > 0 ? 0 : 1;
}

static unsigned long long stat_u64(const char *name)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);
	return tier_mallctl(name, &v, &sz, NULL, 0) ? 0 : (unsigned long long)v;
}

static long mappings(void)
{
	long n = 0;
	int c;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && (c = fgetc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

/* Every page of b (n bytes) holds v (written by fill_pages). */
static void fill_pages(unsigned char *b, size_t n, unsigned char v)
{
	for (size_t o = 0; o < n; o += 4096)
		b[o] = v;
	b[n - 1] = v;
}

static bool pages_hold(const unsigned char *b, size_t n, unsigned char v)
{
	bool same = b[n - 1] == v;
	for (size_t o = 0; o < n; o += 4096)
		same &= b[o] == v;
	return same;
}

/* A new block of n bytes, v written in every page, and how much the
 * counter named stat and measure() (faults, resident pages) grew meanwhile */
static unsigned char *touch_new(size_t n, unsigned char v, const char *stat, long (*measure)(void),
				unsigned long long *grew_stat, long *grew)
{
	unsigned long long s0 = stat_u64(stat);
	long m0 = measure();
	unsigned char *p = malloc(n);
	if (p)
		fill_pages(p, n, v);
	*grew = measure() - m0;
	*grew_stat = stat_u64(stat) - s0;
	return p;
}

/* In a fresh process: a request that no held buffer fits is filled with
 * the pages of held ones; exit 0 when each check holds, else the number
 * of the first that failed; prints the figures. */
static int moves(void)
{
	churn(9 * MIB, 2);
	/* 12 + 12 MiB held apart (a live one between), 20 asked */
	unsigned char *a = malloc(12 * MIB), *s = malloc(12 * MIB), *b = malloc(12 * MIB);
	fill_pages(a, 12 * MIB, 1);
	fill_pages(s, 12 * MIB, 2);
	fill_pages(b, 12 * MIB, 3);
	free(a);
	free(b);
	unsigned long long moved;
	long f;
	unsigned char *c = touch_new(20 * MIB, 4, "stats.large.moved", faults, &moved, &f);
	if (!c)
		return 1;
	printf("20 MiB with 2 x 12 MiB held: %ld faults (of %ld), %llu MiB moved; ", f, PAGES(20 * MIB), moved / MIB);
	if (f > PAGES(20 * MIB) / 4 || moved < 16 * MIB)
		return 1;
	if (!pages_hold(s, 12 * MIB, 2) || !pages_hold(c, 20 * MIB, 4))
		return 2;
	/* calloc past every held buffer: zero (nothing moved in) */
	free(c);
	unsigned char *z = calloc(1, 24 * MIB);
	bool zero = z != NULL;
	for (size_t i = 0; z && i < 24 * MIB; i += 512)
		zero &= z[i] == 0 && z[i + 511] == 0;
	if (!zero)
		return 3;
	/* realloc keeps its data */
	s = realloc(s, 30 * MIB);
	if (!s || !pages_hold(s, 12 * MIB, 2))
		return 4;
	free(s);
	free(z);
	/* random 5-25 MiB buffers, 8 live: each holds its own byte until
	 * freed, faults stay under half the pages touched, and the mappings
	 * that moves split stay few */
	unsigned char *slot[8] = {0};
	size_t len[8] = {0};
	uint64_t r = 7;
	long touched = 0, maps0 = mappings();
	long f0 = faults();
	for (int i = 0; i < 120; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)((r >> 33) % 8);
		size_t n = 5 * MIB + (size_t)((r >> 13) % (20 * MIB));
		unsigned char *p = malloc(n);
		if (!p)
			return 5;
		fill_pages(p, n, (unsigned char)(i + 1));
		touched += (long)(n / 4096);
		if (slot[k] && !pages_hold(slot[k], len[k], (unsigned char)(slot[k][0])))
			return 6;
		free(slot[k]);
		slot[k] = p;
		len[k] = n;
	}
	for (int k = 0; k < 8; k++) {
		if (slot[k] && !pages_hold(slot[k], len[k], slot[k][0]))
			return 6;
		free(slot[k]);
	}
	f = faults() - f0;
	long maps = mappings();
	printf("random 5-25 MiB: %ld faults for %ld pages touched, mappings %ld -> %ld\n", f, touched, maps0, maps);
	fflush(stdout);
	return f > touched / 2 ? 7 : maps > maps0 + 1000 ? 8 : 0;
}

/* In a fresh process: 16 MiB of freed 2 MiB buffers (another arena's,
 * apart, so not purged at once) when a huge request passes the bound: they
 * are purged.  Exit 0 when they were; prints the figures. */
static int others(void)
{
	churn(9 * MIB, 2);
	unsigned char *b[16];
	for (int i = 0; i < 16; i++) {
		b[i] = malloc(2 * MIB);
		fill_pages(b[i], 2 * MIB, 5);
	}
	for (int i = 0; i < 16; i += 2)
		free(b[i]);
	unsigned long long n;
	long grew;
	if (!touch_new(24 * MIB, 6, "stats.large.others", rss_pages, &n, &grew))
		return 1;
	printf("24 MiB touched beside 16 MiB of freed 2 MiB buffers: RSS +%ld MiB, other arenas purged %llu times\n",
	       grew * 4096 / (long)MIB, n);
	fflush(stdout);
	return n >= 1 && grew < PAGES(16 * MIB) ? 0 : 1;
}

/* A thread whose first 5 MiB request came before the cache was on: its
 * next one is checked once another thread has set the cache up. */
static pthread_barrier_t stale_bar;
static unsigned long long stale_checked;

static void *stale_thread(void *arg)
{
	(void)arg;
	churn(5 * MIB, 1);
	pthread_barrier_wait(&stale_bar);
	pthread_barrier_wait(&stale_bar); /* main's 9 MiB */
	unsigned long long c0 = stat_u64("stats.large.checks");
	churn(5 * MIB, 1);
	stale_checked = stat_u64("stats.large.checks") - c0;
	return NULL;
}

/* In a fresh process; exit 0 when the second 5 MiB request was checked. */
static int stale(void)
{
	pthread_t t;
	pthread_barrier_init(&stale_bar, NULL, 2);
	pthread_create(&t, NULL, stale_thread, NULL);
	pthread_barrier_wait(&stale_bar);
	churn(9 * MIB, 1);
	pthread_barrier_wait(&stale_bar);
	pthread_join(t, NULL);
	printf("5 MiB in a thread that started before the cache: %llu of 1 checked\n", stale_checked);
	fflush(stdout);
	return stale_checked == 1 ? 0 : 1;
}

/* This program again as `mode`, in a child (conf: its TIERMALLOC_CONF, NULL
 * to keep this one's): its exit status (-1: it did not exit), and the first
 * line it wrote in line. */
static int run_self(char *argv0, char *mode, const char *conf, char *line, size_t len)
{
	int fd[2];
	line[0] = '\0';
	if (pipe(fd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		if (conf)
			setenv("TIERMALLOC_CONF", conf, 1);
		char *args[] = {argv0, mode, NULL};
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(fd[1]);
	ssize_t got = pid > 0 ? read(fd[0], line, len - 1) : 0;
	line[got > 0 ? got - 1 : 0] = '\0';
	close(fd[0]);
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return concurrent();
	if (argc > 1 && !strcmp(argv[1], "moves"))
		return moves();
	if (argc > 1 && !strcmp(argv[1], "others"))
		return others();
	if (argc > 1 && !strcmp(argv[1], "stale"))
		return stale();
	if (argc > 1 && !strcmp(argv[1], "off")) {
		/* the child below, under large_cache:0 */
		churn(9 * MIB, 2);
		long f = churn(12 * MIB, 10);
		tap_out_reset();
		tier_stats_print(tap_out_cb, NULL, NULL);
		return f >= 9 * PAGES(12 * MIB) && strstr(tap_out, "\nlarge cache: on false,") ? 0 : 1;
	}
	tap_rerun_with(argv, "TIERMALLOC_CONF", "");
	/* the cache is set up, and jemalloc's huge arena made, before the
	 * first huge allocation is served: that one is checked and held once
	 * freed.  (When jemalloc made the arena for the request, it set its
	 * decay to 0 after publishing it: a setup meanwhile in another thread
	 * was undone, and every free purged at once.) */
	long f1 = churn(9 * MIB, 1), f2 = churn(9 * MIB, 1);
	unsigned long long checks = 0, purges = 0, held = 0;
	bool shown = cache_stats(&checks, &purges, &held);
	ok(shown && checks >= 2 && f2 < f1 / 4 + 64,
	   "the first 9 MiB buffer checked and reused: %llu of 2 checked, %ld faults, then %ld", checks, f1, f2);

	/* reuse: 10 rounds of 12 MiB fault about one buffer's pages, not 10 */
	long f = churn(12 * MIB, 10);
	ok(f >= 0 && f < 3 * PAGES(12 * MIB), "10 rounds of 12 MiB took %ld faults (< 3 buffers' %ld)",
	   f, 3 * PAGES(12 * MIB));
	shown = cache_stats(&checks, &purges, &held);
	ok(shown && checks >= 10,
	   "stats show the cache on, %llu huge allocations checked", checks);

	/* contents: a live neighbour stays intact across reuse; calloc of a
	 * reused dirty buffer is zero */
	unsigned char *a = malloc(16 * MIB), *b = malloc(16 * MIB);
	memset(a, 0xab, 16 * MIB);
	memset(b, 0x5c, 16 * MIB);
	free(a);
	unsigned char *c = calloc(1, 16 * MIB);
	bool zero = c != NULL, intact = true;
	for (size_t i = 0; c && i < 16 * MIB; i += 512)
		zero &= c[i] == 0 && c[i + 511] == 0;
	for (size_t i = 0; i < 16 * MIB; i += 512)
		intact &= b[i] == 0x5c && b[i + 511] == 0x5c;
	ok(zero, "calloc of a reused 16 MiB buffer is zero");
	ok(intact, "a live 16 MiB buffer is intact across its neighbour's reuse");
	free(b);
	free(c);

	/* given back: 4 x 20 MiB freed stay cached (within the recent peak);
	 * after 2 s without huge allocations the peak is forgotten, and the
	 * next huge allocation empties the cache */
	void *p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = malloc(20 * MIB);
		memset(p[i], i + 1, 20 * MIB);
	}
	for (int i = 0; i < 4; i++)
		free(p[i]);
	free(malloc(9 * MIB));
	unsigned long long purges0 = 0, held0 = 0;
	cache_stats(&checks, &purges0, &held0);
	long rss_cached = rss_pages();
	ok(held0 >= 60 * MIB, "80 MiB freed: %llu MiB held for reuse", held0 / MIB);
	struct timespec pause = {2, 200000000};
	nanosleep(&pause, NULL);
	free(malloc(9 * MIB));
	cache_stats(&checks, &purges, &held);
	long rss_after = rss_pages();
	ok(purges > purges0 && held == 0, "after a 2.2 s pause the cache is emptied (%llu -> %llu times)",
	   purges0, purges);
	ok(rss_cached - rss_after >= PAGES(60 * MIB), "RSS fell by %ld MiB (>= 60)",
	   (rss_cached - rss_after) * 4096 / (long)MIB);

	/* a request no held extent fits (24 and 16 MiB held, apart, 32 asked)
	 * cuts the cache to what the bound leaves, never empties it: the
	 * peak (64 MiB live) leaves about 12 MiB beside 24 live + 32 new */
	/* (each touched before the next is asked: the peak counts a request
	 * as live once touched, RSS being what the bound reads) */
	unsigned char *x1 = malloc(24 * MIB);
	memset(x1, 1, 24 * MIB);
	unsigned char *x2 = malloc(24 * MIB);
	memset(x2, 2, 24 * MIB);
	unsigned char *x3 = malloc(16 * MIB);
	memset(x3, 3, 16 * MIB);
	free(x1);
	free(x3);
	unsigned char *x4 = malloc(32 * MIB);
	memset(x4, 4, 32 * MIB);
	cache_stats(&checks, &purges, &held);
	ok(held >= 4 * MIB, "32 MiB asked with 24 and 16 MiB held: %llu MiB still held", held / MIB);
	free(x2);
	free(x4);

	/* fork while the cache is on: the child allocates huge buffers */
	pid_t pid = fork();
	if (pid == 0)
		_exit(churn(12 * MIB, 3) >= 0 ? 0 : 1);
	int st = -1;
	waitpid(pid, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child churns huge buffers");

	/* four threads at once: the bound holds (check and allocation are
	 * one step under the cache's lock) */
	char line[320];
	int rc = run_self(argv[0], "threads", NULL, line, sizeof(line));
	ok(rc == 0, "4 threads churning 5-24 MiB buffers: %s (exit %d)", line, rc);

	/* a thread's 4-8 MiB requests from before the cache was set up */
	rc = run_self(argv[0], "stale", NULL, line, sizeof(line));
	ok(rc == 0, "%s (exit %d)", line, rc);

	/* held buffers' pages fill a request that none of them fits */
	rc = run_self(argv[0], "moves", NULL, line, sizeof(line));
	ok(rc == 0, "moves: %s (exit %d)", line, rc);

	/* the bound covers the other arenas' dirty pages too */
	rc = run_self(argv[0], "others", NULL, line, sizeof(line));
	ok(rc == 0, "others: %s (exit %d)", line, rc);

	/* large_cache:0: jemalloc's eager purge, every round faults again */
	rc = run_self(argv[0], "off", "large_cache:0", line, sizeof(line));
	ok(rc == 0, "large_cache:0: 10 rounds fault every time (exit %d)", rc);
	return done();
}
