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
 * sends those to us), in resident pages: the process's RSS once the
 * request is touched may pass the peak of its live memory (RSS less every
 * arena's dirty pages, the request counted) by no more than the slack
 * (knob large_cache).  Past it, the cache is cut down to what the bound
 * leaves, the largest held extents kept (trim), never emptied for want
 * of one that fits: jemalloc splits a larger one, and coalesces them as
 * they are freed.  The peak is that of the last one to two seconds, an
 * older one fading by an eighth a second while huge allocations go on,
 * so the room that live memory's swings leave stays held for reuse
 * (random 5-25 MiB buffers: 0.36M minor faults, 1.2M when any request
 * that found no held extent emptied the cache; peak RSS <= jemalloc's,
 * which holds about the peak of live memory).
 * With buffers of mixed sizes, the held extents are often each smaller
 * than the next request, which jemalloc then serves with fresh pages: the
 * pages of held extents are moved into it instead (large_move.c), in
 * whole 2 MiB granules, so that its touch faults only what the cache
 * lacks and the edges (random 5-25 MiB buffers: 146K minor faults, 302K
 * before; glibc 182K).  jemalloc then counts the extents moved out as
 * dirty: the estimate of live memory leaves them out (hollow).
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
 * request of usize from the first non-empty bin from usize's own up: trim
 * reads the per-class dirty counts (stats.arenas.<i>.extents.<j>.ndirty)
 * from the top down and takes class j-1 from a bin j.  The class index: 4
 * classes per doubling from 16 KiB, jemalloc's index counting one more
 * class below (measured on 5.3). */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "large.h"
#include "large_move.h"
#include "tier.h"

#define WINDOW_MS 1000
#define NCLASS_MAX 160 /* psz classes searched: past 2^48 */

struct tier_large_stats tier_large_stats;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
__thread bool tier_large_held __attribute__((tls_model("initial-exec")));
static _Atomic bool on;
static _Atomic bool moves_off;
static unsigned huge;
static size_t lower_bytes, slack_pages;
int tier_large_arena_flags;
/* the same unaligned, for what the cache takes itself: an aligned request
 * may not fit the held extent it was meant for */
static int own_flags;
static size_t mib_epoch[1], mib_pactive[4], mib_pdirty[4], mib_pdirty_all[4], mib_ndirty[6], mib_purge[3];
/* peak of live huge pages in the current and the previous window */
static size_t peak_cur, peak_prev;
static uint64_t window_start;
/* the check of the allocation in progress (under the lock): RSS before it
 * (other threads' buffers counted touched), and the bound */
static size_t pend_rss, pend_bound, pend_dirty, pend_active, pend_others;
static bool pend_checked;
/* pages of the huge arena's dirty extents that were moved out (not
 * resident), as far as known: what jemalloc served since, and a purge of
 * the arena, took them out */
static size_t hollow;
/* the page jemalloc adds to each large extent (opt.cache_oblivious) */
static size_t large_pad = 1;
/* Buffers served with pages not yet resident, each thread's latest (under
 * the lock): the program's touch adds those pages to RSS after their
 * check, while other threads are checked.  Each check counts them as
 * resident, so that the bound holds once they are touched.  (Without:
 * 4 threads churning 5-24 MiB buffers in the TCG guest, where touching
 * one takes tens of ms, each check read RSS without the other threads'
 * untouched buffers, the cache held up to their size more than the bound
 * left, and peak RSS passed it by 3-19 MiB in 6 of 30 runs.)  One is
 * forgotten once touched, at its thread's next check, or after a window
 * (a thread that freed it untouched and allocates no more). */
#define AHEAD_MAX 32
static struct ahead {
	const void *p;
	size_t size;
	pthread_t owner;
	uint64_t at;
} ahead[AHEAD_MAX];
static int nahead;

bool tier_large_on(void) { return atomic_load_explicit(&on, memory_order_relaxed); }
void tier_large_no_moves(void) { atomic_store(&moves_off, true); }
size_t tier_large_from(void) { return lower_bytes; }

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The process's resident pages (/proc/self/statm), or 0.  No malloc:
 * read(2) into a stack buffer. */
static size_t resident_pages(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *c = buf;
	while (*c && *c != ' ') /* size, then resident */
		c++;
	size_t r = 0;
	while (*c == ' ')
		c++;
	for (; *c >= '0' && *c <= '9'; c++)
		r = r * 10 + (size_t)(*c - '0');
	return r * ((size_t)sysconf(_SC_PAGESIZE) / TIER_PAGE);
}

/* jemalloc's index of the smallest page-size class >= bytes (>= 16 KiB) */
static unsigned psz_ceil_index(size_t bytes)
{
	size_t s = tier_align_up(bytes, TIER_PAGE);
	if (s < (size_t)16 << 10) /* also 0: no dirty bytes (clz(0) is undefined) */
		s = (size_t)16 << 10;
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
	    name_mib("stats.arenas.%u.pdirty", MALLCTL_ARENAS_ALL, mib_pdirty_all, 4) ||
	    name_mib("stats.arenas.%u.extents.0.ndirty", arena, mib_ndirty, 6) ||
	    name_mib("arena.%u.purge", arena, mib_purge, 3))
		goto undo;
	snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", arena);
	if (mallctl(name, NULL, NULL, &decay, sizeof(decay)))
		goto undo;
	huge = arena;
	bool oblivious = true;
	sz = sizeof(oblivious);
	if (mallctl("opt.cache_oblivious", &oblivious, &sz, NULL, 0) == 0)
		large_pad = oblivious;
	/* from 4 MiB: two such buffers freed side by side in a thread arena
	 * coalesce to jemalloc's 8 MiB threshold and are purged at once
	 * there, and outside the bound here (peak RSS 1.2-1.26x jemalloc's
	 * with 5-25 MiB buffers, 0.9x once they came here) */
	lower_bytes = oversize < TIER_LARGE_FROM ? oversize : TIER_LARGE_FROM;
	/* granule-aligned: whole granules to move in, and out once freed
	 * (big-random: 147K faults, 172K unaligned) */
	own_flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
	tier_large_arena_flags = own_flags | MALLOCX_ALIGN(TIER_MOVE_GRAIN);
	slack_pages = slack / TIER_PAGE;
	window_start = now_ms();
	atomic_store(&on, true);
	return 0;
undo:
	snprintf(name, sizeof(name), "arena.%u.oversize_threshold", arena);
	mallctl(name, NULL, NULL, &oversize, sizeof(oversize));
	return -1;
}

/* The size of jemalloc's page-size class j (j >= 4: from 16 KiB). */
static size_t psz_class(unsigned j)
{
	unsigned g = 14 + (j - 4) / 4, k = (j - 4) % 4;
	return ((size_t)1 << g) + (size_t)k * ((size_t)1 << (g - 2));
}

/* Dirty extents of the huge arena in class j (mib_ndirty set up). */
static size_t ndirty_in(unsigned j)
{
	size_t n = 0, sz = sizeof(n);
	mib_ndirty[4] = j;
	return mallctlbymib(mib_ndirty, 6, &n, &sz, NULL, 0) ? 0 : n;
}

/* The largest class j' <= j with dirty extents, or 5 if none (below the
 * classes of huge extents). */
static unsigned dirty_bin(unsigned j)
{
	while (j > 5 && !ndirty_in(j))
		j--;
	return j;
}

/* The bin above the huge arena's dirty bytes (no extent is larger). */
static unsigned top_bin(size_t dirty)
{
	unsigned j = psz_ceil_index(dirty) + 1;
	return j < NCLASS_MAX ? j : NCLASS_MAX - 1;
}

/* Pages of [p, p + bytes) not resident: what touching them adds to RSS. */
static size_t absent_pages(const void *p, size_t bytes)
{
	unsigned char vec[4096];
	uintptr_t a = tier_align_down((uintptr_t)p, TIER_PAGE);
	uintptr_t end = tier_align_up((uintptr_t)p + bytes, TIER_PAGE);
	size_t absent = 0;
	while (a < end) {
		size_t n = (end - a) / TIER_PAGE < sizeof(vec) ? (end - a) / TIER_PAGE : sizeof(vec);
		if (mincore((void *)a, n * TIER_PAGE, vec))
			return (end - a) / TIER_PAGE + absent; /* count the rest absent */
		for (size_t i = 0; i < n; i++)
			absent += !(vec[i] & 1);
		a += n * TIER_PAGE;
	}
	return absent;
}

/* Pages of the buffers served to other threads and not touched yet,
 * forgetting the calling thread's (it has moved on), the touched and the
 * old ones (lock held). */
static size_t ahead_pages(uint64_t t)
{
	size_t pages = 0;
	pthread_t self = pthread_self();
	for (int i = 0; i < nahead;) {
		size_t absent = 0;
		if (!pthread_equal(ahead[i].owner, self) && t - ahead[i].at < WINDOW_MS)
			absent = absent_pages(ahead[i].p, ahead[i].size);
		if (!absent) {
			ahead[i] = ahead[--nahead];
			continue;
		}
		pages += absent;
		i++;
	}
	return pages;
}

/* The buffer just served to this thread, absent pages not resident yet
 * (lock held; its thread's earlier one was forgotten at its check). */
static void ahead_add(const void *p, size_t size, size_t absent, uint64_t t)
{
	if (!absent)
		return;
	int i = nahead;
	if (nahead < AHEAD_MAX)
		nahead++;
	else /* full: the oldest goes */
		for (int j = i = 0; j < AHEAD_MAX; j++)
			if (ahead[j].at < ahead[i].at)
				i = j;
	ahead[i] = (struct ahead){p, size, pthread_self(), t};
}

/* Cut the cache down to keep bytes, the largest extents kept.  jemalloc
 * purges only all of an arena's dirty memory (arena.<i>.purge), so what
 * is kept is taken out first: allocated from the largest dirty extents,
 * untouched (first fit splits an extent; its tail is purged), the rest
 * purged, and those put back, still dirty.  Returns the bytes purged. */
#define KEEP_MAX 32
static size_t trim(size_t dirty, size_t keep)
{
	void *kept[KEEP_MAX], *emptied[KEEP_MAX];
	int n = 0, m = 0;
	unsigned j = top_bin(dirty);
	while (n + m < KEEP_MAX && keep >= lower_bytes && (j = dirty_bin(j)) > 5) {
		/* an extent of class j holds usize class j-1 and the page
		 * jemalloc adds to large extents; no more than keep */
		size_t want = psz_class(j - 1);
		while (want + TIER_PAGE > keep && j > 5)
			want = psz_class(--j - 1);
		if (want + TIER_PAGE > keep)
			break;
		void *p = mallocx(want, own_flags);
		if (!p)
			break;
		kept[n++] = p;
		/* one moved out (most of it not resident) is purged after all */
		if (absent_pages(p, want) > want / TIER_PAGE / 2)
			emptied[m++] = kept[--n];
		else
			keep -= want + TIER_PAGE;
	}
	while (m)
		dallocx(emptied[--m], own_flags);
	uint64_t epoch = 1;
	size_t left = dirty, sz = sizeof(left);
	mallctlbymib(mib_epoch, 1, NULL, NULL, &epoch, sizeof(epoch));
	mallctlbymib(mib_pdirty, 4, &left, &sz, NULL, 0);
	left *= TIER_PAGE;
	if (mallctlbymib(mib_purge, 3, NULL, NULL, NULL, 0))
		left = 0;
	while (n)
		dallocx(kept[--n], own_flags);
	return left;
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
	/* what is resident: the process's pages (its whole RSS, so that
	 * the bound is in touched pages, not in jemalloc's size classes,
	 * which round a buffer up by as much as a quarter) and the other
	 * threads' buffers still to be touched (counted first: a page
	 * touched meanwhile is counted twice, never missed), or failing that
	 * the huge arena's; held extents count as resident */
	uint64_t t = now_ms();
	size_t coming = ahead_pages(t);
	size_t rss = resident_pages(), all_dirty = dirty;
	sz = sizeof(all_dirty);
	if (mallctlbymib(mib_pdirty_all, 4, &all_dirty, &sz, NULL, 0) || all_dirty < dirty)
		all_dirty = dirty;
	/* jemalloc counts the extents moved out (hollow) as dirty, though
	 * none of their pages is resident: RSS is often below all_dirty,
	 * and is no reading only below the dirty pages less those.  (Taking
	 * active + all_dirty whenever RSS < all_dirty counted every hollow
	 * page as live: one such check raised the peak by what was moved
	 * out, to 106-160 MiB where 4 threads churning 5-24 MiB buffers had
	 * at most 95 MiB live, and the cache then outgrew the bound by up
	 * to a buffer.) */
	if (hollow > dirty)
		hollow = dirty;
	size_t held_res = all_dirty - hollow;
	if (!rss || rss < held_res)
		rss = active + held_res; /* active: touched or not */
	else
		rss += coming;
	if (t - window_start >= WINDOW_MS) {
		/* a window with no huge allocation at all forgets both; while
		 * huge allocations go on, an older peak fades by an eighth a
		 * window (about 10 s to a quarter), so that the room live
		 * memory's swings leave stays held for reuse */
		size_t fading = peak_prev - peak_prev / 8;
		peak_prev = t - window_start >= 2 * WINDOW_MS ? 0 : peak_cur > fading ? peak_cur : fading;
		peak_cur = 0;
		window_start = t;
	}
	/* live memory once this request is served and touched */
	size_t need = tier_align_up(size, TIER_PAGE) / TIER_PAGE;
	size_t live = rss - held_res + need;
	if (live > peak_cur)
		peak_cur = live;
	size_t peak = peak_cur > peak_prev ? peak_cur : peak_prev;
	size_t bound = peak + slack_pages;
	atomic_fetch_add_explicit(&tier_large_stats.checks, 1, memory_order_relaxed);
	/* how much RSS grows depends on what jemalloc serves it from (a
	 * held extent may be resident only in part): measured once it has,
	 * in tier_large_release */
	pend_rss = rss;
	pend_bound = bound;
	pend_dirty = dirty;
	pend_active = active;
	pend_others = all_dirty - dirty;
	pend_checked = true;
	/* still held: tier_large_release, after the allocation */
}

/* Fills the granules of [p, p + size) that have no resident page with
 * the pages of held extents: each taken at the size left to fill and a
 * granule for its alignment (jemalloc splits a larger one, first fit),
 * emptied, and given back at the end (dirty, now empty: address space, as
 * a given-back tail is).  They are held until then so that jemalloc does
 * not serve the next one from an emptied one, which an extent emptied
 * before may be too.  Returns the bytes moved. */
static size_t fill(void *p, size_t size, size_t dirty)
{
	struct tier_move_dst d;
	tier_move_dst_init(&d, p, size);
	void *taken[KEEP_MAX];
	int n = 0;
	size_t moved = 0, left;
	/* dirty: the caller's fresh read for the first turn, read again after
	 * each extent taken */
	for (bool fresh = true; n < KEEP_MAX && (left = tier_move_dst_left(&d)) && tier_move_usable(); fresh = false) {
		uint64_t epoch = 1;
		size_t sz = sizeof(dirty);
		if (!fresh && (mallctlbymib(mib_epoch, 1, NULL, NULL, &epoch, sizeof(epoch)) ||
			       mallctlbymib(mib_pdirty, 4, &dirty, &sz, NULL, 0)))
			break;
		if (!dirty)
			break;
		unsigned j = dirty_bin(top_bin(dirty * TIER_PAGE));
		if (j <= 5)
			break;
		size_t want = psz_class(j - 1);
		if (want > left + TIER_MOVE_GRAIN)
			want = left + TIER_MOVE_GRAIN;
		if (want < 2 * TIER_MOVE_GRAIN)
			break;
		void *q = mallocx(want, tier_large_arena_flags);
		if (!q)
			break;
		taken[n++] = q;
		size_t got = tier_move_from(&d, q, sallocx(q, 0));
		moved += got;
	}
	while (n)
		dallocx(taken[--n], own_flags);
	return moved;
}

/* Purges every arena but the huge one. */
#define OTHERS_MIN 256 /* pages: 1 MiB */
static void purge_others(void)
{
	unsigned n = 0;
	size_t sz = sizeof(n), mib[3];
	if (mallctl("arenas.narenas", &n, &sz, NULL, 0))
		return;
	memcpy(mib, mib_purge, sizeof(mib));
	for (unsigned i = 0; i < n; i++) {
		mib[1] = i;
		if (i != huge)
			mallctlbymib(mib, 3, NULL, NULL, NULL, 0);
	}
	atomic_fetch_add_explicit(&tier_large_stats.others, 1, memory_order_relaxed);
}

void tier_large_release(void *p, size_t size, bool kept)
{
	if (!tier_large_held)
		return;
	/* the tail past the size asked, up to jemalloc's size class (up to
	 * a quarter more): a held extent that served the request may have
	 * it resident, where jemalloc's fresh pages would not be.  Its
	 * contents are undefined, so it is given back before the program
	 * sees the block (a program that uses it faults it in again). */
	if (p) {
		uintptr_t a = tier_align_up((uintptr_t)p + size, TIER_PAGE);
		uintptr_t b = tier_align_down((uintptr_t)p + sallocx(p, 0), TIER_PAGE);
		if (b > a)
			madvise((void *)a, b - a, MADV_DONTNEED);
	}
	uint64_t epoch = 1;
	size_t dirty = 0, active = 0, sz = sizeof(dirty);
	if (pend_checked && p && mallctlbymib(mib_epoch, 1, NULL, NULL, &epoch, sizeof(epoch)) == 0 &&
	    mallctlbymib(mib_pdirty, 4, &dirty, &sz, NULL, 0) == 0 &&
	    mallctlbymib(mib_pactive, 4, &active, &sz, NULL, 0) == 0) {
		size_t absent = absent_pages(p, size);
		/* dirty pages jemalloc served this from that were not resident:
		 * moved out before, as far as they go.  Served from dirty: the
		 * extent's pages less what active and dirty grew by together,
		 * not what dirty fell by: other threads free huge buffers
		 * meanwhile (not under the lock), from active to dirty, and
		 * with dirty's fall alone hollow kept pages that jemalloc had
		 * served again (4 threads churning 5-24 MiB buffers: hollow
		 * reached all the dirty pages, up to 50 MiB more than were
		 * not resident, each counted as live: the peak, and with it
		 * the bound, rose as much).  A fall of both (a purge
		 * meanwhile) counts the whole extent served. */
		size_t extent = sallocx(p, 0) / TIER_PAGE + large_pad;
		size_t before = pend_active + pend_dirty, after = active + dirty;
		size_t served = after < before ? extent : after - before < extent ? extent - (after - before) : 0;
		size_t unhollowed = served < absent ? served : absent;
		hollow -= unhollowed < hollow ? unhollowed : hollow;
		/* moved pages hold what their buffer held */
		if (!kept && !atomic_load_explicit(&moves_off, memory_order_relaxed)) {
			size_t moved = fill(p, size, dirty);
			if (moved) {
				atomic_fetch_add_explicit(&tier_large_stats.moved, moved, memory_order_relaxed);
				hollow += moved / TIER_PAGE;
				absent = absent_pages(p, size);
			}
		}
		/* RSS once the program touches the buffer: past the bound,
		 * held extents are let go, the largest kept, down to what it
		 * leaves */
		size_t rss = pend_rss + absent;
		/* jemalloc counts a held extent's given-back tail as dirty, so
		 * cutting `over` dirty pages may free fewer resident ones: RSS
		 * is read again after each cut, three cuts at most */
		for (int cut = 0; cut < 3 && dirty && rss > pend_bound; cut++) {
			size_t over = rss - pend_bound;
			size_t purged = trim(dirty * TIER_PAGE, over < dirty ? (dirty - over) * TIER_PAGE : 0);
			if (!purged)
				break;
			atomic_fetch_add_explicit(&tier_large_stats.purges, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&tier_large_stats.purged, purged, memory_order_relaxed);
			hollow = 0;
			dirty -= purged / TIER_PAGE < dirty ? purged / TIER_PAGE : dirty;
			size_t coming = ahead_pages(now_ms());
			size_t now = resident_pages();
			if (!now)
				break;
			rss = now + absent + coming;
		}
		/* still over: the other arenas' dirty pages, which the live
		 * estimate leaves out as the cache's are (jemalloc keeps freed
		 * buffers under 4 MiB dirty for seconds: big-mixed's peak RSS
		 * 757 MB, 766 before, jemalloc's 765) */
		if (rss > pend_bound && pend_others >= OTHERS_MIN)
			purge_others();
		ahead_add(p, size, absent, now_ms());
		size_t held = dirty - (hollow < dirty ? hollow : dirty);
		atomic_store_explicit(&tier_large_stats.cached, (uint64_t)held * TIER_PAGE, memory_order_relaxed);
	}
	pend_checked = false;
	tier_large_held = false;
	pthread_mutex_unlock(&lock);
}

void tier_large_prefork(void) { pthread_mutex_lock(&lock); }
void tier_large_postfork(void) { pthread_mutex_unlock(&lock); }
