/* cxlmap: the cxl heat source's cost per period that has records, as the
 * footprint grows.  Run under LD_PRELOAD=libtiermalloc.so (any version:
 * tier_mallctl is looked up at run time) as root in the tiered VM, with
 * TIERMALLOC_CONF=heat_sources:cxl,fast_limit:2M,migrate:false (the
 * footprint on the slow node, nothing moving):
 *   cxlmap MIB ROUNDS RECORDS
 * allocates and writes MIB MiB, then ROUNDS times names RECORDS random
 * pages of it by host physical address in one batch, waits until the
 * batch was resolved, and lets a period pass.  Prints one line; the
 * source's time (collect_ns at exit, stats_print:json) is read by run.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int (*ctl)(const char *, void *, size_t *, void *, size_t);

static uint64_t stat_of(const char *name)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	return ctl(name, &v, &len, NULL, 0) ? UINT64_MAX : v;
}

int main(int argc, char **argv)
{
	if (argc != 4 || !(ctl = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT,
												"tier_mallctl"))) {
		fprintf(stderr, "usage: LD_PRELOAD=libtiermalloc.so cxlmap MIB ROUNDS RECORDS\n");
		return 2;
	}
	size_t mib = strtoul(argv[1], NULL, 10), rounds = strtoul(argv[2], NULL, 10),
	       nrec = strtoul(argv[3], NULL, 10);
	if (!mib || !nrec || nrec > 4000)
		return 2;
	for (int i = 0; i < 200 && stat_of("stats.bg.periods") == 0; i++)
		usleep(50 * 1000);
	size_t nchunk = mib / 2;
	char **chunk = calloc(nchunk, sizeof(*chunk));
	for (size_t i = 0; i < nchunk; i++) {
		chunk[i] = malloc(2u << 20);
		memset(chunk[i], 1, 2u << 20);
	}
	int fd = open("/proc/self/pagemap", O_RDONLY);
	char *buf = malloc(nrec * 48 + 64);
	uint64_t seed = 12345, first_ns = 0;
	for (size_t r = 0; r < rounds; r++) {
		if (r == 1) /* the first period with records builds the map */
			first_ns = stat_of("stats.heat.cxl.resolve_ns");
		size_t n = (size_t)sprintf(buf, "tiermalloc-cxl-hotlist v1\n");
		for (size_t k = 0; k < nrec; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			char *p = chunk[(seed >> 33) % nchunk] + ((seed >> 13) % 512) * 4096;
			uint64_t e = 0;
			if (pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) != 8 || !(e & (1ull << 63)))
				continue;
			n += (size_t)sprintf(buf + n, "hpa %llx 4096 1\n",
					     (unsigned long long)((e & ((1ull << 55) - 1)) * 4096));
		}
		uint64_t before = stat_of("stats.heat.cxl.accepted") + stat_of("stats.heat.cxl.rejected_foreign");
		if (ctl("tier.cxl.report", NULL, NULL, buf, n))
			return 3;
		for (int i = 0; i < 400; i++) { /* resolved */
			usleep(10 * 1000);
			if (stat_of("stats.heat.cxl.accepted") + stat_of("stats.heat.cxl.rejected_foreign") != before)
				break;
		}
		usleep(150 * 1000); /* the next batch in a later period */
	}
	uint64_t res = stat_of("stats.heat.cxl.resolves");
	printf("mib %zu rounds %zu accepted %llu foreign %llu", mib, rounds,
	       (unsigned long long)stat_of("stats.heat.cxl.accepted"),
	       (unsigned long long)stat_of("stats.heat.cxl.rejected_foreign"));
	if (res != UINT64_MAX)
		printf(" resolves %llu resolve_cpu_us %.0f first_cpu_us %.0f map_reads %llu map_checks %llu map_pages %llu",
		       (unsigned long long)res, (double)stat_of("stats.heat.cxl.resolve_ns") / 1e3, (double)first_ns / 1e3,
		       (unsigned long long)stat_of("stats.heat.cxl.map_reads"),
		       (unsigned long long)stat_of("stats.heat.cxl.map_checks"),
		       (unsigned long long)stat_of("stats.heat.cxl.map_pages"));
	printf("\n");
	return 0;
}
