#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <sys/mman.h>

#include "place.h"
#include "registry.h"
#include "resident.h"

#define BATCH 16384

int tier_pages_where(void **pages, int *status, size_t n)
{
	for (size_t off = 0; off < n; off += BATCH) {
		size_t c = n - off < BATCH ? n - off : BATCH;
		if (move_pages(0, (unsigned long)c, pages + off, NULL, status + off, 0) < 0)
			return errno;
	}
	return 0;
}

static void tally(struct tier_resident *r, void **pages, int *status, size_t n)
{
	if (tier_pages_where(pages, status, n))
		return;
	for (size_t i = 0; i < n; i++) {
		int node = status[i];
		if (node < 0 || node >= TIER_MAX_NODES)
			continue;
		r->node[node] += TIER_PAGE;
		int t;
		for (t = 0; t < tier_place.ntiers; t++)
			if (tier_place.nodes[t] >> node & 1)
				break;
		if (t < tier_place.ntiers)
			r->tier[t] += TIER_PAGE;
		else
			r->other += TIER_PAGE;
	}
}

int tier_resident_scan(struct tier_resident *r)
{
	*r = (struct tier_resident){0};
	/* scratch from mmap: the caller's stack may be small, and this must
	 * not allocate through malloc */
	size_t len = BATCH * (sizeof(void *) + sizeof(int));
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return ENOMEM;
	void **pages = (void **)buf;
	int *status = (int *)(buf + BATCH * sizeof(void *));
	size_t n = 0;
	struct tier_mapping *m;
	rcu_read_lock();
	tier_registry_for_each(m) {
		for (size_t w = 0; w < (m->npages + 63) / 64; w++) {
			uint64_t bits = atomic_load_explicit(&m->commit[w], memory_order_relaxed);
			while (bits) {
				size_t p = w * 64 + (size_t)__builtin_ctzll(bits);
				bits &= bits - 1;
				pages[n++] = (void *)(m->base + (p << TIER_PAGE_SHIFT));
				r->queried += TIER_PAGE;
				if (n == BATCH) {
					tally(r, pages, status, n);
					n = 0;
				}
			}
		}
	}
	rcu_read_unlock();
	tally(r, pages, status, n);
	munmap(buf, len);
	return 0;
}
