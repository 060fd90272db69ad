/* The malloc family, forwarded to jemalloc.
 *
 * With LD_PRELOAD=libtiermalloc.so (or -ltiermalloc) these definitions come
 * before libc's and jemalloc's in symbol lookup, so every allocation of the
 * program, libc's internal ones included, arrives here.  malloc and free
 * forward to jemalloc's own unflagged entry points (resolved once, in the
 * constructor): their fast paths are about twice as fast as mallocx/dallocx
 * for small sizes, and they use the same arenas and hooks.  Everything
 * that needs flags (alignment) goes through the *allocx API.  Until the
 * constructor runs, the first call boots tiermalloc and mallocx serves.
 *
 * Every entry point that can make jemalloc choose the calling thread's
 * arena (all but the frees, whose first call in a thread sets up only a
 * minimal thread state in jemalloc 5.3) first passes tier_thread_enter:
 * one per-thread compare that sends a thread's first allocation, and
 * oversize ones while the huge arena is not hooked yet, to src/arena.c;
 * after the call, tier_thread_leave ends what a huge allocation holds.
 *
 * With signal_safe (read at boot), every entry point marks the thread
 * inside jemalloc around its call (malloc and free then jump to their
 * armed versions instead of jemalloc's); a call that finds the mark set
 * comes from a signal handler that
 * interrupted this thread in the allocator, and is served by the re-entry
 * pool (src/sigpool.c) instead of jemalloc, whose locks and caches are not
 * re-entrant (src/reentry.h).
 *
 * Those indirect jumps are made direct in the constructor where the
 * settings allow (patch.c, make_direct below): with nothing watched,
 * malloc is one jump to jemalloc's malloc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/init.h"
#include "../src/reentry.h"
#include "../src/sigpool.h"
#include "elfsym.h"
#include "jemalloc_api.h"
#include "patch.h"

#define EXPORT __attribute__((visibility("default")))

TIER_STARTUP static void *boot_malloc(size_t size)
{
	void *p = mallocx(size ? size : 1, 0);
	if (TIER_UNLIKELY(!p))
		errno = ENOMEM;
	return p;
}

TIER_STARTUP static void boot_free(void *p)
{
	if (p)
		dallocx(p, 0);
}

void *(*_Atomic tier_je_malloc)(size_t) = boot_malloc;
void (*_Atomic tier_je_free)(void *) = boot_free;

#define JE_MALLOC atomic_load_explicit(&tier_je_malloc, memory_order_relaxed)
#define JE_FREE atomic_load_explicit(&tier_je_free, memory_order_relaxed)

/* Every call into jemalloc is marked (tier_re.inside): a call that finds
 * the mark was made by a signal handler that interrupted this thread
 * inside the allocator, and goes to the pool.  Frees a handler deferred
 * are drained by the thread's next allocation (the handler sends it
 * through tier_thread_enter_slow), already marked. */
#define POOL (&tier_sigpool)

/* true: the caller is nested (serve it from the pool); false: marked */
static inline bool enter_nested(void)
{
	if (!TIER_REENTRY_ARMED)
		return false;
	if (TIER_UNLIKELY(tier_re.inside))
		return true;
	tier_re.inside = 1;
	atomic_signal_fence(memory_order_seq_cst);
	return false;
}

static inline void leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (TIER_REENTRY_ARMED)
		tier_re.inside = 0;
}

/* malloc once tier_thread_enter admitted the call: a large buffer the
 * cache took goes to the huge arena, and its hold ends after the call. */
TIER_STARTUP static void *malloc_admitted(size_t size)
{
	int flags = tier_thread_flags();
	void *p = flags ? mallocx(size, flags) : JE_MALLOC(size);
	tier_thread_leave(p, size, false);
	if (TIER_UNLIKELY(!p))
		errno = ENOMEM;
	return p;
}

/* The entry points that pass flags: admitted by the size watch, the
 * cache's flags added, its hold ended, and (signal_safe) the mark the
 * caller set cleared; never 0 bytes to mallocx. */
static void *mallocx_admitted(size_t size, int flags)
{
	tier_thread_enter(size);
	void *p = mallocx(size ? size : 1, tier_thread_flags_with(flags));
	tier_thread_leave(p, size, flags & 0x40 /* MALLOCX_ZERO */);
	leave();
	return p;
}

/* Past the size watch: a thread's first allocation, or a huge one, which
 * holds the large-buffer cache through jemalloc's call (tier_thread_leave). */
static __attribute__((noinline)) void *malloc_armed(size_t size);
TIER_STARTUP static __attribute__((noinline)) void *malloc_watched(size_t size)
{
	if (TIER_UNLIKELY(TIER_REENTRY_ARMED))
		return malloc_armed(size);
	tier_thread_enter_slow(size);
	return malloc_admitted(size);
}

static __attribute__((noinline)) void *malloc_armed(size_t size)
{
	if (enter_nested())
		return tier_sigpool_alloc(POOL, size, 0);
	tier_thread_enter(size);
	void *p = malloc_admitted(size);
	leave();
	return p;
}

/* A handler's free of a jemalloc block waits for this thread's next call;
 * a pool block is freed at once, on any thread. */
static __attribute__((noinline)) void free_armed(void *ptr)
{
	if (TIER_UNLIKELY(tier_sigpool_mine(ptr))) {
		tier_sigpool_free(POOL, ptr);
		return;
	}
	if (enter_nested()) {
		if (ptr)
			tier_reentry_defer(ptr);
		return;
	}
	JE_FREE(ptr);
	leave();
}

/* Until the constructor resolves jemalloc (signal_safe is read at boot,
 * and never changes after), the entry points ask at every call. */
TIER_STARTUP static void *malloc_checked(size_t size)
{
	if (TIER_UNLIKELY(TIER_REENTRY_ARMED))
		return malloc_armed(size);
	return JE_MALLOC(size);
}

TIER_STARTUP static void free_checked(void *ptr)
{
	if (TIER_UNLIKELY(TIER_REENTRY_ARMED))
		free_armed(ptr);
	else
		JE_FREE(ptr);
}

/* What the fast paths jump to: jemalloc's own malloc and free, or the
 * armed ones; one indirect jump, as the PLT call to jemalloc would be. */
static void *(*_Atomic entry_malloc)(size_t) = malloc_checked;
static void (*_Atomic entry_free)(void *) = free_checked;
/* calloc, realloc and operator new likewise: jemalloc's own unflagged
 * entry points (mallocx with MALLOCX_ZERO, rallocx cost more on small
 * sizes), or, until then and with signal_safe, the watched ones. */
static void *calloc_watched(size_t n, size_t size);
static void *realloc_watched(void *ptr, size_t size);
static void *(*_Atomic entry_calloc)(size_t, size_t) = calloc_watched;
static void *(*_Atomic entry_realloc)(void *, size_t) = realloc_watched;
void *(*_Atomic tier_entry_new)(size_t) = NULL;

/* Only tail calls: no frame, nothing saved, on the way to jemalloc. */
void *tier_entry_malloc(size_t size)
{
	if (TIER_LIKELY(size < tier_tls_watch))
		return atomic_load_explicit(&entry_malloc, memory_order_relaxed)(size);
	return malloc_watched(size);
}

void tier_entry_free(void *ptr)
{
	atomic_load_explicit(&entry_free, memory_order_relaxed)(ptr);
}

void tier_entry_sized_free(void *ptr, size_t size, int flags)
{
	if (!ptr)
		return;
	if (TIER_LIKELY(!TIER_REENTRY_ARMED)) {
		sdallocx(ptr, size, flags);
		return;
	}
	if (TIER_UNLIKELY(tier_sigpool_mine(ptr))) {
		tier_sigpool_free(POOL, ptr);
		return;
	}
	if (enter_nested()) {
		tier_reentry_defer(ptr);
		return;
	}
	sdallocx(ptr, size, flags);
	leave();
}

/* The same code under the exported names: no jump between them. */
EXPORT void *malloc(size_t size) __attribute__((alias("tier_entry_malloc")));
EXPORT void free(void *ptr) __attribute__((alias("tier_entry_free")));

/* calloc past the fast path: a thread's first allocation, a huge one, an
 * overflow, or signal_safe. */
static __attribute__((noinline)) void *calloc_watched(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (enter_nested()) {
		void *q = tier_sigpool_alloc(POOL, total, 0);
		if (q)
			memset(q, 0, total);
		return q;
	}
	/* MALLOCX_ZERO: zeroes only what is not known to be zero already */
	void *p = mallocx_admitted(total, 0x40);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* realloc of a pool block: outside a handler the data moves to jemalloc
 * (the pool is for handlers only); inside, to another pool block unless
 * it still fits. */
static void *realloc_pool(void *ptr, size_t size)
{
	size_t have = tier_sigpool_usable(POOL, ptr);
	void *p;
	if (enter_nested()) {
		if (size <= have)
			return ptr;
		p = tier_sigpool_alloc(POOL, size, 0);
	} else {
		p = mallocx_admitted(size, 0);
		if (!p)
			errno = ENOMEM;
	}
	if (p) {
		memcpy(p, ptr, size < have ? size : have);
		tier_sigpool_free(POOL, ptr);
	}
	return p;
}

static __attribute__((noinline)) void *realloc_watched(void *ptr, size_t size)
{
	if (!ptr)
		return tier_entry_malloc(size);
	if (size == 0) { /* glibc: frees and returns NULL */
		tier_entry_free(ptr);
		return NULL;
	}
	if (TIER_UNLIKELY(tier_sigpool_mine(ptr)))
		return realloc_pool(ptr, size);
	if (enter_nested()) {
		/* a jemalloc block from a handler that interrupted jemalloc:
		 * its size cannot be read without jemalloc (whose per-thread
		 * lookup cache the interrupted code may be writing), so fail
		 * as realloc may, the block untouched */
		atomic_fetch_add_explicit(&tier_reentry_stats.refused, 1, memory_order_relaxed);
		errno = ENOMEM;
		return NULL;
	}
	tier_thread_enter(size);
	void *p = rallocx(ptr, size, tier_thread_flags());
	tier_thread_leave(p, size, true);
	leave();
	if (!p)
		errno = ENOMEM; /* ptr is left untouched */
	return p;
}

/* The size watch of malloc (tier_entry_malloc), then jemalloc's own. */
void *tier_entry_calloc(size_t n, size_t size)
{
	size_t total;
	if (TIER_LIKELY(!__builtin_mul_overflow(n, size, &total) && total < tier_tls_watch))
		return atomic_load_explicit(&entry_calloc, memory_order_relaxed)(n, size);
	return calloc_watched(n, size);
}

/* realloc(p, 0) and realloc(NULL, n) keep glibc's meaning (watched);
 * so does a failure past jemalloc's largest class (the watch's cap). */
void *tier_entry_realloc(void *ptr, size_t size)
{
	if (TIER_LIKELY(ptr && size && size < tier_tls_watch))
		return atomic_load_explicit(&entry_realloc, memory_order_relaxed)(ptr, size);
	return realloc_watched(ptr, size);
}

EXPORT void *calloc(size_t n, size_t size) __attribute__((alias("tier_entry_calloc")));
EXPORT void *realloc(void *ptr, size_t size) __attribute__((alias("tier_entry_realloc")));

EXPORT void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

static bool pow2(size_t x) { return x && !(x & (x - 1)); }

EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	if (!pow2(alignment) || alignment % sizeof(void *))
		return EINVAL;
	void *p;
	if (enter_nested()) {
		int saved = errno;
		p = tier_sigpool_alloc(POOL, size, alignment);
		errno = saved;
	} else {
		p = mallocx_admitted(size, JE_MALLOCX_ALIGN(alignment));
	}
	if (!p)
		return ENOMEM;
	*memptr = p;
	return 0;
}

/* glibc 2.36 memalign semantics: an alignment that is not a power of two
 * is rounded up to one; an impossible one fails with EINVAL. */
void *tier_memalign(size_t alignment, size_t size)
{
	if (alignment > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (alignment <= 16)
		return tier_entry_malloc(size);
	if (!pow2(alignment))
		alignment = (size_t)1 << (64 - __builtin_clzll(alignment));
	if (enter_nested())
		return tier_sigpool_alloc(POOL, size, alignment);
	void *p = mallocx_admitted(size, JE_MALLOCX_ALIGN(alignment));
	if (!p)
		errno = ENOMEM;
	return p;
}

EXPORT void *memalign(size_t alignment, size_t size)
{
	return tier_memalign(alignment, size);
}

/* glibc 2.36 implements aligned_alloc as memalign (no size-multiple rule). */
EXPORT void *aligned_alloc(size_t alignment, size_t size)
{
	return tier_memalign(alignment, size);
}

EXPORT void *valloc(size_t size)
{
	return tier_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (size > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	size_t rounded = size ? (size + page - 1) & ~(page - 1) : page;
	return tier_memalign(page, rounded);
}

EXPORT size_t malloc_usable_size(void *ptr)
{
	if (!ptr)
		return 0;
	if (TIER_UNLIKELY(tier_sigpool_mine(ptr)))
		return tier_sigpool_usable(POOL, ptr);
	if (enter_nested()) {
		/* as realloc above: not readable from here; 0 claims nothing */
		atomic_fetch_add_explicit(&tier_reentry_stats.refused, 1, memory_order_relaxed);
		return 0;
	}
	tier_thread_enter(0);
	size_t n = sallocx(ptr, 0);
	leave();
	return n;
}

/* Return unused dirty memory of every arena to the kernel. */
EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	if (enter_nested())
		return 0;
	tier_thread_enter(0);
	int r = mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0;
	leave();
	return r;
}

/* The entry points' jumps made direct (patch.c), once the settings are
 * known and before any thread of ours starts.  free has no watch; with
 * nothing watched, malloc, calloc and operator new are jemalloc's from
 * their first instruction; else the jump after their size watch goes
 * straight to jemalloc.  realloc keeps its checks (realloc(p, 0),
 * realloc(NULL, n), errno past jemalloc's largest class). */
TIER_STARTUP static void make_direct(void *m, void *f, void *c, void *r, void *n)
{
	bool none = tier_thread_watch_none();
	const struct tier_patch p[] = {
		{(void *)tier_entry_free, NULL, f},
		{(void *)tier_entry_malloc, none ? NULL : (void *const *)&entry_malloc, m},
		{(void *)tier_entry_calloc, none ? NULL : (void *const *)&entry_calloc, c},
		{(void *)tier_entry_realloc, (void *const *)&entry_realloc, r},
		{(void *)tier_cxx_new, NULL, none ? n : NULL},
	};
	tier_entry_direct = tier_patch_apply(p, sizeof(p) / sizeof(p[0]));
}

int tier_entry_direct;

TIER_STARTUP __attribute__((constructor)) static void interpose_init(void)
{
	tier_boot(); /* the settings the entry points follow */
	/* jemalloc's, found from the mallocx we are bound to (elfsym.c); the
	 * dynamic linker's lookup where that finds no object */
	static const char *const names[] = {"malloc", "free", "calloc", "realloc", "_Znwm"};
	void *s[5] = {NULL};
	void *h = NULL;
	if (tier_elfsym_find("mallocx", (const void *)mallocx, names, s, 5)) {
		h = dlopen("libjemalloc.so.2", RTLD_NOLOAD | RTLD_LAZY);
		for (int i = 0; h && i < 5; i++)
			s[i] = dlsym(h, names[i]);
	}
	void *m = s[0], *f = s[1], *c = s[2], *r = s[3], *n = s[4];
	if (m && f) {
		atomic_store(&tier_je_malloc, (void *(*)(size_t))m);
		atomic_store(&tier_je_free, (void (*)(void *))f);
		bool armed = TIER_REENTRY_ARMED; /* set by the boot */
		atomic_store(&entry_malloc, armed ? malloc_armed : (void *(*)(size_t))m);
		atomic_store(&entry_free, armed ? free_armed : (void (*)(void *))f);
		/* signal_safe: the watched ones, which mark the thread */
		if (!armed && c && r) {
			atomic_store(&entry_calloc, (void *(*)(size_t, size_t))c);
			atomic_store(&entry_realloc, (void *(*)(void *, size_t))r);
		}
		/* jemalloc's operator new runs the new_handler loop itself */
		if (!armed && n)
			atomic_store(&tier_entry_new, (void *(*)(size_t))n);
		if (!armed && c && r)
			make_direct(m, f, c, r, n);
	}
	if (h)
		dlclose(h);
	tier_start();
}
