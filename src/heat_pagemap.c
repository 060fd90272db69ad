/* pagemap: written pages, per page, without privileges (Linux >= 6.7).
 * A pull source: our mappings are registered with a userfaultfd in
 * asynchronous write-protect mode; arm() write-protects a range the
 * monitor picked, and the first write to a protected page just clears the
 * protection, in the kernel, without any fault reaching us.  measure(), on
 * the monitor's next visit, lists with PAGEMAP_SCAN the pages written
 * since and protects just those again (PM_SCAN_WP_MATCHING): a visit
 * costs a page-table walk (about 2 ns a page measured here) plus, for
 * each page written since the last visit, one protection and one write
 * fault in the program (0.5-1 us natively, 12-20 us in the VMs these
 * tests run on).  Arming a range protects every present page (0.1-0.3 us
 * a page here): the monitor arms a block once and then re-arms only what
 * was written.  Unpopulated pages are not armed (no pte markers, no page
 * tables for untouched memory); a page populated after arming counts as
 * written, which it was (or read through the zero page: a rare false
 * positive).  Only writes are seen: read-only hot data looks cold to this
 * source alone. */
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

static struct {
	int uffd, pagemap;
	uint32_t gen; /* mappings with m->src_gen != gen are not registered yet */
	uint64_t fault_ns; /* one write fault on an armed page, measured at start */
	_Atomic uint64_t faults;
} pm = {.uffd = -1, .pagemap = -1};
/* apart from pm, in .bss: initialised data is mapped (fault-around) in
 * every process, 12 KiB of it for this buffer */
static struct page_region pm_vec[VEC];

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL) /* kernels without the user-mode-only flag */
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC};
	if (ioctl(fd, UFFDIO_API, &api)) {
		int e = errno;
		close(fd);
		errno = e;
		return -2;
	}
	return fd;
}

static long scan(int pmfd, uintptr_t start, uintptr_t end, uint64_t flags, uint64_t *walk_end)
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
		.vec = (uintptr_t)pm_vec,
		.vec_len = most < VEC ? most : VEC,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN | PAGE_IS_HUGE,
	};
	long n = ioctl(pmfd, PAGEMAP_SCAN, &a);
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

static void wp(uintptr_t start, uintptr_t end, bool on)
{
	struct uffdio_writeprotect w = {.range = {.start = start, .len = end - start},
					.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
	ioctl(pm.uffd, UFFDIO_WRITEPROTECT, &w);
}

/* What one write to an armed page costs the writing thread, measured on
 * a scratch mapping: the budget counts the faults the program takes. */
static void calibrate(void)
{
	enum { N = 64 };
	size_t len = N * TIER_PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pm.fault_ns = 1000; /* a native write fault is 0.5-1 us */
	if (p == MAP_FAILED)
		return;
	memset(p, 1, len);
	struct uffdio_register reg = {.range = {.start = (uintptr_t)p, .len = len},
				      .mode = UFFDIO_REGISTER_MODE_WP};
	if (ioctl(pm.uffd, UFFDIO_REGISTER, &reg) == 0) {
		wp((uintptr_t)p, (uintptr_t)p + len, true);
		uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < N; i++)
			((volatile char *)p)[(size_t)i * TIER_PAGE] = 2;
		uint64_t dt = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt / N > 50)
			pm.fault_ns = dt / N;
		struct uffdio_range r = {.start = (uintptr_t)p, .len = len};
		ioctl(pm.uffd, UFFDIO_UNREGISTER, &r);
	}
	munmap(p, len);
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
	calibrate();
	atomic_store(&tier_heat_stats.fault_ns[TIER_SRC_PAGEMAP], pm.fault_ns);
	return 0;
}

/* Register a mapping with the userfaultfd the first time it is armed
 * (registration itself protects nothing). */
static bool registered(struct tier_mapping *m)
{
	if (m->src_gen == pm.gen)
		return true;
	struct uffdio_register reg = {.range = {.start = m->base, .len = m->span},
				      .mode = UFFDIO_REGISTER_MODE_WP};
	if (ioctl(pm.uffd, UFFDIO_REGISTER, &reg))
		return false;
	m->src_gen = pm.gen;
	return true;
}

static void pm_disarm(struct tier_mapping *m, uintptr_t start, uintptr_t end)
{
	if (m->src_gen == pm.gen)
		wp(start, end, false);
}

/* A block seen holding a page since its placement keeps its page table
 * (held_plc: placements + 1 then), so it is not asked again. */
static bool seen_held(const struct tier_block *blk)
{
	return blk->held_plc == atomic_load_explicit(&blk->placements, memory_order_relaxed) + 1;
}

static void set_held(struct tier_block *blk)
{
	blk->held_plc = atomic_load_explicit(&blk->placements, memory_order_relaxed) + 1;
}

/* PAGEMAP_SCAN for present or swapped pages in [start, end), protecting
 * nothing (no page table built, no TLB shootdown): up to len regions in
 * v, stopping after max_pages pages (0: no limit); *walk_end: where it
 * stopped.  The count of regions, or -1. */
static long present(uintptr_t start, uintptr_t end, struct page_region *v, uint64_t len, uint64_t max_pages,
		    uint64_t *walk_end)
{
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.start = start,
		.end = end,
		.vec = (uintptr_t)v,
		.vec_len = len,
		.max_pages = max_pages,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};
	long n = ioctl(pm.pagemap, PAGEMAP_SCAN, &a);
	*walk_end = a.walk_end;
	return n;
}

/* Whether [start, end), inside one block, holds a page (present or
 * swapped).  Protecting memory never touched sees nothing that a measure
 * would miss (a first write maps a new page unprotected, read as
 * written), but the kernel builds the page table for it, 4 KiB a 2 MiB
 * block, kept until unmapped: the sweep's looks over bench/scale's 56 GiB
 * committed and never written grew its page tables by 57 MiB in 36 s. */
static bool holds(struct tier_mapping *m, uintptr_t start, uintptr_t end)
{
	struct tier_block *blk = &m->blocks[(start - m->base) >> TIER_BLOCK_SHIFT];
	if (seen_held(blk))
		return true;
	uint64_t walk_end;
	if (present(start, end, pm_vec, 1, 1, &walk_end) == 0)
		return false;
	set_held(blk); /* or an error: protect as before */
	return true;
}

static bool pm_arm(struct tier_mapping *m, uintptr_t start, uintptr_t end)
{
	if (!registered(m) || !holds(m, start, end))
		return false;
	wp(start, end, true);
	return true;
}

/* Which of n blocks from block b hold a page: those seen holding one
 * without a call, the others by one scan a run of them (a range never
 * touched costs the walk of its empty upper levels). */
static uint64_t pm_held(struct tier_mapping *m, uint32_t b, uint32_t n)
{
	uint64_t held = 0;
	struct page_region v[16];
	for (uint32_t i = 0; i < n;) {
		if (seen_held(&m->blocks[b + i])) {
			held |= 1ull << i++;
			continue;
		}
		uint32_t j = i + 1; /* the run of blocks not known to hold one */
		while (j < n && !seen_held(&m->blocks[b + j]))
			j++;
		uintptr_t lo = tier_block_addr(m, b + i), hi = tier_block_addr(m, b + j);
		if (hi > m->base + m->size)
			hi = m->base + m->size;
		while (lo < hi) {
			uint64_t walk_end;
			long got = present(lo, hi, v, sizeof(v) / sizeof(v[0]), 0, &walk_end);
			if (got < 0) { /* as if all held: they are looked at as before */
				for (uint32_t k = i; k < j; k++)
					held |= 1ull << k;
				break;
			}
			for (long r = 0; r < got; r++)
				for (uintptr_t x = v[r].start; x < v[r].end;
				     x = tier_align_down(x, TIER_BLOCK) + TIER_BLOCK) {
					uint32_t k = (uint32_t)((x - m->base) >> TIER_BLOCK_SHIFT) - b;
					held |= 1ull << k;
					set_held(&m->blocks[b + k]);
				}
			if (walk_end <= lo)
				break;
			lo = walk_end;
		}
		i = j;
	}
	return held;
}

static uint64_t pm_measure(struct tier_mapping *m, uintptr_t start, uintptr_t end, uint32_t mult,
			   bool rearm)
{
	if (m->src_gen != pm.gen)
		return 0; /* never armed */
	if (!holds(m, start, end))
		return 0; /* nothing written, and re-protecting would build the table */
	uint64_t faults = 0;
	uint64_t flags = PM_SCAN_CHECK_WPASYNC | (rearm ? PM_SCAN_WP_MATCHING : 0);
	while (start < end) {
		uint64_t walk_end;
		long n = scan(pm.pagemap, start, end, flags, &walk_end);
		if (n < 0)
			break;
		for (long i = 0; i < n; i++) {
			/* a transparent huge page is protected and written whole:
			 * one fault for its 512 pages */
			uint64_t len = pm_vec[i].end - pm_vec[i].start;
			faults += pm_vec[i].categories & PAGE_IS_HUGE ? (len + TIER_BLOCK - 1) >> TIER_BLOCK_SHIFT
								      : len >> TIER_PAGE_SHIFT;
			for (uintptr_t a = pm_vec[i].start; a < pm_vec[i].end;) {
				uintptr_t bend = tier_align_down(a, TIER_BLOCK) + TIER_BLOCK;
				uintptr_t e = bend < pm_vec[i].end ? bend : pm_vec[i].end;
				uint32_t pages = (uint32_t)((e - a) >> TIER_PAGE_SHIFT);
				uint32_t b = (uint32_t)((a - m->base) >> TIER_BLOCK_SHIFT);
				tier_heat_sample_pages(TIER_SRC_PAGEMAP, m, b,
						       (uint32_t)((a - tier_block_addr(m, b)) >> TIER_PAGE_SHIFT), pages, mult);
				a = e;
			}
		}
		if (walk_end <= start)
			break;
		start = walk_end;
	}
	/* each written page took one write fault after arming (or its first
	 * fault ever, which it would have taken anyway: an upper bound) */
	atomic_fetch_add_explicit(&pm.faults, faults, memory_order_relaxed);
	tier_heat_count_faults(TIER_SRC_PAGEMAP, faults);
	return faults * pm.fault_ns;
}

static uint64_t pm_cost(int kind)
{
	return kind == TIER_COST_FAULTS ? atomic_load_explicit(&pm.faults, memory_order_relaxed) * pm.fault_ns
					: 0;
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
	.arm = pm_arm,
	.held = pm_held,
	.disarm = pm_disarm,
	.measure = pm_measure,
	.stop = pm_stop,
	.forget = pm_stop, /* the child's descriptors still point at the parent's mm */
	.cost_ns = pm_cost,
};
