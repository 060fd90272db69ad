/* The monitor (see monitor.h).  Everything here runs in the background
 * thread under the balance lock, except tier_monitor_seen_pages (stats). */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "migrate.h"
#include "monitor.h"
#include "monitor_int.h"

struct tier_monitor_stats tier_monitor_stats;
struct tier_mon_state tier_mon;
/* Beside tier_mon, which is then all zero (.bss): with an initialiser its
 * 300 KiB would be file-backed .data, resident in every process at start. */
static uint32_t mon_rng = 2463534242u;
float tier_mon_expect[4] = {8, 4, 1, 32};

static uint32_t rnd(void)
{
	mon_rng ^= mon_rng << 13;
	mon_rng ^= mon_rng >> 17;
	mon_rng ^= mon_rng << 5;
	return mon_rng;
}


/* ------------------------------------------------------------ lists */

static void list_del(struct ref *v, uint32_t *n, struct tier_block *blk, uint8_t flag)
{
	uint32_t i = blk->list_idx;
	blk->flags &= (uint8_t)~flag;
	if (i >= *n)
		return;
	v[i] = v[--*n];
	if (i < *n)
		blk_of(&v[i])->list_idx = i;
}

static bool list_add(struct ref *v, uint32_t *n, uint32_t cap, struct tier_mapping *m, uint32_t b,
		     uint8_t flag)
{
	if (*n == cap)
		return false;
	v[*n] = (struct ref){m, b};
	m->blocks[b].list_idx = (*n)++;
	m->blocks[b].flags |= flag;
	return true;
}

static void unlist(struct tier_block *blk)
{
	if (blk->flags & TIER_BF_WATCH)
		list_del(tier_mon.watch, &tier_mon.nwatch, blk, TIER_BF_WATCH);
	if (blk->flags & TIER_BF_COLD)
		list_del(tier_mon.cold, &tier_mon.ncold, blk, TIER_BF_COLD);
}

/* A full list makes room by evicting, of a few entries picked at random,
 * the one that `better` prefers to lose, if it loses to the newcomer. */
static bool evict_for(struct ref *v, uint32_t *n, uint8_t flag, float heat, bool keep_hot)
{
	uint32_t pick = UINT32_MAX;
	for (int k = 0; k < 4; k++) {
		uint32_t i = rnd() % *n;
		float h = v[i].m->blocks[v[i].b].heat;
		if (pick == UINT32_MAX || (keep_hot ? h < blk_of(&v[pick])->heat : h > blk_of(&v[pick])->heat))
			pick = i;
	}
	float h = blk_of(&v[pick])->heat;
	if (keep_hot ? h >= heat : h <= heat)
		return false;
	list_del(v, n, blk_of(&v[pick]), flag);
	return true;
}

static void watch(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	if (blk->flags & TIER_BF_WATCH)
		return;
	if (blk->flags & TIER_BF_COLD)
		list_del(tier_mon.cold, &tier_mon.ncold, blk, TIER_BF_COLD);
	if (tier_mon.nwatch == WATCH_MAX && !evict_for(tier_mon.watch, &tier_mon.nwatch, TIER_BF_WATCH, blk->heat, true))
		return;
	list_add(tier_mon.watch, &tier_mon.nwatch, WATCH_MAX, m, b, TIER_BF_WATCH);
}

/* ------------------------------------------------------------ page by page */

/* New probes per period at most, and how a run of probes that found even
 * heat (uniform access: nothing to gain page by page) backs probing off. */
#define PROBES_PER_PERIOD 4
/* Blocks probed at once: each costs a whole-block measurement per visit,
 * and a probe decides only after TIER_PH_PROBE_WINDOWS visits, so few at a
 * time finish sooner than many. */
#define PROBES_MAX 32
/* A block is steady enough to probe when its last fold changed its heat by
 * at most this share. */
#define PROBE_STEADY 0.2f
/* A probe that still saw too little after PROBE_LONG windows lets go. */
#define PROBE_LONG 24
/* Probes take at most this share of the monitor's allowance. */
#define PROBE_SHARE 0.3
#define PROBE_RETRY 3000   /* periods before a block found even is probed again */
#define PROBE_PAUSE 300    /* periods of no probing after mostly even outcomes */
#define PROBE_PAUSE_MAX 6000

static struct {
	bool on;
	float lo, hi;          /* the warm band: heat worth a look page by page */
	uint32_t period, taken;
	uint32_t paused_until, pause;
	uint16_t outcomes;     /* the last 16 outcomes, bit set: split */
	uint8_t n;             /* outcomes since the last pause, up to PROBE_HISTORY */
	uint8_t decided;       /* outcomes ever, up to 8 */
	uint32_t waiting;      /* blocks due for a probe this period that found no room */
} probe = {.pause = PROBE_PAUSE};

unsigned tier_monitor_churned(void)
{
	unsigned n = tier_mon.churn;
	tier_mon.churn = 0;
	return n;
}

bool tier_monitor_probe_pending(void)
{
	/* probes that lately found even heat (at most one split in the last
	 * 8: uniform or contiguous hot sets, as GUPS) are not worth a burst:
	 * counted as a gain, they kept GUPS in bursts at steady state and the
	 * bank was empty when its hot set moved */
	if (probe.decided >= 8 && __builtin_popcount(probe.outcomes & 0xffu) <= 1)
		return false;
	return probe.waiting || atomic_load(&tier_ph_stats.probing);
}

void tier_monitor_set_cut(float cut, float hot)
{
	tier_mon.cut = cut;
	tier_mon.cut_hot = hot;
}

void tier_monitor_probe_band(bool on, float lo, float hi)
{
	probe.on = on;
	probe.lo = lo;
	probe.hi = hi;
}

static void watch(struct tier_mapping *m, uint32_t b);

/* Whether the block is one the probe wants to look at (warm band, not
 * probed lately), whether or not there is room for it yet. */
/* Whether a probe's window of block blk fits the steady budget's probe
 * share: a probe arms the whole block, so each window costs a write fault
 * per page written in it.  Under GUPS's uniform tenth of writes every
 * block near the cut had 45% of its pages written a period, 230 faults
 * (1.2 ms under TCG) a visit against 0.3 ms of the default budget's
 * share: the debt left the monitor nothing for the watch list, and a
 * moved hot set went unseen for 5-12 s.  Heat on a few pages, what a
 * probe is for, costs few faults a window. */
static bool probe_affordable(const struct tier_block *blk)
{
	/* all written in its last window: as dense as it is hot, and a probe
	 * would pay a fault on every page (GUPS's background: 500 faults a
	 * window, where its rate said 20) */
	if (blk->flags & TIER_BF_BOUND)
		return false;
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	double written = (1.0 - exp(-(double)blk->rate[TIER_SRC_PAGEMAP])) * pages;
	double share = tier_settings.bg_cpu * tier_settings.period_ms * 1e6 * PROBE_SHARE;
	return !tier_mon.one_fault || written * (double)tier_mon.one_fault <= share;
}

static bool probe_due(const struct tier_block *blk)
{
	/* near the cut and staying there: a block whose heat is on its way
	 * up or down (the hot set moved) is only passing through the band,
	 * and a probe would split its huge page and hold it back for nothing */
	return probe.on && blk->heat >= probe.lo && blk->heat <= probe.hi &&
	       fabsf(blk->hdelta) <= PROBE_STEADY * blk->heat && tier_mon.period >= blk->ph_retry &&
	       tier_mon.period >= probe.paused_until && tier_heat_pull_running() && probe_affordable(blk);
}

static void maybe_probe(struct tier_mapping *m, uint32_t b, int tier)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	if (tier < 0 || pages < TIER_PAGES_PER_BLOCK / 8 || !probe_due(blk))
		return;
	if (probe.period != tier_mon.period) {
		probe.period = tier_mon.period;
		probe.taken = 0;
		probe.waiting = 0;
	}
	if (probe.taken >= PROBES_PER_PERIOD || atomic_load(&tier_ph_stats.probing) >= PROBES_MAX ||
	    !tier_ph_take(m, b, tier_mon.period)) {
		probe.waiting++;
		return;
	}
	probe.taken++;
	watch(m, b);
}

/* A probe decided: at most one split in the last PROBE_HISTORY outcomes
 * (even heat all over: uniform access, or GUPS's contiguous hot set)
 * pauses probing, longer each time.  Over the last 8, as first written,
 * KV (scattered popular items: about half of its probes split) paused by
 * chance, 7 even outcomes of 8 coming somewhere in most runs; the pause
 * (30 s) then outlasted the run, its split blocks all joined, and those
 * runs served 0.12-0.22 of gets from node 0 against 0.29-0.53 where
 * probing went on. */
#define PROBE_HISTORY 16
static void probe_outcome(bool split)
{
	probe.outcomes = (uint16_t)(probe.outcomes << 1 | split);
	if (probe.n < PROBE_HISTORY)
		probe.n++;
	if (probe.decided < 8)
		probe.decided++;
	if (probe.n == PROBE_HISTORY && __builtin_popcount(probe.outcomes) <= 1) {
		atomic_fetch_add(&tier_ph_stats.pauses, 1);
		probe.paused_until = tier_mon.period + probe.pause;
		probe.pause = probe.pause * 2 > PROBE_PAUSE_MAX ? PROBE_PAUSE_MAX : probe.pause * 2;
		probe.n = 0;
	} else if (split) {
		probe.pause = PROBE_PAUSE;
	}
}

/* After a window of block b: a probe splits or lets go, a split block
 * whose heat evened out asks to be joined (the balance round moves its
 * pages home, then drops it). */
/* A probe whose windows cost more write faults per period than this many
 * times the probes' share of the budget is let go: probe_affordable reads
 * a rate that a long saturated window can put far too low, and on GUPS at
 * the default budget one probe of a densely written block cost 10 ms of
 * faults a visit (the budget is 1 ms a period) and starved the monitor. */
#define PROBE_COSTLY 2.0
void tier_mon_ph_decide(struct tier_mapping *m, uint32_t b, struct tier_ph *e, double fault_ns)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	if (e->state == TIER_PH_PROBE &&
	    fault_ns > PROBE_COSTLY * tier_settings.bg_cpu * tier_settings.period_ms * 1e6 * PROBE_SHARE) {
		blk->ph_retry = tier_mon.period + PROBE_RETRY;
		tier_ph_drop(e, tier_mon.hist);
		atomic_fetch_add(&tier_ph_stats.costly, 1);
		/* nothing found worth splitting at a cost the budget bears: an
		 * outcome like an even one.  Left uncounted, GUPS's 50 probes,
		 * all let go so, kept a probe "pending" for the whole run, a
		 * gain that extended the start-up burst until the bank was
		 * empty (with a bank of 12 s, tried: one burst of 13.9 s, none
		 * left for the shift 12 s in) */
		probe_outcome(false);
		return;
	}
	/* a verdict needs pages seen: over sparse windows even and skewed
	 * heat look alike (mostly zeros); past PROBE_LONG windows, let go */
	bool probe_done = e->state == TIER_PH_PROBE && e->windows >= TIER_PH_PROBE_WINDOWS &&
			  (e->seen_total * 4 >= pages || e->windows >= PROBE_LONG);
	bool split_due = e->state == TIER_PH_SPLIT && e->windows >= TIER_PH_WINDOWS / 2;
	if (!probe_done && !split_due)
		return;
	struct tier_ph_shape sh;
	tier_ph_shape(e, &sh);
	if (probe_done) {
		bool skewed = sh.dispersion >= TIER_PH_SPLIT_AT && sh.cold_half < TIER_PH_COLD_SPLIT;
		probe_outcome(skewed);
		if (skewed) {
			e->state = TIER_PH_SPLIT;
			atomic_fetch_sub(&tier_ph_stats.probing, 1);
			atomic_fetch_add(&tier_ph_stats.splits, 1);
		} else {
			blk->ph_retry = tier_mon.period + PROBE_RETRY;
			tier_ph_drop(e, tier_mon.hist);
			atomic_fetch_add(&tier_ph_stats.uniform, 1);
		}
	} else if ((sh.seen_share < 0.5f && sh.dispersion < TIER_PH_JOIN_AT) || sh.cold_half >= TIER_PH_COLD_JOIN) {
		/* even heat over windows that saw under half the pages (longer
		 * windows see every warm page: counts saturate, and skewed heat
		 * looks even), or heat spread too wide for splitting to pay */
		if (++e->even_run >= TIER_PH_JOIN_RUN)
			e->state = TIER_PH_JOIN;
	} else {
		e->even_run = 0;
	}
}

void tier_monitor_unsplit(struct tier_mapping *m, uint32_t b)
{
	struct tier_ph *e = tier_ph_of(m, b);
	if (!e)
		return;
	tier_ph_drop(e, tier_mon.hist);
	atomic_fetch_add(&tier_ph_stats.joins, 1);
	/* counted whole again at its next fold */
	m->blocks[b].fold_period = 0;
}

/* Keep the lists right for a block just folded. */
static void classify(struct tier_mapping *m, uint32_t b, int tier)
{
	struct tier_block *blk = &m->blocks[b];
	bool moved = blk->moved_epoch && blk->moved_epoch + TIER_WATCH_MOVED > tier_mon.period;
	bool movable = tier_block_movable(m, b);
	if (movable && !blk->ph)
		maybe_probe(m, b, tier);
	if (blk->flags & TIER_BF_WATCH) {
		if (!moved && !blk->ph && (blk->heat < tier_mon.watch_out || !movable))
			list_del(tier_mon.watch, &tier_mon.nwatch, blk, TIER_BF_WATCH);
		else
			return;
	}
	if (!movable) {
		unlist(blk);
		return;
	}
	if (blk->heat >= tier_mon.watch_in || moved) {
		watch(m, b);
		return;
	}
	/* cold: on the fast tier, a candidate for making room */
	if (tier != 0) {
		if (blk->flags & TIER_BF_COLD)
			list_del(tier_mon.cold, &tier_mon.ncold, blk, TIER_BF_COLD);
		return;
	}
	if (blk->flags & TIER_BF_COLD)
		return;
	if (tier_mon.ncold == COLD_MAX && !evict_for(tier_mon.cold, &tier_mon.ncold, TIER_BF_COLD, blk->heat, false))
		return;
	list_add(tier_mon.cold, &tier_mon.ncold, COLD_MAX, m, b, TIER_BF_COLD);
}

/* ------------------------------------------------------------ histograms */

static void hist_set(struct tier_block *blk, int tier, int bucket, uint32_t pages)
{
	if (blk->hist_tier)
		tier_hist_sub(&tier_mon.hist[blk->hist_tier - 1], blk->hist_bucket, blk->hist_pages);
	blk->hist_tier = 0;
	if (tier < 0 || tier >= TIER_MAX_TIERS || !pages)
		return;
	tier_hist_add(&tier_mon.hist[tier], bucket, pages);
	blk->hist_tier = (uint8_t)(tier + 1);
	blk->hist_bucket = (uint8_t)bucket;
	blk->hist_pages = (uint16_t)pages;
}

const struct tier_hist *tier_monitor_hist(int tier)
{
	return tier >= 0 && tier < TIER_MAX_TIERS ? &tier_mon.hist[tier] : NULL;
}

/* ------------------------------------------------------------ advisor slots */

static uint32_t slot_of_now(void)
{
	return (uint32_t)(tier_clock_ns(CLOCK_MONOTONIC) / (SLOT_MS * 1000000ull)) + 1;
}

/* Move the ring to now: slots that fall out of it are emptied. */
static void slots_advance(void)
{
	uint32_t now = slot_of_now(), old = atomic_load(&tier_mon.slot_now);
	if (!old) {
		atomic_store(&tier_mon.slot_now, now);
		return;
	}
	for (uint32_t s = old + 1; s <= now && s - old <= NSLOTS; s++)
		atomic_store(&tier_mon.seen[s % NSLOTS], 0);
	atomic_store(&tier_mon.slot_now, now);
}

static void seen_drop(struct tier_block *blk)
{
	uint32_t now = atomic_load(&tier_mon.slot_now);
	if (blk->seen_slot && now - blk->seen_slot < NSLOTS) {
		_Atomic uint64_t *c = &tier_mon.seen[blk->seen_slot % NSLOTS];
		uint64_t cur = atomic_load(c);
		atomic_store(c, cur > blk->seen_pages ? cur - blk->seen_pages : 0);
	}
	blk->seen_slot = 0;
	blk->seen_pages = 0;
}

/* The block was seen accessed now: its pages move to the current slot. */
static void seen_mark(struct tier_block *blk, uint32_t pages)
{
	seen_drop(blk);
	uint32_t now = atomic_load(&tier_mon.slot_now);
	atomic_fetch_add(&tier_mon.seen[now % NSLOTS], pages);
	blk->seen_slot = now;
	blk->seen_pages = (uint16_t)pages;
}

uint64_t tier_monitor_seen_pages(uint64_t ms)
{
	uint32_t now = atomic_load(&tier_mon.slot_now);
	if (!now)
		return 0;
	uint64_t n = (ms + SLOT_MS - 1) / SLOT_MS, sum = 0;
	if (n > NSLOTS)
		n = NSLOTS;
	for (uint64_t k = 0; k < n && k < now; k++)
		sum += atomic_load(&tier_mon.seen[(now - k) % NSLOTS]);
	return sum;
}

/* ------------------------------------------------------------ folding */

/* A block that is empty (or was emptied and placed again): drop what we
 * knew of it.  Its armed slice stays armed: the next measure re-arms. */
static void reset(struct tier_block *blk)
{
	if (blk->ph)
		tier_ph_drop(tier_ph_at(blk->ph - 1), tier_mon.hist);
	unlist(blk);
	hist_set(blk, -1, 0, 0);
	seen_drop(blk);
	blk->heat = 0;
	blk->hvar = 0;
	blk->hsvar = 0;
	blk->hdelta = 0;
	blk->looks = 0;
	blk->rinfo = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		blk->rate[i] = 0;
		atomic_store_explicit(&blk->samples[i], 0, memory_order_relaxed);
	}
	blk->fold_period = 0;
	blk->flags &= (uint8_t)~(TIER_BF_PULLED | TIER_BF_BOUND | TIER_BF_RETEST | TIER_BF_EMPTY);
}

/* Fold what the sources saw of block b into its heat.  pulled: a pull
 * source measured it now, over the periods since pull_period; sweep: an
 * unbiased visit, whose rates feed the floors. */
static float heat_lo(const struct tier_block *blk);

/* A change detector's cue from a look at a block on `tier` (tier_monitor_churned) */
static void cue(int tier)
{
	tier_mon.churn++;
	atomic_fetch_add_explicit(&tier_monitor_stats.surprises, 1, memory_order_relaxed);
	if (tier == 0)
		atomic_fetch_add_explicit(&tier_monitor_stats.surprises_cold, 1, memory_order_relaxed);
}

void tier_mon_fold(struct tier_mapping *m, uint32_t b, bool pulled, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	if (blk->fold_period == tier_mon.period && !pulled)
		return; /* folded already this period */
	uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
	uint32_t pages = st & TIER_BS_PAGES, plc = atomic_load_explicit(&blk->placements, memory_order_relaxed);
	int tier = TIER_BS_TIER(st);
	if (!pages || tier < 0 || m->meta) {
		reset(blk);
		return;
	}
	if (plc != blk->seen_placements) {
		reset(blk); /* new data in recycled memory */
		blk->seen_placements = plc;
	}
	bool first = blk->fold_period == 0;
	bool push = blk->fold_period != tier_mon.period; /* push reports not folded yet this period */
	/* before this look changes the rates; only a fast block's pull look
	 * can churn on it (tier_heat_churn) */
	float was_lo = pulled && tier == 0 && !first ? heat_lo(blk) : 0;
	bool at_least = false; /* the pull source's look found its pages all written */
	uint32_t span = first ? 1 : tier_mon.period - blk->fold_period;
	if (!span)
		span = 1;
	double d = pow(tier_mon.decay, span);
	uintptr_t addr = tier_block_addr(m, b);
	float heat = 0;
	/* the part of it that sources still looking give: a shed source's
	 * last rates stay in the heat (the only read signal some blocks
	 * have) but are no news of a change */
	float live = 0;
	bool seen = false;
	int surprise = 0; /* the pull source's measurement: tier_heat_surprise */
	/* a source shed by the budget keeps its last coarse regions and
	 * block rates: the last that is known.  Forgotten (c7366fc), a
	 * read-only hot set not yet promoted when DAMON was shed lost its
	 * only read signal: 71.8% fast after 30 s in a CI run */
	unsigned run = tier_heat_running();
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		bool pull = i == TIER_SRC_PAGEMAP;
		if (pull ? !pulled : !push) {
			/* folded already this period (a push report queued it):
			 * a sweep visit still samples the source's rate for the
			 * floors, or a source that reports every block (DAMON)
			 * would never be sampled there */
			if (sweep && !pull && (run >> i & 1))
				tier_rate_hist_add(&tier_mon.rates[i], blk->rate[i], pages);
			goto sum;
		}
		/* the floors: from every fold but watch-list visits (blocks that
		 * were hot would bias them up); push sources that report
		 * everywhere (DAMON) are sampled by their own reports too */
		uint32_t s = atomic_exchange_explicit(&blk->samples[i], 0, memory_order_relaxed);
		float r;
		bool bound = false; /* r is only a lower bound */
		if (pull) {
			/* the share of pages written over the window since the
			 * slice was armed, as a rate per period (a page written
			 * at rate r is found written with probability
			 * 1 - exp(-r w)); a share near 1 only says "at least
			 * this hot" */
			/* the window, in periods: a short one is a fraction */
			float w = tier_mon.short_w > 0 ? tier_mon.short_w : (float)(tier_mon.period - blk->pull_period);
			if (!(w > 0))
				w = 1;
			float f = (float)s / (float)(pages * TIER_HEAT_UNIT);
			/* the pages measured: the slice, or the block */
			uint32_t n = blk->pull_pages && blk->pull_pages < pages ? blk->pull_pages : pages;
			if (blk->flags & TIER_BF_PULLED) {
				/* what the measured part should have shown, against
				 * what it did */
				surprise = tier_heat_surprise((int)n, blk->rate[i], w, f);
				/* far too little written in a short window (a
				 * sixteenth of a period) is a question, not an answer:
				 * a program that pauses (GUPS checks where its pages
				 * are for 25-30 ms every 250 ms) reads so on every hot
				 * block at once.  Taken as a change, its hot set
				 * restarted cold, lost to the noise of its background
				 * and was demoted.  A window of one period, next,
				 * spans such a pause and answers (the caller asks) */
				tier_mon.cold_short = surprise < 0 && tier_mon.short_w > 0;
				/* ... and so is a slice that found nothing written on
				 * a block that was: it may lie on pages never written
				 * (the visit moves it) */
				bool empty = surprise < 0 && s == 0 && n < pages;
				/* ... once: a second empty slice in a row, elsewhere
				 * in the block, is the change it looks like.  Taken
				 * as a question every time, a hot set gone wholly
				 * cold (the GUPS shift) never cued a burst from the
				 * blocks it left: every slice of them reads empty.
				 * The first says nothing of the block: its estimate
				 * stays (averaged in, it fell under the band that
				 * makes the second look a cue) */
				tier_mon.slice_empty = empty && !(blk->flags & TIER_BF_EMPTY);
				blk->flags = (uint8_t)(tier_mon.slice_empty ? blk->flags | TIER_BF_EMPTY
									    : blk->flags & ~TIER_BF_EMPTY);
				if (tier_mon.slice_empty) {
					surprise = 0;
					tier_mon.saturated = false;
					goto sum;
				}
				if (tier_mon.cold_short)
					surprise = 0;
			}
			tier_mon.saturated = f >= 0.95f;
			at_least = tier_mon.saturated;
			bound = tier_mon.saturated && w > 1;
			if (tier_mon.saturated)
				blk->flags |= TIER_BF_BOUND;
			else
				blk->flags &= (uint8_t)~TIER_BF_BOUND;
			if (f > 0.95f)
				f = 0.95f;
			r = -log1pf(-f) / w;
			/* a window's weight follows its length, but a short one
			 * weighs as much as one period: it saw as many writes as
			 * a period shows on a slower block (heat decays by samples
			 * seen); weighed by its length, a block gone cold that no
			 * surprise caught kept its old heat for seconds */
			double dw = pow(tier_mon.decay, w < 1 ? 1 : w);
			/* a surprise is a change, not noise: the estimate starts
			 * again from what was found (averaged in, a block gone
			 * cold stayed hot for seconds) */
			float rv = tier_heat_rate_var(f, n, w);
			float ri = tier_heat_look_pages(r, rv);
			if (!(blk->flags & TIER_BF_PULLED) || surprise < 0 || (surprise > 0 && r > blk->rate[i])) {
				blk->rate[i] = r;
				blk->hsvar = rv;
				blk->rinfo = ri;
				blk->looks = 1;
			} else {
				/* all written over a long window only says "at
				 * least r": below what a shorter one found, keep that */
				if (!tier_mon.saturated || r > blk->rate[i]) {
					blk->rate[i] = (float)(blk->rate[i] * dw + r * (1.0 - dw));
					blk->hsvar = (float)(blk->hsvar * dw * dw + rv * (1.0 - dw) * (1.0 - dw));
					blk->rinfo = (float)(blk->rinfo * dw) + ri;
				}
				if (blk->looks < UINT8_MAX)
					blk->looks++;
			}
			blk->flags |= TIER_BF_PULLED;
		} else {
			r = (float)s / (float)(pages * TIER_HEAT_UNIT * span) + tier_heat_coarse_rate(i, addr);
			blk->rate[i] = first ? r : (float)(blk->rate[i] * d + r * (1.0 - d));
		}
		if (r > 1e-6f)
			seen = true;
		if ((sweep || !(blk->flags & TIER_BF_WATCH)) && !bound)
			tier_rate_hist_add(&tier_mon.rates[i], r, pages);
	sum:;
		float over = blk->rate[i] - tier_mon.floor[i];
		if (over > 0) {
			heat += over;
			if (run >> i & 1)
				live += over;
		}
	}
	heat = heat < 1e-6f ? 0.0f : heat;
	/* churn: a surprise that takes a block across the policy's band the
	 * wrong way for its tier (a fast block clearly hot gone under it, a
	 * slow one under the cut turned clearly hot); others (noise near
	 * zero, a hot block found hotter) change no placement and would
	 * spend the burst bank for nothing.  Across the cut alone was not
	 * enough: where the fast tier holds more than the hot set (GUPS: 64
	 * MiB for 32), the cut lies among alike warm blocks.  One traced run
	 * had 27 such cues in the 3 s after its hot set was placed, none a
	 * change: 16 warm slow blocks whose 8-16 page slices came back all
	 * written in one period, 11 fast ones reading under the band, most
	 * of them warm blocks promoted on such looks; each extended the
	 * start-up burst, which took the whole bank (6 s) in every run, and
	 * left the shift 12 s later 1.2-1.4 s of burst (tiering.c, GAIN_MOVED) */
	/* a fast block is judged on what is still seen of it: GUPS's old hot
	 * blocks, found empty by the written bits after the shift, kept 1.1-1.9
	 * of DAMON's last rates (shed at the default budget), over the cut,
	 * and no cue came until the sweep found the new set, 3 s later */
	if (tier_heat_churn(tier, surprise, blk->heat, was_lo, tier == 0 ? live : heat, at_least, tier_mon.cut,
			    tier_mon.cut_hot))
		cue(tier);
	/* ... or several fast blocks gone cold in one period, each short of
	 * that band (heat_hist.h): one cue at the TIER_COLD_TOGETHER-th */
	float h = (float)tier_settings.hysteresis;
	if (tier == 0 &&
	    tier_heat_cold_member(surprise, blk->heat, live, tier_mon.cut > 0 ? tier_mon.cut : tier_mon.cut_hot / (h * h),
				  h) &&
	    ++tier_mon.cold_n == TIER_COLD_TOGETHER)
		cue(0);
	/* how much the estimate moves from one fold to the next, noise
	 * told from change (heat_hist.h) */
	if (!first) {
		float dh = heat - blk->heat;
		blk->hvar = tier_heat_noise_step(blk->hvar, blk->hdelta, dh, HVAR_WEIGHT);
		blk->hdelta = dh;
	} else {
		blk->hvar = HVAR_FIRST * heat * heat; /* one look: noisy until seen again */
		blk->hdelta = 0;
	}
	blk->heat = heat;
	blk->fold_period = tier_mon.period;
	if (seen)
		seen_mark(blk, pages);
	struct tier_ph *e = tier_ph_of(m, b);
	if (e && e->state != TIER_PH_PROBE) {
		hist_set(blk, -1, 0, 0);
		tier_ph_hist(e, blk->heat, tier, tier_mon.hist);
	} else {
		hist_set(blk, tier, tier_hist_bucket(blk->heat), pages);
	}
	classify(m, b, tier);
	atomic_fetch_add_explicit(&tier_monitor_stats.folds, 1, memory_order_relaxed);
}

static void fold_touched(struct tier_mapping *m, uint32_t b, void *ctx)
{
	(void)ctx;
	tier_mon_fold(m, b, false, false);
}

/* Floors, and the watch list's thresholds: a block is watched when it
 * stands out from the typical block (the median rate, less the floor; for
 * written bits, the median rate itself) by as much again as that, and at
 * least by TIER_WATCH_IN: under a uniform background of accesses, blocks
 * scatter around the median. */
static void update_floors(void)
{
	float typical = 0, pull_med = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		tier_rate_hist_decay(&tier_mon.rates[i], FLOOR_DECAY);
		tier_mon.floor[i] = tier_rate_hist_quantile(&tier_mon.rates[i], FLOOR_QUANTILE);
		tier_monitor_stats.floor[i] = tier_mon.floor[i];
		float med = tier_rate_hist_quantile(&tier_mon.rates[i], 0.5);
		if (med > tier_mon.floor[i])
			typical += med - tier_mon.floor[i];
		/* written bits on a slice of a few pages scatter widely (a
		 * binomial draw): the typical block's own rate is the scale */
		if (i == TIER_SRC_PAGEMAP)
			pull_med = med;
	}
	if (typical < pull_med)
		typical = pull_med;
	tier_mon.watch_in = 2 * typical > TIER_WATCH_IN ? 2 * typical : TIER_WATCH_IN;
	tier_mon.watch_out = tier_mon.watch_in * (TIER_WATCH_OUT / TIER_WATCH_IN);
}

uint64_t tier_monitor_period(uint32_t period, double decay, uint64_t allowance_ns, uint64_t *faults_ns)
{
	tier_mon.period = period;
	tier_mon.cold_n = 0;
	tier_mon.decay = decay;
	/* the short windows measured since the last period are its work too */
	tier_mon.sched_ns = tier_mon.carry_sched;
	tier_mon.fault_ns = (int64_t)tier_mon.carry_fault;
	tier_mon.carry_sched = tier_mon.carry_fault = 0;
	tier_mon.one_fault = tier_heat_fault_ns();
	slots_advance();
	rcu_read_lock();
	tier_heat_collect();
	tier_heat_drain_touched(fold_touched, NULL);
	update_floors();
	if (tier_mon.idle) {
		tier_mon.ndue[0] = tier_mon.ndue[1] = 0;
	} else {
		/* armed last period under its allowance: measured now whatever
		 * this one's, or the window would stretch */
		tier_mon_visit_due(tier_heat_pull_running());
	}
	/* the change detector's look, every SENTINEL_EVERY periods whatever
	 * the allowance, its cost booked with the fixed ones (the balance
	 * round, the sources), not as the monitor's debt: as debt, where the
	 * fixed costs alone ate the budget (kdamond before it was shed) the
	 * debt was never paid, the monitor looked at nothing else, and one
	 * GUPS shift in three was not followed within 12 s.  On
	 * guest-default's steady hot set under TCG the background cost went
	 * from 1.01% to 1.68% of a core (bg_cpu 1%; a look every period:
	 * 3.25%) */
	if (!tier_mon.idle && period % SENTINEL_EVERY == 0) {
		uint64_t s0 = tier_mon_spent();
		tier_mon_visit_sentinels(tier_heat_pull_running());
		tier_mon.fixed_ns = tier_mon_spent() - s0;
	}
	if (!tier_mon.idle && allowance_ns) {
		bool pull = tier_heat_pull_running();
		/* probes first, within a share of the allowance: a probe's block
		 * is armed whole, and every write to it costs the program a
		 * fault while it is probed */
		tier_mon_visit_probes((uint64_t)((double)allowance_ns * PROBE_SHARE), pull);
		tier_mon_visit_watch((uint64_t)((double)allowance_ns * WATCH_SHARE), pull);
		tier_mon_sweep(allowance_ns, pull);
	}
	rcu_read_unlock();
	atomic_store(&tier_monitor_stats.watched, tier_mon.nwatch);
	atomic_store(&tier_monitor_stats.cold, tier_mon.ncold);
	atomic_store(&tier_monitor_stats.allowance_ns, allowance_ns);
	uint64_t total = tier_mon_spent(); /* less the sentinel's look */
	atomic_fetch_add(&tier_monitor_stats.spent_ns, total);
	if (tier_mon.idle)
		atomic_fetch_add(&tier_monitor_stats.idle_periods, 1);
	/* the faults charged, the sentinel's with them: the program pays them */
	*faults_ns = tier_mon.fault_ns > 0 ? (uint64_t)tier_mon.fault_ns : 0;
	tier_mon.fixed_ns = 0;
	return total;
}

void tier_monitor_set_idle(bool idle)
{
	if (idle == tier_mon.idle)
		return;
	tier_mon.idle = idle;
	atomic_store(&tier_monitor_stats.idle, idle);
	tier_heat_pause(idle);
}

void tier_monitor_moved(struct tier_mapping *m, uint32_t b, int from, int to)
{
	struct tier_block *blk = &m->blocks[b];
	(void)from;
	struct tier_ph *e = tier_ph_of(m, b);
	if (e && e->state != TIER_PH_PROBE)
		tier_ph_hist(e, blk->heat, TIER_BS_TIER(atomic_load(&blk->state)), tier_mon.hist);
	else if (blk->hist_tier)
		hist_set(blk, to, blk->hist_bucket, blk->hist_pages);
	if (blk->flags & TIER_BF_COLD)
		list_del(tier_mon.cold, &tier_mon.ncold, blk, TIER_BF_COLD);
	blk->flags &= (uint8_t)~TIER_BF_RETEST;
	watch(m, b);
}

void tier_monitor_retest(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	if ((blk->flags & (TIER_BF_RETEST | TIER_BF_PULLED)) == TIER_BF_RETEST)
		return; /* its look is on the way */
	/* the next look starts its estimate afresh (looks 1, its own
	 * information): what picked the block does not judge it */
	blk->flags = (uint8_t)((blk->flags | TIER_BF_RETEST) & ~TIER_BF_PULLED);
	tier_mon_rearm(m, b); /* a slow candidate: on the watch list already */
}

/* A block's heat is as uncertain as its fold-to-fold noise and the few
 * pages its last looks saw allow (an 8-page slice two-thirds written reads
 * a rate of 1.1 +- 0.4 a period): uniform GUPS's blocks, all alike, read
 * 1.0-3.3 from 16-page slices, and the noise (from reversals) was 0 on
 * blocks seen twice; 60% of the policy's swaps there were undone within
 * 5 s. */
static float heat_se(const struct tier_block *blk) { return sqrtf(blk->hvar / 2 + blk->hsvar); }

/* How hot the block surely is: its heat with the pull source's rate at
 * its lower bound where that source measured it (tier_heat_rate_lo, from
 * the information of the looks behind the rate), else TIER_CUT_Z errors
 * under it.  On uniform GUPS, whose blocks are all alike, moves stood on
 * slices that read 5 of 8 pages written (5.4 +- 2.5 a period, 2 errors
 * above the blocks they displaced, the typical rate being 2.5): chance,
 * among a hundred blocks looked at every period.  A bound per look,
 * averaged, never tightened: a steadily hot block stayed as unsure as one
 * look made it, and scattered heat never cleared the cut. */
static float heat_lo(const struct tier_block *blk)
{
	if (!(blk->flags & TIER_BF_PULLED))
		return blk->heat - TIER_CUT_Z * heat_se(blk);
	float floor = tier_mon.floor[TIER_SRC_PAGEMAP];
	float rate = blk->rate[TIER_SRC_PAGEMAP];
	float over = rate - floor, over_lo = tier_heat_rate_lo(rate, blk->rinfo) - floor;
	float lo = blk->heat - (over > 0 ? over : 0) + (over_lo > 0 ? over_lo : 0);
	return lo > 0 ? lo : 0;
}

/* A split block's candidates: its pages elsewhere hot enough for the fast
 * tier, and its pages on the fast tier cold enough to leave. */
static void parts(struct tier_mapping *m, uint32_t b, struct tier_ph *e, int home, float t_hot, float t_cold,
		  struct tier_cand *fast, size_t fcap, size_t *nf, struct tier_cand *slow, size_t scap, size_t *ns)
{
	float heat = m->blocks[b].heat, h, se = heat_se(&m->blocks[b]);
	uint32_t n = tier_ph_select(e, heat, home, true, t_hot, NULL, &h);
	if (n && *ns < scap)
		slow[(*ns)++] = (struct tier_cand){.ref = m, .block = b, .bytes = n << TIER_PAGE_SHIFT, .heat = h,
						   .se = se, .lo = h - TIER_CUT_Z * se, .tier = 1, .part = TIER_PART_UP,
						   .thr = t_hot};
	n = tier_ph_select(e, heat, home, false, t_cold, NULL, &h);
	if (n && *nf < fcap)
		fast[(*nf)++] = (struct tier_cand){.ref = m, .block = b, .bytes = n << TIER_PAGE_SHIFT, .heat = h,
						   .se = se, .lo = h - TIER_CUT_Z * se, .tier = 0, .part = TIER_PART_DOWN, .judged = true,
						   .thr = t_cold};
}

/* Looks after a retest pick that may judge the block (tier_monitor_retest). */
#define RETEST_LOOKS 4

void tier_monitor_candidates(struct tier_cand *fast, size_t fcap, size_t *nfast, struct tier_cand *slow,
                             size_t scap, size_t *nslow, uint32_t period, uint32_t settle, float t_hot,
                             float t_cold)
{
	size_t nf = 0, ns = 0;
	bool pull_on = (tier_heat_running() >> TIER_SRC_PAGEMAP) & 1;
	for (int list = 0; list < 2; list++) {
		struct ref *v = list ? tier_mon.cold : tier_mon.watch;
		uint32_t n = list ? tier_mon.ncold : tier_mon.nwatch;
		for (uint32_t i = 0; i < n; i++) {
			struct tier_mapping *m = v[i].m;
			struct tier_block *blk = &m->blocks[v[i].b];
			uint32_t st = atomic_load_explicit(&blk->state, memory_order_relaxed);
			int t = TIER_BS_TIER(st);
			if (t < 0 || !tier_block_movable(m, v[i].b))
				continue;
			if (blk->moved_epoch && blk->moved_epoch + (settle << blk->backoff) > period)
				continue;
			struct tier_ph *e = tier_ph_of(m, v[i].b);
			if (e && e->state == TIER_PH_SPLIT) {
				parts(m, v[i].b, e, t, t_hot, t_cold, fast, fcap, &nf, slow, scap, &ns);
				continue;
			}
			if (e && e->state == TIER_PH_JOIN)
				continue; /* the balance round joins it first */
			if (!e && probe_due(blk) && (st & TIER_BS_PAGES) >= TIER_PAGES_PER_BLOCK / 8 &&
			    atomic_load_explicit(&tier_ph_stats.probing, memory_order_relaxed) < PROBES_MAX) {
				/* looked at page by page first: moved whole, it would
				 * come back at once if its heat sits on a few pages;
				 * with every probe taken it moves whole (the wait for
				 * one could last seconds) */
				continue;
			}
			/* a slow block is moved up on what two looks saw, not one:
			 * on uniform GUPS one 8-page slice reading high (by chance,
			 * a binomial draw, and taken as a change) was behind most
			 * moves, each undone once the next look read it typical */
			/* picked for a swap, restarted: wait for the look after.
			 * Judged on the looks after the pick while they are few;
			 * past RETEST_LOOKS without a move it is picked anew (each
			 * judgement on the same fresh looks is another draw) */
			/* (a fast block picked to give way likewise; one whose
			 * look did not come, never visited, is picked anew) */
			unsigned rt = blk->flags & (TIER_BF_RETEST | TIER_BF_PULLED);
			if ((rt == (TIER_BF_RETEST | TIER_BF_PULLED) && blk->looks > RETEST_LOOKS) ||
			    (rt == TIER_BF_RETEST && t == 0 && period - blk->pull_period > RETEST_LOOKS))
				blk->flags &= (uint8_t)~TIER_BF_RETEST;
			if (t > 0 && (blk->flags & TIER_BF_RETEST)) {
				if (!(blk->flags & TIER_BF_PULLED))
					continue;
			} else if (t > 0 && (blk->flags & TIER_BF_PULLED) && blk->looks < 2) {
				continue;
			}
			/* judged: on the looks after the pick to give way */
			bool judged = !pull_on || (t == 0 && (blk->flags & (TIER_BF_RETEST | TIER_BF_PULLED)) ==
								     (TIER_BF_RETEST | TIER_BF_PULLED));
			struct tier_cand c = {.ref = m,
					      .block = v[i].b,
					      .bytes = (st & TIER_BS_PAGES) << TIER_PAGE_SHIFT,
					      .heat = blk->heat,
					      .se = heat_se(blk),
					      .lo = heat_lo(blk),
					      .tier = (uint8_t)t,
					      .unsure = (blk->flags & TIER_BF_BOUND) != 0,
					      .judged = judged,
					      .picked_on_own = t > 0 && (blk->flags & (TIER_BF_PULLED | TIER_BF_RETEST)) ==
									    TIER_BF_PULLED};
			if (t == 0 && nf < fcap)
				fast[nf++] = c;
			else if (t > 0 && ns < scap)
				slow[ns++] = c;
		}
	}
	*nfast = nf;
	*nslow = ns;
}

static void drop_refs(struct ref *v, uint32_t *n, struct tier_mapping *m)
{
	for (uint32_t i = 0; i < *n;) {
		if (v[i].m == m) {
			v[i] = v[--*n];
			if (i < *n)
				blk_of(&v[i])->list_idx = i;
		} else {
			i++;
		}
	}
}

void tier_monitor_gone(struct tier_mapping *m)
{
	drop_refs(tier_mon.watch, &tier_mon.nwatch, m);
	drop_refs(tier_mon.cold, &tier_mon.ncold, m);
	for (int k = 0; k < 2; k++) /* not listed by index: no list_idx to keep */
		for (uint32_t i = 0; i < tier_mon.ndue[k];)
			if (tier_mon.due[k][i].m == m)
				tier_mon.due[k][i] = tier_mon.due[k][--tier_mon.ndue[k]];
			else
				i++;
	for (uint32_t i = 0; i < tier_mon.nshort;)
		if (tier_mon.shorts[i].r.m == m)
			tier_mon.shorts[i] = tier_mon.shorts[--tier_mon.nshort];
		else
			i++;
	if (tier_mon.cm == m)
		tier_mon.cm = NULL; /* resume at the next sequence number */
	/* its blocks leave the histograms and the advisor's slots */
	for (uint32_t b = 0; b < m->nblocks; b++) {
		struct tier_block *blk = &m->blocks[b];
		if (blk->hist_tier || blk->seen_slot || blk->flags) {
			blk->flags = 0; /* its list entries were dropped above */
			reset(blk);
		}
	}
}

void tier_monitor_forget(void)
{
	/* the child's pull source registers and arms its mappings afresh */
	struct tier_mapping *m;
	cds_list_for_each_entry(m, &tier_registry_list, link)
		for (uint32_t b = 0; b < m->nblocks; b++) {
			m->blocks[b].pull_pages = 0;
			m->blocks[b].flags &= (uint8_t)~TIER_BF_PULLED;
		}
	tier_mon.ndue[0] = tier_mon.ndue[1] = 0;
	tier_mon.nshort = 0;
	tier_mon.idle = false;
	atomic_store(&tier_monitor_stats.idle, false);
}
