/* Arenas: our hooks on jemalloc's automatic arenas, hooked as threads
 * arrive, the huge-allocation arena at the first oversize allocation, and
 * one explicit arena per tier (at its first use) whose memory stays on
 * that tier.  None of these may be called from an extent hook or with
 * another tiermalloc lock held. */
#ifndef TIER_ARENA_H
#define TIER_ARENA_H

#include "large.h"
#include "tier.h"

#define TIER_MAX_ARENAS 4096

/* At boot: read jemalloc's arena settings, and with hooks, hook arena 0
 * (and every automatic arena when jemalloc binds arenas per CPU).  Returns
 * the number of automatic arenas hooked, or -1. */
int tier_arenas_install(int ntiers, bool hooks);
/* Per thread, before its first allocation: bind it to a hooked arena. */
void tier_arena_thread_start(void);
/* Before starting a thread of ours: is there an arena it can bind to
 * without jemalloc having to create one (which crashes when it cannot)? */
bool tier_arena_spare_ready(void);
/* Before an allocation of at least the oversize threshold: hook the huge
 * arena, creating it if needed. */
void tier_arena_huge_prepare(void);
/* The size from which a thread's allocations must pass through
 * tier_thread_enter_slow: the oversize threshold while the huge arena is
 * not hooked, else the threshold with the large-buffer cache on, else
 * SIZE_MAX. */
size_t tier_arena_watch(void);
/* Before boot's tier_arenas_install: the large-buffer cache's slack in
 * bytes (knob large_cache; 0: off).  Huge allocations then pass through
 * tier_thread_enter_slow, which checks the cache (large.c). */
void tier_arena_large_cache(size_t slack);
/* Hook any automatic or huge arena that appeared with jemalloc's hooks. */
void tier_arenas_sweep(void);
/* fork: taken before jemalloc's own locks (see init.c). */
void tier_arenas_prefork(void);
void tier_arenas_postfork(void);

/* The tier an explicit tier arena is pinned to, or -1.  Safe in hooks. */
int tier_arena_pinned_tier(unsigned arena);
/* The explicit arena of a tier (created at the first call), or UINT32_MAX. */
unsigned tier_arena_of_tier(int tier);
/* Automatic arenas hooked (after a sweep); of those, hooked late (created
 * with jemalloc's hooks); whether the huge arena is; whether automatic
 * arenas are hooked at all in this process. */
unsigned tier_arenas_hooked(void);
unsigned tier_arenas_late(void);
bool tier_arena_huge_hooked(void);
bool tier_arenas_hooking(void);
/* Bytes of default-hook chunks (arena 0's, the huge arena's) set aside. */
size_t tier_arena_absorbed(void);

/* Per thread: allocations of at least this size go through
 * tier_thread_enter_slow.  0 until the thread's first allocation, so that
 * one check on the allocation path covers both a thread's start and the
 * huge arena. */
extern __thread size_t tier_tls_watch __attribute__((tls_model("initial-exec")));
void tier_thread_enter_slow(size_t size);

static inline void tier_thread_enter(size_t size)
{
	if (TIER_UNLIKELY(size >= tier_tls_watch))
		tier_thread_enter_slow(size);
}

/* The mallocx flags of the allocation tier_thread_enter admitted: a large
 * buffer the cache took (large.h) goes to the huge arena. */
static inline int tier_thread_flags(void)
{
	return TIER_UNLIKELY(tier_large_held) ? tier_large_arena_flags : 0;
}

/* After the allocation tier_thread_enter admitted (p: its block, NULL if
 * it failed; size: the size asked): a huge one held the large-buffer cache's lock through it (large.h). */
static inline void tier_thread_leave(void *p, size_t size)
{
	if (TIER_UNLIKELY(tier_large_held))
		tier_large_release(p, size);
}

#endif
