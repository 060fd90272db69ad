/* What the background thread does each period, as its pipeline of steps
 * (bg.h): monitor (the sources' samples, collected and applied), the job's
 * budget share, balance (plan and migrate), then outside the balance
 * lock: reclaim, the advisor, the job's requests.  To add work to the
 * period, add a step here; bg.c runs steps and keeps the CPU budget. */
#ifndef TIER_PERIOD_H
#define TIER_PERIOD_H

#include "bg.h"

extern const struct tier_bg_step tier_period_steps[];
extern const size_t tier_period_nsteps;

#endif
