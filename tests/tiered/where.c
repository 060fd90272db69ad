/* where: allocate blocks, touch them, and print where the kernel put them.
 *   where [-t TIER] [-k] COUNT SIZE
 *     -t TIER  allocate with tier_malloc(TIER, SIZE) instead of malloc
 *     -k       keep running: after the report, wait for a line on stdin
 * Prints
 *   map <one character per block: the node holding all its pages, or '?'>
 *   node<N> <bytes>      for every node holding some of the blocks' pages
 * The answer comes from move_pages(2) status queries, i.e. from the kernel. */
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiermalloc.h"

int main(int argc, char **argv)
{
	int tier = -1, keep = 0, opt;
	while ((opt = getopt(argc, argv, "t:k")) != -1) {
		if (opt == 't')
			tier = atoi(optarg);
		else if (opt == 'k')
			keep = 1;
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: where [-t TIER] [-k] COUNT SIZE\n");
		return 2;
	}
	long count = atol(argv[optind]);
	size_t size = strtoull(argv[optind + 1], NULL, 0), page = (size_t)sysconf(_SC_PAGESIZE);
	size_t npp = (size + page - 1) / page;
	char **blk = calloc((size_t)count, sizeof(*blk));
	for (long i = 0; i < count; i++) {
		blk[i] = tier >= 0 ? tier_malloc((unsigned)tier, size) : malloc(size);
		if (!blk[i]) {
			fprintf(stderr, "where: allocation %ld of %zu bytes failed\n", i, size);
			return 1;
		}
		memset(blk[i], (int)i, size);
	}
	void **pages = calloc(npp, sizeof(void *));
	int *status = calloc(npp, sizeof(int));
	size_t bytes[64] = {0};
	char *map = calloc((size_t)count + 1, 1);
	for (long i = 0; i < count; i++) {
		char *a = (char *)((uintptr_t)blk[i] & ~(uintptr_t)(page - 1));
		size_t n = 0;
		for (char *p = a; p < blk[i] + size; p += page)
			pages[n++] = p;
		if (move_pages(0, n, pages, NULL, status, 0)) {
			perror("move_pages");
			return 1;
		}
		int node = status[0];
		for (size_t k = 0; k < n; k++) {
			if (status[k] >= 0 && status[k] < 64)
				bytes[status[k]] += page;
			if (status[k] != node)
				node = -1;
		}
		map[i] = node >= 0 && node < 10 ? (char)('0' + node) : '?';
	}
	printf("map %s\n", map);
	for (int n = 0; n < 64; n++)
		if (bytes[n])
			printf("node%d %zu\n", n, bytes[n]);
	fflush(stdout);
	if (keep) {
		char line[16];
		if (!fgets(line, sizeof(line), stdin))
			return 0;
	}
	return 0;
}
