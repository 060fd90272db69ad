/* where: allocate blocks, touch them, and print where the kernel put them.
 *   where [-t TIER] [-k] [-T THREADS] COUNT SIZE
 *     -t TIER  allocate with tier_malloc(TIER, SIZE) instead of malloc
 *     -k       keep running: after the report, wait for a line on stdin
 *     -T N     N threads, all alive at once, allocate block i in thread
 *              i % N (each thread gets an arena of its own)
 * Prints
 *   map <one character per block: the node holding all its pages, or '?'>
 *   node<N> <bytes>      for every node holding some of the blocks' pages
 * The answer comes from move_pages(2) status queries, i.e. from the kernel. */
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiermalloc.h"

static int tier = -1, nthreads = 1;
static long count;
static size_t size;
static char **blk;
static pthread_barrier_t all_done;

static void *alloc_part(void *arg)
{
	long k = (long)(intptr_t)arg;
	for (long i = k; i < count; i += nthreads) {
		blk[i] = tier >= 0 ? tier_malloc((unsigned)tier, size) : malloc(size);
		if (!blk[i]) {
			fprintf(stderr, "where: allocation %ld of %zu bytes failed\n", i, size);
			exit(1);
		}
		memset(blk[i], (int)i, size);
	}
	/* no thread leaves before all have allocated: no arena is reused */
	if (nthreads > 1)
		pthread_barrier_wait(&all_done);
	return NULL;
}

int main(int argc, char **argv)
{
	int keep = 0, opt;
	while ((opt = getopt(argc, argv, "t:kT:")) != -1) {
		if (opt == 't')
			tier = atoi(optarg);
		else if (opt == 'k')
			keep = 1;
		else if (opt == 'T')
			nthreads = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind != 2 || nthreads < 1 || nthreads > 1024) {
		fprintf(stderr, "usage: where [-t TIER] [-k] [-T THREADS] COUNT SIZE\n");
		return 2;
	}
	count = atol(argv[optind]);
	size = strtoull(argv[optind + 1], NULL, 0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t npp = (size + page - 1) / page;
	blk = calloc((size_t)count, sizeof(*blk));
	if (nthreads == 1) {
		alloc_part(0);
	} else {
		pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
		pthread_barrier_init(&all_done, NULL, (unsigned)nthreads);
		for (int k = 0; k < nthreads; k++)
			if (pthread_create(&th[k], NULL, alloc_part, (void *)(intptr_t)k)) {
				perror("pthread_create");
				return 1;
			}
		for (int k = 0; k < nthreads; k++)
			pthread_join(th[k], NULL);
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
