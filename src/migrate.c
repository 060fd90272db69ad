/* Moving a block: first the placement accounting (a CAS on the block
 * state, so a block that a hook just emptied or re-placed is left alone),
 * then the memory policy of the 2 MiB range, then the pages.  The kernel's
 * migration keeps the data intact while threads use it. */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <time.h>

#include "migrate.h"
#include "place.h"

/* Pages the kernel could not move (-EBUSY: in use at that instant, a huge
 * page that would not split) are tried again in the next periods, then
 * every 8 periods until they move. */
#define MIGRATE_RETRIES 8

struct tier_migrate_stats tier_migrate_stats;

bool tier_block_movable(const struct tier_mapping *m, uint32_t b)
{
	return !m->meta && m->pinned_tier < 0 && atomic_load(&m->blocks[b].pins) == 0;
}

/* The node of tier `to` for this block: spread blocks over the tier's
 * nodes when it has several. */
static int target_node(int to, uint32_t salt)
{
	tier_nodemask_t mask = tier_place.nodes[to];
	int n = __builtin_popcountll(mask);
	if (n <= 0)
		return -1;
	int k = (int)(salt % (uint32_t)n);
	for (int node = 0; node < TIER_MAX_NODES; node++)
		if ((mask >> node & 1) && k-- == 0)
			return node;
	return -1;
}

/* Move the committed pages of block b to tier `to`; returns the pages that
 * could not move (busy pages, a full node), which are retried later. */
static uint64_t move_block_pages(struct tier_mapping *m, uint32_t b, int to)
{
	uintptr_t start = tier_block_addr(m, b);
	void *pages[TIER_PAGES_PER_BLOCK];
	int nodes[TIER_PAGES_PER_BLOCK], status[TIER_PAGES_PER_BLOCK];
	int node = target_node(to, b ^ (uint32_t)(m->base >> TIER_BLOCK_SHIFT));
	size_t n = 0, first = (size_t)b * TIER_PAGES_PER_BLOCK;
	for (size_t p = 0; p < TIER_PAGES_PER_BLOCK && first + p < m->npages; p++)
		if (tier_bit_test(m->commit, first + p)) {
			pages[n] = (void *)(start + (p << TIER_PAGE_SHIFT));
			nodes[n++] = node;
		}
	uint64_t moved = 0, failed = 0;
	if (n && node >= 0 && move_pages(0, n, pages, nodes, status, MPOL_MF_MOVE) >= 0) {
		for (size_t i = 0; i < n; i++) {
			if (status[i] == node)
				moved++;
			else if (status[i] != -ENOENT) /* -ENOENT: not resident, nothing to move */
				failed++;
		}
	} else if (n) {
		failed = n;
	}
	atomic_fetch_add(&tier_migrate_stats.moved_pages, moved);
	if (n)
		atomic_fetch_add_explicit(&m->blocks[b].moves, 1, memory_order_relaxed);
	m->blocks[b].stragglers = failed ? MIGRATE_RETRIES : 0;
	return failed;
}

size_t tier_migrate_block(struct tier_mapping *m, uint32_t b, int to)
{
	if (!tier_block_movable(m, b))
		return 0;
	uint32_t state = atomic_load(&m->blocks[b].state);
	int from = TIER_BS_TIER(state);
	if (from < 0 || from == to || !tier_place_move_block(m, b, to))
		return 0;
	uint64_t t0 = tier_clock_ns(CLOCK_MONOTONIC);
	tier_bind(tier_block_addr(m, b), TIER_BLOCK, to, false);
	uint64_t failed = move_block_pages(m, b, to);
	size_t bytes = (size_t)(state & TIER_BS_PAGES) << TIER_PAGE_SHIFT;
	atomic_fetch_add(&tier_migrate_stats.failed_pages, failed);
	if (to == 0) {
		atomic_fetch_add(&tier_migrate_stats.promoted_bytes, bytes);
		atomic_fetch_add(&tier_migrate_stats.promoted_blocks, 1);
	} else {
		atomic_fetch_add(&tier_migrate_stats.demoted_bytes, bytes);
		atomic_fetch_add(&tier_migrate_stats.demoted_blocks, 1);
	}
	atomic_fetch_add(&tier_migrate_stats.ns, tier_clock_ns(CLOCK_MONOTONIC) - t0);
	return bytes;
}

void tier_migrate_retry(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	int t = TIER_BS_TIER(atomic_load(&blk->state));
	if (t < 0 || !blk->stragglers) {
		blk->stragglers = 0;
		return;
	}
	/* after the quick tries, keep trying every few periods: a block
	 * accounted on a tier must end up there */
	uint32_t left = blk->stragglers > 1 ? blk->stragglers - 1 : 1;
	uint64_t t0 = tier_clock_ns(CLOCK_MONOTONIC);
	/* every other try through mbind, which migrates huge pages whole */
	if (left & 1)
		tier_bind(tier_block_addr(m, b), TIER_BLOCK, t, true);
	if (move_block_pages(m, b, t))
		blk->stragglers = left;
	atomic_fetch_add(&tier_migrate_stats.retries, 1);
	atomic_fetch_add(&tier_migrate_stats.ns, tier_clock_ns(CLOCK_MONOTONIC) - t0);
}
