/* Large-buffer cache.
 *
 * jemalloc 5.3 sends allocations of at least opt.oversize_threshold
 * (8 MiB) to its huge arena, created with decay times of 0, and, in every
 * arena, purges a freed extent at once when it (coalesced with its free
 * neighbours) reaches the arena's oversize threshold: extent_record's
 * shortcut, taken whatever the decay time unless decay is -1 (never).  So
 * setting the huge arena's dirty_decay_ms alone changes nothing, and a
 * program that allocates, touches and frees 5-25 MiB buffers in a loop
 * faults every page in again at each reuse (jemalloc 1.47M minor faults
 * where glibc takes 89K).
 *
 * Here the huge arena's own threshold (arena.<i>.oversize_threshold) is
 * lifted and its decay set to jemalloc's default, so that freed huge
 * extents stay dirty and are reused.  What jemalloc then holds dirty is
 * bounded here, before each huge allocation (the interposer's size watch
 * sends those to us), so that peak RSS stays near jemalloc's, which is
 * about the peak of live huge memory:
 *   - when no dirty extent can serve the request, the cache is emptied
 *     first: the fresh pages the request takes then come on top of live
 *     memory only, as with jemalloc;
 *   - when dirty plus live huge memory exceeds the peak of live huge
 *     memory (counting each request as live) over the last one to two
 *     seconds by more than the slack (knob large_cache), the cache is
 *     emptied.
 * After a pause the peak is forgotten, so the next huge allocation gives
 * the cache back; while the program allocates huge buffers, jemalloc's
 * decay releases what is not reused.  The check and jemalloc's allocation
 * are one step under the cache's lock (the interposer releases it once
 * jemalloc has served the request): two threads that checked at once
 * would both count on the same dirty extent, and the second would take
 * fresh pages while the cache stayed full (peak RSS 1.18x jemalloc's
 * in one run before).
 *
 * jemalloc bins free extents by page-size class (each class plus the page
 * it adds to large extents for cache-oblivious offsets) and serves a
 * request of usize from the first non-empty bin from usize's own up: the
 * fit test reads the per-class dirty counts
 * (stats.arenas.<i>.extents.<j>.ndirty) from that bin up.  The class
 * index: 4 classes per doubling from 16 KiB, jemalloc's index counting one
 * more class below (measured on 5.3; tests/unit/test_large fails when the
 * fit test misses a reusable extent). */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "large.h"
#include "tier.h"

#define WINDOW_MS 1000
#define NCLASS_MAX 160 /* psz classes searched: past 2^48 */

struct tier_large_stats tier_large_stats;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
__thread bool tier_large_held __attribute__((tls_model("initial-exec")));
static _Atomic bool on;
static unsigned huge;
static size_t lower_bytes, slack_pages;
int tier_large_arena_flags;
static size_t mib_epoch[1], mib_pactive[4], mib_pdirty[4], mib_ndirty[6], mib_purge[3];
/* peak of live huge pages in the current and the previous window */
static size_t peak_cur, peak_prev;
static uint64_t window_start;

bool tier_large_on(void) { return atomic_load_explicit(&on, memory_order_relaxed); }
size_t tier_large_from(void) { return lower_bytes; }

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* jemalloc's index of the smallest page-size class >= bytes (>= 16 KiB) */
static unsigned psz_ceil_index(size_t bytes)
{
	size_t s = tier_align_up(bytes, TIER_PAGE);
	int g = 63 - __builtin_clzl(s);
	size_t step = (size_t)1 << (g - 2);
	size_t k = (s - ((size_t)1 << g) + step - 1) / step;
	return 4 + 4 * (unsigned)(g - 14) + (unsigned)k;
}

static int name_mib(const char *fmt, unsigned a, size_t *mib, size_t len)
{
	char name[96];
	snprintf(name, sizeof(name), fmt, a);
	size_t n = len;
	return mallctlnametomib(name, mib, &n) || n != len ? -1 : 0;
}

int tier_large_setup(unsigned arena, size_t oversize, size_t slack)
{
	if (!slack || !oversize || tier_large_on())
		return 0;
	char name[64];
	/* jemalloc's default decay (10 s) instead of the huge arena's 0 */
	ssize_t decay = 0;
	size_t sz = sizeof(decay);
	if (mallctl("arenas.dirty_decay_ms", &decay, &sz, NULL, 0) || decay <= 0)
		decay = 10000;
	size_t never = (size_t)1 << 62;
	snprintf(name, sizeof(name), "arena.%u.oversize_threshold", arena);
	if (mallctl(name, NULL, NULL, &never, sizeof(never)))
		return -1; /* jemalloc < 5.3: keep its eager purge */
	/* stats.arenas.<i> names resolve only for arenas that the last
	 * "epoch" refresh saw */
	uint64_t epoch = 1;
	if (name_mib("epoch", 0, mib_epoch, 1) ||
	    mallctlbymib(mib_epoch, 1, NULL, NULL, &epoch, sizeof(epoch)) ||
	    name_mib("stats.arenas.%u.pactive", arena, mib_pactive, 4) ||
	    name_mib("stats.arenas.%u.pdirty", arena, mib_pdirty, 4) ||
	    name_mib("stats.arenas.%u.extents.0.ndirty", arena, mib_ndirty, 6) ||
	    name_mib("arena.%u.purge", arena, mib_purge, 3))
		goto undo;
	snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", arena);
	if (mallctl(name, NULL, NULL, &decay, sizeof(decay)))
		goto undo;
	huge = arena;
	/* from 4 MiB: two such buffers freed side by side in a thread arena
	 * coalesce to jemalloc's 8 MiB threshold and are purged at once
	 * there, and outside the bound here (peak RSS 1.2-1.26x jemalloc's
	 * with 5-25 MiB buffers, 0.9x once they came here) */
	lower_bytes = oversize < TIER_LARGE_FROM ? oversize : TIER_LARGE_FROM;
	tier_large_arena_flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
	slack_pages = slack / TIER_PAGE;
	window_start = now_ms();
	atomic_store(&on, true);
	return 0;
undo:
	snprintf(name, sizeof(name), "arena.%u.oversize_threshold", arena);
	mallctl(name, NULL, NULL, &oversize, sizeof(oversize));
	return -1;
}

/* Whether a dirty extent of the huge arena can serve size bytes. */
static bool dirty_fit(size_t size)
{
	size_t usize = nallocx(size, 0);
	if (!usize)
		return false;
	for (unsigned j = psz_ceil_index(usize); j < NCLASS_MAX; j++) {
		size_t n = 0, sz = sizeof(n);
		mib_ndirty[4] = j;
		if (mallctlbymib(mib_ndirty, 6, &n, &sz, NULL, 0))
			return false;
		if (n)
			return true;
	}
	return false;
}

void tier_large_before(size_t size)
{
	/* held: a handler that interrupted this thread's huge allocation
	 * (jemalloc is not re-entrant there either); check nothing */
	if (!tier_large_on() || size < lower_bytes || tier_large_held)
		return;
	pthread_mutex_lock(&lock);
	tier_large_held = true;
	uint64_t epoch = 1;
	size_t active = 0, dirty = 0, sz = sizeof(active);
	if (mallctlbymib(mib_epoch, 1, NULL, NULL, &epoch, sizeof(epoch)) ||
	    mallctlbymib(mib_pactive, 4, &active, &sz, NULL, 0) ||
	    mallctlbymib(mib_pdirty, 4, &dirty, &sz, NULL, 0))
		return; /* held all the same: released after the allocation */
	uint64_t t = now_ms();
	if (t - window_start >= WINDOW_MS) {
		/* a window with no huge allocation at all forgets both */
		peak_prev = t - window_start >= 2 * WINDOW_MS ? 0 : peak_cur;
		peak_cur = 0;
		window_start = t;
	}
	/* live huge memory once this request is served */
	size_t live = active + tier_align_up(size, TIER_PAGE) / TIER_PAGE;
	if (live > peak_cur)
		peak_cur = live;
	size_t peak = peak_cur > peak_prev ? peak_cur : peak_prev;
	atomic_fetch_add_explicit(&tier_large_stats.checks, 1, memory_order_relaxed);
	if (dirty && (active + dirty > peak + slack_pages || !dirty_fit(size))) {
		if (mallctlbymib(mib_purge, 3, NULL, NULL, NULL, 0) == 0) {
			atomic_fetch_add_explicit(&tier_large_stats.purges, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&tier_large_stats.purged, (uint64_t)dirty * TIER_PAGE,
						  memory_order_relaxed);
			dirty = 0;
		}
	}
	atomic_store_explicit(&tier_large_stats.cached, (uint64_t)dirty * TIER_PAGE, memory_order_relaxed);
	/* still held: tier_large_release, after the allocation */
}

void tier_large_release(void)
{
	if (tier_large_held) {
		tier_large_held = false;
		pthread_mutex_unlock(&lock);
	}
}

void tier_large_prefork(void) { pthread_mutex_lock(&lock); }
void tier_large_postfork(void) { pthread_mutex_unlock(&lock); }
