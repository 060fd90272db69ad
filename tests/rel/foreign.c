/* foreign: memory the program got elsewhere must never be moved by
 * tiermalloc.  Maps two regions itself (mmap), binds one to each node
 * (mbind), touches them, then makes tiermalloc move as much as it can: a
 * malloc'd working set rewritten while the background thread runs (the
 * environment sets a short period and small fast_limit), and tier.demote /
 * tier.promote of everything, ROUNDS times.  Each round, move_pages
 * status queries check that every page of both regions, of a static
 * array and of a libc-made buffer (strdup, from us: it may move) is where
 * it was.  Prints "ok ..." or "FAIL ...".
 *   foreign ROUNDS */
#define _GNU_SOURCE
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tiermalloc.h"

#define REG (16u << 20)
static char data[4u << 20] __attribute__((aligned(4096)));

/* pages of [p, p+len) not on `node` (move_pages status query) */
static long off_node(char *p, size_t len, int node, long *pages)
{
	enum { BATCH = 4096 };
	static void *addr[BATCH];
	static int st[BATCH];
	long bad = 0, n = (long)(len / 4096);
	for (long i = 0; i < n; i += BATCH) {
		long k = n - i < BATCH ? n - i : BATCH;
		for (long j = 0; j < k; j++)
			addr[j] = p + (i + j) * 4096;
		if (move_pages(0, (unsigned long)k, addr, NULL, st, 0))
			return -1;
		for (long j = 0; j < k; j++)
			bad += st[j] != node;
	}
	*pages += n;
	return bad;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	setvbuf(stdout, NULL, _IOLBF, 0);
	char *r[2];
	for (int n = 0; n < 2; n++) {
		r[n] = mmap(NULL, REG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long mask = 1ul << n;
		if (r[n] == MAP_FAILED || mbind(r[n], REG, MPOL_BIND, &mask, 8, 0)) {
			printf("FAIL mmap/mbind node %d\n", n);
			return 1;
		}
		memset(r[n], 0x40 + n, REG);
	}
	memset(data, 1, sizeof(data));
	/* where the static array landed (first touch), whatever node */
	int dnode = -1;
	void *d0 = data;
	move_pages(0, 1, &d0, NULL, &dnode, 0);
	/* our working set: 96 MiB in 1 MiB blocks, half of it rewritten often */
	enum { NB = 96 };
	char *w[NB];
	for (int i = 0; i < NB; i++) {
		w[i] = malloc(1 << 20);
		if (!w[i]) {
			printf("FAIL malloc\n");
			return 1;
		}
		memset(w[i], i, 1 << 20);
	}
	long pages = 0, moved_away = 0, lost = 0;
	size_t all = SIZE_MAX >> 1, got, len;
	uint64_t promoted = 0, demoted = 0;
	for (int round = 0; round < rounds; round++) {
		for (int k = 0; k < 20; k++) {
			for (int i = 0; i < NB / 2; i++)
				memset(w[(i + round * 7) % NB], (i + round * 7) % NB, 1 << 20);
			usleep(10000);
		}
		got = 0;
		len = sizeof(got);
		tier_mallctl("tier.demote", &got, &len, &all, sizeof(all));
		demoted += got;
		got = 0;
		len = sizeof(got);
		tier_mallctl("tier.promote", &got, &len, &all, sizeof(all));
		promoted += got;
		for (int n = 0; n < 2; n++) {
			long b = off_node(r[n], REG, n, &pages);
			moved_away += b < 0 ? REG / 4096 : b;
		}
		long b = off_node(data, sizeof(data), dnode, &pages);
		moved_away += b < 0 ? (long)sizeof(data) / 4096 : b;
	}
	for (int n = 0; n < 2; n++)
		for (size_t i = 0; i < REG; i++)
			lost += r[n][i] != 0x40 + n;
	for (int i = 0; i < NB; i++)
		for (size_t j = 0; j < (1u << 20); j += 512)
			lost += (unsigned char)w[i][j] != (unsigned char)i;
	uint64_t mp = 0;
	len = sizeof(mp);
	tier_mallctl("stats.moved_pages", &mp, &len, NULL, 0);
	int pass = !moved_away && !lost && mp > 0;
	printf("%s foreign memory: %ld page checks of the program's own mmap regions (node 0 and 1) "
	       "and static data over %d rounds, %ld moved; meanwhile tiermalloc moved %llu pages "
	       "(%llu B demoted, %llu B promoted on demand); %ld bytes wrong\n",
	       pass ? "ok" : "FAIL", pages, rounds, moved_away, (unsigned long long)mp,
	       (unsigned long long)demoted, (unsigned long long)promoted, lost);
	return !pass;
}
