/* Glue between monitor, policy and migrator.  Candidate arrays are static
 * or mmap'd: the balance lock is taken by fork's prepare handler after
 * jemalloc's locks, so nothing under it may allocate through malloc. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "knobs.h"
#include "migrate.h"
#include "monitor.h"
#include "pageheat.h"
#include "place.h"
#include "policy.h"
#include "room.h"
#include "tiering.h"

struct tier_balance_stats tier_balance_stats = {.fast_room = -1};
static pthread_mutex_t balance_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint32_t cur_period;

void tier_balance_lock(void) { pthread_mutex_lock(&balance_mutex); }
void tier_balance_unlock(void) { pthread_mutex_unlock(&balance_mutex); }

/* Candidates of one round: bounded by the monitor's lists. */
#define CAND_MAX 10240
static struct tier_cand cand_fast[CAND_MAX], cand_slow[CAND_MAX];

/* Blocks whose pages a migration left behind, retried until they move. */
#define STRAGGLERS_MAX 4096
static struct {
	struct tier_mapping *m;
	uint32_t b;
	uint32_t waited; /* rounds its pages have waited for room on the fast nodes */
} stragglers[STRAGGLERS_MAX];
/* A promotion that left most of its pages behind, waiting this many rounds
 * for room, is given up: its block counts against the fast-tier budget
 * while its pages sit slow.  In the KV bench 7-10 blocks waited at any
 * time (14-20 MiB of a 64 MiB budget held by pages on node 1).  One that
 * left a few (pages busy at that instant) waits: giving it up sends its
 * moved pages back (GUPS's shift: 14-15 hot blocks given up a run, the
 * reaction 6.7 s and more). */
#define ROOM_WAIT_ROUNDS 8
static uint32_t nstragglers;

static void straggler_add(struct tier_mapping *m, uint32_t b)
{
	for (uint32_t i = 0; i < nstragglers; i++)
		if (stragglers[i].m == m && stragglers[i].b == b)
			return;
	if (nstragglers < STRAGGLERS_MAX) {
		stragglers[nstragglers].m = m;
		stragglers[nstragglers].waited = 0;
		stragglers[nstragglers++].b = b;
	}
}

/* The fast nodes' free room (room.h), read at most once a round and once
 * more after the round's demotions, then counted down by what each
 * promotion takes.  A move into a full node gets its pages refused after
 * reclaim and compaction: in the tiered VM's KV bench (node 0 squeezed to
 * the budget and its watermarks) whole blocks moved none of their 511
 * pages, 40-60 ms a try, and their retries failed again every period until
 * room came: 60-75% of the engine's migration CPU. */
static struct {
	bool stale, known;
	size_t bytes;
	/* a node that refused a move (ENOMEM) is taken as full until then:
	 * its free pages can be under watermarks that the reserve read
	 * misses (the kernel boosts them for a while after fragmenting
	 * allocations) */
	uint64_t closed_until, refused_seen;
	uint32_t backoff_ms;
	size_t credit; /* bytes this round's demotions freed: a closed node's room */
} room;

/* Refusals back off from ROOM_BACKOFF_MIN_MS, doubling to the max while
 * they repeat. */
#define ROOM_BACKOFF_MIN_MS 250
#define ROOM_BACKOFF_MAX_MS 8000

static void room_read(void)
{
	room.stale = false;
	if (tier_clock_ns(CLOCK_MONOTONIC) < room.closed_until) {
		room.known = true;
		room.bytes = room.credit;
		return;
	}
	room.known = tier_room_free(tier_place.nodes[0], &room.bytes);
	if (room.known)
		atomic_store(&tier_balance_stats.fast_room, (int64_t)room.bytes);
}

/* Whether `bytes` fit (unknown room: yes); if so they are taken. */
static bool room_take(size_t bytes)
{
	if (room.stale)
		room_read();
	if (!room.known)
		return true;
	if (bytes > room.bytes)
		return false;
	room.bytes -= bytes;
	return true;
}

/* After a promotion: a refusal closes the fast nodes for a while; a move
 * that went through shortens the next closing. */
static void room_after_move(void)
{
	uint64_t r = atomic_load_explicit(&tier_migrate_stats.refused, memory_order_relaxed);
	if (r == room.refused_seen) {
		room.backoff_ms /= 2;
		return;
	}
	room.refused_seen = r;
	room.backoff_ms = room.backoff_ms < ROOM_BACKOFF_MIN_MS ? ROOM_BACKOFF_MIN_MS
			  : room.backoff_ms * 2 > ROOM_BACKOFF_MAX_MS ? ROOM_BACKOFF_MAX_MS : room.backoff_ms * 2;
	room.closed_until = tier_clock_ns(CLOCK_MONOTONIC) + (uint64_t)room.backoff_ms * 1000000u;
	room.known = true;
	room.bytes = 0;
	room.stale = false;
	atomic_fetch_add_explicit(&tier_balance_stats.room_closed, 1, memory_order_relaxed);
}

static void retry_stragglers(void)
{
	for (uint32_t i = 0; i < nstragglers;) {
		struct tier_mapping *m = stragglers[i].m;
		uint32_t b = stragglers[i].b, sg = m->blocks[b].stragglers;
		uint32_t st = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed);
		/* pages left behind by a promotion wait for room on the fast nodes */
		uint32_t left = m->blocks[b].left;
		bool wait = TIER_BS_TIER(st) == 0 && sg && (sg > 1 || cur_period % 8 == 0) &&
			    !room_take((size_t)left << TIER_PAGE_SHIFT);
		if (wait) {
			atomic_fetch_add_explicit(&tier_balance_stats.room_waits, 1, memory_order_relaxed);
			if (++stragglers[i].waited >= ROOM_WAIT_ROUNDS && 2 * left > (st & TIER_BS_PAGES) &&
			    tier_migrate_abandon(m, b, 1)) {
				tier_monitor_moved(m, b, 0, 1);
				stragglers[i].waited = 0; /* its pages that moved come back */
			}
			i++;
			continue;
		}
		if (sg > 1 || (sg == 1 && cur_period % 8 == 0)) {
			tier_migrate_retry(m, b);
			if (TIER_BS_TIER(st) == 0)
				room_after_move();
		}
		if (!m->blocks[b].stragglers)
			stragglers[i] = stragglers[--nstragglers];
		else
			i++;
	}
	atomic_store(&tier_balance_stats.stragglers, nstragglers);
}

/* Audit AUDIT_BLOCKS blocks a round, in address order over the registry,
 * for pages that are not where their block is counted (at the default
 * period a pass over 1 GiB takes 26 s; two syscalls of 16 pages a round).
 * In the tiered VM, node 0 squeezed by the bench's balloon, 2-18 MiB of
 * the 64 MiB placed on the fast tier faulted in on the slow node and
 * stayed there, counted fast. */
#define AUDIT_BLOCKS 2
static uintptr_t audit_at;

static void audit(void)
{
	for (int k = 0; k < AUDIT_BLOCKS; k++) {
		struct tier_mapping *m, *next = NULL;
		tier_registry_for_each(m)
			if (!m->gone && m->base + m->size > audit_at && (!next || m->base < next->base))
				next = m;
		if (!next) {
			audit_at = 0; /* the end: the next round starts again */
			return;
		}
		uintptr_t a = audit_at > next->base ? audit_at : next->base;
		uint32_t b = (uint32_t)((a - next->base) >> TIER_BLOCK_SHIFT);
		audit_at = tier_block_addr(next, b) + TIER_BLOCK;
		if (b < next->nblocks && tier_migrate_audit(next, b))
			straggler_add(next, b);
	}
}

void tier_balance_gone(struct tier_mapping *m)
{
	for (uint32_t i = 0; i < nstragglers;)
		if (stragglers[i].m == m)
			stragglers[i] = stragglers[--nstragglers];
		else
			i++;
}

/* Count a split block's pages elsewhere where they are (place.c). */
static void split_account(struct tier_mapping *m, uint32_t b, const struct tier_ph *e, int home)
{
	tier_place_set_split(m, b, home ? 0 : 1, tier_ph_naway(e));
}

/* Move pages of a split block: those c->part names, chosen again now. */
static size_t move_pages_of(struct tier_cand *c)
{
	struct tier_mapping *m = c->ref;
	uint32_t b = c->block;
	struct tier_ph *e = tier_ph_of(m, b);
	int home = TIER_BS_TIER(atomic_load(&m->blocks[b].state));
	if (!e || e->state != TIER_PH_SPLIT || home < 0)
		return 0;
	bool up = c->part == TIER_PART_UP;
	uint16_t idx[TIER_PAGES_PER_BLOCK], done[TIER_PAGES_PER_BLOCK];
	float h;
	uint32_t n = tier_ph_select(e, m->blocks[b].heat, home, up, c->thr, idx, &h);
	int to = up ? 0 : (home ? home : 1);
	uint32_t k = tier_migrate_pages(m, b, idx, n, to, done);
	for (uint32_t i = 0; i < k; i++)
		tier_ph_set_away(e, done[i], to != home);
	split_account(m, b, e, home);
	atomic_fetch_add(up ? &tier_ph_stats.pages_promoted : &tier_ph_stats.pages_demoted, k);
	return (size_t)k << TIER_PAGE_SHIFT;
}

/* Split blocks, each round: pages dropped since (decommitted, purged) are
 * no longer elsewhere (the program's next touch faults them in on the
 * block's tier); where pages were dropped and touched again between two
 * rounds, ask the kernel.  Blocks whose heat evened out come home whole. */
static void split_upkeep(void)
{
	for (uint32_t i = 0; i < tier_ph_used(); i++) {
		struct tier_ph *e = tier_ph_at(i);
		if (e->state == TIER_PH_FREE || e->state == TIER_PH_PROBE || e->m->gone)
			continue;
		struct tier_mapping *m = e->m;
		struct tier_block *blk = &m->blocks[e->b];
		int home = TIER_BS_TIER(atomic_load(&blk->state));
		if (home < 0)
			continue; /* emptied: the monitor drops it at its next look */
		size_t first = (size_t)e->b * TIER_PAGES_PER_BLOCK;
		uint16_t idx[TIER_PAGES_PER_BLOCK], done[TIER_PAGES_PER_BLOCK];
		uint32_t n = 0;
		for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK; p++) {
			if (!tier_ph_away(e, p))
				continue;
			if (first + p >= m->npages || !tier_bit_test(m->commit, first + p))
				tier_ph_set_away(e, p, false);
			else
				idx[n++] = (uint16_t)p;
		}
		uint32_t drops = atomic_load(&blk->drops);
		if (n && drops != e->drops) {
			int where[TIER_PAGES_PER_BLOCK];
			if (tier_migrate_where(m, e->b, idx, n, where) == n)
				for (uint32_t j = 0; j < n; j++)
					if (where[j] == home)
						tier_ph_set_away(e, idx[j], false);
		}
		e->drops = drops;
		if (e->state == TIER_PH_JOIN) {
			n = 0;
			for (uint32_t p = 0; p < TIER_PAGES_PER_BLOCK; p++)
				if (tier_ph_away(e, p))
					idx[n++] = (uint16_t)p;
			/* coming home to a full fast node waits for room (room_take) */
			uint32_t k = 0;
			if (home != 0 || room_take((size_t)n << TIER_PAGE_SHIFT)) {
				k = tier_migrate_pages(m, e->b, idx, n, home, done);
				if (home == 0)
					room_after_move();
			}
			for (uint32_t j = 0; j < k; j++)
				tier_ph_set_away(e, done[j], false);
		}
		split_account(m, e->b, e, home);
		if (e->state == TIER_PH_JOIN && !tier_ph_naway(e))
			tier_monitor_unsplit(m, e->b);
	}
	tier_ph_state_count();
}

/* Slow blocks the policy would have swapped in on the looks that ranked
 * them first, and fast ones it would have had give way, look again before
 * they move (whole blocks only: a part is never picked_on_own, and is
 * judged). */
static void retests(const struct tier_cand *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].retest)
			tier_monitor_retest(c[i].ref, c[i].block);
}

static size_t move(struct tier_cand *c)
{
	struct tier_mapping *m = c->ref;
	int to = c->tier == 0 ? 1 : 0;
	if (c->part != TIER_PART_WHOLE) {
		size_t moved = move_pages_of(c);
		if (moved) {
			m->blocks[c->block].moved_epoch = cur_period ? cur_period : 1;
			tier_monitor_moved(m, c->block, c->tier, to);
		}
		return moved;
	}
	/* a whole move of a split block (tier.promote/demote): its pages all
	 * go, and it is one block again */
	struct tier_ph *e = tier_ph_of(m, c->block);
	if (e && e->state != TIER_PH_PROBE) {
		memset(e->away, 0, sizeof(e->away));
		tier_monitor_unsplit(m, c->block);
	}
	size_t b = tier_migrate_block(m, c->block, to);
	if (b) {
		m->blocks[c->block].moved_epoch = cur_period ? cur_period : 1;
		tier_monitor_moved(m, c->block, c->tier, to);
		if (m->blocks[c->block].stragglers)
			straggler_add(m, c->block);
	}
	return b;
}

/* A round's candidates before the policy decides again. */
static void unchoose(struct tier_cand *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i].chosen = c[i].retest = false;
}

/* The policy's moves, each weighed for regret: did it undo a move made
 * less than TIER_REGRET_MS ago?  (tier.promote/demote requests are not
 * the policy's and are not weighed.) */
static size_t apply(struct tier_cand *c, size_t n)
{
	uint32_t window = TIER_REGRET_MS / (tier_settings.period_ms ? tier_settings.period_ms : 1);
	size_t moved = 0;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].chosen)
			continue;
		struct tier_mapping *m = c[i].ref;
		struct tier_block *blk = &m->blocks[c[i].block];
		/* the plan counted the room before the round's demotions, which
		 * free less than their blocks' bytes when others take the pages
		 * meanwhile: each promotion looks again */
		if (c[i].tier && !room_take(c[i].bytes)) {
			c[i].chosen = false;
			atomic_fetch_add_explicit(&tier_balance_stats.room_short, 1, memory_order_relaxed);
			continue;
		}
		uint32_t last = blk->policy_epoch;
		size_t b = move(&c[i]);
		if (c[i].tier)
			room_after_move();
		if (!b)
			continue;
		blk->policy_epoch = cur_period ? cur_period : 1;
		bool undid = last && cur_period - last < window;
		/* undone soon after: this block settles longer before the next
		 * move; one that stayed put a long while earns it back */
		if (undid && blk->backoff < TIER_BACKOFF_MAX)
			blk->backoff++;
		else if (!undid && blk->backoff && cur_period - last > 4 * window)
			blk->backoff--;
		tier_balance_stats.regret = tier_regret_move(tier_balance_stats.regret, undid);
		if (undid)
			atomic_fetch_add(&tier_balance_stats.regrets, 1);
		moved += b;
	}
	return moved;
}

/* The fast tier's share of all heat, from the histograms; *all: all heat
 * (pages x heat). */
static float hit_share(const struct tier_hist *const *h, int nt, double *all)
{
	double fast = 0;
	*all = 0;
	for (int t = 0; t < nt; t++)
		for (int k = 1; k < TIER_HIST_BUCKETS; k++) {
			double x = (double)h[t]->pages[k] * tier_hist_mid(k);
			*all += x;
			if (t == 0)
				fast += x;
		}
	return *all > 0 ? (float)(fast / *all) : 1.0f;
}

/* The change detector: moves the policy wants while the fast tier misses
 * heat it could hold (its hit share under GAIN_HIT of what the hottest
 * pages of its size would give: against 1, a workload whose background of
 * accesses no fast tier holds, as GUPS's uniform tenth, read as missing
 * heat always, and every move its noise made began a burst that emptied
 * the bank before its hot set moved), blocks being probed
 * page by page or waiting for it, or the fast tier's
 * share of the heat falling well under its recent level (the hot set
 * moved before any slow block was seen hot enough to move). */
#define HIT_AVG_WEIGHT 0.05f
#define HIT_DROP 0.9f
#define HIT_DROP_MIN 0.05f
#define GAIN_HIT 0.97f
#define HIT_DROP_ROUNDS 3
/* Moves worth a burst bring at least this share of all heat to the fast
 * tier (promotions and second looks, less demotions).  GUPS at the
 * default, after its hot set was placed: swaps of warm blocks across the
 * cut (heat 1.2-3.7 over 0.9-1.4) and tiny hot blocks of a few pages went
 * on every few periods, bringing 0.1-1.5% each; each extended the
 * start-up burst, which took the whole bank (6 s) in every traced run,
 * and the shift 12 s later had 1.2-1.4 s of burst: 8 of 51 runs followed
 * it in 6 s or more, or never.  The start-up fill brought 12-106% a
 * round, the shift 14%. */
#define GAIN_MOVED 0.03
static bool detect(float hit, float best, double moved_share)
{
	static float avg = -1;
	static unsigned low; /* rounds in a row under the recent level */
	/* a drop that lasts (a round's estimate is noisy) and is not tiny */
	low = avg >= 0 && hit < HIT_DROP * avg && avg - hit > HIT_DROP_MIN ? low + 1 : 0;
	bool fell = low >= HIT_DROP_ROUNDS;
	avg = avg < 0 ? hit : avg + HIT_AVG_WEIGHT * (hit - avg);
	/* a move or two while the fast tier holds all the heat it sees is
	 * noise being tidied, not a gain worth a burst */
	bool missing = hit < GAIN_HIT * best;
	/* (a share over 0 needs a promotion or a second look) */
	bool moves = moved_share >= GAIN_MOVED && missing;
	/* so is a probe waiting for its turn: at steady state a block near
	 * the cut that the budget cannot probe began a burst every 5 s */
	bool probes = tier_monitor_probe_pending() && missing;
	/* a measurement far off its block's estimate: a fast block gone cold
	 * or a slow one turned hot.  The hit share cannot see a hot set that
	 * moved while the blocks it left and the ones it went to are stale:
	 * at the default budget on GUPS it fell too little to count, and the
	 * shift went unfollowed for 12 s and more */
	bool churn = tier_monitor_churned() > 0;
	return moves || fell || probes || churn;
}

/* The trace knob: the round's chosen moves, a line each, with what they
 * were judged on (the per-round view that the decisions' statistics hide:
 * which blocks moved, read how hot, and how sure). */
static void trace(uint32_t period, const struct tier_thresholds *th, const struct tier_cand *up, size_t nup,
		  const struct tier_cand *down, size_t ndown)
{
	const struct tier_cand *v[2] = {up, down};
	size_t n[2] = {nup, ndown};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < n[k]; i++) {
			const struct tier_cand *c = &v[k][i];
			if (!c->chosen && !c->retest)
				continue;
			uintptr_t a = tier_block_addr(c->ref, c->block);
			const struct tier_block *blk = &((const struct tier_mapping *)c->ref)->blocks[c->block];
			const float *fl = tier_monitor_stats.floor;
			/* what the heat is made of: the written bits' and DAMON's
			 * rates over their floors, and the written bits' window */
			tier_log("trace period %u: %s %#lx heat %.3f lo %.3f se %.3f%s, %u KiB%s; cut %.3f; "
				 "written %.3f/%.3f (%u looks, last %u periods ago), damon %.3f/%.3f", period,
				 c->retest ? "look again at" : k ? "demote" : "promote", (unsigned long)a, (double)c->heat, (double)c->lo, (double)c->se,
				 c->part == TIER_PART_WHOLE ? "" : " (pages of a split block)", c->bytes >> 10,
				 c->unsure ? ", unsure" : "", (double)th->cut, (double)blk->rate[TIER_SRC_PAGEMAP],
				 (double)fl[TIER_SRC_PAGEMAP], blk->looks, period - blk->pull_period,
				 (double)blk->rate[TIER_SRC_DAMON], (double)fl[TIER_SRC_DAMON]);
		}
}

/* Whether the round's candidates and policy may have a new answer: heat
 * folded, or the fast tier's use or limit changed, since the last full
 * round; and at least every ROUND_GAP_MAX periods (a moved block's settle
 * time runs out, settings change).  At the default budget under TCG the
 * round cost 250-300 us a period whether or not anything had been looked
 * at, a quarter of the 1 ms budget; with the other fixed costs it left
 * the monitor its floor of 0.25 ms, so that at steady state a visit came
 * every few periods and, once a burst's bank was spent, none at all: no
 * visit, no new heat, no cue for the next burst. */
#define ROUND_GAP_MAX 8
static bool round_due(uint32_t period, size_t used, size_t limit)
{
	static uint64_t last_folds = UINT64_MAX;
	static size_t last_used, last_limit;
	static uint32_t last_round;
	uint64_t folds = atomic_load_explicit(&tier_monitor_stats.folds, memory_order_relaxed);
	if (folds == last_folds && used == last_used && limit == last_limit && period - last_round < ROUND_GAP_MAX)
		return false;
	last_folds = folds;
	last_used = used;
	last_limit = limit;
	last_round = period;
	return true;
}

size_t tier_balance(uint32_t period)
{
	const struct tier_settings *s = &tier_settings;
	cur_period = period;
	atomic_fetch_add(&tier_balance_stats.rounds, 1);
	if (!atomic_load(&tier_place.active) || !s->migrate) {
		atomic_store(&tier_balance_stats.gain, false);
		return 0;
	}
	rcu_read_lock();
	room.stale = true; /* read again when first needed this round */
	room.credit = 0;
	audit();
	retry_stragglers();
	split_upkeep();
	if (!round_due(period, atomic_load(&tier_place_stats.committed[0]), atomic_load(&tier_place.fast_limit))) {
		rcu_read_unlock();
		atomic_store(&tier_balance_stats.gain, false); /* nothing new to gain from */
		atomic_fetch_add(&tier_balance_stats.skipped, 1);
		return 0;
	}
	const struct tier_hist *h[TIER_MAX_TIERS];
	int nt = 0;
	for (; nt < tier_place.ntiers && nt < TIER_MAX_TIERS; nt++)
		h[nt] = tier_monitor_hist(nt);
	size_t limit = atomic_load(&tier_place.fast_limit);
	size_t high = (size_t)((double)limit * s->watermark_high);
	struct tier_thresholds th;
	tier_policy_thresholds(h, nt, high, s->hysteresis, TIER_MIN_HEAT, &th);
	/* Page by page pays where warm memory does not fit the fast tier:
	 * blocks near the cut are then the ones whole-block placement gets
	 * wrong when their heat sits on a few pages. */
	uint64_t warm = 0;
	for (int t = 0; t < nt; t++)
		for (int k = tier_hist_bucket(TIER_MIN_HEAT); k < TIER_HIST_BUCKETS; k++)
			warm += h[t]->pages[k];
	bool contended = nt > 1 && (warm << TIER_PAGE_SHIFT) > high && th.cut > 0;
	float lo = th.cut / (float)s->hysteresis, hi = th.cut * (float)s->hysteresis;
	tier_monitor_probe_band(contended, lo > TIER_MIN_HEAT ? lo : TIER_MIN_HEAT, hi);
	/* a change detector's cue lies beyond the band by one more factor:
	 * GUPS's warm blocks' noise read 2.0-3.2 times the cut.  Where all
	 * warm memory fits, a fast block four such factors over the least
	 * heat worth placing that went cold cues one (tier_heat_churn): a
	 * hot set that moved to the slow tier is then found in a burst, not
	 * by the steady sweep's turn */
	float h2 = (float)(s->hysteresis * s->hysteresis);
	tier_monitor_set_cut(contended ? th.cut : 0, contended ? hi * (float)s->hysteresis : TIER_MIN_HEAT * h2 * h2);
	size_t nfast, nslow;
	tier_monitor_candidates(cand_fast, CAND_MAX, &nfast, cand_slow, CAND_MAX, &nslow, period,
				TIER_SETTLE_PERIODS, th.swap_min, th.demote_max);
	double per_period = (double)s->period_ms / 1000.0 * 1048576.0;
	tier_balance_stats.regret = tier_regret_decay(tier_balance_stats.regret,
						      exp2(-(double)s->period_ms / TIER_REGRET_HALF_LIFE_MS));
	struct tier_policy_in in = {
		.fast_limit = limit,
		.fast_used = atomic_load(&tier_place_stats.committed[0]),
		.wm_high = s->watermark_high,
		.wm_low = s->watermark_low,
		.hysteresis = s->hysteresis,
		.promote_budget = (size_t)(s->promote_rate_mbps * per_period),
		.demote_budget = (size_t)(s->demote_rate_mbps * per_period),
		.min_heat = TIER_MIN_HEAT,
		.swap_gap = TIER_SWAP_GAP,
		.wide_margin = TIER_WIDE_MARGIN,
		.swap_min = th.swap_min,
		.z = TIER_SWAP_Z,
	};
	struct tier_policy_out out;
	tier_policy_decide(&in, cand_fast, nfast, cand_slow, nslow, &out);
	/* promotions need pages on the fast nodes, not only budget: when the
	 * plan promotes, read what they have free (one sysfs read per fast
	 * node: 0.2-0.6 ms under TCG, so not in every round, which at steady
	 * state pushed the default's cost over its checks) and, if the plan
	 * does not fit, decide again within it */
	if (out.promote_bytes && nt > 1) {
		room.stale = true;
		room_read();
		if (room.known && room.bytes < out.promote_bytes) {
			unchoose(cand_fast, nfast);
			unchoose(cand_slow, nslow);
			in.room_capped = true;
			in.fast_room = room.bytes;
			tier_policy_decide(&in, cand_fast, nfast, cand_slow, nslow, &out);
		}
	}
	if (s->trace)
		trace(period, &th, cand_slow, nslow, cand_fast, nfast);
	retests(cand_slow, nslow);
	retests(cand_fast, nfast);
	size_t moved = apply(cand_fast, nfast); /* demotions first: they make room */
	/* ... less than their bytes when others took pages meanwhile (the
	 * program's own fast-first allocations): the promotions look again */
	if (moved) {
		room.stale = true;
		room.credit = moved;
	}
	moved += apply(cand_slow, nslow);
	rcu_read_unlock();
	double all;
	float hit = hit_share(h, nt, &all);
	double brought = tier_policy_moved_heat(cand_fast, nfast, cand_slow, nslow, th.cut);
	bool gain = detect(hit, tier_hist_top_share(h, nt, high >> TIER_PAGE_SHIFT), all > 0 ? brought / all : 0);
	tier_balance_stats.hit_share = hit;
	atomic_store(&tier_balance_stats.gain, gain);
	if (gain)
		atomic_fetch_add(&tier_balance_stats.gains, 1);
	atomic_fetch_add(&tier_balance_stats.swaps, out.swaps);
	atomic_fetch_add(&tier_balance_stats.retests, out.retests);
	atomic_fetch_add(&tier_balance_stats.room_short, out.room_short);
	atomic_store(&tier_balance_stats.last_candidates, nfast + nslow);
	tier_balance_stats.cut = th.cut;
	tier_balance_stats.swap_min = th.swap_min;
	if (s->verbose && (out.promote_blocks || out.demote_blocks))
		tier_log("period %u: promote %zu blocks (%zu MiB), demote %zu blocks (%zu MiB), "
			 "%zu candidates, cut %.3f, regret %.2f; fast tier %zu -> %zu MiB of %zu",
			 period, out.promote_blocks, out.promote_bytes >> 20, out.demote_blocks,
			 out.demote_bytes >> 20, nfast + nslow, (double)th.cut, (double)tier_balance_stats.regret, in.fast_used >> 20,
			 out.fast_after >> 20, in.fast_limit >> 20);
	return moved;
}

/* tier.promote / tier.demote: an explicit request, so one pass over every
 * block is fine here (never per period).  Scratch from mmap, grown. */
static struct tier_cand *scratch;
static size_t scratch_cap;

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

static size_t gather_all(bool fast)
{
	size_t n = 0, total = 0;
	struct tier_mapping *m;
	tier_registry_for_each(m)
		total += m->nblocks;
	if (!grow(total))
		return 0;
	tier_registry_for_each(m) {
		for (uint32_t b = 0; b < m->nblocks && n < scratch_cap; b++) {
			uint32_t st = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed);
			int t = TIER_BS_TIER(st);
			if (t < 0 || (t == 0) != fast || !tier_block_movable(m, b))
				continue;
			scratch[n++] = (struct tier_cand){.ref = m,
							  .block = b,
							  .bytes = (st & TIER_BS_PAGES) << TIER_PAGE_SHIFT,
							  .heat = m->blocks[b].heat,
							  .tier = (uint8_t)t};
		}
	}
	return n;
}

size_t tier_move_now(size_t bytes, bool promote)
{
	size_t moved = 0;
	tier_balance_lock();
	rcu_read_lock();
	size_t n = gather_all(!promote);
	tier_cand_sort(scratch, n, promote);
	for (size_t i = 0; i < n && moved < bytes; i++)
		moved += move(&scratch[i]);
	rcu_read_unlock();
	tier_balance_unlock();
	return moved;
}
