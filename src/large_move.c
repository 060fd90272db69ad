/* Moving resident pages between ranges (large_move.h).
 *
 * jemalloc reuses a freed extent only where it fits: with buffers of mixed
 * sizes, the held ones are often each too small for the next request,
 * which then takes fresh pages and faults all of them in, while the
 * pages held stay resident beside it (or are purged to keep the bound,
 * and fault in again later).  mremap moves pages without copying them or
 * faulting: the page tables change hands (a whole page-table page when
 * both ends are 2 MiB-aligned), so a held extent's pages can fill a fresh
 * buffer wherever each lies.  MREMAP_DONTUNMAP (Linux 5.13 for private
 * anonymous memory) leaves the source mapped, empty, so jemalloc's view
 * of its extents stays true: it holds address space, as it does for any
 * purged extent.
 *
 * Each move may split a mapping at both ends of the source and of the
 * destination.  Moving whole 2 MiB granules keeps the boundaries on
 * granule multiples, so the mappings over jemalloc's huge memory stay
 * fewer than its size / 2 MiB; the count is read again every 256 moves
 * and moves stop at a quarter of the kernel's limit. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "large_move.h"
#include "tier.h"

#define GRAIN_PAGES (TIER_MOVE_GRAIN / TIER_PAGE)

static _Atomic bool broken;
static unsigned long moves;

bool tier_move_usable(void) { return !atomic_load_explicit(&broken, memory_order_relaxed); }

/* Resident pages of one granule, or -1. */
static long resident_in(uintptr_t g)
{
	unsigned char vec[GRAIN_PAGES];
	if (mincore((void *)g, TIER_MOVE_GRAIN, vec))
		return -1;
	long n = 0;
	for (size_t i = 0; i < GRAIN_PAGES; i++)
		n += vec[i] & 1;
	return n;
}

void tier_move_dst_init(struct tier_move_dst *d, const void *p, size_t bytes)
{
	d->n = d->i = 0;
	uintptr_t g = tier_align_up((uintptr_t)p, TIER_MOVE_GRAIN);
	uintptr_t end = tier_align_down((uintptr_t)p + bytes, TIER_MOVE_GRAIN);
	for (; g < end && d->n < TIER_MOVE_RUNS; g += TIER_MOVE_GRAIN) {
		if (resident_in(g) != 0)
			continue;
		if (d->n && d->at[d->n - 1] + d->len[d->n - 1] == g) {
			d->len[d->n - 1] += TIER_MOVE_GRAIN;
		} else {
			d->at[d->n] = g;
			d->len[d->n++] = TIER_MOVE_GRAIN;
		}
	}
}

size_t tier_move_dst_left(const struct tier_move_dst *d)
{
	size_t left = 0;
	for (int i = d->i; i < d->n; i++)
		left += d->len[i];
	return left;
}

/* The process's mappings (lines of /proc/self/maps), or 0.  No malloc. */
static size_t mappings(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	size_t lines = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* The kernel's limit on mappings (vm.max_map_count), 65530 by default. */
static size_t mappings_max(void)
{
	int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
	char buf[32];
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	size_t r = 0;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		r = r * 10 + (size_t)(buf[i] - '0');
	return r ? r : 65530;
}

static bool move(uintptr_t src, uintptr_t dst, size_t len)
{
	void *r = mremap((void *)src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
			 (void *)dst);
	if (r == MAP_FAILED) {
		/* the kernel may have unmapped the destination before it
		 * failed: map it again (none of its pages was resident, and
		 * its contents are the caller's to write) */
		mmap((void *)dst, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		atomic_store(&broken, true);
		return false;
	}
	if (++moves % 256 == 0 && mappings() > mappings_max() / 4)
		atomic_store(&broken, true);
	return true;
}

size_t tier_move_from(struct tier_move_dst *d, void *src, size_t bytes)
{
	uintptr_t g = tier_align_up((uintptr_t)src, TIER_MOVE_GRAIN);
	uintptr_t end = tier_align_down((uintptr_t)src + bytes, TIER_MOVE_GRAIN);
	size_t moved = 0;
	while (g < end && d->i < d->n && tier_move_usable()) {
		if (resident_in(g) < (long)GRAIN_PAGES / 2) {
			g += TIER_MOVE_GRAIN;
			continue;
		}
		/* a run of resident granules, at most what the run to fill
		 * takes: one move */
		uintptr_t e = g + TIER_MOVE_GRAIN;
		bool sparse = false; /* e was read and is left where it is */
		while (e < end && e - g < d->len[d->i] && !(sparse = resident_in(e) < (long)GRAIN_PAGES / 2))
			e += TIER_MOVE_GRAIN;
		size_t len = e - g;
		if (!move(g, d->at[d->i], len))
			break;
		moved += len;
		d->at[d->i] += len;
		d->len[d->i] -= len;
		if (!d->len[d->i])
			d->i++;
		g = sparse ? e + TIER_MOVE_GRAIN : e; /* not read twice */
	}
	return moved;
}
