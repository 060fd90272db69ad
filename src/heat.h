/* Heat: how often each 2 MiB block is accessed, from pluggable sources.
 *
 * A source only reports what it saw (tier_heat_report); the heat core turns
 * reports into a decayed per-block rate; the policy decides, the migrator
 * moves.  Each source is one file with one ops struct, in the spirit of
 * Linux mm/damon's damon_operations: probe, start, collect, stop. */
#ifndef TIER_HEAT_H
#define TIER_HEAT_H

#include <poll.h>

#include "knobs.h"
#include "registry.h"

struct tier_heat_ops {
	const char *name;
	/* 0 when the source can run in this process, else -1 with a short
	 * reason in why ("no hardware PMU"). */
	int (*probe)(char *why, size_t len);
	int (*start)(char *why, size_t len);
	/* Report the accesses seen since the last call (background thread). */
	void (*collect)(void);
	/* Release everything, shared resources included (exit, knob change). */
	void (*stop)(void);
	/* In a forked child: drop state inherited from the parent without
	 * touching what the parent still uses. */
	void (*forget)(void);
	/* Optional: descriptors whose readiness means "a burst of reports is
	 * waiting" (the background thread wakes early).  Returns how many. */
	int (*pollfds)(struct pollfd *fds, int max);
	/* Read every period even when the background thread backs off: a
	 * source of "happened at least once since the last read" bits
	 * (pagemap's written bits) saturates over longer windows. */
	bool every_period;
};

extern const struct tier_heat_ops tier_heat_perf, tier_heat_damon, tier_heat_pagemap,
	tier_heat_recency;

enum tier_src_state { TIER_SRC_OFF, TIER_SRC_RUNNING, TIER_SRC_UNAVAILABLE, TIER_SRC_STOPPED };

struct tier_heat_stats {
	_Atomic uint64_t samples[TIER_SRC_COUNT]; /* page-weighted samples reported */
	_Atomic uint64_t collects[TIER_SRC_COUNT];
	_Atomic uint64_t collect_ns[TIER_SRC_COUNT]; /* wall time in collect() */
	enum tier_src_state state[TIER_SRC_COUNT];
	char why[TIER_SRC_COUNT][96];
};
extern struct tier_heat_stats tier_heat_stats;

/* Probe and start the sources in `mask` (probe order: perf, damon,
 * pagemap, recency); stop the others.  Logs the outcome when verbose. */
void tier_heat_start(unsigned mask);
void tier_heat_stop(void);
void tier_heat_forget(void);
/* Collect from the running sources.  When the background thread backs off
 * (nothing moved for a while) it passes full = false on most periods: then
 * only the every_period sources are read.  scale: how many periods a full
 * collection stands for; reports are weighted by it so heat stays a
 * per-period rate. */
void tier_heat_collect(unsigned scale, bool full);
/* The scale of the collection in progress (for sources that account their
 * samples themselves). */
unsigned tier_heat_scale(void);
int tier_heat_pollfds(struct pollfd *fds, int max);
/* "damon, pagemap, recency running; perf: no hardware PMU" */
void tier_heat_describe(char *buf, size_t len);
unsigned tier_heat_running(void);

/* Samples are fixed point: TIER_HEAT_UNIT per page means "this page was
 * accessed in this period" (DAMON: every sample saw it accessed; pagemap:
 * it was written).  Heat is then in accessed-periods per page. */
#define TIER_HEAT_UNIT 16u

/* Sources report: `weight` (TIER_HEAT_UNIT = one access) per page over
 * [addr, addr+len).
 * Addresses outside our mappings are ignored.  Takes rcu_read_lock. */
void tier_heat_report(int src, uintptr_t addr, size_t len, uint32_t weight);
/* Recency reports from the commit hook: lock-free, no RCU needed. */
extern _Atomic bool tier_heat_recency_on;

/* Fold the samples of the last period into each block's heat:
 * heat = heat * decay + sum over sources of (samples / committed pages,
 * less that source's floor across all blocks).  Caller holds
 * rcu_read_lock. */
void tier_heat_age(double decay);

#endif
