/* Re-entry into the allocator on one thread: a signal handler that calls
 * the malloc family while the code it interrupted is inside jemalloc (whose
 * locks and per-thread caches are not re-entrant).  Every path into
 * jemalloc from a program thread marks the thread inside (depth); a call
 * that finds the mark is served from the re-entry pool (sigpool.h), and a
 * free of a jemalloc block is deferred to a per-thread list, freed by the
 * thread's next allocation.  Per-thread state, initial-exec TLS: no
 * allocation, and signal-safe to read. */
#ifndef TIER_REENTRY_H
#define TIER_REENTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tier_reentry {
	/* inside jemalloc: a handler's call must not enter it.  A byte,
	 * stored and loaded at one width (a wider load after a narrower
	 * store would stall on store forwarding). */
	uint8_t inside;
	/* jemalloc blocks freed by a handler, drained by the next call */
	void *_Atomic deferred;
};
extern __thread struct tier_reentry tier_re __attribute__((tls_model("initial-exec")));

/* The marking is armed by the signal_safe knob at boot, never disarmed
 * (pool blocks may then exist); unarmed, the malloc family forwards to
 * jemalloc as if this file did not exist (the mark costs about 2 ns a
 * call: jemalloc can no longer be tail-called). */
extern bool tier_reentry_armed;
#define TIER_REENTRY_ARMED (__atomic_load_n(&tier_reentry_armed, __ATOMIC_RELAXED))

/* Counters for stats (relaxed atomics). */
struct tier_reentry_stats {
	_Atomic uint64_t deferred_frees; /* handler frees of jemalloc blocks, freed later */
	_Atomic uint64_t refused;        /* realloc / malloc_usable_size of a jemalloc block
					  * from a handler: ENOMEM / 0, jemalloc untouched */
};
extern struct tier_reentry_stats tier_reentry_stats;

/* Free what handlers deferred on this thread (not from a handler). */
void tier_reentry_drain(void);
/* Free p (a jemalloc block) at this thread's next allocation. */
void tier_reentry_defer(void *p);

/* For paths into jemalloc other than the malloc family (arena setup,
 * tier_malloc, boot), which may run inside a malloc call: the previous
 * mark is restored on leaving. */
static inline uint8_t tier_reentry_enter(void)
{
	uint8_t was = tier_re.inside;
	tier_re.inside = 1;
	atomic_signal_fence(memory_order_seq_cst);
	return was;
}

static inline void tier_reentry_leave(uint8_t was)
{
	atomic_signal_fence(memory_order_seq_cst);
	tier_re.inside = was;
}

#endif
