/* Deferred frees of re-entrant calls (reentry.h). */
#define _GNU_SOURCE
#include <errno.h>

#include "../preload/jemalloc_api.h"
#include "thread.h"
#include "reentry.h"

__thread struct tier_reentry tier_re __attribute__((tls_model("initial-exec")));
struct tier_reentry_stats tier_reentry_stats;
bool tier_reentry_armed;

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
	/* the thread's next allocation takes the slow path, which drains
	 * (1: no real threshold is that low; 0, a thread that has not
	 * allocated yet, takes it anyway and must stay 0 to be set up) */
	if (tier_tls_watch)
		tier_tls_watch = 1;
}

/* Marked inside while it frees (the mark restored after), so that a
 * handler's frees meanwhile are deferred again, for the next call. */
void tier_reentry_drain(void)
{
	int saved = errno;
	uint8_t was = tier_reentry_enter();
	void *p = atomic_exchange_explicit(&tier_re.deferred, NULL, memory_order_relaxed);
	while (p) {
		void *next = *(void **)p;
		dallocx(p, 0);
		p = next;
	}
	tier_reentry_leave(was);
	errno = saved;
}
