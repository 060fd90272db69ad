/* The CPU budget of all background work (knob bg_cpu, a share of one
 * core): each period reports what it cost, and the controller answers how
 * much time the monitor may spend looking at blocks in the next one.
 * Pure logic, unit-tested with a model of the costs.
 *
 * Costs are split in two: the scheduled part, which the monitor spends
 * visiting blocks (pull-source calls, the write faults they find, folding)
 * and stops when its allowance is used, and the rest (push sources, their
 * threads and kernel threads, policy, migration), which it cannot cut
 * short.  The allowance is what the budget leaves after the rest (moving
 * averages), and never less than a quarter of the budget, so that every
 * block is still visited, less what the monitor overspent before (a visit
 * cannot be cut short): a debt that periods without visits pay back.  When the rest alone eats most of the budget,
 * the controller asks the push sources to sample less (and more again
 * when there is room). */
#ifndef TIER_BUDGET_H
#define TIER_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct tier_budget {
	double target;          /* share of one core */
	double allowance_ns;    /* what the monitor may spend next period (0: nothing) */
	double debt_ns;         /* what it spent beyond its share, not paid back yet */
	double granted_ns;      /* its share when the allowance was set (debt not deducted) */
	/* moving averages, per period */
	double sched_ns, other_ns, wall_ns;
	double share;           /* measured share of a core (all costs) */
	bool warm;              /* the averages hold data */
	int push_dir;           /* advice to the push sources: -1 less, +1 more, 0 keep */
	unsigned hold;          /* periods until the next push advice may be given */
};

void tier_budget_init(struct tier_budget *b, double target, double period_ns);
/* One period: what the monitor spent (ns), what everything else cost, and
 * the period's wall length (ns). */
void tier_budget_update(struct tier_budget *b, double sched_ns, double other_ns, double wall_ns);
/* The target changed between two periods (a burst began or ended): the
 * next period's allowance follows the new one at once, and what the
 * monitor spends under it is judged against it.  Without this, the first
 * period after a burst spent the burst's allowance, was judged against
 * the base budget, and its debt stopped the monitor for 50 periods (5 s,
 * seen after the GUPS shift in the tiered VM). */
void tier_budget_retarget(struct tier_budget *b, double target);
/* What the monitor may spend in the next period, ns. */
uint64_t tier_budget_allowance(const struct tier_budget *b);

#endif
