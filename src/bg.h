/* The background thread: every period_ms, or earlier on a burst of
 * reports, monitor, decide, migrate, within the CPU budget (bg_cpu). */
#ifndef TIER_BG_H
#define TIER_BG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One period as the steps see it: bg.c fills the inputs, the monitor step
 * says what the budget's allowance bought. */
struct tier_bg_round {
	uint32_t period;      /* counts the periods that tracked */
	double decay;         /* heat decay over this period */
	uint64_t allowance_ns; /* what the monitor may spend (the budget's scheduled part) */
	bool idle;            /* nothing could move for a while: the cheap watch */
	uint64_t sched_ns;    /* out: what the allowance bought */
	uint64_t fault_ns;    /* out: write faults charged to the program */
};

/* A step of the period's pipeline: collect and monitor, job, balance,
 * publish.  Steps run in the order they were added; consecutive steps
 * flagged locked run under one hold of the balance lock (tiering.h). */
struct tier_bg_step {
	const char *name;
	void (*run)(struct tier_bg_round *r);
	unsigned flags;
	void (*stop)(void);   /* optional: the thread stops (after the sources) */
};
#define TIER_BG_LOCKED 1u /* under the balance lock */
#define TIER_BG_ALWAYS 2u /* also in periods that track nothing (the channel) */

/* Before tier_bg_start: append steps to the pipeline (at most 16 in all).
 * The thread knows nothing of what a step does. */
void tier_bg_add_steps(const struct tier_bg_step *steps, size_t n);

/* Start the thread when tiering is active or advise is on; idempotent. */
void tier_bg_start(void);
/* Stop it (exit): sources are stopped, the thread joined. */
void tier_bg_stop(void);
/* Wake it now (a knob changed). */
void tier_bg_kick(void);
/* In a forked child, after jemalloc's own fork handler (and the steps'
 * own child handlers, init.c): the parent's thread does not exist here;
 * start a fresh one. */
void tier_bg_after_fork_child(void);

#define TIER_BG_HIST 80 /* per-period cost: quarter octaves from 1 us */

struct tier_bg_stats {
	_Atomic bool running;
	_Atomic uint64_t periods;
	_Atomic uint64_t early_wakeups; /* woken by a burst of reports */
	_Atomic uint64_t cpu_ns;        /* CPU time: this thread and the sources' threads */
	_Atomic uint64_t kernel_ns;     /* our share of kernel threads working for us (kdamond) */
	_Atomic uint64_t fault_ns;      /* faults we made the program's threads take (estimated) */
	_Atomic uint64_t started_ns;    /* CLOCK_MONOTONIC at start */
	_Atomic long tid;
	_Atomic double share;           /* all of the above, share of a core, recent average */
	_Atomic bool burst;             /* a burst runs now (bg_cpu_burst applies) */
	_Atomic uint64_t bursts;        /* bursts started */
	_Atomic uint64_t burst_ms;      /* time spent in bursts */
	_Atomic uint64_t period_cost[TIER_BG_HIST]; /* periods by their total cost */
	/* the same, outside bursts: a burst may spend bg_cpu_burst a period by
	 * design, so steady-state lightness is read here */
	_Atomic uint64_t steady_cost[TIER_BG_HIST];
	_Atomic uint64_t period_wall[TIER_BG_HIST]; /* periods by the wall time of their work */
};
extern struct tier_bg_stats tier_bg_stats;


/* The q-quantile (0..1) of a per-period histogram, ns (upper bucket bound). */
uint64_t tier_bg_quantile(_Atomic uint64_t *hist, double q);

#endif
