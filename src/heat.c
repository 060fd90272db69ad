/* The heat core: source lifecycle, reports, and per-block decay. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "heat.h"
#include "init.h"

struct tier_heat_stats tier_heat_stats;
_Atomic bool tier_heat_recency_on;

static const struct tier_heat_ops *const sources[TIER_SRC_COUNT] = {
	[TIER_SRC_PERF] = &tier_heat_perf,
	[TIER_SRC_DAMON] = &tier_heat_damon,
	[TIER_SRC_PAGEMAP] = &tier_heat_pagemap,
	[TIER_SRC_RECENCY] = &tier_heat_recency,
};

void tier_heat_start(unsigned mask)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		bool want = mask >> i & 1;
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING && !want)
			sources[i]->stop();
		if (!want) {
			tier_heat_stats.state[i] = TIER_SRC_OFF;
			snprintf(tier_heat_stats.why[i], sizeof(tier_heat_stats.why[i]), "not selected");
			continue;
		}
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING)
			continue;
		char why[96] = "";
		if (sources[i]->probe(why, sizeof(why)) == 0 && sources[i]->start(why, sizeof(why)) == 0) {
			tier_heat_stats.state[i] = TIER_SRC_RUNNING;
			tier_heat_stats.why[i][0] = '\0';
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
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING) {
			sources[i]->stop();
			tier_heat_stats.state[i] = TIER_SRC_STOPPED;
		}
}

void tier_heat_forget(void)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING) {
			sources[i]->forget();
			tier_heat_stats.state[i] = TIER_SRC_OFF;
		}
}

static unsigned report_scale = 1;

unsigned tier_heat_scale(void) { return report_scale; }

void tier_heat_collect(unsigned scale, bool full)
{
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING && (full || sources[i]->every_period)) {
			report_scale = sources[i]->every_period ? 1 : (scale ? scale : 1);
			uint64_t t0 = tier_clock_ns(CLOCK_MONOTONIC);
			sources[i]->collect();
			/* wall time: a source may wait on the kernel (DAMON answers at
			 * its next aggregation), which stretches the period */
			atomic_fetch_add_explicit(&tier_heat_stats.collect_ns[i],
						  tier_clock_ns(CLOCK_MONOTONIC) - t0, memory_order_relaxed);
			atomic_fetch_add_explicit(&tier_heat_stats.collects[i], 1, memory_order_relaxed);
		}
}

int tier_heat_pollfds(struct pollfd *fds, int max)
{
	int n = 0;
	for (int i = 0; i < TIER_SRC_COUNT && n < max; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING && sources[i]->pollfds)
			n += sources[i]->pollfds(fds + n, max - n);
	return n;
}

unsigned tier_heat_running(void)
{
	unsigned m = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING)
			m |= 1u << i;
	return m;
}

void tier_heat_describe(char *buf, size_t len)
{
	size_t n = 0;
	int running = 0;
	buf[0] = '\0';
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_RUNNING)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", running++ ? ", " : "",
					      tier_source_name((unsigned)i));
	n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s", running ? " running" : "none running");
	int stopped = 0;
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] == TIER_SRC_STOPPED)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", stopped++ ? ", " : "; ran until exit: ",
					      tier_source_name((unsigned)i));
	for (int i = 0; i < TIER_SRC_COUNT; i++)
		if (tier_heat_stats.state[i] != TIER_SRC_RUNNING && tier_heat_stats.state[i] != TIER_SRC_STOPPED)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "; %s: %s",
					      tier_source_name((unsigned)i), tier_heat_stats.why[i]);
}

void tier_heat_report(int src, uintptr_t addr, size_t len, uint32_t weight)
{
	if (!len || !weight)
		return;
	weight *= report_scale;
	uint64_t total = 0;
	uintptr_t end = addr + len < addr ? UINTPTR_MAX : addr + len;
	rcu_read_lock();
	for (uintptr_t a = tier_align_down(addr, TIER_BLOCK); a < end; a += TIER_BLOCK) {
		struct tier_mapping *m = tier_registry_lookup(a);
		if (!m)
			continue;
		uintptr_t lo = a > addr ? a : addr, hi = a + TIER_BLOCK < end ? a + TIER_BLOCK : end;
		uint64_t pages = (hi - lo + TIER_PAGE - 1) >> TIER_PAGE_SHIFT;
		uint64_t s = pages * weight;
		struct tier_block *blk = &m->blocks[(a - m->base) >> TIER_BLOCK_SHIFT];
		uint32_t old = atomic_load_explicit(&blk->samples[src], memory_order_relaxed);
		/* saturate rather than wrap */
		uint32_t add = s > UINT32_MAX - old ? UINT32_MAX - old : (uint32_t)s;
		atomic_fetch_add_explicit(&blk->samples[src], add, memory_order_relaxed);
		total += s;
		if (a + TIER_BLOCK < a)
			break;
	}
	rcu_read_unlock();
	atomic_fetch_add_explicit(&tier_heat_stats.samples[src], total, memory_order_relaxed);
}

/* Each source's floor: the rate (accesses per page per period) that the
 * coldest tenth of the memory holding data shows to it.  A source that sees
 * nearly every block busy (DAMON under THP, where any access sets a 2 MiB
 * page's accessed bit; written bits under a uniform write background) says
 * little about which block is hotter: only what a block shows above the
 * floor counts.  Where a tenth of the memory is idle the floor is 0. */
#define HIST 256
#define HIST_MAX 4.0f /* rates of 4 and more share the last bucket */
static void floors(float floor[TIER_SRC_COUNT])
{
	static uint64_t hist[TIER_SRC_COUNT][HIST]; /* background thread only */
	uint64_t total = 0;
	struct tier_mapping *m;
	memset(hist, 0, sizeof(hist));
	tier_registry_for_each(m) {
		if (m->meta)
			continue;
		for (uint32_t b = 0; b < m->nblocks; b++) {
			uint32_t pages = atomic_load_explicit(&m->blocks[b].state, memory_order_relaxed) &
					 TIER_BS_PAGES;
			if (!pages)
				continue;
			total += pages;
			for (int i = 0; i < TIER_SRC_COUNT; i++) {
				float r = (float)atomic_load_explicit(&m->blocks[b].samples[i],
								      memory_order_relaxed) /
					  (float)(pages * TIER_HEAT_UNIT);
				int k = r >= HIST_MAX ? HIST - 1 : (int)(r / HIST_MAX * HIST);
				hist[i][k] += pages;
			}
		}
	}
	for (int i = 0; i < TIER_SRC_COUNT; i++) {
		uint64_t acc = 0;
		int k = 0;
		for (; k < HIST - 1 && (acc += hist[i][k]) * 10 < total; k++)
			;
		floor[i] = (float)k * HIST_MAX / HIST;
	}
}

void tier_heat_age(double decay)
{
	float floor[TIER_SRC_COUNT];
	floors(floor);
	struct tier_mapping *m;
	tier_registry_for_each(m) {
		for (uint32_t b = 0; b < m->nblocks; b++) {
			struct tier_block *blk = &m->blocks[b];
			uint32_t pages = atomic_load_explicit(&blk->state, memory_order_relaxed) & TIER_BS_PAGES;
			float h = blk->heat * (float)decay;
			for (int i = 0; i < TIER_SRC_COUNT; i++) {
				uint32_t s = atomic_exchange_explicit(&blk->samples[i], 0, memory_order_relaxed);
				float r = pages ? (float)s / (float)(pages * TIER_HEAT_UNIT) - floor[i] : 0;
				if (r > 0)
					h += r;
			}
			blk->heat = h < 1e-6f ? 0.0f : h;
		}
	}
}
