/* Moving a block: first the placement accounting (a CAS on the block
 * state, so a block that a hook just emptied or re-placed is left alone),
 * then the memory policy of the 2 MiB range, then the pages.  The kernel's
 * migration keeps the data intact while threads use it.
 *
 * Pages that something holds (long-term pins: RDMA registrations, io_uring
 * fixed buffers, GPU host registration) never move.  What move_pages says
 * about them (6.12, seen in the tiered VM): the call returns a positive
 * count and leaves the status of the whole batch unwritten, even of the
 * pages it did move; asked again (nodes NULL), the pinned pages are still
 * where they were.  A block whose same pages fail that way over
 * HOLD_TRIES tries spread over HOLD_MIN_MS is marked device-held: it is
 * never tried again until its pages are dropped (decommit, purge, unmap:
 * the hooks count those in `drops`). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <numaif.h>
#include <stdio.h>
#include <time.h>

#include "migrate.h"
#include "place.h"

/* Pages the kernel could not move (-EBUSY: in use at that instant, a huge
 * page that would not split) are tried again in the next periods, then
 * every 8 periods until they move or the block is found device-held. */
#define MIGRATE_RETRIES 8
/* Device-held: the same pages failed this many tries in a row (a page
 * locked for an instant fails once or twice, not eight times) ... */
#define HOLD_TRIES 8
/* ... spread over at least this long. */
#define HOLD_MIN_MS 1000
/* A status the kernel did not write (see above). */
#define ST_UNSET INT_MIN

struct tier_migrate_stats tier_migrate_stats;

bool tier_block_held(const struct tier_mapping *m, uint32_t b)
{
	const struct tier_block *blk = &m->blocks[b];
	uint32_t h = atomic_load_explicit(&blk->held, memory_order_relaxed);
	return h && h == atomic_load_explicit(&blk->drops, memory_order_relaxed) + 1;
}

bool tier_block_movable(const struct tier_mapping *m, uint32_t b)
{
	return !m->meta && m->pinned_tier < 0 && atomic_load(&m->blocks[b].pins) == 0 &&
	       !tier_block_held(m, b);
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

static int tier_of_node(int node)
{
	for (int t = 0; t < tier_place.ntiers; t++)
		if (node >= 0 && node < TIER_MAX_NODES && (tier_place.nodes[t] >> node & 1))
			return t;
	return -1;
}

/* What one try found. */
struct outcome {
	uint32_t failed;   /* pages not moved (retried) */
	uint32_t held;     /* of those, the ones something holds */
	uint32_t sig;      /* hash of the held pages' indexes */
	int status;        /* the last held page's status (-errno or TIER_HOLD_KEPT) */
	uint32_t on[TIER_MAX_TIERS]; /* pages known to be on each tier now */
};

/* A page that did not move: held by something, or failed for a reason of
 * its own (target full, a page shared with another process)? */
static bool hold_like(int st)
{
	return st == TIER_HOLD_KEPT || st == -EBUSY || st == -EAGAIN;
}

#ifndef TIER_MUTATE_NOMOVE
/* move_pages(2), counting a refusal: the target node had no memory after
 * the kernel's reclaim (tiering.c then takes the fast nodes as full). */
static long move_counted(unsigned long n, void **pages, const int *nodes, int *status)
{
	long r = move_pages(0, n, pages, nodes, status, MPOL_MF_MOVE);
	if (r < 0 && errno == ENOMEM)
		atomic_fetch_add_explicit(&tier_migrate_stats.refused, 1, memory_order_relaxed);
	return r;
}
#endif

static uint32_t ms_now(void) { return (uint32_t)(tier_clock_ns(CLOCK_MONOTONIC) / 1000000u); }

/* Move the committed pages of block b to tier `to`. */
static void try_move(struct tier_mapping *m, uint32_t b, int to, struct outcome *o)
{
	uintptr_t start = tier_block_addr(m, b);
	void *pages[TIER_PAGES_PER_BLOCK], *ask[TIER_PAGES_PER_BLOCK];
	int nodes[TIER_PAGES_PER_BLOCK], status[TIER_PAGES_PER_BLOCK], st2[TIER_PAGES_PER_BLOCK];
	uint16_t idx[TIER_PAGES_PER_BLOCK], askidx[TIER_PAGES_PER_BLOCK];
	int node = target_node(to, b ^ (uint32_t)(m->base >> TIER_BLOCK_SHIFT));
	size_t n = 0, first = (size_t)b * TIER_PAGES_PER_BLOCK;
	*o = (struct outcome){.sig = 2166136261u};
	for (size_t p = 0; p < TIER_PAGES_PER_BLOCK && first + p < m->npages; p++)
		if (tier_bit_test(m->commit, first + p)) {
			pages[n] = (void *)(start + (p << TIER_PAGE_SHIFT));
			idx[n] = (uint16_t)p;
			status[n] = ST_UNSET;
			nodes[n++] = node;
		}
	if (!n)
		return;
	/* whoever caches where its pages are (the cxl source's frames) reads again */
	atomic_fetch_add_explicit(&m->blocks[b].moves, 1, memory_order_relaxed);
#ifdef TIER_MUTATE_NOMOVE /* test-only mutant (tests/README.md): the move does nothing */
	long r = node >= 0 ? ((void)nodes, 0) : -1;
#else
	long r = node >= 0 ? move_counted(n, pages, nodes, status) : -1;
#endif
	if (r < 0) { /* the call itself failed: nothing is known page by page */
		o->failed = (uint32_t)n;
		return;
	}
	/* statuses the kernel left unwritten (it gave up on pages of the
	 * batch): ask where those pages are now */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (status[i] == ST_UNSET) {
			ask[k] = pages[i];
			askidx[k] = (uint16_t)i;
			st2[k++] = ST_UNSET;
		}
	int where[TIER_PAGES_PER_BLOCK]; /* node of a page kept (TIER_HOLD_KEPT) */
	if (k && move_pages(0, k, ask, NULL, st2, 0) == 0)
		for (size_t j = 0; j < k; j++) {
			size_t i = askidx[j];
			if (st2[j] == node || st2[j] < 0) {
				status[i] = st2[j];
			} else { /* still elsewhere after a move: kept there */
				status[i] = TIER_HOLD_KEPT;
				where[i] = st2[j];
			}
		}
	uint64_t moved = 0;
	for (size_t i = 0; i < n; i++) {
		int st = status[i];
		if (st == node) {
			moved++;
			o->on[to]++;
			continue;
		}
		/* -ENOENT: not resident; -EFAULT: the shared zero page (memory
		 * only read): nothing to move */
		if (st == -ENOENT || st == -EFAULT)
			continue;
		o->failed++;
		if (st == TIER_HOLD_KEPT) {
			int t = tier_of_node(where[i]);
			if (t >= 0)
				o->on[t]++;
		}
		if (hold_like(st)) {
			o->held++;
			o->sig = (o->sig ^ idx[i]) * 16777619u;
			o->status = st;
		}
	}
	atomic_fetch_add(&tier_migrate_stats.moved_pages, moved);
}

/* Mark block b device-held: no more tries.  Its accounting follows the
 * pages: the tier holding most of those whose place is known. */
static void mark_held(struct tier_mapping *m, uint32_t b, const struct outcome *o)
{
	struct tier_block *blk = &m->blocks[b];
	int best = -1;
	for (int t = 0; t < tier_place.ntiers && t < TIER_MAX_TIERS; t++)
		if (o->on[t] && (best < 0 || o->on[t] > o->on[best]))
			best = t;
	int cur = TIER_BS_TIER(atomic_load(&blk->state));
	if (best >= 0 && cur >= 0 && best != cur && tier_place_move_block(m, b, best))
		tier_bind(tier_block_addr(m, b), TIER_BLOCK, best, false);
	/* valid while drops is what it was when the streak began: pages
	 * dropped meanwhile or later make it lapse (see tier_block_held) */
	atomic_store(&blk->held, blk->hold_drops + 1);
	blk->stragglers = 0;
	atomic_fetch_add(&tier_migrate_stats.held_marked, 1);
	atomic_store(&tier_migrate_stats.last_held_addr, tier_block_addr(m, b));
	atomic_store(&tier_migrate_stats.last_held_status, blk->hold_status);
	atomic_store(&tier_migrate_stats.last_held_tries, blk->hold_tries);
}

/* Keep the streak of tries that failed on the same held pages. */
static void track(struct tier_mapping *m, uint32_t b, const struct outcome *o)
{
	struct tier_block *blk = &m->blocks[b];
	if (!o->held) {
		blk->hold_tries = 0;
		return;
	}
	uint32_t now = ms_now(), drops = atomic_load(&blk->drops);
	if (!blk->hold_tries || blk->hold_sig != o->sig || blk->hold_pages != o->held ||
	    blk->hold_drops != drops) {
		blk->hold_tries = 1;
		blk->hold_sig = o->sig;
		blk->hold_pages = (uint16_t)o->held;
		blk->hold_drops = drops;
		blk->hold_since_ms = now;
		blk->hold_status = (int16_t)o->status;
		return;
	}
	if (blk->hold_tries < UINT8_MAX)
		blk->hold_tries++;
	blk->hold_status = (int16_t)o->status;
	if (blk->hold_tries >= HOLD_TRIES && now - blk->hold_since_ms >= HOLD_MIN_MS && drops + 1 != 0)
		mark_held(m, b, o);
}

/* One try at the pages of block b; returns the pages left behind. */
static uint64_t move_block_pages(struct tier_mapping *m, uint32_t b, int to)
{
	struct outcome o;
	try_move(m, b, to, &o);
	m->blocks[b].stragglers = o.failed ? MIGRATE_RETRIES : 0;
	m->blocks[b].left = (uint16_t)o.failed;
	track(m, b, &o);
	return o.failed;
}

size_t tier_migrate_block(struct tier_mapping *m, uint32_t b, int to)
{
	if (!tier_block_movable(m, b))
		return 0;
	uint32_t state = atomic_load(&m->blocks[b].state);
	int from = TIER_BS_TIER(state);
	if (from < 0 || from == to)
		return 0;
	/* a split block moves whole: its pages elsewhere count with it again */
	tier_place_set_split(m, b, 0, 0);
	if (!tier_place_move_block(m, b, to))
		return 0;
	/* CPU time, not wall: the share of a core moving takes, beside
	 * what tracking takes (bg_cpu governs that part) */
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
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
	atomic_fetch_add(&tier_migrate_stats.ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
	return bytes;
}

bool tier_migrate_abandon(struct tier_mapping *m, uint32_t b, int back)
{
	if (!tier_block_movable(m, b) || !tier_place_move_block(m, b, back))
		return false;
	tier_bind(tier_block_addr(m, b), TIER_BLOCK, back, false);
	m->blocks[b].stragglers = MIGRATE_RETRIES;
	m->blocks[b].hold_tries = 0;
	atomic_fetch_add_explicit(&tier_migrate_stats.abandoned, 1, memory_order_relaxed);
	return true;
}

uint32_t tier_migrate_pages(struct tier_mapping *m, uint32_t b, const uint16_t *idx, uint32_t n, int to,
			    uint16_t *moved_idx)
{
	if (!n || !tier_block_movable(m, b))
		return 0;
	void *pages[TIER_PAGES_PER_BLOCK];
	int nodes[TIER_PAGES_PER_BLOCK], status[TIER_PAGES_PER_BLOCK];
	int node = target_node(to, b ^ (uint32_t)(m->base >> TIER_BLOCK_SHIFT));
	if (node < 0)
		return 0;
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uintptr_t start = tier_block_addr(m, b);
	for (uint32_t i = 0; i < n; i++) {
		pages[i] = (void *)(start + ((uintptr_t)idx[i] << TIER_PAGE_SHIFT));
		nodes[i] = node;
		status[i] = ST_UNSET;
	}
	atomic_fetch_add_explicit(&m->blocks[b].moves, 1, memory_order_relaxed);
	uint32_t moved = 0;
#ifdef TIER_MUTATE_NOMOVE /* test-only mutant (tests/README.md): the split block's pages stay */
	if (((void)nodes, (void)pages, 0))
#else
	if (move_counted(n, pages, nodes, status) >= 0)
#endif
		for (uint32_t i = 0; i < n; i++)
			if (status[i] == node)
				moved_idx[moved++] = idx[i];
	atomic_fetch_add(&tier_migrate_stats.moved_pages, moved);
	atomic_fetch_add(&tier_migrate_stats.failed_pages, n - moved);
	size_t bytes = (size_t)moved << TIER_PAGE_SHIFT;
	atomic_fetch_add(to == 0 ? &tier_migrate_stats.promoted_bytes : &tier_migrate_stats.demoted_bytes, bytes);
	atomic_fetch_add(&tier_migrate_stats.ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
	return moved;
}

uint32_t tier_migrate_where(struct tier_mapping *m, uint32_t b, const uint16_t *idx, uint32_t n, int *tier)
{
	void *pages[TIER_PAGES_PER_BLOCK];
	int status[TIER_PAGES_PER_BLOCK];
	uintptr_t start = tier_block_addr(m, b);
	for (uint32_t i = 0; i < n; i++)
		pages[i] = (void *)(start + ((uintptr_t)idx[i] << TIER_PAGE_SHIFT));
	if (!n || move_pages(0, n, pages, NULL, status, 0) != 0)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		tier[i] = status[i] >= 0 ? tier_of_node(status[i]) : -1;
	return n;
}

/* Pages an audit asks about: spread over the block, one syscall. */
#define AUDIT_PAGES 16

bool tier_migrate_audit(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	int t = TIER_BS_TIER(atomic_load(&blk->state));
	if (t < 0 || blk->stragglers || atomic_load(&blk->split) || !tier_block_movable(m, b))
		return false;
	uint16_t idx[AUDIT_PAGES];
	int where[AUDIT_PAGES];
	size_t first = (size_t)b * TIER_PAGES_PER_BLOCK;
	uint32_t n = 0;
	const size_t step = TIER_PAGES_PER_BLOCK / AUDIT_PAGES;
	for (size_t i = 0; i < AUDIT_PAGES; i++) {
		size_t p = i * step + (b * 5 + i) % step; /* not always the same pages */
		if (first + p < m->npages && tier_bit_test(m->commit, first + p))
			idx[n++] = (uint16_t)p;
	}
	if (!n || tier_migrate_where(m, b, idx, n, where) != n)
		return false;
	atomic_fetch_add_explicit(&tier_migrate_stats.audited, 1, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++) {
		if (where[i] >= 0 && where[i] != t) {
			blk->stragglers = MIGRATE_RETRIES;
			atomic_fetch_add_explicit(&tier_migrate_stats.misplaced, 1, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

void tier_migrate_retry(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	int t = TIER_BS_TIER(atomic_load(&blk->state));
	if (t < 0 || !blk->stragglers || tier_block_held(m, b)) {
		blk->stragglers = 0;
		return;
	}
	/* after the quick tries, keep trying every few periods: a block
	 * accounted on a tier must end up there */
	uint32_t left = blk->stragglers > 1 ? blk->stragglers - 1 : 1;
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* every other try through mbind, which migrates huge pages whole */
#ifndef TIER_MUTATE_NOMOVE /* the mutant moves nothing this way either */
	if (left & 1)
		tier_bind(tier_block_addr(m, b), TIER_BLOCK, t, true);
#endif
	if (move_block_pages(m, b, t) && blk->stragglers)
		blk->stragglers = left;
	atomic_fetch_add(&tier_migrate_stats.retries, 1);
	atomic_fetch_add(&tier_migrate_stats.ns, tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
}

void tier_migrate_scan(struct tier_device_scan *s)
{
	*s = (struct tier_device_scan){0};
	struct tier_mapping *m;
	rcu_read_lock();
	tier_registry_for_each(m) {
		for (uint32_t b = 0; b < m->nblocks; b++) {
			struct tier_block *blk = &m->blocks[b];
			uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
			size_t bytes = (size_t)(st & TIER_BS_PAGES) << TIER_PAGE_SHIFT;
			if (atomic_load_explicit(&blk->pins, memory_order_relaxed)) {
				s->pinned_blocks++;
				s->pinned_bytes += bytes;
			}
			if (TIER_BS_TIER(st) < 0)
				continue;
			if (tier_block_held(m, b)) {
				s->held_blocks++;
				s->held_bytes += bytes;
				if (blk->hold_status == TIER_HOLD_KEPT)
					s->held_kept++;
				else if (blk->hold_status == -EBUSY)
					s->held_busy++;
				else
					s->held_other++;
			}
		}
	}
	rcu_read_unlock();
}

const char *tier_hold_status_name(int st)
{
	switch (st) {
	case 0: return "none";
	case TIER_HOLD_KEPT: return "not-migrated";
	case -EBUSY: return "-EBUSY";
	case -EAGAIN: return "-EAGAIN";
	default: return "-E?";
	}
}

void tier_migrate_held_reason(char *buf, size_t len)
{
	uint64_t n = atomic_load(&tier_migrate_stats.held_marked);
	if (!n) {
		snprintf(buf, len, "none");
		return;
	}
	snprintf(buf, len, "%s x%u at %#lx", tier_hold_status_name(atomic_load(&tier_migrate_stats.last_held_status)),
		 (unsigned)atomic_load(&tier_migrate_stats.last_held_tries),
		 (unsigned long)atomic_load(&tier_migrate_stats.last_held_addr));
}
