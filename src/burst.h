/* Bursts: the budget follows the benefit.  At steady state background work
 * spends bg_cpu; when the change detector sees something to gain (hot
 * memory found on the slow tier, moves the policy wants, the fast tier's
 * hit share falling, or tracking just started and nothing is known yet),
 * it may spend bg_cpu_burst for BURST_MS, extended while the gain lasts.
 * Burst time is paid from a bank that fills at TIER_BURST_EARN seconds a
 * second at the steady budget, so a workload that churns forever costs at
 * most about bg_cpu + EARN/(1+EARN) x bg_cpu_burst, and one that settles
 * costs bg_cpu (the first burst, tracking's start, is paid apart: one bank
 * more in a process's life).  Pure logic, unit-tested. */
#ifndef TIER_BURST_H
#define TIER_BURST_H

#include <stdbool.h>
#include <stdint.h>

#define TIER_BURST_MS 2000.0
#define TIER_BURST_EARN 0.2
#define TIER_BURST_BANK_MS 6000.0
#define TIER_BURST_START_MS 1000.0
/* A cue that finds the bank short of TIER_BURST_START_MS waits this long
 * for it.  Dropped, the cue was lost for good: the blocks a moved hot set
 * left cue once (their estimate then reads cold), and on GUPS at the
 * default a shift cued 0.5 s after it, while the bank still refilled from
 * a start-up burst that had spent it all, was never followed (2 runs of
 * 10 over 12 s). */
#define TIER_BURST_HOLD_MS 8000.0
/* The first burst (tracking starts knowing nothing) is paid by its own
 * allowance of TIER_BURST_BANK_MS, not from the bank: GUPS at the default
 * spent 5-6 s of the 6 s bank placing its first hot set under TCG, and a
 * shift 12 s later found the bank short (0.2 s earned a second). */

struct tier_burst {
	double bank_ms;     /* burst time available */
	uint64_t until_ns;  /* the burst runs until then (0: none) */
	uint64_t last_ns;   /* the previous step */
	uint64_t held_ns;   /* a cue waits for the bank until then (0: none) */
	bool active;
	uint64_t bursts;    /* bursts started */
	double burst_ms;    /* time spent in bursts */
	uint64_t held;      /* bursts started by a cue that had waited for the bank */
};

void tier_burst_init(struct tier_burst *b, uint64_t now_ns);
/* One period at now_ns: gain says whether the detector sees something to
 * gain.  Returns the budget to apply (base, or burst while one runs) and
 * sets *started when a burst begins now (the caller forgives the debt the
 * steady budget ran up: a burst is meant to look, not to pay back). */
double tier_burst_step(struct tier_burst *b, uint64_t now_ns, bool gain, double base, double burst,
		       bool *started);

#endif
