/* pagemap: written pages, per page, without privileges (Linux >= 6.7).
 * Our mappings are registered with a userfaultfd in asynchronous
 * write-protect mode: the first write to a protected page just clears the
 * protection, in the kernel, without any fault reaching us.  Each period a
 * PAGEMAP_SCAN of /proc/self/pagemap lists the pages written since the
 * last scan and protects them again (PM_SCAN_WP_MATCHING).
 * Cost: each page's first write after re-arming takes a minor fault
 * (~0.7 us measured), and a written bit only says "at least once since
 * armed": over long windows every page of a busy block looks written.  So
 * a block whose pages were written sparsely last period (at most a
 * slice's worth) is scanned and re-armed whole, cheaply and exactly, while
 * a busy block, on either tier, is sampled: each period one slice
 * (1/SLICES of it), armed the period before, is read, and the next slice
 * is armed.  Every measurement covers one period, and a busy block pays at
 * most a slice of faults per period (GUPS, 10 s: 1.6M faults when busy
 * slow blocks were re-armed whole, 0.9M now).  Only writes are seen:
 * read-only hot data looks cold to this source alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heat.h"
#include "pagemap_scan.h"

#define VEC 512
#define SLICES 8
#define SLICE (TIER_BLOCK / SLICES)
#define SLICE_PAGES (SLICE >> TIER_PAGE_SHIFT)

static struct {
	int uffd, pagemap;
	uint32_t gen; /* mappings with m->src_gen != gen are not registered yet */
	uint32_t round;
	struct page_region vec[VEC];
} pm = {.uffd = -1, .pagemap = -1};

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL) /* kernels without the user-mode-only flag */
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API,
				 .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED};
	if (ioctl(fd, UFFDIO_API, &api)) {
		int e = errno;
		close(fd);
		errno = e;
		return -2;
	}
	return fd;
}

static long scan(uintptr_t start, uintptr_t end, uint64_t flags, uint64_t *walk_end)
{
	/* room for the most regions the range can hold (every other page),
	 * no more: the kernel allocates a bounce buffer of vec_len entries per
	 * call, and 512 of them (12 KiB) come from the page allocator */
	uint64_t most = ((end - start) >> TIER_PAGE_SHIFT) / 2 + 1;
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.flags = flags,
		.start = start,
		.end = end,
		.vec = (uintptr_t)pm.vec,
		.vec_len = most < VEC ? most : VEC,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};
	long n = ioctl(pm.pagemap, PAGEMAP_SCAN, &a);
	*walk_end = a.walk_end;
	return n;
}

static int pm_probe(char *why, size_t len)
{
	int fd = open_uffd();
	if (fd == -1) {
		snprintf(why, len, "userfaultfd: %s", strerror(errno));
		return -1;
	}
	if (fd == -2) {
		snprintf(why, len, "no userfaultfd async write-protect (kernel < 6.7)");
		return -1;
	}
	close(fd);
	int pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pmfd < 0) {
		snprintf(why, len, "/proc/self/pagemap: %s", strerror(errno));
		return -1;
	}
	/* PAGEMAP_SCAN over a page of our own */
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct page_region r;
	struct pm_scan_arg a = {.size = sizeof(a), .start = (uintptr_t)p, .end = (uintptr_t)p + 4096,
				.vec = (uintptr_t)&r, .vec_len = 1, .category_mask = PAGE_IS_PRESENT,
				.return_mask = PAGE_IS_PRESENT};
	long n = ioctl(pmfd, PAGEMAP_SCAN, &a);
	int e = errno;
	munmap(p, 4096);
	close(pmfd);
	if (n < 0) {
		snprintf(why, len, "no PAGEMAP_SCAN (%s; kernel < 6.7)", strerror(e));
		return -1;
	}
	return 0;
}

static int pm_start(char *why, size_t len)
{
	pm.uffd = open_uffd();
	pm.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm.uffd < 0 || pm.pagemap < 0) {
		snprintf(why, len, "cannot open userfaultfd or pagemap: %s", strerror(errno));
		if (pm.uffd >= 0)
			close(pm.uffd);
		if (pm.pagemap >= 0)
			close(pm.pagemap);
		pm.uffd = pm.pagemap = -1;
		return -1;
	}
	pm.gen++;
	return 0;
}

/* Write-protect a new mapping, so that its next writes are seen. */
static void arm(struct tier_mapping *m)
{
	struct uffdio_register reg = {.range = {.start = m->base, .len = m->span},
				      .mode = UFFDIO_REGISTER_MODE_WP};
	if (ioctl(pm.uffd, UFFDIO_REGISTER, &reg) == 0) {
		struct uffdio_writeprotect wp = {.range = {.start = m->base, .len = m->span},
						 .mode = UFFDIO_WRITEPROTECT_MODE_WP};
		ioctl(pm.uffd, UFFDIO_WRITEPROTECT, &wp);
	}
	m->src_gen = pm.gen;
}

/* Scan [start, end) of m (whole blocks, or a slice), counting written
 * pages into the blocks' pm_written, times `mult`; with `rearm`, the scan
 * protects them again. */
static void scan_range(struct tier_mapping *m, uintptr_t start, uintptr_t end, uint32_t mult,
		       bool rearm)
{
	if (end > m->base + m->size)
		end = m->base + m->size;
	while (start < end) {
		uint64_t walk_end;
		long n = scan(start, end, (rearm ? PM_SCAN_WP_MATCHING : 0) | PM_SCAN_CHECK_WPASYNC,
			      &walk_end);
		if (n < 0)
			break;
		for (long i = 0; i < n; i++) {
			for (uintptr_t a = pm.vec[i].start; a < pm.vec[i].end;) {
				uintptr_t bend = tier_align_down(a, TIER_BLOCK) + TIER_BLOCK;
				uintptr_t e = bend < pm.vec[i].end ? bend : pm.vec[i].end;
				m->blocks[(a - m->base) >> TIER_BLOCK_SHIFT].pm_written +=
					(uint32_t)((e - a) >> TIER_PAGE_SHIFT) * mult;
				a = e;
			}
		}
		if (walk_end <= start)
			break;
		start = walk_end;
	}
}

static void pm_collect(void)
{
	struct tier_mapping *m;
	uint32_t round = pm.round++;
	unsigned scale = tier_heat_scale();
	uint64_t total = 0;
	rcu_read_lock();
	tier_registry_for_each(m) {
		if (m->meta || m->pinned_tier >= 0)
			continue; /* never migrated: no need to watch */
		if (m->src_gen != pm.gen) {
			arm(m);
			for (uint32_t b = 0; b < m->nblocks; b++) {
				m->blocks[b].pm_written = 0;
				m->blocks[b].pm_sliced = false;
			}
			continue;
		}
		/* runs of sparse blocks: one scan call each; busy blocks: their
		 * slice, armed the period before */
		uint32_t run = UINT32_MAX;
		for (uint32_t b = 0; b <= m->nblocks; b++) {
			bool sliced = b < m->nblocks && m->blocks[b].pm_sliced;
			if (run != UINT32_MAX && (sliced || b == m->nblocks)) {
				scan_range(m, tier_block_addr(m, run), tier_block_addr(m, b), 1, true);
				run = UINT32_MAX;
			}
			if (b == m->nblocks)
				break;
			m->blocks[b].pm_written = 0;
			if (!sliced) {
				if (run == UINT32_MAX)
					run = b;
				continue;
			}
			uintptr_t cur = tier_block_addr(m, b) + (round % SLICES) * SLICE;
			/* no re-arming: the slice is armed again only when its
			 * turn comes round, so its pages fault once per cycle */
			scan_range(m, cur, cur + SLICE, SLICES, false);
		}
		/* next period's mode, and what to arm for it: a whole scan re-armed
		 * its block; a sliced block arms its next slice, or the whole
		 * block when it turns sparse, so that the next whole scan covers
		 * one period only */
		for (uint32_t b = 0; b < m->nblocks; b++) {
			struct tier_block *blk = &m->blocks[b];
			bool busy = blk->pm_written > SLICE_PAGES;
			if (blk->pm_sliced) {
				uintptr_t lo = tier_block_addr(m, b);
				uintptr_t hi = lo + TIER_BLOCK;
				if (busy) {
					lo += ((round + 1) % SLICES) * SLICE;
					hi = lo + SLICE;
				}
				if (hi > m->base + m->size)
					hi = m->base + m->size;
				if (lo < hi) {
					struct uffdio_writeprotect wp = {.range = {.start = lo, .len = hi - lo},
									 .mode = UFFDIO_WRITEPROTECT_MODE_WP};
					ioctl(pm.uffd, UFFDIO_WRITEPROTECT, &wp);
				}
			}
			blk->pm_sliced = busy;
			/* every block reports its latest count */
			uint32_t w = blk->pm_written * scale * TIER_HEAT_UNIT;
			if (!w)
				continue;
			atomic_fetch_add_explicit(&blk->samples[TIER_SRC_PAGEMAP], w, memory_order_relaxed);
			total += w;
		}
	}
	rcu_read_unlock();
	atomic_fetch_add_explicit(&tier_heat_stats.samples[TIER_SRC_PAGEMAP], total,
				  memory_order_relaxed);
}

static void pm_stop(void)
{
	if (pm.uffd >= 0)
		close(pm.uffd); /* unregisters every range */
	if (pm.pagemap >= 0)
		close(pm.pagemap);
	pm.uffd = pm.pagemap = -1;
}

const struct tier_heat_ops tier_heat_pagemap = {
	.name = "pagemap",
	.probe = pm_probe,
	.start = pm_start,
	.collect = pm_collect,
	.stop = pm_stop,
	.forget = pm_stop, /* the child's descriptors still point at the parent's mm */
	.every_period = true,
};
