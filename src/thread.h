/* A thread's entry into the allocator: what the interposer calls around
 * each allocation, and what our own threads ask before they start.  The
 * arena internals behind it (arena.c) stay out of this header, so that
 * preload/ and the heat sources see only this. */
#ifndef TIER_THREAD_H
#define TIER_THREAD_H

#include "large.h"
#include "tier.h"

/* Attributes for our threads: a small stack (the default 8 MiB, under
 * THP "always", costs 2 MiB resident per thread once touched). */
#define TIER_THREAD_STACK (256 * 1024)

/* Before starting a thread of ours: is there an arena it can bind to
 * without jemalloc having to create one (which crashes when it cannot)? */
bool tier_arena_spare_ready(void);

/* Per thread: allocations of at least this size go through
 * tier_thread_enter_slow.  0 until the thread's first allocation, so that
 * one check on the allocation path covers both a thread's start and the
 * huge arena. */
extern __thread size_t tier_tls_watch __attribute__((tls_model("initial-exec")));
void tier_thread_enter_slow(size_t size);
/* Once booted: no thread ever needs tier_thread_enter_slow (no extent
 * hooks, no large-buffer cache; signal_safe is the caller's to check), so
 * the entry points may go straight to jemalloc.  Start-up settings only. */
bool tier_thread_watch_none(void);

static inline void tier_thread_enter(size_t size)
{
	if (TIER_UNLIKELY(size >= tier_tls_watch))
		tier_thread_enter_slow(size);
}

/* The mallocx flags of the allocation tier_thread_enter admitted: a large
 * buffer the cache took (large.h) goes to the huge arena, aligned. */
static inline int tier_thread_flags(void)
{
	return TIER_UNLIKELY(tier_large_held) ? tier_large_arena_flags : 0;
}

/* The same added to a caller's own flags: the larger of two alignments
 * (the low 6 bits, MALLOCX_LG_ALIGN, would not add up). */
static inline int tier_thread_flags_with(int flags)
{
	int t = tier_thread_flags(), lg = flags & 0x3f;
	if (TIER_LIKELY(!t))
		return flags;
	if ((t & 0x3f) > lg)
		lg = t & 0x3f;
	return ((flags | t) & ~0x3f) | lg;
}

/* After the allocation tier_thread_enter admitted (p: its block, NULL if
 * it failed; size: the size asked; kept: its contents matter, as calloc's
 * zeroes and realloc's data do): a huge one held the large-buffer cache's
 * lock through it (large.h). */
static inline void tier_thread_leave(void *p, size_t size, bool kept)
{
	if (TIER_UNLIKELY(tier_large_held))
		tier_large_release(p, size, kept);
}

#endif
