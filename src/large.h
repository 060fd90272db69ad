/* Large-buffer cache: freed huge extents (jemalloc's oversize arena) stay
 * dirty for reuse, within a bound checked before each huge allocation.
 * See large.c.  Not for extent hooks or signal handlers: it calls mallctl. */
#ifndef TIER_LARGE_H
#define TIER_LARGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tier_large_stats {
	_Atomic uint64_t checks;   /* huge allocations checked */
	_Atomic uint64_t purges;   /* times the cache was emptied */
	_Atomic uint64_t purged;   /* bytes emptied */
	_Atomic uint64_t cached;   /* dirty bytes held at the last check */
	_Atomic uint64_t moved;    /* bytes of held buffers moved into new ones */
	_Atomic uint64_t others;   /* times the other arenas were purged */
};
extern struct tier_large_stats tier_large_stats;

/* The huge arena exists (index arena, jemalloc's opt.oversize_threshold
 * oversize): let it keep freed extents dirty.  Returns 0 or -1. */
int tier_large_setup(unsigned arena, size_t oversize, size_t slack);
/* Once on, allocations from this size (TIER_LARGE_FROM, or the oversize
 * threshold if lower) are checked and served by the huge arena: the
 * mallocx flags that send them there, aligned to a move's granule
 * (large_move.h), for the allocation tier_large_before held
 * (tier_thread_flags, thread.h). */
#define TIER_LARGE_FROM ((size_t)4 << 20)
size_t tier_large_from(void);
extern int tier_large_arena_flags;
/* Before an allocation of size bytes (>= tier_large_from()): checks
 * the bound and holds the cache's lock through the allocation, so that
 * concurrent huge allocations do not each take fresh pages on one check;
 * the caller ends the hold with tier_large_release once jemalloc has
 * served it (tier_thread_leave, arena.h), with the block it got (p, NULL
 * if none, and the size asked): its pages not yet resident are filled
 * with held ones (unless kept: its contents matter, as calloc's zeroes and
 * realloc's data, whose pages may be swapped out, do), and what is still
 * not resident, which the program's touch adds to RSS, may make the cache
 * give pages back. */
void tier_large_before(size_t size);
extern __thread bool tier_large_held __attribute__((tls_model("initial-exec")));
void tier_large_release(void *p, size_t size, bool kept);
/* The huge arena's extents are placed on tiers (extent hooks): pages are
 * not moved between them. */
void tier_large_no_moves(void);
/* Whether the cache is set up and on. */
bool tier_large_on(void);
/* fork: the cache's lock, taken before jemalloc's own. */
void tier_large_prefork(void);
void tier_large_postfork(void);

#endif
