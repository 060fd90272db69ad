/* The CPU budget controller against a model of the costs: 100 ms periods,
 * a monitor that spends what it is allowed (visits cannot be cut short:
 * it may overshoot by one visit), and other costs it cannot cut. */
#include <math.h>

#include "../tap.h"
#include "budget.h"

#define PERIOD_NS 100e6

/* The monitor: visits of visit_ns each while the allowance lasts (one at
 * least, when there is any allowance). */
static double spend(double allowance, double visit_ns)
{
	if (allowance <= 0)
		return 0;
	double s = visit_ns;
	while (s < allowance)
		s += visit_ns;
	return s;
}

static double run(struct tier_budget *b, double other_ns, double visit_ns, int n)
{
	double total = 0;
	for (int i = 0; i < n; i++) {
		double s = spend((double)tier_budget_allowance(b), visit_ns);
		tier_budget_update(b, s, other_ns, PERIOD_NS);
		total += s + other_ns;
	}
	return total / (n * PERIOD_NS);
}

static int near(double x, double want, double tol) { return fabs(x - want) <= tol * want; }

int main(void)
{
	struct tier_budget b;
	/* 1% of a core = 1 ms per 100 ms period; 200 us of other costs */
	tier_budget_init(&b, 0.01, PERIOD_NS);
	run(&b, 200e3, 50e3, 50);
	double share = run(&b, 200e3, 50e3, 100);
	ok(near(share, 0.01, 0.1), "spends the budget: %.4f of a core (budget 0.01)", share);
	ok(near((double)tier_budget_allowance(&b), 800e3, 0.1), "the monitor gets what the rest leaves: %.0f us",
	   (double)tier_budget_allowance(&b) / 1e3);

	/* visits that cost more than the allowance: overspending is paid back
	 * by periods without visits */
	share = run(&b, 200e3, 1.5e6, 200);
	ok(near(share, 0.01, 0.1), "visits of 1.5 ms each: %.4f of a core (budget 0.01)", share);
	share = run(&b, 200e3, 25e6, 500);
	ok(near(share, 0.01, 0.15), "visits of 25 ms each: %.4f of a core (budget 0.01)", share);

	/* bg_cpu changed at run time */
	b.target = 0.05;
	run(&b, 200e3, 50e3, 50);
	share = run(&b, 200e3, 50e3, 100);
	ok(near(share, 0.05, 0.1), "bg_cpu 5%%: %.4f of a core", share);
	b.target = 0.01;

	/* the rest alone eats the budget: the monitor keeps a quarter (the
	 * sweep must go on), and the push sources are told to sample less,
	 * not every period */
	struct tier_budget d;
	tier_budget_init(&d, 0.01, PERIOD_NS);
	int less = 0, more = 0;
	for (int i = 0; i < 100; i++) {
		double s = spend((double)tier_budget_allowance(&d), 10e3);
		tier_budget_update(&d, s, 2e6, PERIOD_NS);
		less += d.push_dir < 0;
		more += d.push_dir > 0;
	}
	ok(near((double)tier_budget_allowance(&d), 250e3, 0.1),
	   "others over budget: the monitor keeps a quarter: %.0f us (want 250)",
	   (double)tier_budget_allowance(&d) / 1e3);
	ok(less >= 3 && less <= 6 && more == 0, "push sources asked to sample less %d times in 100 periods", less);
	struct tier_budget f;
	tier_budget_init(&f, 0.01, PERIOD_NS);
	less = 0;
	for (int i = 0; i < 100; i++) {
		tier_budget_update(&f, 0, 10e6, PERIOD_NS);
		less += f.push_dir < 0;
	}
	ok(less >= 15, "ten times over budget: the push sources are told sooner (%d times in 100 periods)", less);

	/* room to spare: push sources may sample more again */
	more = 0;
	for (int i = 0; i < 100; i++) {
		tier_budget_update(&d, 100e3, 10e3, PERIOD_NS);
		more += d.push_dir > 0;
	}
	ok(more >= 3, "well under budget: push sources asked to sample more (%d times)", more);

	/* a zero-length period changes nothing */
	struct tier_budget e;
	tier_budget_init(&e, 0.01, PERIOD_NS);
	tier_budget_update(&e, 0, 0, 0);
	ok(!e.warm && tier_budget_allowance(&e) == 1000000, "zero wall time ignored; first allowance %llu ns",
	   (unsigned long long)tier_budget_allowance(&e));
	tier_budget_update(&e, 0, 0, PERIOD_NS);
	ok(tier_budget_allowance(&e) == 1000000 && isfinite(e.share),
	   "nothing spent: the whole budget is the monitor's (%llu ns)",
	   (unsigned long long)tier_budget_allowance(&e));

	/* a burst ends: 30% -> 1%.  The next period's allowance follows the
	 * new target at once, and the monitor is not left owing what it spent
	 * under the burst's (before retargeting: 0 for 50 periods, 5 s) */
	struct tier_budget g;
	tier_budget_init(&g, 0.3, PERIOD_NS);
	run(&g, 1e6, 500e3, 30);
	double in_burst = (double)tier_budget_allowance(&g);
	tier_budget_retarget(&g, 0.01);
	double after = (double)tier_budget_allowance(&g);
	ok(in_burst > 20e6 && after > 0 && after <= 1e6,
	   "burst over: the allowance follows the new target at once (%.1f ms -> %.0f us)", in_burst / 1e6, after / 1e3);
	int zero = 0;
	double rest = 1e6;
	for (int i = 0; i < 20; i++) {
		double s2 = spend((double)tier_budget_allowance(&g), 50e3);
		rest *= 0.875; /* the burst's other costs die away */
		tier_budget_update(&g, s2, rest, PERIOD_NS);
		zero += tier_budget_allowance(&g) == 0;
	}
	ok(zero <= 2 && g.debt_ns < 100e3, "after the burst the monitor keeps visiting: %d periods of 20 with nothing, debt %.0f us",
	   zero, g.debt_ns / 1e3);
	/* and a burst that begins gives its allowance at once */
	tier_budget_retarget(&g, 0.3);
	ok(tier_budget_allowance(&g) > 20e6, "burst begins: %.1f ms at once", (double)tier_budget_allowance(&g) / 1e6);
	return done();
}
