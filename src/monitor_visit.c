/* How the monitor looks at blocks (see monitor.h, monitor_int.h). */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "monitor.h"
#include "monitor_int.h"
#include "knobs.h"

/* ------------------------------------------------------------ visiting */

/* With a pull source, each block has an armed part, measured at each
 * visit: the visit lists what was written there since the last one and
 * re-arms just that.  The armed part is a slice of the block, sized so
 * that a visit finds about FAULT_TARGET written pages: every written page
 * found cost the program a write fault (0.5-1 us natively, 5-20 us in
 * VMs) and every call that re-protects pages a TLB shootdown (an IPI to
 * each CPU running the program).  A quiet block's slice is QUIET_PAGES
 * long and moves on at each look; never the whole block (see
 * monitor_int.h).  The window is the time between visits: a few periods
 * on the watch list, a pass for the sweep; a written share near 1 only
 * says "at least this hot". */
/* Pull-source calls; what they cost is timed by the visit loops, and the
 * faults a measure found are added here. */
static uint64_t measure(struct tier_mapping *m, uintptr_t lo, uintptr_t hi, uint32_t mult, bool rearm)
{
	uint64_t ns = tier_heat_measure(m, lo, hi, mult, rearm);
	tier_mon.fault_ns += (int64_t)ns;
	return ns;
}

/* The faults an armed part may cost are charged when it is armed (they
 * happen in the program before the next visit finds them: charged only
 * then, a pass that arms many blocks would run far over the budget), and
 * what it did not cost is given back when it is measured.  What is
 * charged is what such parts were found to cost lately: a first look, a
 * slice, a quiet slice, a block looked at page by page (EXPECT_*). */

static void learn(int kind, uint64_t fault_ns, uint32_t parts)
{
	if (!tier_mon.one_fault || !parts)
		return;
	float found = (float)fault_ns / (float)tier_mon.one_fault / (float)parts;
	tier_mon_expect[kind] += 0.05f * (found - tier_mon_expect[kind]);
}

static void charge(struct tier_block *blk, int kind)
{
	float faults = tier_mon_expect[kind];
	uint8_t e = faults > 255 ? 255 : (uint8_t)(faults + 0.5f);
	blk->pull_expect = e;
	tier_mon.fault_ns += (int64_t)e * (int64_t)tier_mon.one_fault;
}

static void refund(struct tier_block *blk)
{
	tier_mon.fault_ns -= (int64_t)blk->pull_expect * (int64_t)tier_mon.one_fault;
	blk->pull_expect = 0;
}

static void slice_range(struct tier_mapping *m, uint32_t b, uint32_t first, uint32_t n, uintptr_t *lo,
			uintptr_t *hi)
{
	*lo = tier_block_addr(m, b) + ((uintptr_t)first << TIER_PAGE_SHIFT);
	*hi = *lo + ((uintptr_t)n << TIER_PAGE_SHIFT);
	if (*hi > m->base + m->size)
		*hi = m->base + m->size;
	if (*lo > *hi)
		*lo = *hi;
}

/* The pages of block b inside its mapping: a mapping's last block may be
 * short, and a slice placed past its end measured nothing (a short block
 * of a hot set read cold at most looks and stayed slow). */
static uint32_t span_pages(const struct tier_mapping *m, uint32_t b)
{
	uintptr_t a = tier_block_addr(m, b), e = a + TIER_BLOCK;
	if (e > m->base + m->size)
		e = m->base + m->size;
	return e > a ? (uint32_t)((e - a) >> TIER_PAGE_SHIFT) : 0;
}

/* Committed pages of block b's pages [first, first + n). */
static uint32_t slice_committed(const struct tier_mapping *m, uint32_t b, uint32_t first, uint32_t n)
{
	size_t p = (size_t)b * TIER_PAGES_PER_BLOCK + first;
	if (p >= m->npages)
		return 0;
	return (uint32_t)tier_bits_count(m->commit, p, p + n <= m->npages ? n : m->npages - p);
}

/* How many of the block's committed pages one committed page of its
 * armed slice (pull_first, n pages) stands for.  Against the span, a
 * block half committed (jemalloc's extents end mid-block) read twice its
 * rate from any slice on its committed half: uniform GUPS's 1 MiB-slot
 * blocks read 8-16 writes a page a period where whole ones read 5.5,
 * and were swapped in on it. */
static uint32_t slice_mult(const struct tier_mapping *m, uint32_t b, uint32_t n)
{
	uint32_t span = span_pages(m, b);
	if (n >= span)
		return 1;
	uint32_t pages = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed) & TIER_BS_PAGES;
	uint32_t c = slice_committed(m, b, m->blocks[b].pull_first, n);
	if (!c || !pages) /* nothing committed there: nothing is found either */
		return (span + n / 2) / n;
	return (pages + c / 2) / c;
}

/* A slice measured over a long window (a pass) that comes back all
 * written only says "at least this hot": a busy block and a hot one look
 * alike.  Such slices, and first looks, are armed for one period and
 * measured at the start of the next (a short window resolves rates up to
 * a few writes per page per period), whatever the pass length. */
static void due_add(struct tier_mapping *m, uint32_t b)
{
	uint32_t *n = &tier_mon.ndue[tier_mon.period & 1];
	if (!tier_mon.in_due && *n < DUE_MAX)
		tier_mon.due[tier_mon.period & 1][(*n)++] = (struct ref){m, b};
}

/* A dense block's slice, just measured and re-armed: measured again after
 * a short window (tier_monitor_short_measure). */
static void short_add(struct tier_mapping *m, uint32_t b, uint64_t armed_ns)
{
	if (tier_mon.short_w > 0 || tier_mon.nshort >= SHORT_MAX)
		return;
	struct tier_block *blk = &m->blocks[b];
	tier_mon.shorts[tier_mon.nshort++] = (struct short_ref){
		.r = {m, b}, .armed_ns = armed_ns, .period = tier_mon.period, .pages = blk->pull_pages};
}

/* Arm [lo, hi) of block b and charge what it may cost.  Memory that holds
 * no page is not armed (nothing there to fault on, and protecting it
 * makes the kernel build page tables): nothing is charged, and the
 * measure that ends its window teaches nothing (TIER_BF_UNARMED). */
static void arm_charge(struct tier_mapping *m, uint32_t b, uintptr_t lo, uintptr_t hi, int kind)
{
	struct tier_block *blk = &m->blocks[b];
	if (tier_heat_arm(m, lo, hi)) {
		blk->flags &= (uint8_t)~TIER_BF_UNARMED;
		charge(blk, kind);
	} else {
		blk->flags |= TIER_BF_UNARMED;
		blk->pull_expect = 0;
	}
}

/* Charge the part [lo, hi) of block b that a measure just re-armed: a
 * part that was not armed (it held no page) got nothing protected by that
 * measure, so it is armed now if it holds pages. */
static void charge_rearmed(struct tier_mapping *m, uint32_t b, uintptr_t lo, uintptr_t hi, int kind, bool was_unarmed)
{
	if (was_unarmed)
		arm_charge(m, b, lo, hi, kind);
	else
		charge(&m->blocks[b], kind);
}

/* Arm a slice of n pages of block b, at a place that depends on the
 * block (the slice is a sample of it). */
static void arm_at(struct tier_mapping *m, uint32_t b, uint32_t n, int kind)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t span = span_pages(m, b), slots = span > n ? span / n : 1;
	uint32_t slot = (b * 7 + blk->slice_shift) % slots;
	/* on committed pages: a slice on a half-committed block's other
	 * half found nothing written, twice, and read the block gone cold
	 * (uniform GUPS's partial blocks were demoted at 0.1 on it); with
	 * none committed, it stays where it was (a full turn) */
	for (uint32_t k = 0; k < slots && !slice_committed(m, b, slot * n, n); k++)
		slot = (slot + 1) % slots;
	blk->pull_first = (uint16_t)(slot * n);
	blk->pull_pages = (uint16_t)n;
	uintptr_t lo, hi;
	slice_range(m, b, blk->pull_first, n, &lo, &hi);
	blk->pull_period = tier_mon.period;
	arm_charge(m, b, lo, hi, kind);
}

/* ... and measured after a one-period window (due_add). */
static void arm_slice(struct tier_mapping *m, uint32_t b, uint32_t n)
{
	arm_at(m, b, n, (m->blocks[b].flags & TIER_BF_PULLED) ? EXPECT_SLICE : EXPECT_FIRST);
	due_add(m, b);
}

/* The armed part leaves: what it saw is folded, and what it still holds
 * armed is disarmed (left armed, its pages would fault later unmeasured
 * and uncounted).  The caller arms the next part (pull_pages still says
 * the old one: want_pages reads a block without it as never looked at). */
static void retire(struct tier_mapping *m, uint32_t b, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	uintptr_t lo, hi;
	slice_range(m, b, blk->pull_first, blk->pull_pages, &lo, &hi);
	uint64_t f = measure(m, lo, hi, slice_mult(m, b, blk->pull_pages), false);
	int kind = blk->pull_pages == TIER_PAGES_PER_BLOCK ? EXPECT_PAGES
		   : !(blk->flags & TIER_BF_PULLED)       ? EXPECT_FIRST
		   : blk->pull_pages == QUIET_PAGES        ? EXPECT_QUIET
							   : EXPECT_SLICE;
	if (!(blk->flags & TIER_BF_UNARMED))
		learn(kind, f, 1);
	refund(blk);
	tier_mon_fold(m, b, true, sweep);
	/* all of it written: nothing is left armed (a call saved, and its
	 * TLB shootdown) */
	uint32_t armed = (uint32_t)((hi - lo) >> TIER_PAGE_SHIFT);
	if (!(blk->flags & TIER_BF_UNARMED) && (!tier_mon.one_fault || f < (uint64_t)armed * tier_mon.one_fault))
		tier_heat_disarm(m, lo, hi);
}

/* The armed part for the next window: a slice that should find about
 * FAULT_TARGET written pages, and at most QUIET_PAGES of the block.  *quiet:
 * fewer than that would be found even so. */
static uint32_t want_pages(const struct tier_block *blk, bool *quiet)
{
	*quiet = false;
	if (!blk->pull_pages)
		return SLICE_FIRST; /* a first look: its rate is unknown */
	if (!(blk->flags & TIER_BF_PULLED))
		return blk->pull_pages;
	uint32_t w = tier_mon.period > blk->pull_period ? tier_mon.period - blk->pull_period : 1;
	float f = 1.0f - expf(-blk->rate[TIER_SRC_PAGEMAP] * (float)w);
	uint32_t n = SLICE_MIN;
	while ((float)(n * 2) * f <= FAULT_TARGET && n < QUIET_PAGES)
		n *= 2;
	*quiet = (float)QUIET_PAGES * f <= FAULT_TARGET;
	return n;
}

/* A block looked at page by page: armed whole, and measured whole at each
 * visit, which closes one window of its per-page counts. */
static void visit_pages(struct tier_mapping *m, uint32_t b, struct tier_ph *e, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	uintptr_t lo, hi;
	slice_range(m, b, 0, TIER_PAGES_PER_BLOCK, &lo, &hi);
	if (blk->pull_pages != TIER_PAGES_PER_BLOCK) {
		if (blk->pull_pages) { /* what the slice saw, then the whole block */
			uintptr_t slo, shi;
			slice_range(m, b, blk->pull_first, blk->pull_pages, &slo, &shi);
			measure(m, slo, shi, slice_mult(m, b, blk->pull_pages), false);
			refund(blk);
			tier_mon_fold(m, b, true, sweep);
		}
		memset(e->seen, 0, sizeof(e->seen));
		blk->pull_pages = TIER_PAGES_PER_BLOCK;
		blk->pull_first = 0;
		blk->pull_period = tier_mon.period;
		e->last_period = tier_mon.period;
		arm_charge(m, b, lo, hi, EXPECT_PAGES);
		return;
	}
	bool unarmed = blk->flags & TIER_BF_UNARMED;
	uint64_t found = measure(m, lo, hi, 1, true);
	uint32_t w = tier_mon.period > blk->pull_period ? tier_mon.period - blk->pull_period : 1;
	if (!unarmed)
		learn(EXPECT_PAGES, found, 1);
	refund(blk);
	uint32_t seen = tier_ph_window(e, tier_mon.period);
	if (e->state == TIER_PH_PROBE) {
		/* a probe's window: long enough that a window sees a few percent
		 * of the pages, short enough that hot ones are not all seen */
		uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
		e->seen_total += seen;
		if (seen * 20 < pages && e->win < PROBE_WIN_MAX)
			e->win = (uint16_t)(e->win * 2);
		else if (seen * 5 > pages * 2 && e->win > 1)
			e->win = (uint16_t)(e->win / 2);
	}
	tier_mon_fold(m, b, true, sweep);
	blk->pull_period = tier_mon.period;
	charge_rearmed(m, b, lo, hi, EXPECT_PAGES, unarmed);
	tier_mon_ph_decide(m, b, e, (double)found / w);
}

/* Probes, round-robin, until `until` ns are spent (one visit at least): a
 * probe is measured once its window (e->win periods) is over, and decides
 * after TIER_PH_PROBE_WINDOWS windows.  Left outside the allowance, probes
 * armed whole every 20 ms period made python's own tests under the
 * reliability suite's settings run past the VM's 15 minutes. */
static void timed_visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep);
void tier_mon_visit_probes(uint64_t until, bool pull)
{
	if (!pull)
		return;
	/* from where the last period stopped, so that each probe gets its turn */
	static uint32_t next;
	uint32_t n = tier_ph_used();
	for (uint32_t k = 0; k < n && (k == 0 || tier_mon_spent() < until); k++) {
		struct tier_ph *e = tier_ph_at((next + k) % n);
		if (e->state == TIER_PH_PROBE && !e->m->gone &&
		    tier_mon.period - e->m->blocks[e->b].pull_period >= e->win)
			timed_visit(e->m, e->b, pull, false);
		if (k + 1 == n || tier_mon_spent() >= until)
			next = (next + k + 1) % n;
	}
}

/* Look at block b now, with a pull source (measure and re-arm it), or
 * without (fold what push sources reported). */
static void visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	if (!pull || !pages || m->meta) {
		tier_mon_fold(m, b, false, sweep);
		return;
	}
	if (blk->pull_period == tier_mon.period)
		return; /* measured this period already */
	struct tier_ph *e = tier_ph_of(m, b);
	if (e) {
		tier_mon_fold(m, b, false, sweep); /* push reports meanwhile */
		if (tier_ph_of(m, b) == e)
			visit_pages(m, b, e, sweep);
		return;
	}
	bool quiet;
	uint32_t n = want_pages(blk, &quiet);
	tier_mon_fold(m, b, false, sweep); /* push reports meanwhile */
	uintptr_t lo, hi;
	if (blk->pull_pages && blk->pull_pages == n && !quiet) { /* the same slice: measure, re-arm */
		slice_range(m, b, blk->pull_first, n, &lo, &hi);
		/* before the re-arm: a window taken to start later than it did
		 * reads a higher rate than the pages saw */
		uint64_t armed_ns = tier_clock_ns(CLOCK_MONOTONIC);
		bool unarmed = blk->flags & TIER_BF_UNARMED;
		uint64_t f = measure(m, lo, hi, slice_mult(m, b, n), true);
		if (!unarmed)
			learn(EXPECT_SLICE, f, 1);
		refund(blk);
		bool long_window = tier_mon.period - blk->pull_period > 1;
		tier_mon.saturated = false;
		tier_mon.slice_empty = false;
		tier_mon_fold(m, b, true, sweep);
		blk->pull_period = tier_mon.period;
		if (tier_mon.slice_empty) {
			/* nothing written there, on a block that was: the slice
			 * may lie on pages the program never writes (GUPS's 1 MiB
			 * slots end in 16 unused pages; one hot block whose slice
			 * sat there read cold at every visit and stayed slow in
			 * half the runs).  Elsewhere, the next visit tells. */
			blk->slice_shift = (uint8_t)(blk->slice_shift + 1 + (TIER_PAGES_PER_BLOCK / n) / 3);
			arm_slice(m, b, n);
			return;
		}
		charge_rearmed(m, b, lo, hi, EXPECT_SLICE, unarmed);
		/* all written: a long window says little, a one-period one
		 * resolves rates up to a few writes per page per period, and a
		 * block known to be faster than that needs a short one.  So
		 * does one that a window of a period or less found all written:
		 * at least -ln 0.05 = 3 a period, dense whatever its estimate
		 * says (GUPS's new hot set after a shift, at 40 a period, came
		 * back all written at every one-period look while its estimate
		 * crept from 1.3 to the dense 2.5, a look a period: 0.3-0.6 s) */
		if (tier_mon.saturated && (blk->rate[TIER_SRC_PAGEMAP] >= DENSE_RATE || !long_window))
			short_add(m, b, armed_ns);
		else if (tier_mon.saturated && long_window)
			due_add(m, b);
		return;
	}
	if (blk->pull_pages) { /* read the old part, then arm the new one */
		bool again = quiet && blk->pull_pages == n;
		retire(m, b, sweep);
		n = want_pages(blk, &quiet);
		/* a quiet block's slice moves on at each look: in eight passes
		 * every page was watched (fixed, it never saw hot items that lay
		 * elsewhere in the block) */
		if (again && quiet)
			blk->slice_shift++;
	}
	/* a quiet slice keeps the long window (a pass); others are looked at
	 * after one period */
	if (quiet)
		arm_at(m, b, n, EXPECT_QUIET);
	else
		arm_slice(m, b, n);
}

/* A slow block picked for a swap (tier_monitor_retest): its slice armed
 * afresh now and measured at the next period's start, so that the look
 * that judges it starts after the pick, and comes at once (left to the
 * visits, it came 1-1.3 s later on the GUPS shift).  A block armed whole
 * is measured whole at its next visit. */
void tier_mon_rearm(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t n = blk->pull_pages;
	if (!n) { /* never looked at: its first look, now */
		arm_slice(m, b, SLICE_FIRST);
		return;
	}
	if (n >= TIER_PAGES_PER_BLOCK)
		return;
	refund(blk);
	arm_slice(m, b, n);
}

/* What this period's visits cost so far: their CPU and the faults charged. */
uint64_t tier_mon_spent(void)
{
	int64_t s = (int64_t)tier_mon.sched_ns + tier_mon.fault_ns - (int64_t)tier_mon.fixed_ns;
	return s > 0 ? (uint64_t)s : 0;
}

/* Time one visit into the period's spending. */
static void timed_visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep)
{
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	visit(m, b, pull, sweep);
	tier_mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* The sentinel: the hottest fast-tier blocks hold most of the fast
 * tier's hit share, so a moved hot set shows first there (and, gone cold,
 * they cost no faults to look at).  Every SENTINEL_EVERY periods the
 * hottest of them not looked at for SENTINEL_AGE periods is looked at.
 * Round-robin alone over a watch list as long as the footprint (GUPS's
 * uniform tenth of writes keeps every block above the watch mark) left
 * the old hot set unvisited for seconds at the default budget, and the
 * shift unseen.  It is the change detector's look, taken whatever the
 * monitor's debt and booked as a fixed cost (tier_monitor_period): at the
 * turn of the watch list, GUPS's sentinels at the default budget under
 * TCG were looked at every 5-18 periods (each look left 1-3 ms of debt,
 * paid back at 0.25 ms a period), and a shift waited that long for its
 * first cue.  One block a look: two or four cost the steady state more
 * than the shift gained (guest-default's steady window). */
#define SENTINEL_AGE 4
void tier_mon_visit_sentinels(bool pull)
{
	/* the walk is the monitor's work too: charged like a visit */
	struct ref pick = {0};
	float hottest = 0;
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (uint32_t i = 0; i < tier_mon.nwatch; i++) {
		const struct tier_block *blk = blk_of(&tier_mon.watch[i]);
		uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
		if (TIER_BS_TIER(st) != 0 || tier_mon.period - blk->pull_period < SENTINEL_AGE || !(blk->heat > hottest))
			continue;
		pick = tier_mon.watch[i];
		hottest = blk->heat;
	}
	tier_mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	if (hottest > 0)
		timed_visit(pick.m, pick.b, pull, false);
}

/* The watch list, round-robin, until `until` ns are spent (one visit at
 * least when until > 0: a visit cannot be cut short, the budget keeps the
 * debt). */
void tier_mon_visit_watch(uint64_t until, bool pull)
{
	uint32_t n = tier_mon.nwatch;
	for (uint32_t k = 0; k < n && until && (k == 0 || tier_mon_spent() < until); k++) {
		if (!tier_mon.nwatch)
			break;
		if (tier_mon.rot >= tier_mon.nwatch)
			tier_mon.rot = 0;
		struct ref r = tier_mon.watch[tier_mon.rot++];
		timed_visit(r.m, r.b, pull, false);
		atomic_fetch_add_explicit(&tier_monitor_stats.watch_visits, 1, memory_order_relaxed);
	}
}

/* The slices armed last period for a one-period window (due_add). */
void tier_mon_visit_due(bool pull)
{
	uint32_t k = (tier_mon.period - 1) & 1, n = tier_mon.ndue[k];
	tier_mon.ndue[k] = 0;
	if (!pull)
		return;
	tier_mon.in_due = true;
	for (uint32_t i = 0; i < n; i++) {
		struct ref r = tier_mon.due[k][i];
		struct tier_block *blk = blk_of(&r);
		if (blk->pull_period + 1 == tier_mon.period && blk->pull_pages && blk->pull_pages < TIER_PAGES_PER_BLOCK)
			timed_visit(r.m, r.b, pull, false);
	}
	tier_mon.in_due = false;
}

/* A short window's length, in ns */
static uint64_t short_target(void) { return (uint64_t)tier_settings.period_ms * 1000000ull / SHORT_DIV; }

uint64_t tier_monitor_short_at(void)
{
	if (!tier_mon.nshort)
		return 0;
	return tier_mon.shorts[0].armed_ns + short_target();
}

void tier_monitor_short_measure(void)
{
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID), now = tier_clock_ns(CLOCK_MONOTONIC);
	double period_ns = (double)tier_settings.period_ms * 1e6;
	uint64_t target = short_target();
	tier_mon.fault_ns = 0; /* the period's own was counted already */
	rcu_read_lock();
	uint32_t keep = 0;
	for (uint32_t i = 0; i < tier_mon.nshort; i++) {
		struct short_ref *e = &tier_mon.shorts[i];
		struct tier_mapping *m = e->r.m;
		struct tier_block *blk = blk_of(&e->r);
		/* still the slice armed then (not moved, re-armed or dropped since) */
		if (m->gone || blk->pull_period != e->period || blk->pull_pages != e->pages || !e->pages)
			continue;
		/* each window its own length: measured when the first was due,
		 * slices armed late in the period's visits had windows of a
		 * tenth of that and less, and any write the window's ends
		 * misplaced (a thread descheduled between the clock and the
		 * scan) counted a hundredfold: uniform GUPS's blocks, all alike,
		 * read rates of 50-300 a period from 0.4-4 ms windows and were
		 * promoted on them */
		if (now < e->armed_ns + target - target / 4) {
			tier_mon.shorts[keep++] = *e; /* in arming order: shorts[0] stays the first due */
			continue;
		}
		uintptr_t lo, hi;
		slice_range(m, e->r.b, blk->pull_first, e->pages, &lo, &hi);
		learn(EXPECT_SLICE, measure(m, lo, hi, slice_mult(m, e->r.b, e->pages), true), 1);
		/* the end after the scan: a window taken longer than it was
		 * reads a lower rate, never a higher one */
		tier_mon.short_w = (float)((double)(tier_clock_ns(CLOCK_MONOTONIC) - e->armed_ns) / period_ns);
		refund(blk);
		tier_mon.cold_short = false;
		tier_mon_fold(m, e->r.b, true, false);
		charge(blk, EXPECT_SLICE);
		if (tier_mon.cold_short) /* a pause, or gone cold: one period tells */
			due_add(m, e->r.b);
		atomic_fetch_add_explicit(&tier_monitor_stats.short_windows, 1, memory_order_relaxed);
	}
	tier_mon.short_w = 0;
	tier_mon.nshort = keep;
	rcu_read_unlock();
	tier_mon.carry_sched += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	tier_mon.carry_fault += tier_mon.fault_ns > 0 ? (uint64_t)tier_mon.fault_ns : 0;
}

/* The cursor's mapping, valid under rcu_read_lock: the saved one unless it
 * was freed since (then the first at or after its sequence number). */
static struct tier_mapping *cursor(void)
{
	if (tier_mon.cm)
		return tier_mon.cm;
	struct tier_mapping *m = tier_registry_from_seq(tier_mon.cseq);
	if (m && m->seq != tier_mon.cseq)
		tier_mon.cb = 0;
	return m;
}

/* Whether block b of m holds a page, asked of the pull source for the
 * cursor's 64 blocks once a period (its time is the visits'). */
static bool sweep_held(struct tier_mapping *m, uint32_t b)
{
	uint32_t w = b & ~63u;
	if (tier_mon.held_seq != m->seq || tier_mon.held_b != w || tier_mon.held_period != tier_mon.period) {
		uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		tier_mon.held_mask = tier_heat_held(m, w, m->nblocks - w < 64 ? m->nblocks - w : 64);
		tier_mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		tier_mon.held_seq = m->seq;
		tier_mon.held_b = w;
		tier_mon.held_period = tier_mon.period;
	}
	return tier_mon.held_mask >> (b - w) & 1;
}

/* The sweep, from the cursor on, until `until` ns are spent (one block at
 * least, and at most EMPTY_STEPS empty ones: jemalloc reserves address
 * space ahead of use).  A block that holds no page and no heat is passed
 * over like an empty one: a look finds nothing there, and at 22 us a look
 * bench/scale's 56 GiB committed and never written (of 64 GiB) made a
 * pass 79 s long, the 8 GiB written in it waiting as long. */
#define EMPTY_STEPS 8192
void tier_mon_sweep(uint64_t until, bool pull)
{
	struct tier_mapping *m = cursor();
	uint64_t steps = EMPTY_STEPS;
	bool any = false;
	while (until && (!any || tier_mon_spent() < until) && steps--) {
		if (!m) { /* end of a pass */
			uint32_t len = tier_mon.period - tier_mon.pass_start;
			if (tier_mon.pass_blocks) {
				atomic_store(&tier_monitor_stats.last_pass_periods, len ? len : 1);
				atomic_store(&tier_monitor_stats.pass_blocks, tier_mon.pass_blocks);
				atomic_fetch_add(&tier_monitor_stats.passes, 1);
			}
			tier_mon.pass_start = tier_mon.period;
			tier_mon.pass_blocks = 0;
			m = tier_registry_from_seq(0);
			tier_mon.cb = 0;
			if (!m)
				break;
			if (any)
				break; /* one pass per period at most */
		}
		if (tier_mon.cb >= m->nblocks || m->meta) {
			m = tier_registry_next(m);
			tier_mon.cb = 0;
			continue;
		}
		uint32_t b = tier_mon.cb++;
		struct tier_block *blk = &m->blocks[b];
		if (!(atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES) && !blk->hist_tier &&
		    !blk->flags)
			continue; /* empty and unknown: nothing to do */
		if (pull && !(blk->heat > 0) && !sweep_held(m, b))
			continue; /* nothing there, nothing known */
		timed_visit(m, b, pull, true);
		any = true;
		tier_mon.pass_blocks++;
		atomic_fetch_add_explicit(&tier_monitor_stats.sweep_blocks, 1, memory_order_relaxed);
	}
	tier_mon.cm = m;
	tier_mon.cseq = m ? m->seq : 0;
}
