/* squeeze: memory placed on the fast tier while node 0 had no free memory
 * faults in on the slow node; once node 0 has room again, the placement
 * audit must find it and move it where it is counted.
 *   squeeze [MIB [WAIT_S]]     (48 MiB, 30 s)
 * Locks a balloon that prefers node 0, as large as node 0's free memory
 * (it fills node 0 to the kernel's watermarks, the rest spills to node 1:
 * bound to node 0 it was OOM-killed), allocates and writes MIB MiB in
 * 1 MiB blocks (all under fast_limit), reads where the kernel put them,
 * frees the balloon, then waits until 95% of the pages are on node 0.  Prints
 *   before node0=<MiB> node1=<MiB>
 *   after node0=<MiB> node1=<MiB> seconds=<s> misplaced=<blocks the audit found>
 * and exits 0 when the squeeze put at least 8 MiB on node 1 and the pages
 * came back in time, 1 otherwise (saying which). */
#define _GNU_SOURCE
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tiermalloc.h"

#define MIB (1ul << 20)

static long node0_free_kib(void)
{
	FILE *f = fopen("/sys/devices/system/node/node0/meminfo", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "MemFree:"))
			sscanf(strstr(line, "MemFree:") + 8, "%ld", &kib);
	if (f)
		fclose(f);
	return kib;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long nblk;
static char **blk;
static void **pages;
static int *status;
static size_t npg;

/* bytes of the blocks on node 0 and node 1, from the kernel */
static int where(size_t *n0, size_t *n1)
{
	*n0 = *n1 = 0;
	if (move_pages(0, npg, pages, NULL, status, 0) != 0)
		return -1;
	for (size_t i = 0; i < npg; i++) {
		if (status[i] == 0)
			*n0 += 4096;
		else if (status[i] == 1)
			*n1 += 4096;
	}
	return 0;
}

int main(int argc, char **argv)
{
	nblk = argc > 1 ? atol(argv[1]) : 48;
	double wait_s = argc > 2 ? atof(argv[2]) : 30;
	long free_kib = node0_free_kib();
	if (nblk < 16 || free_kib < 0) {
		fprintf(stderr, "squeeze: %s\n", nblk < 16 ? "at least 16 MiB" : "no node 0 meminfo");
		return 1;
	}
	size_t bal = (size_t)free_kib * 1024ul;
	char *b = bal ? mmap(NULL, bal, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
	unsigned long mask = 1;
	if (!b || b == MAP_FAILED || mbind(b, bal, MPOL_PREFERRED, &mask, 2, 0) || mlock(b, bal)) {
		perror("squeeze: balloon");
		return 1;
	}
	blk = calloc((size_t)nblk, sizeof(*blk));
	npg = (size_t)nblk * (MIB / 4096 - 16); /* jemalloc's padding left out */
	pages = calloc(npg, sizeof(*pages));
	status = calloc(npg, sizeof(*status));
	size_t k = 0;
	for (long i = 0; i < nblk; i++) {
		blk[i] = malloc(MIB - 64 * 1024);
		if (!blk[i]) {
			fprintf(stderr, "squeeze: malloc failed\n");
			return 1;
		}
		memset(blk[i], (int)i, MIB - 64 * 1024);
		char *p = (char *)(((uintptr_t)blk[i] + 4095) & ~(uintptr_t)4095);
		for (size_t j = 0; j < MIB / 4096 - 16 && k < npg; j++)
			pages[k++] = p + j * 4096;
	}
	npg = k;
	size_t n0, n1;
	if (where(&n0, &n1)) {
		perror("squeeze: move_pages");
		return 1;
	}
	printf("before node0=%zu node1=%zu\n", n0 / MIB, n1 / MIB);
	munmap(b, bal);
	double t0 = now_s(), t = 0;
	size_t a0 = n0, a1 = n1;
	while ((t = now_s() - t0) < wait_s) {
		if (where(&a0, &a1) == 0 && a0 >= (a0 + a1) / 20 * 19)
			break;
		usleep(250000);
	}
	uint64_t mis = UINT64_MAX;
	size_t len = sizeof(mis);
	if (tier_mallctl("stats.migrate_misplaced", &mis, &len, NULL, 0))
		mis = UINT64_MAX;
	printf("after node0=%zu node1=%zu seconds=%.2f misplaced=%lld\n", a0 / MIB, a1 / MIB, t,
	       mis == UINT64_MAX ? -1LL : (long long)mis);
	/* the data survived its moves */
	for (long i = 0; i < nblk; i++)
		for (size_t j = 0; j < MIB - 64 * 1024; j += 4096)
			if (blk[i][j] != (char)i) {
				fprintf(stderr, "squeeze: block %ld corrupted at %zu\n", i, j);
				return 1;
			}
	if (n1 < 8 * MIB) {
		fprintf(stderr, "squeeze: the balloon left room: only %zu MiB on node 1 before\n", n1 / MIB);
		return 1;
	}
	if (a0 < (a0 + a1) / 20 * 19 || mis == UINT64_MAX || mis < 1) {
		fprintf(stderr, "squeeze: pages not back on node 0 within %.0f s\n", wait_s);
		return 1;
	}
	return 0;
}
