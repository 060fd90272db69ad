/* scan_cost: what the pagemap heat source's kernel calls cost natively.
 * Maps TOTAL MiB, registers it with a userfaultfd in asynchronous
 * write-protect mode (as src/heat_pagemap.c does), lets a thread write
 * HOT MiB of it continuously, and every 100 ms runs a PAGEMAP_SCAN over
 * the whole mapping that re-arms the written pages.  Prints the scanning
 * thread's CPU time per scan and as a share of a core at that period.
 * Runs on the host (Linux >= 6.7): it measures kernel calls, not tiering.
 *   scan_cost [TOTAL_MIB HOT_MIB [ROUNDS]] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pagemap_scan.h"

#define MIB (1ul << 20)
#define PAGE 4096ul

static char *base;
static size_t hot;
static _Atomic int stop;

static void *writer(void *arg)
{
	(void)arg;
	unsigned char x = 1;
	while (!atomic_load(&stop))
		for (size_t o = 0; o < hot; o += PAGE)
			base[o] = (char)x++;
	return NULL;
}

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t total = (argc > 2 ? strtoul(argv[1], NULL, 0) : 256) * MIB;
	hot = (argc > 2 ? strtoul(argv[2], NULL, 0) : 32) * MIB;
	int rounds = argc > 3 ? atoi(argv[3]) : 50;
	if (!total || hot > total || rounds < 1) {
		fprintf(stderr, "usage: scan_cost [TOTAL_MIB HOT_MIB [ROUNDS]]\n");
		return 2;
	}
	base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(base, 1, total);
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	struct uffdio_api api = {.api = UFFD_API,
				 .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
	struct uffdio_register reg = {.range = {.start = (uintptr_t)base, .len = total},
				      .mode = UFFDIO_REGISTER_MODE_WP};
	struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)base, .len = total},
					 .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) || pm < 0) {
		perror("userfaultfd async write-protect / pagemap (Linux >= 6.7)");
		return 1;
	}
	pthread_t t;
	if (hot)
		pthread_create(&t, NULL, writer, NULL);
	static struct page_region vec[512];
	long written = 0;
	double cpu = 0;
	for (int r = 0; r < rounds; r++) {
		usleep(100000);
		double c0 = thread_cpu();
		uintptr_t s = (uintptr_t)base, e = s + total;
		while (s < e) {
			struct pm_scan_arg a = {.size = sizeof(a),
						.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
						.start = s,
						.end = e,
						.vec = (uintptr_t)vec,
						.vec_len = 512,
						.category_mask = PAGE_IS_WRITTEN,
						.return_mask = PAGE_IS_WRITTEN};
			long n = ioctl(pm, PAGEMAP_SCAN, &a);
			if (n < 0) {
				perror("PAGEMAP_SCAN");
				return 1;
			}
			for (long i = 0; i < n; i++)
				written += (long)((vec[i].end - vec[i].start) / PAGE);
			if (a.walk_end <= s)
				break;
			s = a.walk_end;
		}
		cpu += thread_cpu() - c0;
	}
	atomic_store(&stop, 1);
	if (hot)
		pthread_join(t, NULL);
	printf("scan of %zu MiB, %zu MiB written per period: %.3f ms CPU per scan, %.2f%% of a core "
	       "at 100 ms periods; %ld pages written per scan\n",
	       total / MIB, hot / MIB, cpu / rounds * 1e3, cpu / rounds / 0.1 * 100, written / rounds);
	return 0;
}
