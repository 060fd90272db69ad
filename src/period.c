/* The period's steps: each a thin call into the module that owns the
 * work, in the order the background thread runs them. */
#include "advise.h"
#include "heat.h"
#include "job.h"
#include "monitor.h"
#include "period.h"
#include "registry.h"
#include "tiering.h"

static void monitor_step(struct tier_bg_round *r)
{
	tier_monitor_set_idle(r->idle);
	r->sched_ns = tier_monitor_period(r->period, r->decay, r->allowance_ns, &r->fault_ns);
}

/* the job's share of the budget sets this period's fast_limit */
static void job_step(struct tier_bg_round *r)
{
	(void)r;
	tier_job_period();
}

static void balance_step(struct tier_bg_round *r)
{
	tier_balance(r->period);
}

static void gone(struct tier_mapping *m, void *ctx)
{
	(void)ctx;
	tier_heat_gone(m);
	tier_monitor_gone(m);
	tier_balance_gone(m);
}

static void reclaim_step(struct tier_bg_round *r)
{
	(void)r;
	tier_registry_reclaim(gone, NULL);
}

static void advise_step(struct tier_bg_round *r)
{
	(void)r;
	tier_advise_tick(false);
}

static void advise_final(void)
{
	tier_advise_tick(true);
}

/* outside the balance lock: a request may move memory */
static void requests_step(struct tier_bg_round *r)
{
	(void)r;
	tier_job_requests();
}

const struct tier_bg_step tier_period_steps[] = {
	{"monitor", monitor_step, TIER_BG_LOCKED, NULL},
	{"job", job_step, TIER_BG_LOCKED, NULL},
	{"balance", balance_step, TIER_BG_LOCKED, NULL},
	{"reclaim", reclaim_step, 0, NULL},
	{"advise", advise_step, 0, advise_final},
	{"job requests", requests_step, 0, NULL},
};
const size_t tier_period_nsteps = sizeof(tier_period_steps) / sizeof(tier_period_steps[0]);
