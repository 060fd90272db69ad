/* Arenas: our hooks on jemalloc's automatic arenas, hooked as threads
 * arrive, the huge-allocation arena at the first oversize allocation, and
 * one explicit arena per tier (at its first use) whose memory stays on
 * that tier.  None of these may be called from an extent hook or with
 * another tiermalloc lock held. */
#ifndef TIER_ARENA_H
#define TIER_ARENA_H

#include "thread.h"

/* At boot: read jemalloc's arena settings, and with hooks, hook arena 0
 * (and every automatic arena when jemalloc binds arenas per CPU).  Returns
 * the number of automatic arenas hooked, or -1. */
int tier_arenas_install(int ntiers, bool hooks);
/* Per thread, before its first allocation: bind it to a hooked arena. */
void tier_arena_thread_start(void);
/* Before an allocation of at least the oversize threshold: hook the huge
 * arena, creating it if needed. */
void tier_arena_huge_prepare(void);
/* The size from which a thread's allocations must pass through
 * tier_thread_enter_slow: the lower of the oversize threshold while the
 * huge arena is not hooked and the large-buffer cache's threshold
 * (TIER_LARGE_FROM until it is on), else PTRDIFF_MAX (past it, the
 * watched path sets errno). */
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

#endif
