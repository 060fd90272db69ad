/* cxlhot: replay CXL hot lists naming one buffer, as a device would.
 *   cxlhot [-t SECONDS] [-f PATH]
 *     -f PATH  write the batches to PATH (the file or FIFO named by
 *              cxl_reports) instead of tier.cxl.report
 *     -n N     allocate at least N blocks (default 48; the cxl VM's memory
 *              is slow), more (up to 64) until two of them lie on a slow node
 *     -d MEMDEV:HPA_BASE:DPA_BASE
 *              name the pages by device address instead (one-way region:
 *              dpa = hpa - HPA_BASE + DPA_BASE, both hex)
 *     -c       cold list: another source runs (pagemap); the program
 *              writes a hot set on node 0 while the lists name A, which
 *              it never touches: for SECONDS, A must stay where it is
 *              and the hot set too (the combination rule)
 * Fills memory until blocks land on a slow node, picks two of them (A
 * named, B not), then:
 *   1. writes bad batches to tier.cxl.report (malformed, other version,
 *      out of range, foreign, duplicate, dpa) and checks the counters and
 *      that nothing moved;
 *   2. writes hpa records for A's pages (frames read from
 *      /proc/self/pagemap: root) every 100 ms until A is on node 0.
 * Prints "ok ..." / "fail ..." lines; exit 0 when A was promoted and B
 * and everything else stayed.  Run with heat_sources:cxl. */
#include <fcntl.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tiermalloc.h"

#define BLOCK (2u << 20)
#define PG 4096u
#define NBLK_MAX 64

static int node_of(char *p)
{
	void *a = p;
	int st = -1;
	return move_pages(0, 1, &a, NULL, &st, 0) ? -1 : st;
}

/* Share of the pages of [p, p+len) on node 0. */
static double on_fast(char *p, size_t len)
{
	int n = 0, k = 0;
	for (size_t o = 0; o < len; o += PG, k++)
		n += node_of(p + o) == 0;
	return k ? (double)n / k : 0;
}

static int fails;

/* A counter; a failed read is a failure of the run (and reads as 0, which
 * no ">= 1" check takes for a count). */
static uint64_t stat_of(const char *name)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	if (tier_mallctl(name, &v, &len, NULL, 0) || len != sizeof(v)) {
		printf("fail reading %s\n", name);
		fails++;
		return 0;
	}
	return v;
}

static int out_fd = -1;

static int report(const char *text)
{
	size_t len = strlen(text);
	if (out_fd < 0)
		return tier_mallctl("tier.cxl.report", NULL, NULL, (void *)text, len);
	if (!len)
		return -1;
	return write(out_fd, text, len) == (ssize_t)len ? 0 : -1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int cond, const char *what)
{
	printf("%s %s\n", cond ? "ok" : "fail", what);
	fails += !cond;
}

/* The reverse map: read once per slow block, then only what changed (and
 * a few a period in turn), not every block every period. */
static void map_report(char **all, int nblk)
{
	int slow = 0;
	for (int i = 0; i < nblk; i++)
		slow += node_of(all[i]) > 0;
	uint64_t reads = stat_of("stats.heat.cxl.map_reads"), res = stat_of("stats.heat.cxl.resolves");
	printf("# reverse map: %llu block reads, %llu checks, %llu stale pages, %llu frames held, "
	       "%llu periods with records, %.0f us CPU each; %d of %d blocks slow now\n",
	       (unsigned long long)reads, (unsigned long long)stat_of("stats.heat.cxl.map_checks"),
	       (unsigned long long)stat_of("stats.heat.cxl.map_stale"),
	       (unsigned long long)stat_of("stats.heat.cxl.map_pages"), (unsigned long long)res,
	       res ? (double)stat_of("stats.heat.cxl.resolve_ns") / 1e3 / (double)res : 0.0, slow, nblk);
	/* a whole rebuild each period would read every slow block each time */
	if (res >= 16 && slow >= 16)
		check(reads * 2 < res * (uint64_t)slow, "the reverse map read under half the blocks a whole "
		      "rebuild each period would");
	else
		check(res >= 1 && reads > 0, "the reverse map was read");
}

int main(int argc, char **argv)
{
	double timeout = 30;
	int opt;
	const char *path = NULL;
	int cold = 0, nblk = 48;
	char memdev[32] = "";
	unsigned long long hpa_base = 0, dpa_base = 0;
	while ((opt = getopt(argc, argv, "t:f:cn:d:")) != -1)
		if (opt == 'c')
			cold = 1;
		else if (opt == 'n')
			nblk = atoi(optarg) > 4 && atoi(optarg) <= NBLK_MAX ? atoi(optarg) : 48;
		else if (opt == 'd') {
			if (sscanf(optarg, "%31[^:]:%llx:%llx", memdev, &hpa_base, &dpa_base) != 3)
				return 2;
		}
		else if (opt == 't')
			timeout = atof(optarg);
		else if (opt == 'f')
			path = optarg;
		else
			return 2;
	/* the background thread opens the stream when its sources start */
	for (int i = 0; i < 200 && stat_of("stats.bg.periods") == 0; i++)
		usleep(50 * 1000);
	if (path && (out_fd = open(path, O_WRONLY | O_APPEND)) < 0) {
		printf("fail cannot open %s\n", path);
		return 3;
	}
	const char *src = NULL;
	size_t sl = sizeof(src);
	tier_mallctl("tier.heat.sources", &src, &sl, NULL, 0);
	printf("sources: %s\n", src ? src : "?");

	/* each buffer one whole block of its own (a buffer that straddled two
	 * blocks would share them with its neighbours); past fast_limit they
	 * are placed on the slow node: that placement is checked, not assumed */
	char *all[NBLK_MAX];
	char *a = NULL, *b = NULL;
	int nb = 0;
	for (; nb < NBLK_MAX && (nb < nblk || !b); nb++) {
		all[nb] = aligned_alloc(BLOCK, BLOCK);
		if (!all[nb])
			break;
		memset(all[nb], 1, BLOCK);
		if (nb >= 2 && on_fast(all[nb], BLOCK) == 0 && node_of(all[nb]) > 0 && !b) {
			if (!a)
				a = all[nb];
			else
				b = all[nb];
		}
	}
	nblk = nb;
	printf("# %d blocks of 2 MiB on node 0: ", nblk);
	for (int i = 0; i < nblk; i++)
		printf("%.0f%%%s", on_fast(all[i], BLOCK) * 100, i + 1 < nblk ? " " : "\n");
	printf("# committed on tier 0: %llu bytes, on tier 1: %llu bytes\n",
	       (unsigned long long)stat_of("tier.0.committed"), (unsigned long long)stat_of("tier.1.committed"));
	check(a && b, "blocks past fast_limit are placed on the slow node (two found)");
	if (!a || !b)
		return 3;
	size_t len = BLOCK / 2; /* the first half of each: whole pages of one block */
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t pm[BLOCK / 2 / PG];
	if (fd < 0 || pread(fd, pm, sizeof(pm), (off_t)((uintptr_t)a / PG * 8)) != (ssize_t)sizeof(pm) ||
	    !(pm[0] & ((1ull << 55) - 1))) {
		printf("fail no page frames in /proc/self/pagemap (root?)\n");
		return 3;
	}

	/* 1. bad batches */
	uint64_t moved0 = stat_of("stats.promoted_blocks");
	char buf[4096];
	uint64_t pa = (pm[0] & ((1ull << 55) - 1)) * PG;
	check(report("hpa 0x1000 4096 1\n") == 0, "a batch without header is queued");
	snprintf(buf, sizeof(buf), "tiermalloc-cxl-hotlist v9\nhpa %llx 4096 64\n", (unsigned long long)pa);
	check(report(buf) == 0, "a batch of another version is queued");
	snprintf(buf, sizeof(buf),
		 "tiermalloc-cxl-hotlist v1\n"
		 "hpa\n"                       /* malformed */
		 "hpa %llx 4096 lots\n"        /* malformed */
		 "hpa %llx 4095 1\n"           /* range: unit */
		 "hpa 10000000000000 4096 1\n" /* range: 2^52 */
		 "hpa 1000 4096 1\n"           /* foreign: not our memory */
		 "dpa mem99 0x0 4096 1\n",     /* dpa: no such device */
		 (unsigned long long)pa, (unsigned long long)pa);
	check(report(buf) == 0, "a batch of bad records is queued");
	check(report("") != 0, "an empty batch is refused");
	/* the background thread takes them in its next period, which may run
	 * late (a migration off the emulated CXL node moves 0.4 MiB/s): wait
	 * for the nine bad records to be counted, up to 30 s */
	double w0 = now();
	for (int i = 0; i < 300; i++) {
		usleep(100 * 1000);
		if (stat_of("stats.heat.cxl.rejected_malformed") + stat_of("stats.heat.cxl.rejected_version") +
			    stat_of("stats.heat.cxl.rejected_range") + stat_of("stats.heat.cxl.rejected_foreign") +
			    stat_of("stats.heat.cxl.rejected_dpa") >= 9)
			break;
	}
	usleep(300 * 1000); /* anything more would show now */
	printf("# counters after %.1f s: malformed %llu version %llu range %llu foreign %llu dpa %llu accepted %llu\n",
	       now() - w0,
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_malformed"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_version"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_range"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_foreign"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_dpa"),
	       (unsigned long long)stat_of("stats.heat.cxl.accepted"));
	check(stat_of("stats.heat.cxl.rejected_malformed") == 2, "malformed records counted (2)");
	check(stat_of("stats.heat.cxl.rejected_version") == 3, "records without a valid header, and the v9 header, counted (3)");
	check(stat_of("stats.heat.cxl.rejected_range") == 2, "out-of-range records counted (2)");
	check(stat_of("stats.heat.cxl.rejected_foreign") == 1, "foreign records counted (1)");
	check(stat_of("stats.heat.cxl.rejected_dpa") == 1, "dpa records counted (1)");
	check(stat_of("stats.heat.cxl.accepted") == 0, "no record accepted");
	/* the dpa record read the region layout (none here, or region0 of
	 * the cxl VM: one host bridge, nothing refused) */
	printf("# regions: %llu layout reads, %llu changes, %llu refused, %llu records refused\n",
	       (unsigned long long)stat_of("stats.heat.cxl.region_reads"),
	       (unsigned long long)stat_of("stats.heat.cxl.region_changes"),
	       (unsigned long long)stat_of("stats.heat.cxl.regions_refused"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_interleave"));
	check(stat_of("stats.heat.cxl.region_reads") >= 1 && stat_of("stats.heat.cxl.regions_refused") == 0 &&
	      stat_of("stats.heat.cxl.rejected_interleave") == 0,
	      "the dpa record read the region layout; no region refused");
	/* with another source running, it may move other blocks meanwhile */
	check((cold || stat_of("stats.promoted_blocks") == moved0) && on_fast(a, len) == 0 &&
	      on_fast(b, len) == 0, "bad records moved nothing");

	/* 2. hot lists naming A (and a duplicate of each record) */
	double t0 = now(), fa = 0;
	int rounds = 0;
	char *hot[4];
	int nhot = 0;
	for (int i = 0; i < nblk && nhot < 4; i++)
		if (on_fast(all[i], len) == 1)
			hot[nhot++] = all[i];
	if (cold && nhot < 4) {
		printf("fail no hot set on node 0 (%d blocks)\n", nhot);
		return 3;
	}
	while (now() - t0 < timeout && (cold || (fa = on_fast(a, len)) < 0.9)) {
		for (int h = 0; cold && h < nhot; h++)
			for (size_t o = 0; o < len; o += PG)
				hot[h][o]++;
		if (pread(fd, pm, sizeof(pm), (off_t)((uintptr_t)a / PG * 8)) != (ssize_t)sizeof(pm))
			break;
		size_t n = (size_t)snprintf(buf, sizeof(buf), "tiermalloc-cxl-hotlist v1\n# round %d\n", rounds);
		for (size_t p = 0; p < sizeof(pm) / sizeof(*pm) && n + 64 < sizeof(buf); p += 4) {
			uint64_t pfn = pm[p] & ((1ull << 55) - 1);
			if (pfn && memdev[0] && pfn * PG >= hpa_base)
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "dpa %s %llx 4096 64\n", memdev,
						      (unsigned long long)(pfn * PG - hpa_base + dpa_base));
			else if (pfn && !memdev[0])
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "hpa %llx 4096 64\n",
						      (unsigned long long)(pfn * PG));
		}
		if (rounds == 0) /* one duplicate */
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "hpa %llx 4096 64\n",
					      (unsigned long long)((pm[0] & ((1ull << 55) - 1)) * PG));
		report(buf);
		rounds++;
		usleep(100 * 1000);
	}
	fa = on_fast(a, len);
	double fb = on_fast(b, len);
	if (cold) {
		double fh = 0;
		for (int h = 0; h < nhot; h++)
			fh += on_fast(hot[h], len) / nhot;
		printf("# cold list, %.1f s (%d batches): A %.0f%% on node 0, hot set %.0f%%; accepted %llu, "
		       "pages given no heat %llu\n", now() - t0, rounds, fa * 100, fh * 100,
		       (unsigned long long)stat_of("stats.heat.cxl.accepted"),
		       (unsigned long long)stat_of("stats.heat.cxl.capped_pages"));
		check(fa == 0, "a list naming cold pages promotes nothing while another source runs");
		check(fh == 1, "the hot set another source sees stays on node 0");
		check(stat_of("stats.heat.cxl.accepted") > 0 && stat_of("stats.heat.cxl.capped_pages") > 0,
		      "the records were ours, and given no heat by the rule");
		map_report(all, nblk);
		return fails ? 1 : 0;
	}
	printf("# after %.1f s (%d batches): A %.0f%% on node 0, B %.0f%%; accepted %llu, duplicate %llu\n",
	       now() - t0, rounds, fa * 100, fb * 100, (unsigned long long)stat_of("stats.heat.cxl.accepted"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_duplicate"));
	map_report(all, nblk);
	check(fa >= 0.9, "the buffer the hot lists name is promoted");
	check(fb == 0, "the other buffer stays on the slow node");
	check(stat_of("stats.heat.cxl.rejected_duplicate") >= 1, "the duplicate record is counted");
	return fails ? 1 : 0;
}
