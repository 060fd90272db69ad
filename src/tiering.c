/* Glue between heat, policy and migrator.  Candidate arrays live in mmap'd
 * scratch memory: the balance lock is taken by fork's prepare handler after
 * jemalloc's locks, so nothing under it may allocate through malloc. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>

#include "heat.h"
#include "init.h"
#include "migrate.h"
#include "place.h"
#include "policy.h"
#include "tiering.h"

struct tier_balance_stats tier_balance_stats;
static pthread_mutex_t balance_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct tier_cand *scratch;
static size_t scratch_cap; /* candidates */
static uint64_t cur_period;

void tier_balance_lock(void) { pthread_mutex_lock(&balance_mutex); }
void tier_balance_unlock(void) { pthread_mutex_unlock(&balance_mutex); }

static bool grow(size_t need)
{
	if (need <= scratch_cap)
		return true;
	size_t cap = scratch_cap ? scratch_cap : 4096;
	while (cap < need)
		cap *= 2;
	void *p = mmap(NULL, cap * sizeof(*scratch), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	if (scratch)
		munmap(scratch, scratch_cap * sizeof(*scratch));
	scratch = p;
	scratch_cap = cap;
	return true;
}

/* Movable blocks with committed pages: fast ones first in the array, then
 * the slow ones.  Caller holds rcu_read_lock and the balance lock. */
static size_t gather(size_t *nfast, bool settle)
{
	size_t n = 0, total = 0;
	struct tier_mapping *m;
	tier_registry_for_each(m)
		total += m->nblocks;
	if (!grow(total)) {
		*nfast = 0;
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			*nfast = n;
		tier_registry_for_each(m) {
			for (uint32_t b = 0; b < m->nblocks && n < scratch_cap; b++) {
				uint32_t st = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed);
				int t = TIER_BS_TIER(st);
				if (t < 0 || (t == 0) != (pass == 0) || !tier_block_movable(m, b))
					continue;
				uint32_t sg = m->blocks[b].stragglers;
				if (sg > 1 || (sg == 1 && cur_period % 8 == 0))
					tier_migrate_retry(m, b);
				if (settle && m->blocks[b].moved_epoch &&
				    m->blocks[b].moved_epoch + TIER_SETTLE_PERIODS > cur_period)
					continue;
				scratch[n++] = (struct tier_cand){.ref = m,
								  .block = b,
								  .bytes = (st & TIER_BS_PAGES) << TIER_PAGE_SHIFT,
								  .heat = m->blocks[b].heat,
								  .tier = (uint8_t)t};
			}
		}
	}
	return n;
}

static size_t apply(struct tier_cand *c, size_t n)
{
	size_t moved = 0;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].chosen)
			continue;
		struct tier_mapping *m = c[i].ref;
		size_t b = tier_migrate_block(m, c[i].block, c[i].tier == 0 ? 1 : 0);
		if (b)
			m->blocks[c[i].block].moved_epoch = (uint32_t)cur_period;
		moved += b;
	}
	return moved;
}

size_t tier_balance(uint64_t period, unsigned period_ms)
{
	size_t moved = 0;
	const struct tier_settings *s = &tier_settings;
	double decay = exp2(-(double)period_ms / (double)s->heat_half_life_ms);
	tier_balance_lock();
	cur_period = period;
	rcu_read_lock();
	tier_heat_age(decay);
	if (atomic_load(&tier_place.active) && s->migrate) {
		size_t nfast, n = gather(&nfast, true);
		double per_period = (double)period_ms / 1000.0 * 1048576.0;
		struct tier_policy_in in = {
			.fast_limit = atomic_load(&tier_place.fast_limit),
			.fast_used = atomic_load(&tier_place_stats.committed[0]),
			.wm_high = s->watermark_high,
			.wm_low = s->watermark_low,
			.hysteresis = s->hysteresis,
			.promote_budget = (size_t)(s->promote_rate_mbps * per_period),
			.demote_budget = (size_t)(s->demote_rate_mbps * per_period),
			.min_heat = TIER_MIN_HEAT,
			.swap_gap = TIER_SWAP_GAP,
			.wide_margin = TIER_WIDE_MARGIN,
		};
		struct tier_policy_out out;
		tier_policy_decide(&in, scratch, nfast, scratch + nfast, n - nfast, &out);
		moved += apply(scratch, nfast); /* demotions first: they make room */
		moved += apply(scratch + nfast, n - nfast);
		atomic_fetch_add(&tier_balance_stats.swaps, out.swaps);
		if (s->verbose && (out.promote_blocks || out.demote_blocks))
			tier_log("period %llu: promote %zu blocks (%zu MiB), demote %zu blocks (%zu MiB), "
				 "%zu candidates; fast tier %zu -> %zu MiB of %zu",
				 (unsigned long long)period, out.promote_blocks, out.promote_bytes >> 20,
				 out.demote_blocks, out.demote_bytes >> 20, n, in.fast_used >> 20,
				 out.fast_after >> 20, in.fast_limit >> 20);
		atomic_store(&tier_balance_stats.last_candidates, n);
	}
	rcu_read_unlock();
	atomic_fetch_add(&tier_balance_stats.rounds, 1);
	tier_balance_unlock();
	return moved;
}

size_t tier_move_now(size_t bytes, bool promote)
{
	size_t moved = 0;
	tier_balance_lock();
	rcu_read_lock();
	size_t nfast, n = gather(&nfast, false);
	struct tier_cand *c = promote ? scratch + nfast : scratch;
	size_t nc = promote ? n - nfast : nfast;
	tier_cand_sort(c, nc, promote);
	for (size_t i = 0; i < nc && moved < bytes; i++) {
		c[i].chosen = true;
		c[i].tier = promote ? 1 : 0; /* direction for apply() */
		moved += apply(&c[i], 1);
	}
	rcu_read_unlock();
	tier_balance_unlock();
	return moved;
}
