/* Bursts: the budget follows the benefit.  At steady state background work
 * spends bg_cpu; when the change detector sees something to gain (hot
 * memory found on the slow tier, moves the policy wants, the fast tier's
 * hit share falling, or tracking just started and nothing is known yet),
 * it may spend bg_cpu_burst for BURST_MS, extended while the gain lasts.
 * Burst time is paid from a bank that fills at TIER_BURST_EARN seconds a
 * second at the steady budget, so a workload that churns forever costs at
 * most about bg_cpu + EARN/(1+EARN) x bg_cpu_burst, and one that settles
 * costs bg_cpu.  Pure logic, unit-tested. */
#ifndef TIER_BURST_H
#define TIER_BURST_H

#include <stdbool.h>
#include <stdint.h>

#define TIER_BURST_MS 2000.0
#define TIER_BURST_EARN 0.2
#define TIER_BURST_BANK_MS 6000.0
#define TIER_BURST_START_MS 1000.0

struct tier_burst {
	double bank_ms;     /* burst time available */
	uint64_t until_ns;  /* the burst runs until then (0: none) */
	uint64_t last_ns;   /* the previous step */
	bool active;
	uint64_t bursts;    /* bursts started */
	double burst_ms;    /* time spent in bursts */
};

void tier_burst_init(struct tier_burst *b, uint64_t now_ns);
/* One period at now_ns: gain says whether the detector sees something to
 * gain.  Returns the budget to apply (base, or burst while one runs) and
 * sets *started when a burst begins now (the caller forgives the debt the
 * steady budget ran up: a burst is meant to look, not to pay back). */
double tier_burst_step(struct tier_burst *b, uint64_t now_ns, bool gain, double base, double burst,
		       bool *started);

#endif
