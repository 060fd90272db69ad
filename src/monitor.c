/* The monitor (see monitor.h).  Everything here runs in the background
 * thread under the balance lock, except tier_monitor_seen_pages (stats). */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "heat.h"
#include "migrate.h"
#include "monitor.h"
#include "pageheat.h"

struct tier_monitor_stats tier_monitor_stats;

/* With a pull source, a block is armed once and then measured at each
 * visit, which re-arms what was written.  The armed part is a slice sized
 * from the block's last measurement, so that a visit finds about
 * FAULT_TARGET written pages: every one of them cost the program a write
 * fault (0.5-1 us natively, 12-20 us in the VMs these tests run on),
 * which is most of what tracking costs.  A busy block is measured on a
 * few pages (counted for the whole block), a quiet one whole. */
#define FAULT_TARGET 4.0f
#define SLICE_MIN 8u   /* pages */
#define SLICE_FIRST 16u /* a block's first look: its rate is unknown */
#define WATCH_MAX 8192
#define COLD_MAX 2048
/* Slices armed for a one-period window, measured at the next period's
 * start (see due_add). */
#define DUE_MAX 4096
/* The watch list takes at most this share of the allowance; the sweep
 * keeps the rest, so the pass length stays bounded. */
#define WATCH_SHARE 0.5
/* Floors come from sweep visits, forgotten with this weight per period. */
#define FLOOR_DECAY 0.97
#define FLOOR_QUANTILE 0.1
/* Weight of one fold in the moving variance of a block's heat. */
#define HVAR_WEIGHT 0.25f
/* ... and a first fold's variance, relative to its heat squared. */
#define HVAR_FIRST 0.25f
/* Advisor time slots. */
#define SLOT_MS 250
#define NSLOTS 256

struct ref {
	struct tier_mapping *m;
	uint32_t b;
};

static struct {
	uint32_t period;
	double decay;
	struct ref watch[WATCH_MAX];
	uint32_t nwatch, rot;
	struct ref cold[COLD_MAX];
	uint32_t ncold;
	struct ref due[2][DUE_MAX]; /* by period parity: armed last period, armed now */
	uint32_t ndue[2];
	bool saturated;      /* the last pull fold found its part all written */
	bool in_due;         /* visiting the due list: no re-queueing */
	uint64_t sched_ns;   /* this period: the visits' CPU */
	int64_t fault_ns;    /* this period: faults charged (when armed) less refunds (when measured) */
	uint64_t one_fault;  /* what one costs (the pull source measured it) */
	/* sweep cursor: the next block to visit */
	struct tier_mapping *cm;
	uint64_t cseq;
	uint32_t cb;
	uint32_t pass_start;
	uint64_t pass_blocks;
	struct tier_hist hist[TIER_MAX_TIERS];
	struct tier_rate_hist rates[TIER_SRC_COUNT];
	float floor[TIER_SRC_COUNT];
	float watch_in, watch_out; /* heat to enter / stay on the watch list */
	bool idle;
	/* advisor: pages per time slot of their last access */
	_Atomic uint64_t seen[NSLOTS];
	_Atomic uint32_t slot_now; /* absolute slot number of now (>= 1) */
} mon;
/* Beside mon, which is then all zero (.bss): with an initialiser its 300
 * KiB would be file-backed .data, resident in every process at start. */
static uint32_t mon_rng = 2463534242u;
static float mon_expect[4] = {8, 4, 8, 32}; /* faults an armed part was found to cost, by kind (EXPECT_*) */

static uint32_t rnd(void)
{
	mon_rng ^= mon_rng << 13;
	mon_rng ^= mon_rng >> 17;
	mon_rng ^= mon_rng << 5;
	return mon_rng;
}

static struct tier_block *blk_of(const struct ref *r) { return &r->m->blocks[r->b]; }

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
		list_del(mon.watch, &mon.nwatch, blk, TIER_BF_WATCH);
	if (blk->flags & TIER_BF_COLD)
		list_del(mon.cold, &mon.ncold, blk, TIER_BF_COLD);
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
		list_del(mon.cold, &mon.ncold, blk, TIER_BF_COLD);
	if (mon.nwatch == WATCH_MAX && !evict_for(mon.watch, &mon.nwatch, TIER_BF_WATCH, blk->heat, true))
		return;
	list_add(mon.watch, &mon.nwatch, WATCH_MAX, m, b, TIER_BF_WATCH);
}

/* ------------------------------------------------------------ page by page */

/* New probes per period at most, and how a run of probes that found even
 * heat (uniform access: nothing to gain page by page) backs probing off. */
#define PROBES_PER_PERIOD 4
/* Blocks probed at once: each costs a whole-block measurement per visit,
 * and a probe decides only after TIER_PH_PROBE_WINDOWS visits, so few at a
 * time finish sooner than many. */
#define PROBES_MAX 32
/* A probe's window grows up to this many periods where writes are sparse;
 * a probe that still saw too little after PROBE_LONG windows lets go. */
#define PROBE_WIN_MAX 16
#define PROBE_LONG 24
#define PROBE_RETRY 3000   /* periods before a block found even is probed again */
#define PROBE_PAUSE 300    /* periods of no probing after mostly even outcomes */
#define PROBE_PAUSE_MAX 6000

static struct {
	bool on;
	float lo, hi;          /* the warm band: heat worth a look page by page */
	uint32_t period, taken;
	uint32_t paused_until, pause;
	uint8_t outcomes, n;   /* the last 8 outcomes, bit set: split */
	uint32_t waiting;      /* blocks due for a probe this period that found no room */
} probe = {.pause = PROBE_PAUSE};

bool tier_monitor_probe_pending(void)
{
	return probe.waiting || atomic_load(&tier_ph_stats.probing);
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
static bool probe_due(const struct tier_block *blk)
{
	return probe.on && blk->heat >= probe.lo && blk->heat <= probe.hi && mon.period >= blk->ph_retry &&
	       mon.period >= probe.paused_until && tier_heat_pull_running();
}

static void maybe_probe(struct tier_mapping *m, uint32_t b, int tier)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	if (tier < 0 || pages < TIER_PAGES_PER_BLOCK / 8 || !probe_due(blk))
		return;
	if (probe.period != mon.period) {
		probe.period = mon.period;
		probe.taken = 0;
		probe.waiting = 0;
	}
	if (probe.taken >= PROBES_PER_PERIOD || atomic_load(&tier_ph_stats.probing) >= PROBES_MAX ||
	    !tier_ph_take(m, b, mon.period)) {
		probe.waiting++;
		return;
	}
	probe.taken++;
	watch(m, b);
}

/* A probe decided: mostly even outcomes pause probing, longer each time. */
static void probe_outcome(bool split)
{
	probe.outcomes = (uint8_t)(probe.outcomes << 1 | split);
	if (probe.n < 8)
		probe.n++;
	if (probe.n == 8 && __builtin_popcount(probe.outcomes) <= 1) {
		probe.paused_until = mon.period + probe.pause;
		probe.pause = probe.pause * 2 > PROBE_PAUSE_MAX ? PROBE_PAUSE_MAX : probe.pause * 2;
		probe.n = 0;
	} else if (split) {
		probe.pause = PROBE_PAUSE;
	}
}

/* After a window of block b: a probe splits or lets go, a split block
 * whose heat evened out asks to be joined (the balance round moves its
 * pages home, then drops it). */
static void ph_decide(struct tier_mapping *m, uint32_t b, struct tier_ph *e)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	/* a verdict needs pages seen: over sparse windows even and skewed
	 * heat look alike (mostly zeros); past PROBE_LONG windows, let go */
	if (e->state == TIER_PH_PROBE && e->windows >= TIER_PH_PROBE_WINDOWS &&
	    (e->seen_total * 4 >= pages || e->windows >= PROBE_LONG)) {
		bool skewed = tier_ph_dispersion(e) >= TIER_PH_SPLIT_AT;
		probe_outcome(skewed);
		if (skewed) {
			e->state = TIER_PH_SPLIT;
			atomic_fetch_sub(&tier_ph_stats.probing, 1);
			atomic_fetch_add(&tier_ph_stats.splits, 1);
		} else {
			blk->ph_retry = mon.period + PROBE_RETRY;
			tier_ph_drop(e, mon.hist);
			atomic_fetch_add(&tier_ph_stats.uniform, 1);
		}
	} else if (e->state == TIER_PH_SPLIT && e->windows >= TIER_PH_WINDOWS / 2 &&
		   tier_ph_seen_share(e) < 0.5f && tier_ph_dispersion(e) < TIER_PH_JOIN_AT) {
		/* even heat over windows that saw under half the pages (longer
		 * windows see every warm page: counts saturate, and skewed heat
		 * looks even) */
		e->state = TIER_PH_JOIN;
	}
}

void tier_monitor_unsplit(struct tier_mapping *m, uint32_t b)
{
	struct tier_ph *e = tier_ph_of(m, b);
	if (!e)
		return;
	tier_ph_drop(e, mon.hist);
	atomic_fetch_add(&tier_ph_stats.joins, 1);
	/* counted whole again at its next fold */
	m->blocks[b].fold_period = 0;
}

/* Keep the lists right for a block just folded. */
static void classify(struct tier_mapping *m, uint32_t b, int tier)
{
	struct tier_block *blk = &m->blocks[b];
	bool moved = blk->moved_epoch && blk->moved_epoch + TIER_WATCH_MOVED > mon.period;
	bool movable = tier_block_movable(m, b);
	if (movable && !blk->ph)
		maybe_probe(m, b, tier);
	if (blk->flags & TIER_BF_WATCH) {
		if (!moved && !blk->ph && (blk->heat < mon.watch_out || !movable))
			list_del(mon.watch, &mon.nwatch, blk, TIER_BF_WATCH);
		else
			return;
	}
	if (!movable) {
		unlist(blk);
		return;
	}
	if (blk->heat >= mon.watch_in || moved) {
		watch(m, b);
		return;
	}
	/* cold: on the fast tier, a candidate for making room */
	if (tier != 0) {
		if (blk->flags & TIER_BF_COLD)
			list_del(mon.cold, &mon.ncold, blk, TIER_BF_COLD);
		return;
	}
	if (blk->flags & TIER_BF_COLD)
		return;
	if (mon.ncold == COLD_MAX && !evict_for(mon.cold, &mon.ncold, TIER_BF_COLD, blk->heat, false))
		return;
	list_add(mon.cold, &mon.ncold, COLD_MAX, m, b, TIER_BF_COLD);
}

/* ------------------------------------------------------------ histograms */

static void hist_set(struct tier_block *blk, int tier, int bucket, uint32_t pages)
{
	if (blk->hist_tier)
		tier_hist_sub(&mon.hist[blk->hist_tier - 1], blk->hist_bucket, blk->hist_pages);
	blk->hist_tier = 0;
	if (tier < 0 || tier >= TIER_MAX_TIERS || !pages)
		return;
	tier_hist_add(&mon.hist[tier], bucket, pages);
	blk->hist_tier = (uint8_t)(tier + 1);
	blk->hist_bucket = (uint8_t)bucket;
	blk->hist_pages = (uint16_t)pages;
}

const struct tier_hist *tier_monitor_hist(int tier)
{
	return tier >= 0 && tier < TIER_MAX_TIERS ? &mon.hist[tier] : NULL;
}

/* ------------------------------------------------------------ advisor slots */

static uint32_t slot_of_now(void)
{
	return (uint32_t)(tier_clock_ns(CLOCK_MONOTONIC) / (SLOT_MS * 1000000ull)) + 1;
}

/* Move the ring to now: slots that fall out of it are emptied. */
static void slots_advance(void)
{
	uint32_t now = slot_of_now(), old = atomic_load(&mon.slot_now);
	if (!old) {
		atomic_store(&mon.slot_now, now);
		return;
	}
	for (uint32_t s = old + 1; s <= now && s - old <= NSLOTS; s++)
		atomic_store(&mon.seen[s % NSLOTS], 0);
	atomic_store(&mon.slot_now, now);
}

static void seen_drop(struct tier_block *blk)
{
	uint32_t now = atomic_load(&mon.slot_now);
	if (blk->seen_slot && now - blk->seen_slot < NSLOTS) {
		_Atomic uint64_t *c = &mon.seen[blk->seen_slot % NSLOTS];
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
	uint32_t now = atomic_load(&mon.slot_now);
	atomic_fetch_add(&mon.seen[now % NSLOTS], pages);
	blk->seen_slot = now;
	blk->seen_pages = (uint16_t)pages;
}

uint64_t tier_monitor_seen_pages(uint64_t ms)
{
	uint32_t now = atomic_load(&mon.slot_now);
	if (!now)
		return 0;
	uint64_t n = (ms + SLOT_MS - 1) / SLOT_MS, sum = 0;
	if (n > NSLOTS)
		n = NSLOTS;
	for (uint64_t k = 0; k < n && k < now; k++)
		sum += atomic_load(&mon.seen[(now - k) % NSLOTS]);
	return sum;
}

/* ------------------------------------------------------------ folding */

/* A block that is empty (or was emptied and placed again): drop what we
 * knew of it.  Its armed slice stays armed: the next measure re-arms. */
static void reset(struct tier_block *blk)
{
	if (blk->ph)
		tier_ph_drop(tier_ph_at(blk->ph - 1), mon.hist);
	unlist(blk);
	hist_set(blk, -1, 0, 0);
	seen_drop(blk);
	blk->heat = 0;
	blk->hvar = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		blk->rate[i] = 0;
		atomic_store_explicit(&blk->samples[i], 0, memory_order_relaxed);
	}
	blk->fold_period = 0;
	blk->flags &= (uint8_t)~TIER_BF_PULLED;
}

/* Fold what the sources saw of block b into its heat.  pulled: a pull
 * source measured it now, over the periods since pull_period; sweep: an
 * unbiased visit, whose rates feed the floors. */
static void fold(struct tier_mapping *m, uint32_t b, bool pulled, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	if (blk->fold_period == mon.period && !pulled)
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
	bool push = blk->fold_period != mon.period; /* push reports not folded yet this period */
	uint32_t span = first ? 1 : mon.period - blk->fold_period;
	if (!span)
		span = 1;
	double d = pow(mon.decay, span);
	uintptr_t addr = tier_block_addr(m, b);
	float heat = 0;
	bool seen = false;
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		bool pull = i == TIER_SRC_PAGEMAP;
		if (pull ? !pulled : !push) {
			/* folded already this period (a push report queued it):
			 * a sweep visit still samples the source's rate for the
			 * floors, or a source that reports every block (DAMON)
			 * would never be sampled there */
			if (sweep && !pull && (tier_heat_running() >> i & 1))
				tier_rate_hist_add(&mon.rates[i], blk->rate[i], pages);
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
			uint32_t w = mon.period - blk->pull_period;
			if (!w)
				w = 1;
			float f = (float)s / (float)(pages * TIER_HEAT_UNIT);
			mon.saturated = f >= 0.95f;
			bound = mon.saturated && w > 1;
			if (f > 0.95f)
				f = 0.95f;
			r = -log1pf(-f) / (float)w;
			double dw = pow(mon.decay, w);
			if (!(blk->flags & TIER_BF_PULLED))
				blk->rate[i] = r;
			else if (!mon.saturated || r > blk->rate[i])
				blk->rate[i] = (float)(blk->rate[i] * dw + r * (1.0 - dw));
			/* else: all written over a long window only says "at
			 * least r", below what a shorter one found: keep that */
			blk->flags |= TIER_BF_PULLED;
		} else {
			r = (float)s / (float)(pages * TIER_HEAT_UNIT * span) + tier_heat_coarse_rate(i, addr);
			blk->rate[i] = first ? r : (float)(blk->rate[i] * d + r * (1.0 - d));
		}
		if (r > 1e-6f)
			seen = true;
		if ((sweep || !(blk->flags & TIER_BF_WATCH)) && !bound)
			tier_rate_hist_add(&mon.rates[i], r, pages);
	sum:;
		float over = blk->rate[i] - mon.floor[i];
		if (over > 0)
			heat += over;
	}
	heat = heat < 1e-6f ? 0.0f : heat;
	/* how much the estimate moves from one fold to the next: half of
	 * that is the variance of each (independent noise), what a move must
	 * stand out from (policy.h) */
	if (!first) {
		float dh = heat - blk->heat;
		blk->hvar += HVAR_WEIGHT * (dh * dh - blk->hvar);
	} else {
		blk->hvar = HVAR_FIRST * heat * heat; /* one look: noisy until seen again */
	}
	blk->heat = heat;
	blk->fold_period = mon.period;
	if (seen)
		seen_mark(blk, pages);
	struct tier_ph *e = tier_ph_of(m, b);
	if (e && e->state != TIER_PH_PROBE) {
		hist_set(blk, -1, 0, 0);
		tier_ph_hist(e, blk->heat, tier, mon.hist);
	} else {
		hist_set(blk, tier, tier_hist_bucket(blk->heat), pages);
	}
	classify(m, b, tier);
	atomic_fetch_add_explicit(&tier_monitor_stats.folds, 1, memory_order_relaxed);
}

static void fold_touched(struct tier_mapping *m, uint32_t b, void *ctx)
{
	(void)ctx;
	fold(m, b, false, false);
}

/* ------------------------------------------------------------ visiting */

/* With a pull source, each block has an armed part, measured at each
 * visit: the visit lists what was written there since the last one and
 * re-arms just that.  The armed part is the whole block while the block
 * is quiet (adjacent whole blocks are measured in one call; a call that
 * re-arms nothing costs a page-table walk, about 2 ns a page natively,
 * and no TLB shootdown, so cold memory is cheap to sweep), and a slice of
 * it once it is busy, sized so that a visit finds about FAULT_TARGET
 * written pages: every written page found cost the program a write fault
 * (0.5-1 us natively, 5-20 us in VMs) and every call that re-protects
 * pages a TLB shootdown (an IPI to each CPU running the program).  The
 * window is the time between visits: a few periods on the watch list, a
 * pass for the sweep; a written share near 1 only says "at least this
 * hot". */
/* Pull-source calls; what they cost is timed by the visit loops, and the
 * faults a measure found are added here. */
static uint64_t measure(struct tier_mapping *m, uintptr_t lo, uintptr_t hi, uint32_t mult, bool rearm)
{
	uint64_t ns = tier_heat_measure(m, lo, hi, mult, rearm);
	mon.fault_ns += (int64_t)ns;
	return ns;
}

/* The faults an armed part may cost are charged when it is armed (they
 * happen in the program before the next visit finds them: charged only
 * then, a pass that arms many blocks would run far over the budget), and
 * what it did not cost is given back when it is measured.  What is
 * charged is what such parts were found to cost lately: a first look, a
 * slice, a whole quiet block (EXPECT_*). */
enum { EXPECT_FIRST, EXPECT_SLICE, EXPECT_WHOLE, EXPECT_PAGES };

static void learn(int kind, uint64_t fault_ns, uint32_t parts)
{
	if (!mon.one_fault || !parts)
		return;
	float found = (float)fault_ns / (float)mon.one_fault / (float)parts;
	mon_expect[kind] += 0.05f * (found - mon_expect[kind]);
}

static void charge(struct tier_block *blk, int kind)
{
	float faults = mon_expect[kind];
	uint8_t e = faults > 255 ? 255 : (uint8_t)(faults + 0.5f);
	blk->pull_expect = e;
	mon.fault_ns += (int64_t)e * (int64_t)mon.one_fault;
}

static void refund(struct tier_block *blk)
{
	mon.fault_ns -= (int64_t)blk->pull_expect * (int64_t)mon.one_fault;
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

/* The share of a block's pages written in one period, from its rate. */
static float per_period_share(const struct tier_block *blk)
{
	return 1.0f - expf(-blk->rate[TIER_SRC_PAGEMAP]);
}

/* Busy: a whole-block window would find more than FAULT_TARGET written. */
static bool busy(const struct tier_block *blk)
{
	return (blk->flags & TIER_BF_PULLED) && per_period_share(blk) * TIER_PAGES_PER_BLOCK > 2 * FAULT_TARGET;
}

/* Runs of adjacent whole blocks, one call each: `op` 0 measures and
 * re-arms, 2 arms. */
static struct {
	struct tier_mapping *m;
	uint32_t b0, n;
	int op;
	bool sweep;
} run;

static void run_flush(void)
{
	if (!run.n)
		return;
	uintptr_t lo = tier_block_addr(run.m, run.b0), hi = tier_block_addr(run.m, run.b0 + run.n);
	if (hi > run.m->base + run.m->size)
		hi = run.m->base + run.m->size;
	if (run.op == 2)
		tier_heat_arm(run.m, lo, hi);
	else
		learn(EXPECT_WHOLE, measure(run.m, lo, hi, 1, run.op == 0), run.n);
	for (uint32_t b = run.b0; b < run.b0 + run.n; b++) {
		struct tier_block *blk = &run.m->blocks[b];
		if (run.op == 2) {
			blk->pull_pages = TIER_PAGES_PER_BLOCK;
			blk->pull_first = 0;
			charge(blk, EXPECT_WHOLE);
		} else {
			refund(blk);
			fold(run.m, b, true, run.sweep);
			if (busy(blk)) {
				/* it turned busy: re-armed whole it would pay a fault
				 * on every page again before the next visit */
				uintptr_t a = tier_block_addr(run.m, b);
				tier_heat_disarm(run.m, a, a + TIER_BLOCK);
				blk->pull_pages = 0;
			} else {
				charge(blk, EXPECT_WHOLE);
			}
		}
		blk->pull_period = mon.period;
	}
	run.n = 0;
}

/* A run is charged when it is flushed: keep runs short enough that the
 * visit loops see their cost in time (64 blocks: 128 MiB). */
#define RUN_MAX 64

static void run_add(struct tier_mapping *m, uint32_t b, int op, bool sweep)
{
	if (run.n && (run.m != m || run.b0 + run.n != b || run.op != op || run.sweep != sweep ||
		      run.n == RUN_MAX))
		run_flush();
	if (!run.n) {
		run.m = m;
		run.b0 = b;
		run.op = op;
		run.sweep = sweep;
	}
	run.n++;
}

/* A slice measured over a long window (a pass) that comes back all
 * written only says "at least this hot": a busy block and a hot one look
 * alike.  Such slices, and first looks, are armed for one period and
 * measured at the start of the next (a short window resolves rates up to
 * a few writes per page per period), whatever the pass length. */
static void due_add(struct tier_mapping *m, uint32_t b)
{
	uint32_t *n = &mon.ndue[mon.period & 1];
	if (!mon.in_due && *n < DUE_MAX)
		mon.due[mon.period & 1][(*n)++] = (struct ref){m, b};
}

/* Arm a slice of n pages of block b, at a place that depends on the
 * block (the slice is a sample of it). */
static void arm_slice(struct tier_mapping *m, uint32_t b, uint32_t n)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t slots = TIER_PAGES_PER_BLOCK / n;
	blk->pull_first = (uint16_t)((b * 7 % slots) * n);
	blk->pull_pages = (uint16_t)n;
	uintptr_t lo, hi;
	slice_range(m, b, blk->pull_first, n, &lo, &hi);
	tier_heat_arm(m, lo, hi);
	blk->pull_period = mon.period;
	charge(blk, (blk->flags & TIER_BF_PULLED) ? EXPECT_SLICE : EXPECT_FIRST);
	due_add(m, b);
}

/* The armed part for the next window: the whole block when it should find
 * few writes there, else a slice that should find about FAULT_TARGET. */
static uint32_t want_pages(const struct tier_block *blk)
{
	if (!blk->pull_pages)
		return SLICE_FIRST; /* a first look: its rate is unknown */
	if (!(blk->flags & TIER_BF_PULLED))
		return blk->pull_pages;
	uint32_t w = mon.period > blk->pull_period ? mon.period - blk->pull_period : 1;
	float f = 1.0f - expf(-blk->rate[TIER_SRC_PAGEMAP] * (float)w);
	if (f * TIER_PAGES_PER_BLOCK <= 2 * FAULT_TARGET)
		return TIER_PAGES_PER_BLOCK;
	uint32_t n = SLICE_MIN;
	while ((float)(n * 2) * f <= FAULT_TARGET && n * 2 < TIER_PAGES_PER_BLOCK)
		n *= 2;
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
			measure(m, slo, shi, TIER_PAGES_PER_BLOCK / blk->pull_pages, false);
			refund(blk);
			fold(m, b, true, sweep);
		}
		memset(e->seen, 0, sizeof(e->seen));
		tier_heat_arm(m, lo, hi);
		blk->pull_pages = TIER_PAGES_PER_BLOCK;
		blk->pull_first = 0;
		blk->pull_period = mon.period;
		e->last_period = mon.period;
		charge(blk, EXPECT_PAGES);
		return;
	}
	learn(EXPECT_PAGES, measure(m, lo, hi, 1, true), 1);
	refund(blk);
	uint32_t seen = tier_ph_window(e, mon.period);
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
	fold(m, b, true, sweep);
	blk->pull_period = mon.period;
	charge(blk, EXPECT_PAGES);
	ph_decide(m, b, e);
}

/* Probes are visited every period, whatever the allowance: a probe's
 * windows are one period each, so it decides in TIER_PH_PROBE_WINDOWS
 * periods (at most PROBES_MAX at a time); what they cost is charged like
 * any visit's (the allowance pays it back). */
static void timed_visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep);
static void visit_probes(bool pull)
{
	if (!pull)
		return;
	for (uint32_t i = 0; i < tier_ph_used(); i++) {
		struct tier_ph *e = tier_ph_at(i);
		if (e->state == TIER_PH_PROBE && !e->m->gone &&
		    mon.period - e->m->blocks[e->b].pull_period >= e->win)
			timed_visit(e->m, e->b, pull, false);
	}
}

/* Look at block b now, with a pull source (measure and re-arm it), or
 * without (fold what push sources reported). */
static void visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep)
{
	struct tier_block *blk = &m->blocks[b];
	uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
	if (!pull || !pages || m->meta) {
		fold(m, b, false, sweep);
		return;
	}
	if (blk->pull_period == mon.period)
		return; /* measured this period already */
	struct tier_ph *e = tier_ph_of(m, b);
	if (e) {
		fold(m, b, false, sweep); /* push reports meanwhile */
		if (tier_ph_of(m, b) == e)
			visit_pages(m, b, e, sweep);
		return;
	}
	uint32_t n = want_pages(blk);
	if (blk->pull_pages == TIER_PAGES_PER_BLOCK && n == TIER_PAGES_PER_BLOCK) {
		run_add(m, b, 0, sweep);
		return;
	}
	fold(m, b, false, sweep); /* push reports meanwhile */
	uintptr_t lo, hi;
	if (blk->pull_pages && blk->pull_pages == n) { /* the same slice: measure, re-arm */
		slice_range(m, b, blk->pull_first, n, &lo, &hi);
		learn(EXPECT_SLICE, measure(m, lo, hi, TIER_PAGES_PER_BLOCK / n, true), 1);
		refund(blk);
		bool long_window = mon.period - blk->pull_period > 1;
		mon.saturated = false;
		fold(m, b, true, sweep);
		blk->pull_period = mon.period;
		charge(blk, EXPECT_SLICE);
		if (mon.saturated && long_window)
			due_add(m, b);
		return;
	}
	if (blk->pull_pages) { /* read the old part, then arm the new one */
		slice_range(m, b, blk->pull_first, blk->pull_pages, &lo, &hi);
		uint64_t f = measure(m, lo, hi, TIER_PAGES_PER_BLOCK / blk->pull_pages, false);
		learn(blk->pull_pages == TIER_PAGES_PER_BLOCK ? EXPECT_WHOLE
			  : (blk->flags & TIER_BF_PULLED) ? EXPECT_SLICE : EXPECT_FIRST, f, 1);
		refund(blk);
		fold(m, b, true, sweep);
		if (blk->pull_pages == TIER_PAGES_PER_BLOCK) /* whole to slice: the rest stops faulting */
			tier_heat_disarm(m, tier_block_addr(m, b), tier_block_addr(m, b) + TIER_BLOCK);
		n = want_pages(blk);
		blk->pull_pages = 0;
	}
	if (n == TIER_PAGES_PER_BLOCK)
		run_add(m, b, 2, sweep);
	else
		arm_slice(m, b, n);
}

/* What this period's visits cost so far: their CPU and the faults charged. */
static uint64_t spent(void)
{
	int64_t s = (int64_t)mon.sched_ns + mon.fault_ns;
	return s > 0 ? (uint64_t)s : 0;
}

/* Time one visit into the period's spending. */
static void timed_visit(struct tier_mapping *m, uint32_t b, bool pull, bool sweep)
{
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	visit(m, b, pull, sweep);
	mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* The watch list, round-robin, until `until` ns are spent (one visit at
 * least when until > 0: a visit cannot be cut short, the budget keeps the
 * debt). */
static void visit_watch(uint64_t until, bool pull)
{
	uint32_t n = mon.nwatch;
	for (uint32_t k = 0; k < n && until && (k == 0 || spent() < until); k++) {
		if (!mon.nwatch)
			break;
		if (mon.rot >= mon.nwatch)
			mon.rot = 0;
		struct ref r = mon.watch[mon.rot++];
		timed_visit(r.m, r.b, pull, false);
		atomic_fetch_add_explicit(&tier_monitor_stats.watch_visits, 1, memory_order_relaxed);
	}
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	run_flush();
	mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* The slices armed last period for a one-period window (due_add). */
static void visit_due(bool pull)
{
	uint32_t k = (mon.period - 1) & 1, n = mon.ndue[k];
	mon.ndue[k] = 0;
	if (!pull)
		return;
	mon.in_due = true;
	for (uint32_t i = 0; i < n; i++) {
		struct ref r = mon.due[k][i];
		struct tier_block *blk = blk_of(&r);
		if (blk->pull_period + 1 == mon.period && blk->pull_pages && blk->pull_pages < TIER_PAGES_PER_BLOCK)
			timed_visit(r.m, r.b, pull, false);
	}
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	run_flush();
	mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	mon.in_due = false;
}

/* The cursor's mapping, valid under rcu_read_lock: the saved one unless it
 * was freed since (then the first at or after its sequence number). */
static struct tier_mapping *cursor(void)
{
	if (mon.cm)
		return mon.cm;
	struct tier_mapping *m = tier_registry_from_seq(mon.cseq);
	if (m && m->seq != mon.cseq)
		mon.cb = 0;
	return m;
}

/* The sweep, from the cursor on, until `until` ns are spent (one block at
 * least, and at most EMPTY_STEPS empty ones: jemalloc reserves address
 * space ahead of use). */
#define EMPTY_STEPS 8192
static void sweep(uint64_t until, bool pull)
{
	struct tier_mapping *m = cursor();
	uint64_t steps = EMPTY_STEPS;
	bool any = false;
	while (until && (!any || spent() < until) && steps--) {
		if (!m) { /* end of a pass */
			uint32_t len = mon.period - mon.pass_start;
			if (mon.pass_blocks) {
				atomic_store(&tier_monitor_stats.last_pass_periods, len ? len : 1);
				atomic_store(&tier_monitor_stats.pass_blocks, mon.pass_blocks);
				atomic_fetch_add(&tier_monitor_stats.passes, 1);
			}
			mon.pass_start = mon.period;
			mon.pass_blocks = 0;
			m = tier_registry_from_seq(0);
			mon.cb = 0;
			if (!m)
				break;
			if (any)
				break; /* one pass per period at most */
		}
		if (mon.cb >= m->nblocks || m->meta) {
			m = tier_registry_next(m);
			mon.cb = 0;
			continue;
		}
		uint32_t b = mon.cb++;
		if (!(atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed) & TIER_BS_PAGES) &&
		    !m->blocks[b].hist_tier && !m->blocks[b].flags)
			continue; /* empty and unknown: nothing to do */
		timed_visit(m, b, pull, true);
		any = true;
		mon.pass_blocks++;
		atomic_fetch_add_explicit(&tier_monitor_stats.sweep_blocks, 1, memory_order_relaxed);
	}
	uint64_t t0 = tier_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	run_flush();
	mon.sched_ns += tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	mon.cm = m;
	mon.cseq = m ? m->seq : 0;
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
		tier_rate_hist_decay(&mon.rates[i], FLOOR_DECAY);
		mon.floor[i] = tier_rate_hist_quantile(&mon.rates[i], FLOOR_QUANTILE);
		tier_monitor_stats.floor[i] = mon.floor[i];
		float med = tier_rate_hist_quantile(&mon.rates[i], 0.5);
		if (med > mon.floor[i])
			typical += med - mon.floor[i];
		/* written bits on a slice of a few pages scatter widely (a
		 * binomial draw): the typical block's own rate is the scale */
		if (i == TIER_SRC_PAGEMAP)
			pull_med = med;
	}
	if (typical < pull_med)
		typical = pull_med;
	mon.watch_in = 2 * typical > TIER_WATCH_IN ? 2 * typical : TIER_WATCH_IN;
	mon.watch_out = mon.watch_in * (TIER_WATCH_OUT / TIER_WATCH_IN);
}

uint64_t tier_monitor_period(uint32_t period, double decay, uint64_t allowance_ns, uint64_t *faults_ns)
{
	mon.period = period;
	mon.decay = decay;
	mon.sched_ns = 0;
	mon.fault_ns = 0;
	mon.one_fault = tier_heat_fault_ns();
	slots_advance();
	rcu_read_lock();
	tier_heat_collect();
	tier_heat_drain_touched(fold_touched, NULL);
	update_floors();
	if (mon.idle) {
		mon.ndue[0] = mon.ndue[1] = 0;
	} else {
		/* armed last period under its allowance: measured now whatever
		 * this one's, or the window would stretch */
		visit_due(tier_heat_pull_running());
		visit_probes(tier_heat_pull_running());
	}
	if (!mon.idle && allowance_ns) {
		bool pull = tier_heat_pull_running();
		visit_watch((uint64_t)((double)allowance_ns * WATCH_SHARE), pull);
		sweep(allowance_ns, pull);
	}
	rcu_read_unlock();
	atomic_store(&tier_monitor_stats.watched, mon.nwatch);
	atomic_store(&tier_monitor_stats.cold, mon.ncold);
	atomic_store(&tier_monitor_stats.allowance_ns, allowance_ns);
	uint64_t total = spent();
	atomic_fetch_add(&tier_monitor_stats.spent_ns, total);
	if (mon.idle)
		atomic_fetch_add(&tier_monitor_stats.idle_periods, 1);
	*faults_ns = total > mon.sched_ns ? total - mon.sched_ns : 0;
	return total;
}

void tier_monitor_set_idle(bool idle)
{
	if (idle == mon.idle)
		return;
	mon.idle = idle;
	atomic_store(&tier_monitor_stats.idle, idle);
	tier_heat_pause(idle);
}

void tier_monitor_moved(struct tier_mapping *m, uint32_t b, int from, int to)
{
	struct tier_block *blk = &m->blocks[b];
	(void)from;
	struct tier_ph *e = tier_ph_of(m, b);
	if (e && e->state != TIER_PH_PROBE)
		tier_ph_hist(e, blk->heat, TIER_BS_TIER(atomic_load(&blk->state)), mon.hist);
	else if (blk->hist_tier)
		hist_set(blk, to, blk->hist_bucket, blk->hist_pages);
	if (blk->flags & TIER_BF_COLD)
		list_del(mon.cold, &mon.ncold, blk, TIER_BF_COLD);
	watch(m, b);
}

/* A split block's candidates: its pages elsewhere hot enough for the fast
 * tier, and its pages on the fast tier cold enough to leave. */
static void parts(struct tier_mapping *m, uint32_t b, struct tier_ph *e, int home, float t_hot, float t_cold,
		  struct tier_cand *fast, size_t fcap, size_t *nf, struct tier_cand *slow, size_t scap, size_t *ns)
{
	float heat = m->blocks[b].heat, h, se = sqrtf(m->blocks[b].hvar / 2);
	uint32_t n = tier_ph_select(e, heat, home, true, t_hot, NULL, &h);
	if (n && *ns < scap)
		slow[(*ns)++] = (struct tier_cand){.ref = m, .block = b, .bytes = n << TIER_PAGE_SHIFT, .heat = h,
						   .se = se, .tier = 1, .part = TIER_PART_UP, .thr = t_hot};
	n = tier_ph_select(e, heat, home, false, t_cold, NULL, &h);
	if (n && *nf < fcap)
		fast[(*nf)++] = (struct tier_cand){.ref = m, .block = b, .bytes = n << TIER_PAGE_SHIFT, .heat = h,
						   .se = se, .tier = 0, .part = TIER_PART_DOWN, .thr = t_cold};
}

void tier_monitor_candidates(struct tier_cand *fast, size_t fcap, size_t *nfast, struct tier_cand *slow,
                             size_t scap, size_t *nslow, uint32_t period, uint32_t settle, float t_hot,
                             float t_cold)
{
	size_t nf = 0, ns = 0;
	for (int list = 0; list < 2; list++) {
		struct ref *v = list ? mon.cold : mon.watch;
		uint32_t n = list ? mon.ncold : mon.nwatch;
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
			if (!e && probe_due(blk) && (st & TIER_BS_PAGES) >= TIER_PAGES_PER_BLOCK / 8)
				continue; /* looked at page by page first: moved whole, it would
				           * come back at once if its heat sits on a few pages */
			struct tier_cand c = {.ref = m,
					      .block = v[i].b,
					      .bytes = (st & TIER_BS_PAGES) << TIER_PAGE_SHIFT,
					      .heat = blk->heat,
					      .se = sqrtf(blk->hvar / 2),
					      .tier = (uint8_t)t};
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
	drop_refs(mon.watch, &mon.nwatch, m);
	drop_refs(mon.cold, &mon.ncold, m);
	for (int k = 0; k < 2; k++) /* not listed by index: no list_idx to keep */
		for (uint32_t i = 0; i < mon.ndue[k];)
			if (mon.due[k][i].m == m)
				mon.due[k][i] = mon.due[k][--mon.ndue[k]];
			else
				i++;
	if (run.m == m)
		run.n = 0;
	if (mon.cm == m)
		mon.cm = NULL; /* resume at the next sequence number */
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
	run.n = 0;
	mon.ndue[0] = mon.ndue[1] = 0;
	mon.idle = false;
	atomic_store(&tier_monitor_stats.idle, false);
}
