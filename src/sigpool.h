/* The re-entry pool: memory for malloc-family calls that arrive while the
 * same thread is already inside the allocator (a signal handler that
 * interrupted it).  jemalloc's locks and per-thread caches are not
 * re-entrant, so such calls are served here instead: one mmap'ed span,
 * mapped at the first use, cut into one region per power-of-two size
 * class (16 B .. 1 MiB); a block's class is its region, so its size and
 * alignment follow from its address.  Each class has a lock-free free list
 * (a tagged 32-bit index: no ABA) and a bump counter.  Every function is
 * async-signal-safe and lock-free; blocks may be freed on any thread. */
#ifndef TIER_SIGPOOL_H
#define TIER_SIGPOOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_SIGPOOL_CLASSES 17 /* 16 << 0 .. 16 << 16 (1 MiB) */
#define TIER_SIGPOOL_MIN_SHIFT 4
#define TIER_SIGPOOL_REGION_SHIFT 21 /* 2 MiB per class: 34 MiB of address space */

struct tier_sigpool {
	/* owns() reads these two: base is a sentinel no user pointer falls
	 * in ((uintptr_t)-span) until the span is mapped */
	_Atomic uintptr_t base;
	size_t span;
	unsigned region_shift;
	_Atomic uint64_t head[TIER_SIGPOOL_CLASSES];  /* tag << 32 | index + 1 */
	_Atomic uint32_t carved[TIER_SIGPOOL_CLASSES]; /* blocks ever cut */
	_Atomic uint64_t served, failed, frees;
	_Atomic size_t in_use; /* bytes of blocks handed out, by class size */
};

/* The process's pool (region_shift TIER_SIGPOOL_REGION_SHIFT). */
extern struct tier_sigpool tier_sigpool;

#define TIER_SIGPOOL_SPAN ((size_t)TIER_SIGPOOL_CLASSES << TIER_SIGPOOL_REGION_SHIFT)

/* Is p a block of the process's pool?  One load, one compare. */
static inline bool tier_sigpool_mine(const void *p)
{
	return (uintptr_t)p - atomic_load_explicit(&tier_sigpool.base, memory_order_relaxed) <
	       TIER_SIGPOOL_SPAN;
}

/* A pool of 2^region_shift bytes per class, not mapped yet (tests use
 * small ones; region_shift 12..30). */
void tier_sigpool_init(struct tier_sigpool *sp, unsigned region_shift);

/* Is p a block of this pool?  Two loads and one compare. */
static inline bool tier_sigpool_owns(struct tier_sigpool *sp, const void *p)
{
	return (uintptr_t)p - atomic_load_explicit(&sp->base, memory_order_relaxed) < sp->span;
}

/* A block of at least size bytes (size 0: a unique block) aligned to align
 * (a power of two; 0 or up to 16: 16).  When the classes that fit are full,
 * a larger class serves; NULL with errno ENOMEM when none can (or the span
 * cannot be mapped), counted in failed. */
void *tier_sigpool_alloc(struct tier_sigpool *sp, size_t size, size_t align);
/* Return a block of the pool (owns() true); anything else in the span that
 * is not a block's start is ignored. */
void tier_sigpool_free(struct tier_sigpool *sp, void *p);
/* The usable size of a block of the pool: its class size. */
size_t tier_sigpool_usable(struct tier_sigpool *sp, const void *p);

#endif
