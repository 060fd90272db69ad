/* Deferred frees of re-entrant calls (reentry.h). */
#define _GNU_SOURCE
#include <errno.h>

#include "../preload/jemalloc_api.h"
#include "reentry.h"

__thread struct tier_reentry tier_re __attribute__((tls_model("initial-exec")));
struct tier_reentry_stats tier_reentry_stats;

/* A handler can interrupt another handler's push: compare-and-swap, a
 * single instruction against the thread's own interruptions. */
void tier_reentry_defer(void *p)
{
	void *h = atomic_load_explicit(&tier_re.deferred, memory_order_relaxed);
	do
		*(void **)p = h;
	while (!atomic_compare_exchange_weak_explicit(&tier_re.deferred, &h, p, memory_order_relaxed,
						      memory_order_relaxed));
	atomic_fetch_add_explicit(&tier_reentry_stats.deferred_frees, 1, memory_order_relaxed);
}

/* Called by the outermost call as it leaves (depth 0): free the list,
 * marked inside again so that a handler's frees meanwhile are deferred
 * too, until none is left. */
void tier_reentry_drain(void)
{
	int saved = errno;
	do {
		tier_re.depth = 1;
		atomic_signal_fence(memory_order_seq_cst);
		void *p;
		while ((p = atomic_exchange_explicit(&tier_re.deferred, NULL, memory_order_relaxed)))
			while (p) {
				void *next = *(void **)p;
				dallocx(p, 0);
				p = next;
			}
		atomic_signal_fence(memory_order_seq_cst);
		tier_re.depth = 0;
		atomic_signal_fence(memory_order_seq_cst);
	} while (atomic_load_explicit(&tier_re.deferred, memory_order_relaxed));
	errno = saved;
}
