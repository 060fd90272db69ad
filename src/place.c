/* Fast-first placement under a per-process budget.
 *
 * Placement is decided per 2 MiB block, when a block receives its first
 * committed page (jemalloc carves extents out of larger reservations and
 * commits them one by one, so commit time is when memory starts being
 * used).  The whole block is then bound to the chosen tier's nodes with
 * MPOL_PREFERRED_MANY (MPOL_PREFERRED for a tier of one node): faults
 * land on that tier while it has memory and fall back to other allowed
 * nodes instead of failing. */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <sys/mman.h>

#include "heat.h"
#include "place.h"

struct tier_place_stats tier_place_stats;
TIER_BOOT_DATA struct tier_place_conf tier_place;
static bool have_preferred_many = true;

TIER_STARTUP void tier_place_setup(const struct tier_topology *t, bool enabled, size_t fast_limit)
{
	tier_place.ntiers = t->ntiers;
	for (int i = 0; i < t->ntiers; i++)
		tier_place.nodes[i] = t->tier[i].nodes;
	atomic_store(&tier_place.fast_limit, fast_limit);
	atomic_store(&tier_place.fill_pm, 1000u);
	atomic_store(&tier_place.active, enabled && t->ntiers > 1);
}

int tier_bind(uintptr_t addr, size_t len, int tier, bool move)
{
	unsigned long mask = (unsigned long)tier_place.nodes[tier];
	unsigned flags = move ? MPOL_MF_MOVE : 0;
	long r;
	atomic_fetch_add_explicit(&tier_place_stats.bind_calls, 1, memory_order_relaxed);
	/* One node: MPOL_PREFERRED.  With PREFERRED_MANY a huge-page fault
	 * that the preferred node cannot serve whole takes a huge page from
	 * any other node (6.12's alloc_pages_preferred_many); under
	 * MPOL_PREFERRED it falls back to small pages on the node.  With
	 * node 0's free memory all in 4 KiB holes, 128 MiB placed fast
	 * landed wholly on node 1 (guest-tiered.sh); in the bench's squeezed
	 * VM, uniform GUPS's fast blocks had 40 of their 64 MiB on node 0
	 * (47 so), and the audits moved the rest back */
	if (have_preferred_many && (mask & (mask - 1))) {
		r = mbind((void *)addr, len, MPOL_PREFERRED_MANY, &mask, TIER_MAX_NODES + 1, flags);
		if (r == 0)
			return 0;
		if (errno != EINVAL)
			goto fail;
		have_preferred_many = false; /* kernel < 5.15 */
	}
	/* MPOL_PREFERRED takes one node: the tier's first. */
	mask &= -mask;
	r = mbind((void *)addr, len, MPOL_PREFERRED, &mask, TIER_MAX_NODES + 1, flags);
	if (r == 0)
		return 0;
fail:
	atomic_fetch_add_explicit(&tier_place_stats.bind_failures, 1, memory_order_relaxed);
	atomic_store_explicit(&tier_place_stats.last_bind_errno, errno, memory_order_relaxed);
	return errno;
}

/* The tier for a block of an automatic arena: fast while the bytes
 * committed on the fast tier stay under fast_limit, else the next tier.
 * Committed bytes, not whole blocks: jemalloc leaves holes at the ends of
 * its reservations, and those would eat the budget without holding data. */
static int decide(const struct tier_mapping *m, size_t added)
{
	if (m->pinned_tier >= 0)
		return m->pinned_tier;
	if (!atomic_load_explicit(&tier_place.active, memory_order_relaxed))
		return 0;
	size_t com = atomic_load_explicit(&tier_place_stats.committed[0], memory_order_relaxed);
	size_t lim = atomic_load_explicit(&tier_place.fast_limit, memory_order_relaxed);
	unsigned pm = atomic_load_explicit(&tier_place.fill_pm, memory_order_relaxed);
	if (pm < 1000)
		lim = lim / 1000 * pm;
	return com + added <= lim ? 0 : 1;
}

/* The block of page p, and in *cnt the pages from p to the end of that
 * block or to `end`, whichever comes first. */
static uint32_t block_part(size_t p, size_t end, size_t *cnt)
{
	uint32_t b = (uint32_t)(p / TIER_PAGES_PER_BLOCK);
	size_t bend = ((size_t)b + 1) * TIER_PAGES_PER_BLOCK;
	*cnt = (end < bend ? end : bend) - p;
	return b;
}

void tier_place_commit(struct tier_mapping *m, uintptr_t addr, size_t len)
{
	size_t first = (addr - m->base) >> TIER_PAGE_SHIFT, n = len >> TIER_PAGE_SHIFT;
	uint32_t run_start = 0, run_len = 0;
	int run_tier = -1;
	bool active = atomic_load_explicit(&tier_place.active, memory_order_relaxed);

	for (size_t p = first, cnt; p < first + n;) {
		uint32_t b = block_part(p, first + n, &cnt);
		size_t added = tier_bits_set(m->commit, p, cnt);
		p += cnt;
		if (!added)
			continue;
		struct tier_block *blk = &m->blocks[b];
		uint32_t old = atomic_load_explicit(&blk->state, memory_order_relaxed), new;
		int t;
		bool placed_now;
		do {
			t = TIER_BS_TIER(old);
			placed_now = t < 0;
			if (placed_now)
				t = decide(m, added << TIER_PAGE_SHIFT);
			new = TIER_BS_MAKE((old & TIER_BS_PAGES) + added, t);
		} while (!atomic_compare_exchange_weak(&blk->state, &old, new));
		atomic_fetch_add(&tier_reg_stats.committed, added << TIER_PAGE_SHIFT);
		if (atomic_load_explicit(&tier_heat_recency_on, memory_order_relaxed) && !m->meta) {
			/* recency source: a fresh page is about to be used */
			atomic_fetch_add_explicit(&blk->samples[TIER_SRC_RECENCY],
						  (uint32_t)added * TIER_HEAT_UNIT, memory_order_relaxed);
			atomic_fetch_add_explicit(&tier_heat_stats.samples[TIER_SRC_RECENCY], added,
						  memory_order_relaxed);
		}
		if (m->meta)
			atomic_fetch_add(&tier_place_stats.meta_committed, added << TIER_PAGE_SHIFT);
		else
			atomic_fetch_add(&tier_place_stats.committed[t], added << TIER_PAGE_SHIFT);
		if (!placed_now)
			continue;
		/* new data: the monitor forgets what it knew of this block */
		atomic_fetch_add_explicit(&blk->placements, 1, memory_order_relaxed);
		if (!m->meta)
			atomic_fetch_add(&tier_place_stats.used[t], tier_block_capacity(m, b));
		atomic_fetch_add_explicit(&tier_place_stats.placed[t], 1, memory_order_relaxed);
		if (t > 0 && m->pinned_tier < 0)
			atomic_fetch_add_explicit(&tier_place_stats.spilled, 1, memory_order_relaxed);
		if (!active)
			continue;
		/* bind newly placed blocks, one mbind per run of equal tier */
		if (run_len && (run_tier != t || run_start + run_len != b)) {
			tier_bind(tier_block_addr(m, run_start), (size_t)run_len << TIER_BLOCK_SHIFT,
				  run_tier, false);
			run_len = 0;
		}
		if (!run_len) {
			run_start = b;
			run_tier = t;
		}
		run_len++;
	}
	if (run_len)
		tier_bind(tier_block_addr(m, run_start), (size_t)run_len << TIER_BLOCK_SHIFT, run_tier,
			  false);
}

void tier_place_decommit(struct tier_mapping *m, uintptr_t addr, size_t len)
{
	size_t first = (addr - m->base) >> TIER_PAGE_SHIFT, n = len >> TIER_PAGE_SHIFT;
	for (size_t p = first, cnt; p < first + n;) {
		uint32_t b = block_part(p, first + n, &cnt);
		size_t removed = tier_bits_clear(m->commit, p, cnt);
		p += cnt;
		if (!removed)
			continue;
		struct tier_block *blk = &m->blocks[b];
		uint32_t old = atomic_load_explicit(&blk->state, memory_order_relaxed), new;
		uint32_t left;
		do {
			uint32_t had = old & TIER_BS_PAGES;
			left = had > removed ? had - (uint32_t)removed : 0;
			/* an empty block forgets its tier: it is placed afresh when reused */
			new = left ? TIER_BS_MAKE(left, TIER_BS_TIER(old)) : 0;
		} while (!atomic_compare_exchange_weak(&blk->state, &old, new));
		int t = TIER_BS_TIER(old);
		atomic_fetch_sub(&tier_reg_stats.committed, removed << TIER_PAGE_SHIFT);
		if (m->meta) {
			atomic_fetch_sub(&tier_place_stats.meta_committed, removed << TIER_PAGE_SHIFT);
			continue;
		}
		atomic_fetch_sub(&tier_place_stats.committed[t], removed << TIER_PAGE_SHIFT);
		if (!left) {
			atomic_fetch_sub(&tier_place_stats.used[t], tier_block_capacity(m, b));
			/* a split block's pages elsewhere were counted there, and the
			 * pages just removed were taken from its tier: give back */
			uint32_t sp = atomic_exchange(&blk->split, 0);
			if (sp) {
				size_t k = (size_t)TIER_SPLIT_PAGES(sp) << TIER_PAGE_SHIFT;
				atomic_fetch_add(&tier_place_stats.committed[t], k);
				atomic_fetch_sub(&tier_place_stats.committed[TIER_SPLIT_TIER(sp)], k);
			}
		}
	}
}

bool tier_place_move_block(struct tier_mapping *m, uint32_t b, int to)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t old = atomic_load(&blk->state);
	int from = TIER_BS_TIER(old);
	if (from < 0 || from == to)
		return false;
	if (!atomic_compare_exchange_strong(&blk->state, &old, TIER_BS_MAKE(old & TIER_BS_PAGES, to)))
		return false;
	size_t cap = tier_block_capacity(m, b), com = (size_t)(old & TIER_BS_PAGES) << TIER_PAGE_SHIFT;
	atomic_fetch_sub(&tier_place_stats.used[from], cap);
	atomic_fetch_add(&tier_place_stats.used[to], cap);
	atomic_fetch_sub(&tier_place_stats.committed[from], com);
	atomic_fetch_add(&tier_place_stats.committed[to], com);
	return true;
}

bool tier_place_set_split(struct tier_mapping *m, uint32_t b, int other, uint32_t pages)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t want = TIER_SPLIT_MAKE(pages, other), old = atomic_load(&blk->split);
	int home = TIER_BS_TIER(atomic_load(&blk->state));
	if (home < 0 || m->meta)
		return false;
	/* the hooks empty the split word when they empty the block: a CAS, so
	 * that what they gave back is not taken twice */
	if (old == want || !atomic_compare_exchange_strong(&blk->split, &old, want))
		return old == want;
	if (old) {
		size_t k = (size_t)TIER_SPLIT_PAGES(old) << TIER_PAGE_SHIFT;
		atomic_fetch_add(&tier_place_stats.committed[home], k);
		atomic_fetch_sub(&tier_place_stats.committed[TIER_SPLIT_TIER(old)], k);
	}
	if (want) {
		size_t k = (size_t)pages << TIER_PAGE_SHIFT;
		atomic_fetch_sub(&tier_place_stats.committed[home], k);
		atomic_fetch_add(&tier_place_stats.committed[other], k);
	}
	return true;
}

/* What a split word moves from the block's tier to another, into com[]. */
static void split_count(const struct tier_block *blk, int t, size_t *com)
{
	uint32_t sp = atomic_load(&blk->split);
	if (!sp)
		return;
	size_t k = (size_t)TIER_SPLIT_PAGES(sp) << TIER_PAGE_SHIFT;
	com[t] -= k;
	com[TIER_SPLIT_TIER(sp)] += k;
}

size_t tier_place_check(void)
{
	size_t used[TIER_MAX_TIERS] = {0}, com[TIER_MAX_TIERS] = {0}, bad = 0;
	struct tier_mapping *m;
	rcu_read_lock();
	tier_registry_for_each(m) {
		for (uint32_t b = 0; b < m->nblocks; b++) {
			uint32_t s = atomic_load(&m->blocks[b].state);
			int t = TIER_BS_TIER(s);
			if (t < 0 || m->meta)
				continue;
			if (t >= TIER_MAX_TIERS) {
				bad++;
				continue;
			}
			used[t] += tier_block_capacity(m, b);
			com[t] += (size_t)(s & TIER_BS_PAGES) << TIER_PAGE_SHIFT;
			split_count(&m->blocks[b], t, com);
		}
	}
	rcu_read_unlock();
	for (int t = 0; t < TIER_MAX_TIERS; t++)
		bad += used[t] != atomic_load(&tier_place_stats.used[t]) ||
		       com[t] != atomic_load(&tier_place_stats.committed[t]);
	return bad;
}

/* After fork the child's only thread may find hook updates that other
 * threads left half done (a bit flipped, its counter not yet updated).
 * The bitmaps are the truth: recount everything from them. */
void tier_place_rebuild(void)
{
	size_t used[TIER_MAX_TIERS] = {0}, com[TIER_MAX_TIERS] = {0};
	size_t extents = 0, committed = 0, mappings = 0, mapped = 0, meta = 0;
	struct tier_mapping *m;
	cds_list_for_each_entry(m, &tier_registry_list, link) {
		mappings++;
		mapped += m->size;
		extents += tier_bits_count(m->start, 0, m->npages);
		for (uint32_t b = 0; b < m->nblocks; b++) {
			size_t pages = tier_bits_count(m->commit, (size_t)b * TIER_PAGES_PER_BLOCK,
						       TIER_PAGES_PER_BLOCK);
			uint32_t s = atomic_load(&m->blocks[b].state);
			int t = TIER_BS_TIER(s);
			if (pages && (t < 0 || t >= tier_place.ntiers))
				t = 0;
			atomic_store(&m->blocks[b].state, pages ? TIER_BS_MAKE(pages, t) : 0);
			/* the kernel gave this child copies of pages a device
			 * held (pinned pages are copied at fork): movable */
			atomic_store(&m->blocks[b].held, 0);
			m->blocks[b].hold_tries = 0;
			committed += pages << TIER_PAGE_SHIFT;
			if (!pages) {
				atomic_store(&m->blocks[b].split, 0);
				continue;
			}
			if (m->meta) {
				meta += pages << TIER_PAGE_SHIFT;
				continue;
			}
			used[t] += tier_block_capacity(m, b);
			com[t] += pages << TIER_PAGE_SHIFT;
			split_count(&m->blocks[b], t, com);
		}
	}
	for (int t = 0; t < TIER_MAX_TIERS; t++) {
		atomic_store(&tier_place_stats.used[t], used[t]);
		atomic_store(&tier_place_stats.committed[t], com[t]);
	}
	atomic_store(&tier_reg_stats.extents, extents);
	atomic_store(&tier_reg_stats.committed, committed);
	atomic_store(&tier_place_stats.meta_committed, meta);
	atomic_store(&tier_reg_stats.mappings, mappings);
	atomic_store(&tier_reg_stats.mapped, mapped);
}

void tier_place_set_fast_limit(size_t bytes)
{
	atomic_store(&tier_place.fast_limit, bytes);
}

void tier_place_set_fill(double frac)
{
	unsigned pm = frac >= 1 || !(frac > 0) ? 1000u : (unsigned)(frac * 1000 + 0.5);
	atomic_store(&tier_place.fill_pm, pm);
}
