/* The background thread: every period_ms, or earlier on a burst of
 * reports, collect heat, decide, migrate. */
#ifndef TIER_BG_H
#define TIER_BG_H

#include <stdbool.h>
#include <stdint.h>

/* Start the thread when tiering is active; idempotent. */
void tier_bg_start(void);
/* Stop it (exit): sources are stopped, the thread joined. */
void tier_bg_stop(void);
/* Wake it now (a knob changed). */
void tier_bg_kick(void);
/* In a forked child, after jemalloc's own fork handler: the parent's
 * thread does not exist here; start a fresh one. */
void tier_bg_after_fork_child(void);

struct tier_bg_stats {
	_Atomic bool running;
	_Atomic uint64_t periods;
	_Atomic uint64_t early_wakeups; /* woken by a burst of reports */
	_Atomic uint64_t cpu_ns;        /* CPU time: this thread and the sources' threads */
	_Atomic uint64_t started_ns;    /* CLOCK_MONOTONIC at start */
	_Atomic long tid;
};
extern struct tier_bg_stats tier_bg_stats;

#endif
