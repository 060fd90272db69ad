/* Arena set-up, through jemalloc's mallctl, paid as the program uses it
 * rather than at start, so that the fixed cost does not grow with the CPU
 * count (jemalloc allows 4 automatic arenas per CPU, ~120 KiB each).
 *
 * Automatic arenas.  Arena 0 exists before we run (jemalloc's first call
 * made it); its hooks are swapped at boot, and the chunk it had mapped
 * with the default hooks is set aside.  A thread's first call into jemalloc
 * (any call, a mallctl included) binds it to an arena: an initialised one
 * with no threads if there is one, else jemalloc initialises the first
 * unused index with its default hooks.  So the interposer sends a thread's
 * first allocation here (tier_arena_thread_start), where, under one mutex,
 * the thread enters jemalloc with a read of thread.arena; if it got an
 * arena we have not hooked (the first thread after main, or a race), the
 * arena is hooked before the thread allocates anything from it; then a
 * spare is made for the next thread: writing arena.<i>.extent_hooks on an
 * unused automatic index creates the arena with our hooks, and it has no
 * threads until the next one arrives.  So arenas come with threads, at
 * most one more than jemalloc would make.
 *
 * An automatic arena that had jemalloc's hooks when data may already have
 * been mapped in it (a thread whose first call reached jemalloc without
 * the interposer, a thread.arena binding) is hooked as soon as we see it:
 * extents mapped before stay with the default hooks (hooks.c forwards
 * calls on them), later ones are ours.  These are counted
 * (tier_arenas_late).
 *
 * The huge-allocation arena (index narenas) cannot be created with hooks
 * through mallctl, and jemalloc creates it lazily with its defaults.  At
 * the first oversize allocation, we make jemalloc create it with one
 * allocation of the threshold size, hook it, and keep that allocation and
 * the rest of its default chunk (address space) out of circulation, so
 * that huge allocations come from our hooks.
 *
 * Explicit arenas, one per tier, are created at their first use.
 *
 * Locking: arena_lock is taken only outside jemalloc (never in a hook) and
 * with none of our other locks held; jemalloc's locks are taken under it.
 * Its fork handler runs before jemalloc's (registered after jemalloc's), so
 * a thread holding it can always finish its mallctl. */
#include <jemalloc/jemalloc.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "knobs.h"
#include "registry.h"
#include "tiermalloc.h"

#include "arena.h"
#include "hooks.h"
#include "large.h"
#include "reentry.h"

#define NONE UINT32_MAX

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

/* The lock is held across mallctl calls: a signal handler's allocation
 * meanwhile must not enter jemalloc, nor wait for this lock. */
static __thread uint8_t lock_was __attribute__((tls_model("initial-exec")));

static void lock_arenas(void)
{
	uint8_t was = tier_reentry_enter();
	pthread_mutex_lock(&arena_lock);
	lock_was = was;
}

static void unlock_arenas(void)
{
	uint8_t was = lock_was;
	pthread_mutex_unlock(&arena_lock);
	tier_reentry_leave(was);
}
/* what every process's start writes or reads (TIER_BOOT_DATA, tier.h) */
TIER_BOOT_DATA static _Atomic unsigned tier_arena[TIER_MAX_TIERS];
TIER_BOOT_DATA static int ntiers;
TIER_BOOT_DATA static bool hooks_on;       /* automatic arenas get our hooks */
TIER_BOOT_DATA static bool eager;          /* per-CPU arenas: all hooked at boot */
static unsigned nauto;                     /* automatic arenas 0..nauto-1; huge is nauto */
TIER_BOOT_DATA static size_t oversize;     /* huge-arena threshold; 0: no huge arena */
static unsigned next_auto = NONE;          /* lowest automatic index not known hooked */
static unsigned spare = NONE;              /* hooked automatic arena no thread took yet */
static uint64_t known[TIER_MAX_ARENAS / 64]; /* automatic arenas with our hooks */
static _Atomic unsigned hooked, late;
TIER_BOOT_DATA static _Atomic bool huge_hooked;
static _Atomic size_t absorbed;
/* Large-buffer cache (large.c): its slack (0: off), and the size from which
 * allocations are checked: jemalloc's default oversize threshold until
 * jemalloc is asked (no mallctl before a process allocates that much). */
TIER_BOOT_DATA static _Atomic size_t large_slack;
static _Atomic size_t large_at = (size_t)8 << 20;
/* MIBs of arena.0.dirty_decay_ms, arena.0.extent_hooks, thread.arena and
 * thread.allocated */
static size_t mib_init[3], mib_hooks[3], mib_thread[2], mib_allocated[2];
static bool mibs_ok;
/* The booting thread is bound (to arena 0) before any spare exists. */
static __thread bool tls_bound __attribute__((tls_model("initial-exec")));

__thread size_t tier_tls_watch __attribute__((tls_model("initial-exec")));

bool tier_arena_huge_hooked(void) { return atomic_load(&huge_hooked); }
bool tier_arenas_hooking(void) { return hooks_on; }
size_t tier_arena_absorbed(void) { return atomic_load(&absorbed); }

static bool is_known(unsigned i) { return i < TIER_MAX_ARENAS && (known[i / 64] >> (i % 64) & 1); }

/* Give arena i our hooks: creates it if the index is unused (automatic
 * arenas only), else swaps the hooks of its future extents. */
static int set_hooks(unsigned i)
{
	extent_hooks_t *new = &tier_extent_hooks, *prev = NULL;
	size_t sz = sizeof(prev);
	int r;
	if (mibs_ok) {
		size_t mib[3] = {mib_hooks[0], i, mib_hooks[2]};
		r = mallctlbymib(mib, 3, &prev, &sz, &new, sizeof(new));
	} else {
		char name[64];
		snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
		r = mallctl(name, &prev, &sz, &new, sizeof(new));
	}
	return r;
}

/* Whether arena i exists now.  Not arena.<i>.initialized: that is the
 * view of the last "epoch" refresh.  Reading an arena's decay time fails
 * (EFAULT) while jemalloc has not created it, and creates nothing. */
static bool initialized(unsigned i)
{
	ssize_t ms;
	size_t sz = sizeof(ms);
	size_t mib[3] = {mib_init[0], i, mib_init[2]};
	return mibs_ok && mallctlbymib(mib, 3, &ms, &sz, NULL, 0) == 0;
}

/* Record automatic arena i as ours; late: it had jemalloc's hooks first. */
static void take(unsigned i, bool was_late)
{
	if (i < TIER_MAX_ARENAS)
		known[i / 64] |= (uint64_t)1 << (i % 64);
	atomic_fetch_add(&hooked, 1);
	if (was_late)
		atomic_fetch_add(&late, 1);
}

/* What we need to know of jemalloc, read once.  Any mallctl makes jemalloc
 * build its control tree for every possible arena (about 4 KiB resident
 * per index: 2 MiB with 512 arenas), so a process without hooks calls none
 * until it needs one. */
static bool setup(void)
{
	static bool done, ok;
	if (done)
		return ok;
	done = true;
	size_t sz = sizeof(nauto);
	if (mallctl("opt.narenas", &nauto, &sz, NULL, 0))
		return false;
	/* jemalloc's own hooks, for extents it mapped before ours */
	sz = sizeof(tier_default_hooks);
	if (mallctl("arena.0.extent_hooks", &tier_default_hooks, &sz, NULL, 0))
		return false;
	sz = 3;
	mibs_ok = mallctlnametomib("arena.0.dirty_decay_ms", mib_init, &sz) == 0 && sz == 3;
	sz = 3;
	mibs_ok &= mallctlnametomib("arena.0.extent_hooks", mib_hooks, &sz) == 0 && sz == 3;
	sz = 2;
	mibs_ok &= mallctlnametomib("thread.arena", mib_thread, &sz) == 0 && sz == 2;
	sz = 2;
	mibs_ok &= mallctlnametomib("thread.allocated", mib_allocated, &sz) == 0 && sz == 2;
	sz = sizeof(oversize);
	if (mallctl("opt.oversize_threshold", &oversize, &sz, NULL, 0) || oversize > ((size_t)1 << 40))
		oversize = 0;
	const char *percpu = "disabled";
	sz = sizeof(percpu);
	mallctl("opt.percpu_arena", &percpu, &sz, NULL, 0);
	/* per-CPU arenas follow the CPU a thread runs on, not its start */
	eager = strcmp(percpu, "disabled") != 0 || !mibs_ok;
	ok = true;
	return true;
}

/* Count an allocation that is never freed, and give back its pages: under
 * THP "always" the default chunk is one huge page already faulted in, and
 * dropping the unused part keeps our first block from adding 2 MiB to the
 * peak.  Its contents are nobody's (jemalloc keeps no metadata in large
 * extents), and address space stays taken. */
static void set_aside(void *p)
{
	size_t n = sallocx(p, 0);
	atomic_fetch_add(&absorbed, n);
	uintptr_t a = tier_align_up((uintptr_t)p, TIER_PAGE);
	uintptr_t b = tier_align_down((uintptr_t)p + n, TIER_PAGE);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Set aside what is left of a chunk that arena a mapped with jemalloc's
 * hooks: its retained address space would otherwise serve allocations
 * before any memory of ours.  Allocations that are never freed: address
 * space only, since those pages are not touched. */
static void absorb_default_chunk(unsigned a)
{
	char name[64];
	snprintf(name, sizeof(name), "stats.arenas.%u.retained", a);
	for (int i = 0; i < 32; i++) {
		uint64_t epoch = 1;
		size_t retained = 0, sz = sizeof(retained);
		if (mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) ||
		    mallctl(name, &retained, &sz, NULL, 0))
			return;
		/* the largest size class that fits, with the page jemalloc adds
		 * to large extents for cache-oblivious offsets */
		size_t want = retained;
		while (want >= 16384 && nallocx(want, 0) + 4096 > retained)
			want = (want - want / 8) & ~(size_t)4095;
		if (want < 16384)
			return;
		void *p = mallocx(want, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
		if (!p)
			return;
		if (tier_registry_lookup((uintptr_t)p)) {
			/* a fresh chunk of ours served it: the rest is fragmented */
			dallocx(p, MALLOCX_TCACHE_NONE);
			return;
		}
		set_aside(p);
	}
}

/* Hook the huge arena once it exists (arena_lock held). */
static void hook_huge_locked(void)
{
	if (atomic_load(&huge_hooked) || !oversize || !initialized(nauto))
		return;
	if (set_hooks(nauto) == 0) {
		absorb_default_chunk(nauto);
		/* its extents are placed on tiers: pages stay where placed */
		tier_large_no_moves();
		atomic_store(&huge_hooked, true);
	}
}

/* Hook every automatic arena that appeared since we last looked; jemalloc
 * initialises them in index order unless a thread.arena binding skips
 * ahead, which a thread's start catches. */
static void sweep_locked(void)
{
	while (next_auto < nauto) {
		if (!is_known(next_auto)) {
			if (!initialized(next_auto))
				break;
			if (set_hooks(next_auto))
				break;
			take(next_auto, true);
		}
		next_auto++;
	}
	hook_huge_locked();
}

/* Make sure a hooked arena with no threads exists for the next thread to
 * take (arena_lock held). */
static void ensure_spare_locked(void)
{
	sweep_locked();
	if (spare != NONE || next_auto >= nauto)
		return;
	if (set_hooks(next_auto) == 0) {
		take(next_auto, false);
		spare = next_auto++;
	}
}

TIER_STARTUP void tier_arena_thread_start(void)
{
	if (!hooks_on || eager || tls_bound)
		return;
	tls_bound = true;
	lock_arenas();
	/* This thread's first call into jemalloc (any call, a mallctl too)
	 * binds it: to a hooked arena that has no threads if there is one. */
	unsigned a = NONE;
	size_t sz = sizeof(a);
	if (mallctlbymib(mib_thread, 2, &a, &sz, NULL, 0) == 0 && a < nauto) {
		if (a == spare)
			spare = NONE;
		if (!is_known(a)) {
			/* None was free: jemalloc made an arena with its hooks,
			 * normally just now for this thread (the first thread
			 * after main, or the spare went to a thread we did not
			 * see).  Hooked before this thread allocates, only its
			 * first metadata block is jemalloc's; it is late if it
			 * may hold data mapped with jemalloc's hooks already. */
			uint64_t before = 1;
			sz = sizeof(before);
			mallctlbymib(mib_allocated, 2, &before, &sz, NULL, 0);
			bool clean = a == next_auto && before == 0;
			spare = NONE;
			if (set_hooks(a) == 0)
				take(a, !clean);
		}
		/* the next new thread takes this one */
		ensure_spare_locked();
	}
	unlock_arenas();
}

/* A thread's first call into jemalloc binds it to an arena; when every
 * initialised one has threads, jemalloc 5.3 makes a new one, and when it
 * cannot (RLIMIT_AS or RLIMIT_DATA reached: no room for the arena's
 * metadata) it dereferences NULL.  So our own threads are started only
 * while a spare is there for them (or every automatic arena exists). */
bool tier_arena_spare_ready(void)
{
	if (!hooks_on || eager)
		return true;
	tier_thread_enter(0);
	lock_arenas();
	ensure_spare_locked();
	bool ready = spare != NONE || next_auto >= nauto;
	unlock_arenas();
	return ready;
}

/* Never above PTRDIFF_MAX: jemalloc's realloc fails past its largest
 * class without setting errno; the watched path sets ENOMEM. */
TIER_STARTUP size_t tier_arena_watch(void)
{
	size_t w = large_slack ? atomic_load_explicit(&large_at, memory_order_relaxed) : PTRDIFF_MAX;
	/* until the cache is on, from the size it will check: a thread's
	 * watch is renewed only here, and one left at the oversize threshold
	 * when another thread set the cache up sent its 4-8 MiB requests to
	 * its own arena unchecked until its next oversize one (never, in a
	 * thread that allocates only those) */
	if (large_slack && !tier_large_on() && w > TIER_LARGE_FROM)
		w = TIER_LARGE_FROM;
	if (hooks_on && oversize && !atomic_load(&huge_hooked) && oversize < w)
		w = oversize;
	return w;
}

TIER_STARTUP bool tier_thread_watch_none(void) { return !hooks_on && !large_slack; }

TIER_STARTUP void tier_arena_large_cache(size_t slack) { large_slack = slack; }

/* Set the large-buffer cache up before jemalloc serves the first huge
 * allocation, creating its huge arena here if it is missing.  jemalloc
 * creates that arena in the first thread whose request needs it, and sets
 * its decay to 0 only after it has published the arena: a setup in another
 * thread that found the arena published was undone by that late write, and
 * the cache then held nothing, every free purged at once (8 threads
 * starting to churn huge buffers together: 34 runs in 600 ended with
 * decay 0, with 10x the minor faults, median).  Created under arena_lock, which
 * every huge request passes until the cache is on, the arena is complete
 * before any other thread's request reaches jemalloc, and that first
 * request is checked too.  The block that creates it is freed untouched:
 * address space, purged at once (decay 0 until the setup). */
static void large_prepare(void)
{
	if (tier_large_on())
		return;
	lock_arenas();
	if (!tier_large_on() && large_slack) {
		if (!setup() || !oversize || !mibs_ok) {
			large_slack = 0; /* no huge arena: nothing to cache */
		} else {
			/* until set up, requests from the threshold come here */
			atomic_store(&large_at, oversize);
			if (!initialized(nauto)) {
				void *p = mallocx(oversize, MALLOCX_TCACHE_NONE);
				if (p)
					dallocx(p, MALLOCX_TCACHE_NONE);
			}
			/* not created (no memory): the next request tries again */
			if (initialized(nauto)) {
				if (tier_large_setup(nauto, oversize, atomic_load(&large_slack)))
					large_slack = 0;
				else
					atomic_store(&large_at, tier_large_from());
			}
		}
	}
	unlock_arenas();
}

void tier_arena_huge_prepare(void)
{
	if (!hooks_on || !oversize || atomic_load(&huge_hooked))
		return;
	lock_arenas();
	if (!atomic_load(&huge_hooked) && !initialized(nauto)) {
		/* jemalloc creates the huge arena for this allocation; it is
		 * kept, with the rest of its default chunk (absorbed below) */
		void *p = mallocx(oversize, MALLOCX_TCACHE_NONE);
		if (p)
			set_aside(p);
	}
	hook_huge_locked();
	unlock_arenas();
}

TIER_STARTUP void tier_thread_enter_slow(size_t size)
{
	/* frees a signal handler deferred (tier_reentry_defer set watch to 1;
	 * a handler never gets here: the interposer sends it to the pool) */
	if (atomic_load_explicit(&tier_re.deferred, memory_order_relaxed))
		tier_reentry_drain();
	if (tier_tls_watch == 0) {
		/* this thread's first allocation; what it allocates from here
		 * on (none expected) takes the fast path */
		tier_tls_watch = SIZE_MAX;
		tier_boot();
		tier_arena_thread_start();
	}
	bool large = large_slack && size >= atomic_load(&large_at);
	/* large buffers from 4 MiB go to the huge arena too (large.h) */
	if (oversize && (size >= oversize || large))
		tier_arena_huge_prepare();
	if (large) {
		large_prepare();
		tier_large_before(size);
	}
	tier_tls_watch = tier_arena_watch();
}

void tier_arenas_sweep(void)
{
	if (!hooks_on || eager)
		return;
	/* a thread whose first call this is binds through the usual path */
	tier_thread_enter(0);
	lock_arenas();
	sweep_locked();
	unlock_arenas();
}

/* Both sweep first: stats report the arenas as they are now. */
unsigned tier_arenas_hooked(void)
{
	tier_arenas_sweep();
	return atomic_load(&hooked);
}

unsigned tier_arenas_late(void)
{
	tier_arenas_sweep();
	return atomic_load(&late);
}

unsigned tier_arena_of_tier(int tier)
{
	if (tier < 0 || tier >= TIER_MAX_TIERS)
		return NONE;
	unsigned a = atomic_load_explicit(&tier_arena[tier], memory_order_acquire);
	if (a != NONE || tier >= ntiers)
		return a;
	tier_thread_enter(0);
	lock_arenas();
	a = atomic_load(&tier_arena[tier]);
	if (a == NONE && setup()) {
		extent_hooks_t *h = &tier_extent_hooks;
		size_t sz = sizeof(a);
		if (mallctl("arenas.create", &a, &sz, &h, sizeof(h)) == 0) {
			/* pinned before the index is published: every extent
			 * of the arena's data is placed on its tier */
			tier_hooks_pin_arena(a, tier);
			atomic_store_explicit(&tier_arena[tier], a, memory_order_release);
		} else {
			a = NONE;
		}
	}
	unlock_arenas();
	return a;
}

void tier_arenas_prefork(void)
{
	pthread_mutex_lock(&arena_lock);
	tier_large_prefork();
}

void tier_arenas_postfork(void)
{
	tier_large_postfork();
	pthread_mutex_unlock(&arena_lock);
}

TIER_STARTUP int tier_arenas_install(int n, bool hooks)
{
	for (int t = 0; t < TIER_MAX_TIERS; t++)
		atomic_store(&tier_arena[t], NONE);
	ntiers = n;
	hooks_on = hooks;
	tls_bound = true;
	if (!hooks)
		return 0;
	if (!setup())
		return -1;
	/* Arena 0 first: it exists, and its extents so far are jemalloc's. */
	if (set_hooks(0))
		return -1;
	take(0, false);
	absorb_default_chunk(0);
	next_auto = 1;
	if (eager) {
		for (unsigned i = 1; i < nauto; i++)
			if (set_hooks(i) == 0)
				take(i, false);
		next_auto = nauto;
		tier_arena_huge_prepare();
	}
	return (int)atomic_load(&hooked);
}

void *tier_malloc(unsigned tier, size_t size)
{
	tier_thread_enter(0);
	unsigned a = tier_arena_of_tier((int)tier);
	if (a == NONE) {
		errno = EINVAL;
		return NULL;
	}
	/* no tcache: a cached region could come from another arena */
	uint8_t was = tier_reentry_enter();
	void *p = mallocx(size ? size : 1, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
	tier_reentry_leave(was);
	if (!p)
		errno = ENOMEM;
	return p;
}
