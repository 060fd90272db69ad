/* The monitor: which blocks are looked at each period, within the CPU
 * budget, and how what the sources saw becomes per-block heat.
 *
 * Per period the work is bounded by the budget, not by the footprint:
 *   - blocks that push sources reported (a bounded queue) are folded;
 *   - the watch list (blocks that were hot or just moved, bounded) is
 *     visited round-robin, first;
 *   - the sweep visits the cold bulk in registration order, as many blocks
 *     as the rest of the allowance pays for, so every block is visited
 *     once per pass (stats: the last pass's length, the sweep window);
 *   - with a pull source (pagemap), a visit measures the block's armed
 *     slice (what was written since the last visit) and re-arms; the
 *     slice is sized so that a visit finds a few written pages: each cost
 *     the program a write fault.
 * Folding keeps, per source, a moving average of accesses per page per
 * period; heat is their sum less each source's floor (the rate that the
 * coldest tenth of the memory shows it, estimated from sweep visits, an
 * unbiased sample).  Per-tier heat histograms, a cold reservoir of fast
 * blocks and the watch list are kept up to date as blocks are folded, so
 * the policy reads bounded candidate lists and O(buckets) thresholds. */
#ifndef TIER_MONITOR_H
#define TIER_MONITOR_H

#include "heat_hist.h"
#include "policy.h"
#include "registry.h"

/* Heat (accesses per page per period) worth watching, and the level under
 * which a watched block leaves the list again. */
#define TIER_WATCH_IN 0.02f
#define TIER_WATCH_OUT 0.01f
/* Periods a block stays watched after it moved. */
#define TIER_WATCH_MOVED 20

struct tier_monitor_stats {
	_Atomic uint64_t folds, sweep_blocks, watch_visits, passes;
	_Atomic uint64_t allowance_ns, spent_ns; /* the last period's; all periods' */
	_Atomic uint64_t last_pass_periods;   /* length of the last complete sweep pass */
	_Atomic uint64_t pass_blocks;         /* blocks in it */
	_Atomic uint32_t watched, cold;
	_Atomic bool idle;                    /* cheap watch: nothing could move */
	_Atomic uint64_t idle_periods;
	_Atomic uint64_t surprises;           /* measurements far off their block's estimate */
	_Atomic uint64_t surprises_cold;      /* of them, fast-tier blocks found gone cold */
	_Atomic uint64_t short_windows;       /* dense blocks' slices measured over a short window */
	float floor[5];                       /* per source */
};
extern struct tier_monitor_stats tier_monitor_stats;

/* One period: read the push sources, fold what they reported, and visit
 * the watch list (up to half the allowance) and the sweep's next blocks
 * until `allowance_ns` are spent (one visit of each at least, unless the
 * allowance is 0: the budget keeps what was overspent as a debt).  decay: the moving averages' weight per period.
 * Returns what the visits cost: their CPU, and the write faults that the
 * parts armed will cost the program (charged when armed, reconciled with
 * what measuring found), that part also in *faults_ns.  Background
 * thread, balance lock held. */
uint64_t tier_monitor_period(uint32_t period, double decay, uint64_t allowance_ns, uint64_t *faults_ns);
/* Dense blocks' short windows (monitor_int.h): when the first of the
 * slices armed for one is due (CLOCK_MONOTONIC ns; 0: none), and their
 * measure, which the caller runs then (background thread, balance lock
 * held).  What it costs counts in the next period's spending. */
uint64_t tier_monitor_short_at(void);
void tier_monitor_short_measure(void);
/* Cheap watch: sources paused, nothing armed, only the period's bookkeeping. */
void tier_monitor_set_idle(bool idle);
/* A block moved (policy or tier.promote/demote): watch it for a while. */
void tier_monitor_moved(struct tier_mapping *m, uint32_t b, int from, int to);
/* The policy would swap slow block b in on the estimate that ranked it
 * first: restart its estimate, to be judged on the looks after this. */
void tier_monitor_retest(struct tier_mapping *m, uint32_t b);
/* Candidates for the policy: watched blocks and the cold reservoir,
 * movable and not settling (moved within `settle` periods).  Fast ones in
 * fast[], slow ones in slow[]. */
void tier_monitor_candidates(struct tier_cand *fast, size_t fcap, size_t *nfast, struct tier_cand *slow,
                             size_t scap, size_t *nslow, uint32_t period, uint32_t settle, float t_hot,
                             float t_cold);
/* Split blocks give parts instead (TIER_PART_*): their pages elsewhere at
 * least t_hot hot, their pages on the fast tier under t_cold. */
/* Blocks whose heat lies in [lo, hi] (neither clearly hot nor clearly
 * cold) are probed page by page while on (pageheat.h). */
void tier_monitor_probe_band(bool on, float lo, float hi);
/* Surprises since the last call (and forgets them): a fast-tier block
 * found far colder, or a slower-tier block far hotter, than its estimate
 * (tier_heat_surprise).  The change detector's cue that the ranking
 * churned. */
unsigned tier_monitor_churned(void);
/* The policy's heat cut between the tiers (0: everything warm fits the
 * fast tier), and the heat that is clearly above it (tiering.c: the cut
 * times the hysteresis squared): only surprises across that band are
 * churn. */
void tier_monitor_set_cut(float cut, float hot);
/* Whether probes run or blocks wait for one: a gain still to be had. */
bool tier_monitor_probe_pending(void);
/* Drop block b's page-by-page entry (its pages are home and counted so). */
void tier_monitor_unsplit(struct tier_mapping *m, uint32_t b);
/* The histogram of a tier (NULL past the last). */
const struct tier_hist *tier_monitor_hist(int tier);
/* Forget references into a mapping being freed (registry reclaim). */
void tier_monitor_gone(struct tier_mapping *m);
/* In a forked child: nothing armed through the parent's descriptors. */
void tier_monitor_forget(void);

/* Advisor: pages seen accessed within the last `ms` milliseconds (as far
 * as visits saw them; at most the last 64 s). */
uint64_t tier_monitor_seen_pages(uint64_t ms);

#endif
