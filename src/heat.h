/* Heat: how often each 2 MiB block is accessed, from pluggable sources.
 *
 * A source only reports what it saw; the monitor (monitor.c) decides which
 * blocks are looked at each period and folds reports into per-block heat;
 * the policy decides, the migrator moves.  Each source is one file with
 * one ops struct, in the spirit of Linux mm/damon's damon_operations.
 * There are two kinds:
 *   push sources (perf, damon, recency) report on their own, for any
 *     block, through tier_heat_report / tier_heat_sample;
 *   pull sources (pagemap) look where they are told: arm() a range,
 *     then measure() it on each later visit (DAMON's
 *     prepare_access_checks / check_accesses split). */
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
	/* Push sources: report the accesses seen since the last call. */
	void (*collect)(void);
	/* Pull sources: arm() protects every page of [start, end) of m (whole
	 * pages) so that accesses from now on are seen; measure() reports
	 * the pages of [start, end) accessed since (each counting `mult`
	 * times: a slice standing for a whole block) and, with rearm,
	 * protects those again.  measure returns what the accesses it found
	 * cost the program (the faults arming made it take), ns.  arm returns
	 * whether it armed anything: memory that holds no page is left alone
	 * (nothing there to fault on, and protecting it builds page tables). */
	bool (*arm)(struct tier_mapping *m, uintptr_t start, uintptr_t end);
	/* Which of the n blocks (at most 64) of m from block b hold a page
	 * (bit i: block b + i), without protecting anything; NULL: all. */
	uint64_t (*held)(struct tier_mapping *m, uint32_t b, uint32_t n);
	/* Stop watching [start, end): nothing there costs a fault any more. */
	void (*disarm)(struct tier_mapping *m, uintptr_t start, uintptr_t end);
	uint64_t (*measure)(struct tier_mapping *m, uintptr_t start, uintptr_t end, uint32_t mult,
			    bool rearm);
	/* Release everything, shared resources included (exit, knob change). */
	void (*stop)(void);
	/* In a forked child: drop state inherited from the parent without
	 * touching what the parent still uses. */
	void (*forget)(void);
	/* Optional: descriptors whose readiness means "a burst of reports is
	 * waiting" (the background thread wakes early).  Returns how many. */
	int (*pollfds)(struct pollfd *fds, int max);
	/* Optional: sample less (dir < 0) or more (dir > 0) to fit the CPU
	 * budget; returns false when already at that end of its range. */
	bool (*adjust)(int dir);
	/* With adjust: how many sampling levels it steps through (the last
	 * is its coarsest). */
	int levels;
	/* Optional: stop watching (true) or resume (false) while nothing can
	 * move: the cheapest state that can resume quickly. */
	void (*pause)(bool paused);
	/* Optional: costs this source causes outside the background thread,
	 * ns, cumulative, by kind (TIER_COST_*). */
	uint64_t (*cost_ns)(int kind);
	/* Whether it sees loads (reads) and not only stores. */
	bool sees_reads;
	/* Optional: mapping m is being freed: drop references into it
	 * (background thread, from the registry's reclaim). */
	void (*gone)(struct tier_mapping *m);
};

/* Costs outside the background thread: CPU of a source's own threads, its
 * share of a kernel thread (kdamond), and the faults it makes the
 * program's threads take (counted at a cost measured at start). */
enum { TIER_COST_THREAD, TIER_COST_KERNEL, TIER_COST_FAULTS, TIER_COST_KINDS };

extern const struct tier_heat_ops tier_heat_perf, tier_heat_damon, tier_heat_pagemap,
	tier_heat_recency, tier_heat_cxl;

/* SHED: started, but paused by the budget (tier_heat_shed). */
enum tier_src_state { TIER_SRC_OFF, TIER_SRC_RUNNING, TIER_SRC_UNAVAILABLE, TIER_SRC_STOPPED, TIER_SRC_SHED };

struct tier_heat_stats {
	_Atomic uint64_t samples[TIER_SRC_COUNT]; /* page-weighted samples reported */
	_Atomic uint64_t collects[TIER_SRC_COUNT];
	_Atomic uint64_t collect_ns[TIER_SRC_COUNT]; /* wall time in collect/arm/measure */
	_Atomic uint64_t cpu_ns[TIER_SRC_COUNT];     /* this thread's CPU there, plus cpu_ns() */
	_Atomic uint64_t faults[TIER_SRC_COUNT];     /* faults the source made the program take */
	_Atomic uint64_t fault_ns[TIER_SRC_COUNT];   /* what one of them costs here (measured at start) */
	_Atomic uint64_t adjusts[TIER_SRC_COUNT];    /* budget steps taken (either way) */
	_Atomic int level[TIER_SRC_COUNT];           /* sampling level: 0 finest (budget steps) */
	enum tier_src_state state[TIER_SRC_COUNT];
	char why[TIER_SRC_COUNT][160];
};
extern struct tier_heat_stats tier_heat_stats;

/* Probe and start the sources in `mask` (probe order: perf, damon,
 * pagemap, recency); stop the others.  Logs the outcome when verbose. */
void tier_heat_start(unsigned mask);
void tier_heat_stop(void);
void tier_heat_forget(void);
/* Read the push sources (background thread). */
void tier_heat_collect(void);
/* Whether a running pull source exists, and its arm/measure (measure
 * returns the ns of faults the program took for what was found). */
bool tier_heat_pull_running(void);
bool tier_heat_arm(struct tier_mapping *m, uintptr_t start, uintptr_t end);
uint64_t tier_heat_held(struct tier_mapping *m, uint32_t b, uint32_t n);
void tier_heat_disarm(struct tier_mapping *m, uintptr_t start, uintptr_t end);
uint64_t tier_heat_measure(struct tier_mapping *m, uintptr_t start, uintptr_t end, uint32_t mult,
                           bool rearm);
int tier_heat_pollfds(struct pollfd *fds, int max);
/* Budget steps for the push sources: the one costing most CPU since the
 * last call samples less (dir < 0), or every one samples more (dir > 0).
 * Returns whether anything changed. */
bool tier_heat_adjust(int dir);
void tier_heat_pause(bool paused);
/* Over the budget with every push source at its coarsest sampling: pause
 * the costliest push source when its own cost since the last adjust
 * exceeds the budget (share of a core) and a pull source still sees
 * writes.  Returns the source shed, or -1. */
int tier_heat_shed(double budget);
/* The budget grew: resume the sources shed. */
void tier_heat_unshed(void);
/* What source i cost outside the background thread, of one kind (ns,
 * cumulative), and whether it is a pull source. */
uint64_t tier_heat_cost_ns(int i, int kind);
bool tier_heat_is_pull(int i);
/* What one fault that a running pull source causes costs here, ns. */
uint64_t tier_heat_fault_ns(void);
/* "damon, pagemap, recency running; perf: no hardware PMU" */
void tier_heat_describe(char *buf, size_t len);
unsigned tier_heat_running(void);
/* Whether some running source sees reads. */
bool tier_heat_sees_reads(void);
/* Count faults that a source caused in the program's threads. */
void tier_heat_count_faults(int src, uint64_t n);
/* A running source that found, after its start, that it cannot run (a
 * source that joins shared state late): unavailable, and why. */
void tier_heat_failed(int src, const char *why);

/* struct tier_block flags (background thread only). */
#define TIER_BF_QUEUED 1u /* in the touched queue */
#define TIER_BF_WATCH 2u  /* in the monitor's watch list (list_idx) */
#define TIER_BF_COLD 4u   /* in the monitor's cold fast reservoir (list_idx) */
#define TIER_BF_PULLED 8u /* a pull source measured it at least once */
#define TIER_BF_BOUND 16u /* its last pull window came back all written: its rate is a lower bound */
#define TIER_BF_EMPTY 64u  /* its last pull look found its slice empty on a block that was not (monitor.c) */
#define TIER_BF_RETEST 32u /* picked for a swap (slow, on its estimate; fast, to give way): restarted, to move on a look made after */
#define TIER_BF_UNARMED 128u /* its pull part holds no page: left unarmed, nothing charged or learned (monitor_visit.c) */

/* Samples are fixed point: TIER_HEAT_UNIT per page means "this page was
 * accessed in this period" (DAMON: every sample saw it accessed; pagemap:
 * it was written).  Rates and heat are in accesses per page per period. */
#define TIER_HEAT_UNIT 16u

/* Push sources report `weight` (TIER_HEAT_UNIT = one access) per page
 * over [addr, addr+len), accumulated until the monitor folds the block.
 * Small ranges land on their blocks (and queue them for a visit); a range
 * wider than TIER_HEAT_COARSE_BLOCKS is kept as a coarse region that the
 * blocks inside read when they are visited, so a report costs the same
 * whatever its size.  Addresses outside our mappings are ignored.
 * Background thread only; takes rcu_read_lock. */
#define TIER_HEAT_COARSE_BLOCKS 4
void tier_heat_report(int src, uintptr_t addr, size_t len, uint32_t weight);
/* A sample on one block (pull sources' measure, under rcu_read_lock). */
void tier_heat_sample(int src, struct tier_mapping *m, uint32_t b, uint32_t units);
/* Pages [p0, p0+n) of block b were seen accessed, each standing for `mult`
 * pages of the block (a pull source measuring a slice): a sample on the
 * block, and per-page heat where the block is looked at page by page. */
void tier_heat_sample_pages(int src, struct tier_mapping *m, uint32_t b, uint32_t p0, uint32_t n, uint32_t mult);
/* Recency reports from the commit hook: lock-free, no RCU needed. */
extern _Atomic bool tier_heat_recency_on;

/* The coarse regions of a source reported in its last collection: the
 * rate (accesses per page per period) they give the block at addr. */
float tier_heat_coarse_rate(int src, uintptr_t addr);
/* Blocks that push reports touched since the last call (each once),
 * handed to fn; the queue is bounded, and blocks that did not fit are
 * seen when the sweep comes by. */
void tier_heat_drain_touched(void (*fn)(struct tier_mapping *m, uint32_t b, void *ctx), void *ctx);
/* Forget references into a mapping that is being freed. */
void tier_heat_gone(struct tier_mapping *m);

#endif
