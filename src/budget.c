#include "budget.h"

/* Moving averages over about eight periods: one period's CPU time is
 * noisy (a page-fault burst, a TLB shootdown that waits on a busy CPU). */
#define ALPHA 0.125
/* The scheduled part keeps at least this share of the budget, so that
 * every block is still visited when the rest costs much. */
#define SCHED_MIN_SHARE 0.25
/* Push advice: sample less above this share of the budget for the rest,
 * more below the low mark; then wait before advising again (a source's
 * new rate takes a few periods to show). */
#define PUSH_HIGH 0.75
#define PUSH_LOW 0.3
#define PUSH_HOLD 20
#define DEBT_MAX 50
/* Far over budget: step again sooner. */
#define PUSH_FAR 4.0
#define PUSH_HOLD_FAR 5

static double ewma(double avg, double x) { return avg + ALPHA * (x - avg); }

void tier_budget_init(struct tier_budget *b, double target, double period_ns)
{
	*b = (struct tier_budget){.target = target, .allowance_ns = target * period_ns,
				  .granted_ns = target * period_ns, .wall_ns = period_ns};
}

/* The monitor's share of the budget, what the rest leaves of it, and its
 * allowance for the next period: that share less the debt. */
static void grant(struct tier_budget *b)
{
	double budget = b->target * b->wall_ns;
	double share = budget - b->other_ns;
	if (share < SCHED_MIN_SHARE * budget)
		share = SCHED_MIN_SHARE * budget;
	/* one burst (a probed block, armed whole, turning hot costs a fault on
	 * each of its pages) stops the monitor for DEBT_MAX periods at most */
	if (b->debt_ns > DEBT_MAX * share)
		b->debt_ns = DEBT_MAX * share;
	b->granted_ns = share;
	b->allowance_ns = share > b->debt_ns ? share - b->debt_ns : 0;
}

void tier_budget_retarget(struct tier_budget *b, double target)
{
	b->target = target;
	if (b->warm)
		grant(b);
	else
		b->granted_ns = b->allowance_ns = target * b->wall_ns;
}

void tier_budget_update(struct tier_budget *b, double sched_ns, double other_ns, double wall_ns)
{
	if (wall_ns <= 0)
		return;
	if (!b->warm) {
		b->sched_ns = sched_ns;
		b->other_ns = other_ns;
		b->wall_ns = wall_ns;
		b->warm = true;
	} else {
		b->sched_ns = ewma(b->sched_ns, sched_ns);
		b->other_ns = ewma(b->other_ns, other_ns);
		b->wall_ns = ewma(b->wall_ns, wall_ns);
	}
	b->share = (b->sched_ns + b->other_ns) / b->wall_ns;
	/* a visit cannot be cut short: what the monitor spent beyond what it
	 * was allowed is paid back by the next periods */
	b->debt_ns += sched_ns - b->granted_ns;
	if (b->debt_ns < 0)
		b->debt_ns = 0;
	grant(b);
	double budget = b->target * b->wall_ns;

	b->push_dir = 0;
	if (b->hold) {
		b->hold--;
		return;
	}
	if (b->other_ns > PUSH_HIGH * budget)
		b->push_dir = -1;
	else if (b->other_ns < PUSH_LOW * budget && b->share < b->target)
		b->push_dir = 1;
	if (b->push_dir)
		b->hold = b->other_ns > PUSH_FAR * budget ? PUSH_HOLD_FAR : PUSH_HOLD;
}

uint64_t tier_budget_allowance(const struct tier_budget *b)
{
	return (uint64_t)b->allowance_ns;
}
