/* Re-entry into the allocator on one thread: a signal handler that calls
 * the malloc family while the code it interrupted is inside jemalloc (whose
 * locks and per-thread caches are not re-entrant).  Every path into
 * jemalloc from a program thread marks the thread inside (depth); a call
 * that finds the mark is served from the re-entry pool (sigpool.h), and a
 * free of a jemalloc block is deferred to a per-thread list, freed when
 * the outermost call leaves.  Per-thread state, initial-exec TLS: no
 * allocation, and signal-safe to read. */
#ifndef TIER_REENTRY_H
#define TIER_REENTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tier_reentry {
	/* calls into jemalloc in progress on this thread; a handler's own
	 * calls leave it as they found it, so plain increments are safe */
	unsigned depth;
	void *_Atomic deferred; /* jemalloc blocks freed by a handler */
};
extern __thread struct tier_reentry tier_re __attribute__((tls_model("initial-exec")));

/* Counters for stats (relaxed atomics). */
struct tier_reentry_stats {
	_Atomic uint64_t deferred_frees; /* handler frees of jemalloc blocks, freed later */
	_Atomic uint64_t refused;        /* realloc / malloc_usable_size of a jemalloc block
					  * from a handler: ENOMEM / 0, jemalloc untouched */
};
extern struct tier_reentry_stats tier_reentry_stats;

void tier_reentry_drain(void);
/* Free p (a jemalloc block) once this thread leaves the allocator. */
void tier_reentry_defer(void *p);

static inline bool tier_reentered(void) { return tier_re.depth != 0; }

static inline void tier_reentry_enter(void)
{
	tier_re.depth++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void tier_reentry_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (--tier_re.depth == 0) {
		atomic_signal_fence(memory_order_seq_cst);
		if (__builtin_expect(atomic_load_explicit(&tier_re.deferred, memory_order_relaxed) != 0, 0))
			tier_reentry_drain();
	}
}

#endif
