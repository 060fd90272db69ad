/* The heat core: source lifecycle and what sources report.  Folding
 * reports into per-block heat, and choosing which blocks to look at, is
 * the monitor's (monitor.c). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "thread.h"

#include "heat.h"
#include "pageheat.h"
#include "knobs.h"

struct tier_heat_stats tier_heat_stats;
_Atomic bool tier_heat_recency_on;

static const struct tier_heat_ops *const sources[TIER_SRC_COUNT] = {
	[TIER_SRC_PERF] = &tier_heat_perf,
	[TIER_SRC_DAMON] = &tier_heat_damon,
	[TIER_SRC_PAGEMAP] = &tier_heat_pagemap,
	[TIER_SRC_RECENCY] = &tier_heat_recency,
	[TIER_SRC_CXL] = &tier_heat_cxl,
};

static bool running(int i) { return tier_heat_stats.state[i] == TIER_SRC_RUNNING; }
/* started: running, or paused by the budget (stop and forget still apply) */
static bool started(int i) { return running(i) || tier_heat_stats.state[i] == TIER_SRC_SHED; }

/* A push source's first sampling level for the budget: its finest at a
 * budget of 10% of a core and more, a level coarser (2-4 times less work)
 * for each 2.5 times less budget. */
static int start_level(int levels)
{
	double b = tier_settings.bg_cpu;
	int k = b >= 0.1 ? 0 : (int)(log2(0.1 / b) / log2(2.5) + 0.5);
	return k < levels ? k : levels - 1;
}

void tier_heat_start(unsigned mask)
{
	/* a stream of hot lists asks for the source that reads it */
	if (tier_settings.cxl_reports[0] && !tier_knob_given(&tier_settings, "heat_sources"))
		mask |= 1u << TIER_SRC_CXL;
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		bool want = mask >> i & 1;
		if (started(i) && !want)
			sources[i]->stop();
		if (!want) {
			tier_heat_stats.state[i] = TIER_SRC_OFF;
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]), "not selected");
			continue;
		}
		if (started(i))
			continue;
		char why[160] = "";
		/* recency is the last resort: with a source that sees accesses,
		 * every fresh block would just look hot for a while */
		if (i == TIER_SRC_RECENCY && (tier_heat_running() & ~(1u << TIER_SRC_RECENCY | 1u << TIER_SRC_CXL))) {
			tier_heat_stats.state[i] = TIER_SRC_OFF;
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]),
				 "not needed (a source that sees accesses runs)");
			continue;
		}
		/* a source may start a thread: not without an arena for it */
		if (!tier_arena_spare_ready()) {
			tier_heat_stats.state[i] = TIER_SRC_UNAVAILABLE;
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]),
				 "no arena for its thread (memory limit reached)");
			continue;
		}
		if (sources[i]->probe(why, sizeof(why)) == 0 && sources[i]->start(why, sizeof(why)) == 0) {
			tier_heat_stats.state[i] = TIER_SRC_RUNNING;
			/* start as coarse as the budget suggests; the budget steps it
			 * finer while there is room (a fine start ran kdamond at 20-50%
			 * of a core under TCG for the seconds the steps took) */
			for (int k = start_level(sources[i]->levels); k > 0 && sources[i]->adjust; k--)
				if (sources[i]->adjust(-1))
					atomic_store(&tier_heat_stats.level[i], atomic_load(&tier_heat_stats.level[i]) + 1);
			/* a running source may leave a note (where its reports come from) */
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]), "%s",
				 i == TIER_SRC_CXL ? why : "");
		} else {
			tier_heat_stats.state[i] = TIER_SRC_UNAVAILABLE;
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]), "%s",
				 why[0] ? why : "failed to start");
		}
	}
	/* which sources run, and why the others do not: one line, once */
	if (tier_settings.verbose) {
		char line[512];
		tier_heat_describe(line, sizeof(line));
		tier_log("heat sources: %s", line);
	}
}

void tier_heat_stop(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (started(i)) {
			sources[i]->stop();
			/* a shed one keeps its why: the stats at exit say so */
			tier_heat_stats.state[i] = TIER_SRC_STOPPED;
		}
}

void tier_heat_forget(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (started(i)) {
			sources[i]->forget();
			tier_heat_stats.state[i] = TIER_SRC_OFF;
		}
}

/* Wall and CPU time of one source call, into its stats. */
struct timing {
	uint64_t wall, cpu;
};
static struct timing timing_begin(void)
{
	return (struct timing){tier_clock_ns(CLOCK_MONOTONIC), tier_clock_ns(CLOCK_THREAD_CPUTIME_ID)};
}
static void timing_end(int i, struct timing t)
{
	atomic_fetch_add_explicit(&tier_heat_stats.collect_ns[i], tier_clock_ns(CLOCK_MONOTONIC) - t.wall,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&tier_heat_stats.cpu_ns[i],
				  tier_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t.cpu, memory_order_relaxed);
}

static void coarse_begin(int src);
static void coarse_publish(int src);

void tier_heat_collect(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		if (!running(i) || !sources[i]->collect)
			continue;
		struct timing t = timing_begin();
		coarse_begin(i);
		sources[i]->collect();
		coarse_publish(i);
		timing_end(i, t);
		atomic_fetch_add_explicit(&tier_heat_stats.collects[i], 1, memory_order_relaxed);
	}
}

bool tier_heat_pull_running(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->arm)
			return true;
	return false;
}

bool tier_heat_arm(struct tier_mapping *m, uintptr_t start, uintptr_t end)
{
	bool armed = false;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->arm) {
			struct timing t = timing_begin();
			armed |= sources[i]->arm(m, start, end);
			timing_end(i, t);
		}
	return armed;
}

uint64_t tier_heat_held(struct tier_mapping *m, uint32_t b, uint32_t n)
{
	uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1, held = 0;
	bool asked = false;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->arm) {
			if (!sources[i]->held)
				return all;
			struct timing t = timing_begin();
			held |= sources[i]->held(m, b, n);
			timing_end(i, t);
			asked = true;
		}
	return asked ? held & all : all;
}

void tier_heat_disarm(struct tier_mapping *m, uintptr_t start, uintptr_t end)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->disarm) {
			struct timing t = timing_begin();
			sources[i]->disarm(m, start, end);
			timing_end(i, t);
		}
}

uint64_t tier_heat_measure(struct tier_mapping *m, uintptr_t start, uintptr_t end, uint32_t mult,
                           bool rearm)
{
	uint64_t cost = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->measure) {
			struct timing t = timing_begin();
			cost += sources[i]->measure(m, start, end, mult, rearm);
			timing_end(i, t);
			atomic_fetch_add_explicit(&tier_heat_stats.collects[i], 1, memory_order_relaxed);
		}
	return cost;
}

int tier_heat_pollfds(struct pollfd *fds, int max)
{
	int n = 0;
	for (int i = 0; i < TIER_SRC_COUNT && n < max; i++)
		if (running(i) && sources[i]->pollfds)
			n += sources[i]->pollfds(fds + n, max - n);
	return n;
}

uint64_t tier_heat_cost_ns(int i, int kind)
{
	/* a stopped source's costs stay counted: keep asking it */
	return sources[i]->cost_ns ? sources[i]->cost_ns(kind) : 0;
}

bool tier_heat_is_pull(int i)
{
	return sources[i]->arm != NULL;
}

uint64_t tier_heat_fault_ns(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->arm)
			return atomic_load(&tier_heat_stats.fault_ns[i]);
	return 0;
}

/* CPU each push source cost (its calls here and its own threads), as of
 * the last adjust: the one that grew most is the one to slow down. */
static uint64_t adjust_mark[TIER_SRC_COUNT], adjust_cost[TIER_SRC_COUNT];
static uint64_t adjust_at, adjust_span; /* wall clock of the last adjust, and the time since the one before */

bool tier_heat_adjust(int dir)
{
	uint64_t cost[TIER_SRC_COUNT] = {0};
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		uint64_t now = atomic_load(&tier_heat_stats.cpu_ns[i]);
		for (int k = 0; k < TIER_COST_KINDS; k++)
			now += tier_heat_cost_ns(i, k);
		cost[i] = adjust_cost[i] = now - adjust_mark[i];
		adjust_mark[i] = now;
	}
	uint64_t t = tier_clock_ns(CLOCK_MONOTONIC);
	adjust_span = adjust_at ? t - adjust_at : 0;
	adjust_at = t;
	bool changed = false;
	if (dir > 0) {
		for (int i = 0; i < TIER_SRC_COUNT; i++)
			if (running(i) && sources[i]->adjust && sources[i]->adjust(1)) {
				changed = true;
				atomic_fetch_add_explicit(&tier_heat_stats.adjusts[i], 1, memory_order_relaxed);
				atomic_fetch_sub(&tier_heat_stats.level[i], 1);
			}
		return changed;
	}
	/* most expensive first; fall through to the next when one is at its floor */
	bool tried[TIER_SRC_COUNT] = {false};
	for (int round = 0; round < TIER_SRC_COUNT && !changed; round++) {
		int pick = -1;
		for (int i = 0; i < TIER_SRC_COUNT; i++)
			if (running(i) && sources[i]->adjust && !tried[i] && (pick < 0 || cost[i] > cost[pick]))
				pick = i;
		if (pick < 0)
			break;
		tried[pick] = true;
		if (sources[pick]->adjust(-1)) {
			changed = true;
			atomic_fetch_add_explicit(&tier_heat_stats.adjusts[pick], 1, memory_order_relaxed);
			atomic_fetch_add(&tier_heat_stats.level[pick], 1);
		}
	}
	return changed;
}

void tier_heat_failed(int src, const char *why)
{
	tier_heat_stats.state[src] = TIER_SRC_UNAVAILABLE;
	snprintf(tier_heat_stats.why[src], sizeof(tier_heat_stats.why[src]), "%s", why);
	if (tier_settings.verbose)
		tier_log("heat source %s: %s", tier_source_name((unsigned)src), why);
}

void tier_heat_pause(bool paused)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->pause)
			sources[i]->pause(paused);
}

int tier_heat_shed(double budget)
{
	if (!tier_heat_pull_running() || !adjust_span)
		return -1; /* nothing else would see accesses */
	int pick = -1;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && !sources[i]->arm && sources[i]->pause &&
		    (!sources[i]->adjust || atomic_load(&tier_heat_stats.level[i]) >= sources[i]->levels - 1) &&
		    (pick < 0 || adjust_cost[i] > adjust_cost[pick]))
			pick = i;
	/* its own cost (its calls, threads, kernel share) alone: migration
	 * and the monitor are not its to answer for */
	double share = pick < 0 ? 0 : (double)adjust_cost[pick] / (double)adjust_span;
	if (pick < 0 || share <= budget)
		return -1;
	sources[pick]->pause(true);
	/* the why before the state: readers (tier_mallctl, other threads)
	 * that see the state find its why written */
	snprintf(tier_heat_stats.why[pick], sizeof(tier_heat_stats.why[pick]),
		 "shed: %.1f%% of a core alone at its coarsest, over bg_cpu %.1f%%",
		 100 * share, 100 * budget);
	atomic_thread_fence(memory_order_release);
	tier_heat_stats.state[pick] = TIER_SRC_SHED;
	if (tier_settings.verbose)
		tier_log("heat source %s paused: %s (raise bg_cpu to resume)", tier_source_name((unsigned)pick),
			 tier_heat_stats.why[pick]);
	return pick;
}

void tier_heat_unshed(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_SHED) {
			tier_heat_stats.state[i] = TIER_SRC_RUNNING;
			atomic_thread_fence(memory_order_release);
			tier_heat_stats.why[i][0] = '\0';
			sources[i]->pause(false);
		}
}

unsigned tier_heat_running(void)
{
	unsigned m = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i))
			m |= 1u << i;
	return m;
}

bool tier_heat_sees_reads(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i) && sources[i]->sees_reads)
			return true;
	return false;
}

void tier_heat_count_faults(int src, uint64_t n)
{
	atomic_fetch_add_explicit(&tier_heat_stats.faults[src], n, memory_order_relaxed);
}

void tier_heat_describe(char *buf, size_t len)
{
	size_t n = 0;
	int nrun = 0;
	buf[0] = '\0';
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (running(i)) {
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", nrun++ ? ", " : "",
					      tier_source_name((unsigned)i));
			int lv = atomic_load(&tier_heat_stats.level[i]);
			if (tier_heat_stats.why[i][0])
				n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " (%s)", tier_heat_stats.why[i]);
			if (lv > 0) /* the budget made it sample less */
				n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " (sampling level %d)", lv);
		}
	n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s", nrun ? " running" : "none running");
	int stopped = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_STOPPED)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s%s%s%s", stopped++ ? ", " : "; ran until exit: ",
					      tier_source_name((unsigned)i), tier_heat_stats.why[i][0] ? " (" : "",
					      tier_heat_stats.why[i], tier_heat_stats.why[i][0] ? ")" : "");
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (!running(i) && tier_heat_stats.state[i] != TIER_SRC_STOPPED)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "; %s: %s",
					      tier_source_name((unsigned)i), tier_heat_stats.why[i]);
	/* nobody should believe read-hot data is tracked when it is not; CXL
	 * hot lists count what their producer counts (a CHMU: reads, writes
	 * or both, as configured), which this process cannot know */
	if (nrun && !tier_heat_sees_reads() && running(TIER_SRC_CXL))
		snprintf(buf + n, n < len ? len - n : 0,
			 "; reads seen only as far as the cxl hot lists count them (a CHMU counts reads, "
			 "writes or both as configured; a replayed list, what its producer counted)");
	else if (nrun && !tier_heat_sees_reads())
		snprintf(buf + n, n < len ? len - n : 0,
			 "; reads not seen: no running source sees loads, memory that is only read looks cold");
}

/* ------------------------------------------------------------ reports */

/* Blocks touched by push reports, for the monitor to visit (background
 * thread only, like the reports themselves). */
#define TOUCHED_MAX 16384
static struct {
	struct tier_mapping *m;
	uint32_t b;
} touched[TOUCHED_MAX];
static uint32_t ntouched;
_Atomic uint64_t tier_heat_touched_dropped;

static void queue(struct tier_mapping *m, uint32_t b)
{
	struct tier_block *blk = &m->blocks[b];
	if (blk->flags & TIER_BF_QUEUED)
		return;
	if (ntouched == TOUCHED_MAX) {
		atomic_fetch_add_explicit(&tier_heat_touched_dropped, 1, memory_order_relaxed);
		return;
	}
	blk->flags |= TIER_BF_QUEUED;
	touched[ntouched].m = m;
	touched[ntouched++].b = b;
}

void tier_heat_drain_touched(void (*fn)(struct tier_mapping *m, uint32_t b, void *ctx), void *ctx)
{
	for (uint32_t i = 0; i < ntouched; i++) {
		if (!touched[i].m)
			continue; /* its mapping went away */
		touched[i].m->blocks[touched[i].b].flags &= (uint8_t)~TIER_BF_QUEUED;
		fn(touched[i].m, touched[i].b, ctx);
	}
	ntouched = 0;
}

/* Coarse regions: per source, the wide ranges of its last collection,
 * sorted by address (pending while a collection runs, then published). */
#define COARSE_MAX 4096
struct coarse {
	uintptr_t start, end;
	float rate;
};
static struct coarse coarse_tab[TIER_SRC_COUNT][2][COARSE_MAX];
static uint32_t coarse_n[TIER_SRC_COUNT][2];
static uint8_t coarse_cur[TIER_SRC_COUNT]; /* which table is published */
static bool coarse_sorted[TIER_SRC_COUNT];

static void coarse_add(int src, uintptr_t start, uintptr_t end, float rate)
{
	int w = !coarse_cur[src];
	uint32_t n = coarse_n[src][w];
	if (n == COARSE_MAX)
		return;
	if (n && coarse_tab[src][w][n - 1].start > start)
		coarse_sorted[src] = false;
	coarse_tab[src][w][n] = (struct coarse){start, end, rate};
	coarse_n[src][w] = n + 1;
}

/* insertion sort: reports arrive sorted or nearly so (DAMON walks its
 * regions in address order) */
static void coarse_sort(struct coarse *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct coarse x = v[i];
		uint32_t j = i;
		for (; j > 0 && v[j - 1].start > x.start; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Each collection replaces the source's coarse regions. */
static void coarse_begin(int src)
{
	coarse_n[src][!coarse_cur[src]] = 0;
	coarse_sorted[src] = true;
}

static void coarse_publish(int src)
{
	int w = !coarse_cur[src];
	if (!coarse_sorted[src])
		coarse_sort(coarse_tab[src][w], coarse_n[src][w]);
	coarse_cur[src] = (uint8_t)w;
}

float tier_heat_coarse_rate(int src, uintptr_t addr)
{
	const struct coarse *v = coarse_tab[src][coarse_cur[src]];
	uint32_t lo = 0, hi = coarse_n[src][coarse_cur[src]];
	while (lo < hi) { /* the last region starting at or below addr */
		uint32_t mid = (lo + hi) / 2;
		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < v[lo - 1].end ? v[lo - 1].rate : 0.0f;
}

void tier_heat_sample(int src, struct tier_mapping *m, uint32_t b, uint32_t units)
{
#ifdef TIER_MUTATE_NOHEAT /* test-only mutant (tests/README.md): sources report nothing */
	return;
#endif
	struct tier_block *blk = &m->blocks[b];
	uint32_t old = atomic_load_explicit(&blk->samples[src], memory_order_relaxed);
	/* saturate rather than wrap */
	uint32_t add = units > UINT32_MAX - old ? UINT32_MAX - old : units;
	atomic_fetch_add_explicit(&blk->samples[src], add, memory_order_relaxed);
	atomic_fetch_add_explicit(&tier_heat_stats.samples[src], units, memory_order_relaxed);
}

void tier_heat_sample_pages(int src, struct tier_mapping *m, uint32_t b, uint32_t p0, uint32_t n, uint32_t mult)
{
	tier_heat_sample(src, m, b, n * mult * TIER_HEAT_UNIT);
	tier_ph_mark(m, b, p0, n);
}

/* Reports this narrow say which pages were accessed (a sampled load, a
 * CXL record, a small DAMON region): blocks looked at page by page see them. */
#define PAGE_REPORT_MAX (16 * TIER_PAGE)

void tier_heat_report(int src, uintptr_t addr, size_t len, uint32_t weight)
{
#ifdef TIER_MUTATE_NOHEAT
	return;
#endif
	if (!len || !weight)
		return;
	uintptr_t end = addr + len < addr ? UINTPTR_MAX : addr + len;
	if (len > (size_t)TIER_HEAT_COARSE_BLOCKS * TIER_BLOCK) {
		coarse_add(src, addr, end, (float)weight / TIER_HEAT_UNIT);
		atomic_fetch_add_explicit(&tier_heat_stats.samples[src],
					  (uint64_t)(len >> TIER_PAGE_SHIFT) * weight, memory_order_relaxed);
		return;
	}
	rcu_read_lock();
	for (uintptr_t a = tier_align_down(addr, TIER_BLOCK); a < end; a += TIER_BLOCK) {
		struct tier_mapping *m = tier_registry_lookup(a);
		if (m) {
			uintptr_t lo = a > addr ? a : addr, hi = a + TIER_BLOCK < end ? a + TIER_BLOCK : end;
			uint64_t s = ((hi - lo + TIER_PAGE - 1) >> TIER_PAGE_SHIFT) * weight;
			uint32_t b = (uint32_t)((a - m->base) >> TIER_BLOCK_SHIFT);
			tier_heat_sample(src, m, b, s > UINT32_MAX ? UINT32_MAX : (uint32_t)s);
			if (len <= PAGE_REPORT_MAX)
				tier_ph_mark(m, b, (uint32_t)((lo - a) >> TIER_PAGE_SHIFT),
					     (uint32_t)((hi - lo + TIER_PAGE - 1) >> TIER_PAGE_SHIFT));
			queue(m, b);
		}
		if (a + TIER_BLOCK < a)
			break;
	}
	rcu_read_unlock();
}

void tier_heat_gone(struct tier_mapping *m)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (started(i) && sources[i]->gone)
			sources[i]->gone(m);
	for (uint32_t i = 0; i < ntouched; i++)
		if (touched[i].m == m)
			touched[i].m = NULL;
}
