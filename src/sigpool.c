/* The re-entry pool (sigpool.h).  Only atomics, mmap and munmap: callable
 * from a signal handler that interrupted anything, this pool included. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "sigpool.h"

struct tier_sigpool tier_sigpool = {
	.base = (uintptr_t)0 - TIER_SIGPOOL_SPAN,
	.span = TIER_SIGPOOL_SPAN,
	.region_shift = TIER_SIGPOOL_REGION_SHIFT,
};

void tier_sigpool_init(struct tier_sigpool *sp, unsigned region_shift)
{
	memset(sp, 0, sizeof(*sp));
	sp->region_shift = region_shift;
	sp->span = (size_t)TIER_SIGPOOL_CLASSES << region_shift;
	atomic_store(&sp->base, (uintptr_t)0 - sp->span);
}

static uintptr_t sentinel(const struct tier_sigpool *sp) { return (uintptr_t)0 - sp->span; }

/* Map the span, aligned to a region so that every class's blocks are
 * aligned to their size.  A thread (or handler) that loses the race
 * unmaps its copy. */
static uintptr_t mapped_base(struct tier_sigpool *sp)
{
	uintptr_t b = atomic_load_explicit(&sp->base, memory_order_acquire);
	if (b != sentinel(sp))
		return b;
	size_t region = (size_t)1 << sp->region_shift;
	char *m = mmap(NULL, sp->span + region, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	uintptr_t start = ((uintptr_t)m + region - 1) & ~(uintptr_t)(region - 1);
	if (start > (uintptr_t)m)
		munmap(m, start - (uintptr_t)m);
	size_t tail = (uintptr_t)m + sp->span + region - (start + sp->span);
	if (tail)
		munmap((char *)(start + sp->span), tail);
	uintptr_t expect = sentinel(sp);
	if (!atomic_compare_exchange_strong_explicit(&sp->base, &expect, start, memory_order_acq_rel,
						     memory_order_acquire)) {
		munmap((void *)start, sp->span);
		return expect;
	}
	return start;
}

static unsigned class_of_size(size_t need)
{
	if (need <= ((size_t)1 << TIER_SIGPOOL_MIN_SHIFT))
		return 0;
	return (unsigned)(64 - __builtin_clzll((unsigned long long)(need - 1))) - TIER_SIGPOOL_MIN_SHIFT;
}

static size_t capacity(const struct tier_sigpool *sp, unsigned c)
{
	unsigned shift = c + TIER_SIGPOOL_MIN_SHIFT;
	return shift > sp->region_shift ? 0 : (size_t)1 << (sp->region_shift - shift);
}

static char *block(const struct tier_sigpool *sp, uintptr_t base, unsigned c, uint32_t i)
{
	return (char *)(base + ((uintptr_t)c << sp->region_shift) +
			((uintptr_t)i << (c + TIER_SIGPOOL_MIN_SHIFT)));
}

/* The link of a free block lives in its first 4 bytes; a stale read of a
 * block just taken by another thread is harmless (the pool is never
 * unmapped) and its CAS fails on the tag. */
static void *pop(struct tier_sigpool *sp, uintptr_t base, unsigned c)
{
	uint64_t h = atomic_load_explicit(&sp->head[c], memory_order_acquire);
	for (;;) {
		uint32_t top = (uint32_t)h;
		if (!top)
			return NULL;
		char *b = block(sp, base, c, top - 1);
		uint32_t next = __atomic_load_n((uint32_t *)b, __ATOMIC_RELAXED);
		uint64_t n = ((h >> 32) + 1) << 32 | next;
		if (atomic_compare_exchange_weak_explicit(&sp->head[c], &h, n, memory_order_acquire,
							  memory_order_acquire))
			return b;
	}
}

static void *carve(struct tier_sigpool *sp, uintptr_t base, unsigned c)
{
	uint32_t n = atomic_load_explicit(&sp->carved[c], memory_order_relaxed);
	size_t cap = capacity(sp, c);
	while (n < cap)
		if (atomic_compare_exchange_weak_explicit(&sp->carved[c], &n, n + 1, memory_order_relaxed,
							  memory_order_relaxed))
			return block(sp, base, c, n);
	return NULL;
}

void *tier_sigpool_alloc(struct tier_sigpool *sp, size_t size, size_t align)
{
	size_t need = size ? size : 1;
	if (align > need)
		need = align;
	unsigned c = need > ((size_t)1 << (TIER_SIGPOOL_MIN_SHIFT + TIER_SIGPOOL_CLASSES - 1))
			     ? TIER_SIGPOOL_CLASSES
			     : class_of_size(need);
	uintptr_t base = c < TIER_SIGPOOL_CLASSES ? mapped_base(sp) : 0;
	for (; base && c < TIER_SIGPOOL_CLASSES; c++) {
		void *p = pop(sp, base, c);
		if (!p)
			p = carve(sp, base, c);
		if (p) {
			atomic_fetch_add_explicit(&sp->served, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&sp->in_use, (size_t)1 << (c + TIER_SIGPOOL_MIN_SHIFT),
						  memory_order_relaxed);
			return p;
		}
	}
	atomic_fetch_add_explicit(&sp->failed, 1, memory_order_relaxed);
	errno = ENOMEM;
	return NULL;
}

void tier_sigpool_free(struct tier_sigpool *sp, void *p)
{
	uintptr_t base = atomic_load_explicit(&sp->base, memory_order_relaxed);
	uintptr_t off = (uintptr_t)p - base;
	unsigned c = (unsigned)(off >> sp->region_shift);
	unsigned shift = c + TIER_SIGPOOL_MIN_SHIFT;
	uintptr_t in = off & (((uintptr_t)1 << sp->region_shift) - 1);
	if (off >= sp->span || (in & (((uintptr_t)1 << shift) - 1)) || (in >> shift) >= capacity(sp, c))
		return;
	uint32_t i = (uint32_t)(in >> shift);
	uint64_t h = atomic_load_explicit(&sp->head[c], memory_order_relaxed);
	do
		__atomic_store_n((uint32_t *)p, (uint32_t)h, __ATOMIC_RELAXED);
	while (!atomic_compare_exchange_weak_explicit(&sp->head[c], &h, ((h >> 32) + 1) << 32 | (i + 1),
						      memory_order_release, memory_order_relaxed));
	atomic_fetch_sub_explicit(&sp->in_use, (size_t)1 << shift, memory_order_relaxed);
	atomic_fetch_add_explicit(&sp->frees, 1, memory_order_relaxed);
}

size_t tier_sigpool_usable(struct tier_sigpool *sp, const void *p)
{
	uintptr_t off = (uintptr_t)p - atomic_load_explicit(&sp->base, memory_order_relaxed);
	if (off >= sp->span)
		return 0;
	return (size_t)1 << ((off >> sp->region_shift) + TIER_SIGPOOL_MIN_SHIFT);
}
